"""The torch corpus (examples/torch/corpus.py), exported by scripts/export_corpus.py to
tests/fixtures/torch/: every fixture goes through the generic CPU path (`bench`, `apply cpu-lower`,
`run --check`) on torch's inputs, and must equal both the unscheduled payload and torch's outputs
(rtol 1e-3 / atol 1e-4 for f32, 5e-2 for bf16). torch itself is not needed here."""
from __future__ import annotations

from pathlib import Path

import pytest

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "torch"
NAMES = sorted(p.name.removesuffix(".expected.json") for p in FIXTURES.glob("*.expected.json"))

# fixtures that need issue 12 item 3 (branch `dtypes`): strict, so they flip to failures when it lands
NEEDS_I1 = "i1 (bool) tensors do not lower yet (MemRefToLLVM asserts on sub-byte stores): issue 12 item 3"
NEEDS_BF16 = "bf16 inputs/outputs have no numpy type in the runner yet (ml_dtypes): issue 12 item 3"
KNOWN_MISSING: dict[str, str] = {
    "argsort": NEEDS_I1,
    "attention_causal": NEEDS_I1,
    "compare_to_float": NEEDS_I1,
    "cross_entropy": NEEDS_I1,
    "logsumexp": NEEDS_I1,
    "masked_fill": NEEDS_I1,
    "nll_loss": NEEDS_I1,
    "sdpa": NEEDS_I1,
    "smooth_l1_loss": NEEDS_I1,
    "softplus": NEEDS_I1,
    "sort": NEEDS_I1,
    "sort_descending_values": NEEDS_I1,
    "topk": NEEDS_I1,
    "transformer_layer": NEEDS_I1,
    "where_mask": NEEDS_I1,
    "add_relu_bf16": NEEDS_BF16,
    "conv2d_bf16": NEEDS_BF16,
    "gelu_bf16": NEEDS_BF16,
    "layer_norm_bf16": NEEDS_BF16,
    "linear_bf16": NEEDS_BF16,
    "matmul_bf16": NEEDS_BF16,
    "softmax_bf16": NEEDS_BF16,
}


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
