"""The preparation's elementwise fusion (`lh-fuse-elementwise`): producers go into the consumers that read
each of their elements once (an MSE's difference and square into its sum: one pass), never into one that
reads them broadcast (a scale into q @ k^T: recomputed per multiply-add, and the contraction is no longer
a batch matmul; a batch norm's 1/sqrt(var) per element instead of per channel)."""
from __future__ import annotations

from pathlib import Path

from conftest import fixture_io_flags, ok

FIXTURES = Path(__file__).parent / "fixtures" / "torch"


def _ops(ctx):
    return ctx.session.inspect()["ops"]


def test_a_scale_is_not_fused_into_attention_matmuls(ctx):
    ok(ctx, f"load {FIXTURES / 'sdpa.mlir'}")
    ok(ctx, "pass lh-fuse-elementwise")
    batch = [o for o in _ops(ctx) if o.get("layout") == "batch"]
    assert len(batch) == 2 and all(o["kind"] == "contraction" for o in batch)   # q @ k^T and p @ v, pure
    # upstream's fusion (what the preparation was) puts the scaling into the first contraction's body
    ok(ctx, "undo")
    ok(ctx, "pass func.func(linalg-fuse-elementwise-ops)")
    assert len([o for o in _ops(ctx) if o.get("layout") == "batch"]) < 2
    ok(ctx, "undo")
    res = ok(ctx, "select --apply")
    family = [e["params"] for e in res.data["selections"] if "batch_matmul_tiling" in e["schedule"]]
    assert len(family) == 2 and all(p["generic"] for p in family)
    ok(ctx, "bench warmup=0 iterations=1")
    ok(ctx, "apply cpu-lower")
    run = ok(ctx, f"run --check {fixture_io_flags(FIXTURES / 'sdpa.mlir')}").data["run"]
    assert run["check"]["passed"]


def test_producers_read_once_are_still_fused(ctx):
    ok(ctx, f"load {FIXTURES / 'mse_loss.mlir'}")
    before = sum(1 for o in _ops(ctx) if o["op"] == "linalg.generic")
    ok(ctx, "pass lh-fuse-elementwise")
    generics = [o for o in _ops(ctx) if o["op"] == "linalg.generic"]
    assert before >= 3 and len(generics) <= 2      # sub, square and sum in one op
    assert "lh_fusion_guard" not in ctx.session.current_ir


def test_a_cast_read_by_several_consumers_is_fused_into_each(ctx):
    """torch-mlir's layer norm widens its input to f64 once for the mean and once more for the variance:
    the cast is copied into each reduction instead of writing a full-size f64 tensor (twice the input)."""
    ok(ctx, f"load {FIXTURES / 'layer_norm.mlir'}")
    shape = next(o for o in _ops(ctx) if o["op"] == "linalg.generic")["operand_types"][0]   # the f32 input
    wide = shape.replace("xf32>", "xf64>")
    assert f"-> {wide}" in ctx.session.current_ir
    ok(ctx, "pass lh-fuse-elementwise")
    assert f"-> {wide}" not in ctx.session.current_ir
    res = ok(ctx, "select --apply")
    assert all(e["params"]["vector"] == 1 for e in res.data["selections"] if "generic.py" in e["schedule"])
    ok(ctx, "bench warmup=0 iterations=1")
    ok(ctx, "apply cpu-lower")
    run = ok(ctx, f"run --check {fixture_io_flags(FIXTURES / 'layer_norm.mlir')}").data["run"]
    assert run["check"]["passed"]
