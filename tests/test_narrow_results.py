"""lh-narrow-widened-results (workbench/worker/cuda/narrow_results.py): an f32 upcast that several ops
read is stored in f16 and widened by each reader; the values stay the same."""
from __future__ import annotations

from conftest import ok

PAYLOAD = """#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
func.func @f(%x: tensor<64x96xf16>) -> (tensor<64xf32>, tensor<64x96xf32>) {
  %ninf = arith.constant 0xFF800000 : f32
  %half = arith.constant 0.5 : f16
  %e = tensor.empty() : tensor<64x96xf32>
  %up = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<64x96xf16>) outs(%e : tensor<64x96xf32>) {
  ^bb0(%a: f16, %o: f32):
    %s = arith.mulf %a, %half : f16
    %w = arith.extf %s : f16 to f32
    linalg.yield %w : f32
  } -> tensor<64x96xf32>
  %er = tensor.empty() : tensor<64xf32>
  %init = linalg.fill ins(%ninf : f32) outs(%er : tensor<64xf32>) -> tensor<64xf32>
  %mx = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%up : tensor<64x96xf32>) outs(%init : tensor<64xf32>) {
  ^bb0(%a: f32, %o: f32):
    %m = arith.maximumf %a, %o : f32
    linalg.yield %m : f32
  } -> tensor<64xf32>
  %sh = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%up, %mx : tensor<64x96xf32>, tensor<64xf32>) outs(%e : tensor<64x96xf32>) {
  ^bb0(%a: f32, %m: f32, %o: f32):
    %d = arith.subf %a, %m : f32
    linalg.yield %d : f32
  } -> tensor<64x96xf32>
  return %mx, %sh : tensor<64xf32>, tensor<64x96xf32>
}
"""


def test_an_upcast_read_twice_is_stored_narrow(ctx, tmp_path):
    path = tmp_path / "upcast.mlir"
    path.write_text(PAYLOAD)
    ok(ctx, f"load {path}")
    res = ok(ctx, "apply pass lh-narrow-widened-results")
    ir = ctx.session.current_ir
    assert "tensor<64x96xf16>) outs(" in ir.replace("\n", "")  # the readers take the f16 tensor
    assert ir.count("arith.extf") == 2  # one in each reader, none in the producer
    assert "-> tensor<64x96xf32>" in ir  # the subtraction still returns f32
    res = ok(ctx, "run --check")
    assert res.data["run"]["check"]["passed"] and res.data["run"]["check"]["max_abs_err"] == 0, res.data["run"]["check"]


def test_an_upcast_read_once_is_left_to_fusion(ctx, tmp_path):
    path = tmp_path / "once.mlir"
    path.write_text(PAYLOAD.replace("ins(%up, %mx :", "ins(%x2, %mx :").replace(
        "func.func @f(%x: tensor<64x96xf16>)", "func.func @f(%x: tensor<64x96xf16>, %x2: tensor<64x96xf32>)"))
    ok(ctx, f"load {path}")
    before = ctx.session.current_ir
    ok(ctx, "apply pass lh-narrow-widened-results")
    assert ctx.session.current_ir == before
