"""The torch corpus (examples/torch/corpus.py), exported by scripts/export_corpus.py to
tests/fixtures/torch/: every fixture goes through the generic CPU path (`bench`, `apply cpu-lower`,
`run --check`) on torch's inputs, and must equal both the unscheduled payload and torch's outputs
(rtol 1e-3 / atol 1e-4 for f32, 5e-2 for bf16). torch itself is not needed here."""
from __future__ import annotations

from pathlib import Path

import pytest

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "torch"
NAMES = sorted(p.name.removesuffix(".expected.json") for p in FIXTURES.glob("*.expected.json"))

# fixtures expected to fail, by name -> why (strict xfail). Empty since issue 12 item 3 (bool
# tensors, bf16 through ml_dtypes, in-range index inputs) landed.
KNOWN_MISSING: dict[str, str] = {}


def test_the_corpus_is_large_enough():
    assert len(NAMES) >= 50, NAMES


def _param(name: str):
    if name in KNOWN_MISSING:
        return pytest.param(name, marks=pytest.mark.xfail(reason=KNOWN_MISSING[name], strict=True))
    return name


@pytest.mark.parametrize("name", [_param(n) for n in NAMES])
def test_fixture_runs_and_equals_torch(session, name):
    from workbench.commands import CommandContext, default_registry

    ctx = CommandContext(session, default_registry())
    for line in (f"load {FIXTURES / (name + '.mlir')}", "bench", "apply cpu-lower", "run --check"):
        res = ctx.registry.dispatch(line, ctx)
        assert res.ok, f"{name}: `{line}`: {res.error}"
    run = session.last_run
    assert run["check"]["passed"], run["check"]
    assert run["expected_check"]["passed"], run["expected_check"]
    assert run["expected_check"]["source"].endswith(f"{name}.expected.json")


@pytest.mark.parametrize("name", [_param(n) for n in NAMES])
def test_selected_fixture_runs_and_equals_torch(session, name):
    """The selector path a user takes (`target cpu --threads 1`, `select --apply`, `bench`, `cpu-lower`,
    `run --check`) on every fixture: each op's schedule applies, lowers to LLVM and computes what the
    unscheduled payload and torch compute. (The one-thread plan: the split plans are tested on the
    torch-like payloads of test_cpu_selector.py.)"""
    _selector_path_matches(session, name, "target cpu --threads 1")


def _selector_path_matches(session, name: str, target: str) -> None:
    """`target`, `select --apply`, `bench`, `cpu-lower`, `run --check` on one thread: equal to the unscheduled
    payload and to torch's outputs."""
    from workbench.commands import CommandContext, default_registry

    ctx = CommandContext(session, default_registry())
    for line in (f"load {FIXTURES / (name + '.mlir')}", target, "select --apply", "bench",
                 "apply cpu-lower", "run --check --threads 1"):
        res = ctx.registry.dispatch(line, ctx)
        assert res.ok, f"{name}: `{line}`: {res.error}"
    run = session.last_run
    assert run["check"]["passed"], run["check"]
    assert run["expected_check"]["passed"], run["expected_check"]


#: models of several contraction shapes (recurrent steps of a few rows, K of one register step, attention,
#: convolutions): the AVX2 machine model gives them other tiles (16 registers, 6-row tiles) than the AVX-512 host,
#: and those tiles hit schedule corners the host's never did (an LSTM step's K = 8 in one register step failed to
#: apply; tests/test_cpu_matmul_family.py)
AVX2_MODELS = ["lstm", "gru", "char_rnn_lm", "seq2seq_attention", "conv_autoencoder", "gat", "transformer_layer",
               "mlp", "attention", "cumsum", "conv_block"]


@pytest.mark.parametrize("name", AVX2_MODELS)
def test_selected_for_an_avx2_machine_runs_and_equals_torch(session, name):
    """The selector path for `--cpu avx2` (run here: an AVX-512 host runs AVX2 code; a machine without AVX2 skips)."""
    from workbench.targets.cpu_host import machine_for

    if machine_for("avx2").missing_here():
        pytest.skip("the host cannot run AVX2 code")
    _selector_path_matches(session, name, "target cpu --cpu avx2 --threads 1")
