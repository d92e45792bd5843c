"""Small-M matmuls on CPU (an unrolled RNN's per-step `h @ W`): the elementwise fusion's generic form of a
plain matmul is made a linalg.matmul again (lh-plain-matmul-layout), so the packed schedule takes it, and
a matmul whose B elements are read by few register-tile rows reads B in place (`pack_b=0`)."""
from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from conftest import lowered_run_passes, ok

ROOT = Path(__file__).resolve().parents[1]

# an RNN step's shape of the problem: h @ W, a bias, the result reshaped to (1, rows, n) and added to the
# step's input projection: upstream's fusion generalizes the named matmul here
RNN_STEP = """#m2 = affine_map<(d0, d1) -> (d0, d1)>
#m1 = affine_map<(d0, d1) -> (d1)>
#e3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#e2 = affine_map<(d0, d1, d2) -> (d1, d2)>
func.func @step(%h: tensor<16x64xf32>, %w: tensor<64x128xf32>, %bias: tensor<128xf32>, %x: tensor<16x128xf32>) -> tensor<1x16x128xf32> {
  %c0 = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<16x128xf32>
  %f = linalg.fill ins(%c0 : f32) outs(%e : tensor<16x128xf32>) -> tensor<16x128xf32>
  %r = linalg.matmul ins(%h, %w : tensor<16x64xf32>, tensor<64x128xf32>) outs(%f : tensor<16x128xf32>) -> tensor<16x128xf32>
  %b = linalg.generic {indexing_maps = [#m2, #m1, #m2], iterator_types = ["parallel", "parallel"]} ins(%r, %bias : tensor<16x128xf32>, tensor<128xf32>) outs(%e : tensor<16x128xf32>) {
  ^bb0(%a: f32, %c: f32, %o: f32):
    %s = arith.addf %a, %c : f32
    linalg.yield %s : f32
  } -> tensor<16x128xf32>
  %x3 = tensor.expand_shape %b [[0, 1], [2]] output_shape [1, 16, 128] : tensor<16x128xf32> into tensor<1x16x128xf32>
  %e3 = tensor.empty() : tensor<1x16x128xf32>
  %g = linalg.generic {indexing_maps = [#e3, #e2, #e3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%x3, %x : tensor<1x16x128xf32>, tensor<16x128xf32>) outs(%e3 : tensor<1x16x128xf32>) {
  ^bb0(%a: f32, %c: f32, %o: f32):
    %s = arith.addf %a, %c : f32
    linalg.yield %s : f32
  } -> tensor<1x16x128xf32>
  return %g : tensor<1x16x128xf32>
}
"""

SMALL_MM = """func.func @mm(%A: tensor<16x64xf32>, %B: tensor<64x128xf32>, %C: tensor<16x128xf32>) -> tensor<16x128xf32> {
  %0 = linalg.matmul ins(%A, %B : tensor<16x64xf32>, tensor<64x128xf32>) outs(%C : tensor<16x128xf32>) -> tensor<16x128xf32>
  return %0 : tensor<16x128xf32>
}
"""


def _matmul_library():
    sys.path.insert(0, str(ROOT / "pipelines" / "cpu"))
    import matmul

    return matmul


def test_the_fusions_generic_matmul_becomes_a_named_one_again(ctx, tmp_path):
    """The fusion generalizes the step's matmul (its result is reshaped downstream); the preparation makes
    it a linalg.matmul again, which the packed schedule (with its bias epilogue) takes, not the generic
    contraction tile."""
    payload = tmp_path / "step.mlir"
    payload.write_text(RNN_STEP)
    ok(ctx, f"load {payload}")
    ok(ctx, "pass lh-fuse-elementwise")
    assert "linalg.matmul" not in ctx.session.current_ir     # (what upstream's fusion does to it)
    ok(ctx, "undo")
    ok(ctx, "select --apply")
    labels = [a.step.label() for a in ctx.session.active_steps]
    assert any("lh-plain-matmul-layout" in label for label in labels), labels
    assert any("cpu/matmul" in label for label in labels) and not any("generic.py" in label for label in labels), labels
    assert "vector.fma" in ctx.session.current_ir      # the register tile's outer products
    lowered_run_passes(ctx)


def test_pack_b_pays_only_for_many_row_tiles():
    matmul = _matmul_library()
    assert matmul.default_params(16, 1024, 256)["pack_b"] == 0          # an RNN step: 2 row tiles of 8
    assert matmul.default_params(2048, 1024, 256)["pack_b"] == 1        # a large matmul: the pack pays
    assert matmul.pack_b_pays(8 * matmul.PACK_B_MIN_ROW_TILES, 8) == 1
    assert matmul.pack_b_pays(8 * matmul.PACK_B_MIN_ROW_TILES - 8, 8) == 0


@pytest.mark.parametrize("pack_b", [0, 1])
def test_pack_b_decides_the_b_buffer(ctx, tmp_path, pack_b):
    """pack_b=1: two pack buffers (A's and B's panels); pack_b=0: A's only, the micro-kernel reads B where
    it is. Both lower, run and match the reference."""
    payload = tmp_path / "mm.mlir"
    payload.write_text(SMALL_MM)
    ok(ctx, f"load {payload}")
    ok(ctx, f"apply pipelines/cpu/matmul.py[gen=matmul_tiling]{{block_m=16 block_n=128 block_k=64 reg_m=8 reg_n=32 "
            f"reg_k=4 pack_tile_a=32 pack_tile_b=8 pack_b={pack_b}}}")
    buffers = len(re.findall(r"memref\.alloc(?:a)?\b", ctx.session.current_ir))
    assert buffers == 1 + pack_b, ctx.session.current_ir[:3000]
    lowered_run_passes(ctx, "cpu-matmul-lower")


# a linear layer on a 3-D input as lh-shared-rhs-matmuls leaves it: one matmul over the collapsed rows,
# its result expanded, the bias add (and relu) and a residual input after it, 3-D
LINEAR_3D_BIAS = """#e3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#b1 = affine_map<(d0, d1, d2) -> (d2)>
func.func @linear(%x: tensor<32x64xf32>, %w: tensor<64x128xf32>, %bias: tensor<128xf32>, %r: tensor<2x16x128xf32>) -> tensor<2x16x128xf32> {
  %c0 = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<32x128xf32>
  %f = linalg.fill ins(%c0 : f32) outs(%e : tensor<32x128xf32>) -> tensor<32x128xf32>
  %m = linalg.matmul ins(%x, %w : tensor<32x64xf32>, tensor<64x128xf32>) outs(%f : tensor<32x128xf32>) -> tensor<32x128xf32>
  %m3 = tensor.expand_shape %m [[0, 1], [2]] output_shape [2, 16, 128] : tensor<32x128xf32> into tensor<2x16x128xf32>
  %e3 = tensor.empty() : tensor<2x16x128xf32>
  %g = linalg.generic {indexing_maps = [#e3, #b1, #e3, #e3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%m3, %bias, %r : tensor<2x16x128xf32>, tensor<128xf32>, tensor<2x16x128xf32>) outs(%e3 : tensor<2x16x128xf32>) {
  ^bb0(%a: f32, %b: f32, %c: f32, %o: f32):
    %s = arith.addf %a, %b : f32
    %t = arith.addf %s, %c : f32
    %p = arith.maximumf %t, %c0 : f32
    linalg.yield %p : f32
  } -> tensor<2x16x128xf32>
  return %g : tensor<2x16x128xf32>
}
"""


#: a QKV projection as torch-mlir writes it: x @ W (W: 64 x 3*32) expanded to 2 x 16 x 3 x 32 (batch, tokens, q/k/v,
#: features), the bias (96) expanded to 3 x 32 with it and read at the two loops the 96 columns were split into
QKV_BIAS = """#e4 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#b2 = affine_map<(d0, d1, d2, d3) -> (d2, d3)>
func.func @qkv(%x: tensor<32x64xf32>, %w: tensor<64x96xf32>, %bias: tensor<96xf32>) -> tensor<2x16x3x32xf32> {
  %c0 = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<32x96xf32>
  %f = linalg.fill ins(%c0 : f32) outs(%e : tensor<32x96xf32>) -> tensor<32x96xf32>
  %m = linalg.matmul ins(%x, %w : tensor<32x64xf32>, tensor<64x96xf32>) outs(%f : tensor<32x96xf32>) -> tensor<32x96xf32>
  %m4 = tensor.expand_shape %m [[0, 1], [2, 3]] output_shape [2, 16, 3, 32] : tensor<32x96xf32> into tensor<2x16x3x32xf32>
  %b2 = tensor.expand_shape %bias [[0, 1]] output_shape [3, 32] : tensor<96xf32> into tensor<3x32xf32>
  %e4 = tensor.empty() : tensor<2x16x3x32xf32>
  %g = linalg.generic {indexing_maps = [#e4, #b2, #e4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%m4, %b2 : tensor<2x16x3x32xf32>, tensor<3x32xf32>) outs(%e4 : tensor<2x16x3x32xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %s = arith.addf %a, %b : f32
    linalg.yield %s : f32
  } -> tensor<2x16x3x32xf32>
  return %g : tensor<2x16x3x32xf32>
}
"""


def test_a_qkv_projections_split_bias_becomes_its_epilogue(ctx, tmp_path):
    """lh-collapse-expanded-elementwise: a bias expanded with the output's columns (a QKV projection's 768 as
    3 x 256) and read at both loops they were split into is collapsed with them: the bias add runs 2-D, reading
    the bias along n, and becomes the matmul's epilogue (a transformer layer's QKV bias was a pass of its own
    over the 3 MiB result, and the matmul's fill another); the result matches the reference."""
    payload = tmp_path / "qkv.mlir"
    payload.write_text(QKV_BIAS)
    ok(ctx, f"load {payload}")
    ok(ctx, "pass lh-collapse-expanded-elementwise")
    ir_text = ctx.session.current_ir
    generic = ir_text[ir_text.index("linalg.generic"):]
    assert 'iterator_types = ["parallel", "parallel"]' in generic.splitlines()[0], ir_text
    ok(ctx, "undo")
    ok(ctx, "select --apply")
    labels = [a.step.label() for a in ctx.session.active_steps]
    assert any("matmul_epilogue" in label for label in labels) and not any("generic.py" in label for label in labels), labels
    lowered_run_passes(ctx)


def test_an_expanded_matmul_results_bias_add_becomes_its_epilogue(ctx, tmp_path):
    """lh-collapse-expanded-elementwise: the 3-D bias add (+ residual, relu) runs 2-D over the matmul's
    result (the residual collapsed, the bias read along n), its result expanded; the selector then makes
    it the matmul's epilogue, and the result matches the reference."""
    payload = tmp_path / "linear3d.mlir"
    payload.write_text(LINEAR_3D_BIAS)
    ok(ctx, f"load {payload}")
    ok(ctx, "pass lh-collapse-expanded-elementwise")
    ir_text = ctx.session.current_ir
    generic = ir_text[ir_text.index("linalg.generic"):]
    assert 'iterator_types = ["parallel", "parallel"]' in generic.splitlines()[0]
    assert "tensor.collapse_shape %arg3" in ir_text and "tensor.expand_shape" in generic
    ok(ctx, "undo")
    ok(ctx, "select --apply")
    labels = [a.step.label() for a in ctx.session.active_steps]
    assert any("lh-collapse-expanded-elementwise" in label for label in labels), labels
    assert any("matmul_epilogue" in label for label in labels) and not any("generic.py" in label for label in labels), labels
    lowered_run_passes(ctx)
