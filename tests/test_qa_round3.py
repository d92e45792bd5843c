"""Third QA round (fresh eyes): a new user's commands, upstream files, torch models and session files
that the first two rounds did not try; each test failed before its fix."""
from __future__ import annotations

import pytest

from conftest import REPO
from workbench.commands import CommandContext, default_registry


@pytest.fixture
def ctx(matmul_session, monkeypatch):
    monkeypatch.chdir(REPO)
    return CommandContext(matmul_session, default_registry())


def failed(ctx, line: str) -> str:
    res = ctx.registry.dispatch(line, ctx)
    assert not res.ok, line
    assert "\n" not in res.error, res.error
    return res.error


def test_run_options_a_bench_step_already_compiled_in_are_not_silently_ignored(ctx):
    """`bench iterations=3` then `run --iterations 30` ran 3 timed calls without a word, and `run --entry
    nosuch` ran @matmul: the wrapper's counts and entry are compiled into the module. Another entry is
    an error; other counts run with the wrapper's and a warning that says where to change them."""
    assert ctx.registry.dispatch("bench iterations=3", ctx).ok
    res = ctx.registry.dispatch("run --iterations 30 --warmup 0", ctx)
    assert res.ok and len(res.data["run"]["times_s"]) == 3
    warning = res.data["warnings"][0]
    assert warning.startswith("--warmup 0, --iterations 30: the module already has its benchmark wrapper")
    assert "warmup=1 iterations=3" in warning and "`params 1 warmup=0 iterations=30`" in warning
    err = failed(ctx, "run --entry nosuch")
    assert err.startswith("--entry nosuch: the module already has its benchmark wrapper, which calls @matmul")
    res = ctx.registry.dispatch("run --iterations 3 --entry matmul", ctx)   # what the wrapper does: no word
    assert res.ok and not any("benchmark wrapper" in w for w in res.data.get("warnings") or [])
    assert ctx.registry.dispatch("undo", ctx).ok   # no wrapper yet: run inserts one with what was asked
    res = ctx.registry.dispatch("run --iterations 4", ctx)
    assert res.ok and len(res.data["run"]["times_s"]) == 4


def test_export_after_a_last_step_without_an_mlir_opt_spelling_says_so(ctx, tmp_path):
    """`bench` (no mlir-opt spelling) as the last step: `export cmdline` answered `mlir-opt command line for
    steps 2..1` with a bare `mlir-opt FILE`."""
    assert ctx.registry.dispatch("bench", ctx).ok
    for line in ("export cmdline", f"export reproducer {tmp_path / 'r.mlir'}"):
        err = failed(ctx, line)
        assert err.startswith("step 1 (bench") and "has no mlir-opt spelling" in err, err
    assert not (tmp_path / "r.mlir").exists()
    assert ctx.registry.dispatch("pass canonicalize", ctx).ok   # a pass after it: steps 2..2 from step 1's IR
    res = ctx.registry.dispatch("export cmdline", ctx)
    assert res.ok and res.summary.startswith("mlir-opt command line for steps 2..2 (input: IR after step 1)")
    assert "canonicalize" in res.data["cmdline"]
