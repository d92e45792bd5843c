"""Reductions on the CPU path: results nothing reads are dropped before selection (`lh-drop-dead-results`:
torch-mlir's amin / max(dim) / log-softmax row max carry an unread index), so what is left is a plain
reduction the vectorizer takes with its combiner."""
from __future__ import annotations

from pathlib import Path

from conftest import fixture_io_flags, ok

FIXTURES = Path(__file__).parent / "fixtures" / "torch"


def _generics(ctx):
    return [o for o in ctx.session.inspect()["ops"] if o["op"] == "linalg.generic"]


def _select_run_check(ctx, fixture: Path) -> dict:
    res = ok(ctx, "select --apply")
    ok(ctx, "bench warmup=0 iterations=1")
    ok(ctx, "apply cpu-lower")
    run = ok(ctx, f"run --check {fixture_io_flags(fixture)}").data["run"]
    assert run["check"]["passed"]
    return res.data


def test_an_unread_index_is_dropped_and_the_min_is_a_plain_reduction(ctx):
    fixture = FIXTURES / "amin.mlir"
    ok(ctx, f"load {fixture}")
    assert "tensor<16xi64>" in ctx.session.current_ir          # the min's index, never returned
    ok(ctx, "pass lh-drop-dead-results")
    assert "xi64>" not in ctx.session.current_ir and "select" not in ctx.session.current_ir   # accumulator, init, select gone
    generics = _generics(ctx)
    assert len(generics) == 1 and generics[0]["loops"]["body"].count("arith.minimumf") == 1
    ok(ctx, "undo")
    data = _select_run_check(ctx, fixture)
    generic = [e for e in data["selections"] if "generic.py" in e["schedule"]]
    assert generic and generic[0]["params"].get("class") in (None, "reduction-outer") and \
        "fold_unit_dims" not in generic[0]["params"]           # not a reduction taken step by step
    assert "lh-drop-dead-results" in " ".join(str(s.step) for s in ctx.session.active_steps)


def test_a_read_index_stays(ctx):
    """argmin returns the index: its select reads the value's accumulator, which stays too."""
    fixture = FIXTURES / "argmin.mlir"
    ok(ctx, f"load {fixture}")
    before = ctx.session.current_ir
    ok(ctx, "pass lh-drop-dead-results")
    assert ctx.session.current_ir.count("arith.select") == before.count("arith.select") == 1
    assert "minimumf" in ctx.session.current_ir
    ok(ctx, "undo")
    _select_run_check(ctx, fixture)


def test_log_softmax_row_max_without_index_then_gather(ctx):
    fixture = FIXTURES / "nll_loss.mlir"
    ok(ctx, f"load {fixture}")
    ok(ctx, "pass lh-drop-dead-results")
    assert all(o["loops"]["body"].count("arith.select") == 0 for o in _generics(ctx)
               if "arith.maximumf" in o["loops"]["body"])
    ok(ctx, "undo")
    _select_run_check(ctx, fixture)
