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


SHARED_PRODUCER = """#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d1)>
#vec = affine_map<(d0) -> (d0)>
func.func @main(%a: tensor<8x64xf32>, %b: tensor<8x64xf32>, %ia: tensor<8x64xi32>, %ib: tensor<8x64xi32>,
                %w: tensor<64xf32>) -> (tensor<8x64xf32>, tensor<8x64xi32>, tensor<8x64xf32>, tensor<8x64xf32>) {
  %e1 = tensor.empty() : tensor<8x64xi1>
  %lt = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%a, %b : tensor<8x64xf32>, tensor<8x64xf32>) outs(%e1 : tensor<8x64xi1>) {
  ^bb0(%x: f32, %y: f32, %o: i1):
    %c = arith.cmpf olt, %y, %x : f32
    linalg.yield %c : i1
  } -> tensor<8x64xi1>
  %e2 = tensor.empty() : tensor<8x64xf32>
  %v = linalg.generic {indexing_maps = [#id, #id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%lt, %a, %b : tensor<8x64xi1>, tensor<8x64xf32>, tensor<8x64xf32>) outs(%e2 : tensor<8x64xf32>) {
  ^bb0(%s: i1, %x: f32, %y: f32, %o: f32):
    %r = arith.select %s, %y, %x : f32
    linalg.yield %r : f32
  } -> tensor<8x64xf32>
  %e3 = tensor.empty() : tensor<8x64xi32>
  %i = linalg.generic {indexing_maps = [#id, #id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%lt, %ia, %ib : tensor<8x64xi1>, tensor<8x64xi32>, tensor<8x64xi32>) outs(%e3 : tensor<8x64xi32>) {
  ^bb0(%s: i1, %x: i32, %y: i32, %o: i32):
    %r = arith.select %s, %y, %x : i32
    linalg.yield %r : i32
  } -> tensor<8x64xi32>
  %e4 = tensor.empty() : tensor<64xf32>
  %sq = linalg.generic {indexing_maps = [#vec, #vec], iterator_types = ["parallel"]}
      ins(%w : tensor<64xf32>) outs(%e4 : tensor<64xf32>) {
  ^bb0(%x: f32, %o: f32):
    %r = arith.mulf %x, %x : f32
    linalg.yield %r : f32
  } -> tensor<64xf32>
  %p = linalg.generic {indexing_maps = [#row, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%sq, %a : tensor<64xf32>, tensor<8x64xf32>) outs(%e2 : tensor<8x64xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %r = arith.addf %x, %y : f32
    linalg.yield %r : f32
  } -> tensor<8x64xf32>
  %q = linalg.generic {indexing_maps = [#row, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%sq, %b : tensor<64xf32>, tensor<8x64xf32>) outs(%e2 : tensor<8x64xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %r = arith.mulf %x, %y : f32
    linalg.yield %r : f32
  } -> tensor<8x64xf32>
  return %v, %i, %p, %q : tensor<8x64xf32>, tensor<8x64xi32>, tensor<8x64xf32>, tensor<8x64xf32>
}
"""


def test_a_producer_read_by_several_ops_element_for_element_is_fused_into_one_op_with_them(ctx, tmp_path):
    """A comparison read by the select of the values and by that of the indices (a sort stage) becomes
    one op with both results, the comparison computed once in its body: no i1 tensor is written. A
    producer the others read broadcast (a row vector) stays an op of its own; the result still matches."""
    payload = tmp_path / "shared.mlir"
    payload.write_text(SHARED_PRODUCER)
    ok(ctx, f"load {payload}")
    ok(ctx, "pass lh-fuse-elementwise")
    generics = [o for o in _ops(ctx) if o["op"] == "linalg.generic"]
    assert "tensor<8x64xi1>" not in ctx.session.current_ir
    both = [o for o in generics if len(o["operand_types"]) == 6]   # a, b, ia, ib -> values, indices
    assert len(both) == 1 and both[0]["operand_types"][-2:] == ["tensor<8x64xf32>", "tensor<8x64xi32>"]
    assert any(o["operand_types"] == ["tensor<64xf32>", "tensor<64xf32>"] for o in generics)   # the row: alone
    res = ok(ctx, "select --apply")
    assert all(e["params"]["vector"] == 1 for e in res.data["selections"] if "generic.py" in e["schedule"])
    ok(ctx, "bench warmup=0 iterations=1")
    ok(ctx, "apply cpu-lower")
    assert ok(ctx, "run --check").data["run"]["check"]["passed"]


def test_a_linear_unflattened_by_a_view_stays_a_matmul(ctx):
    """conv_autoencoder's decoder: `Linear(z).view(b, c, h, w)`. Upstream's fusion by expansion rewrites the
    matmul over the split columns (a generic no matmul schedule takes: 0.6 GFLOP/s at 8x8192x64); the
    preparation keeps it a named matmul, which the selector gives a matmul schedule."""
    fixture = FIXTURES / "conv_autoencoder.mlir"
    ok(ctx, f"load {fixture}")
    decoder_n = 8 * 4 * 4                    # (the test export: 8 channels of 4x4 after the encoder)
    ok(ctx, "pass func.func(linalg-fuse-elementwise-ops)")
    assert not [o for o in _ops(ctx) if o["op"] == "linalg.matmul" and o["dims"]["n"] == decoder_n]
    ok(ctx, "undo")
    ok(ctx, "pass lh-fuse-elementwise")
    kept = [o for o in _ops(ctx) if o["op"] == "linalg.matmul" and o["dims"]["n"] == decoder_n]
    assert len(kept) == 1 and "lh_fusion_guard" not in ctx.session.current_ir
    ok(ctx, "undo")
    res = ok(ctx, "target cpu")
    res = ok(ctx, "select --apply")
    assert any(e["params"].get("op") == kept[0]["id"] and "matmul" in e["schedule"] for e in res.data["selections"])
    ok(ctx, "bench warmup=0 iterations=1")
    ok(ctx, "apply cpu-lower")
    run = ok(ctx, "run --check").data["run"]
    assert run["check"]["passed"] and run["expected_check"]["passed"]


CAPTURED_AFTER_FIRST_USER = """
#id = affine_map<(d0) -> (d0)>
func.func @main(%a: tensor<8xf32>, %b: tensor<8xf32>, %t: tensor<4xi64>) -> (tensor<8xf32>, tensor<8xf32>) {
  %e = tensor.empty() : tensor<8xf32>
  %s = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%a : tensor<8xf32>) outs(%e : tensor<8xf32>) {
  ^bb0(%x: f32, %o: f32):
    %r = arith.mulf %x, %x : f32
    linalg.yield %r : f32
  } -> tensor<8xf32>
  %u1 = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]}
      ins(%s, %b : tensor<8xf32>, tensor<8xf32>) outs(%e : tensor<8xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %r = arith.addf %x, %y : f32
    linalg.yield %r : f32
  } -> tensor<8xf32>
  %e4 = tensor.empty() : tensor<4xi64>
  %t2 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%t : tensor<4xi64>) outs(%e4 : tensor<4xi64>) {
  ^bb0(%x: i64, %o: i64):
    %c3 = arith.constant 3 : i64
    %r = arith.andi %x, %c3 : i64
    linalg.yield %r : i64
  } -> tensor<4xi64>
  %u2 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%s : tensor<8xf32>) outs(%e : tensor<8xf32>) {
  ^bb0(%x: f32, %o: f32):
    %i = linalg.index 0 : index
    %c4 = arith.constant 4 : index
    %j = arith.remui %i, %c4 : index
    %v = tensor.extract %t2[%j] : tensor<4xi64>
    %f = arith.sitofp %v : i64 to f32
    %r = arith.mulf %x, %f : f32
    linalg.yield %r : f32
  } -> tensor<8xf32>
  return %u1, %u2 : tensor<8xf32>, tensor<8xf32>
}
"""


def test_a_shared_producer_is_not_merged_above_a_value_a_user_reads_in_its_body(ctx, tmp_path):
    """The merged op goes where the first user was; a later user that reads a tensor defined after that
    point inside its body (a gather's tensor.extract: the CTC loss's label lookups) would be moved above the
    tensor's definition ("operand #0 does not dominate this use"): such users are not merged."""
    payload = tmp_path / "captured.mlir"
    payload.write_text(CAPTURED_AFTER_FIRST_USER)
    ok(ctx, f"load {payload}")
    ok(ctx, "pass lh-fuse-elementwise")
    assert "tensor.extract" in ctx.session.current_ir
    ok(ctx, "bench warmup=0 iterations=1")
    ok(ctx, "apply cpu-lower")
    assert ok(ctx, "run --check").data["run"]["check"]["passed"]
