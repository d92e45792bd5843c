"""lh-shared-lhs-matmuls (workbench/worker/cpu/shared_lhs.py): sibling matmuls that read the same left-hand
matrix become one matmul of the concatenated right-hand matrices and a column slice per sibling; siblings of
another LHS, or reading each other's results, stay as they are. The CPU selector runs it on narrow siblings
(deepfm's embedding bags), and the merged module runs and matches the unscheduled reference."""
from __future__ import annotations

import re

from conftest import load_text, lowered_run_passes, ok

_MAPS = ("indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> ({b})>, "
         "affine_map<(m, n, k) -> (m, n)>]")
_PLAIN_GENERIC = _MAPS.format(b="k, n")
_TRANSPOSED = _MAPS.format(b="n, k")

# three siblings of %x: a named matmul whose B is computed between the siblings and whose result has a fused
# epilogue before the next sibling, a multiply-add generic with a matmul's maps, and one of another B width
SIBLINGS = f"""func.func @sib(%x: tensor<32x64xf32>, %w1: tensor<64x16xf32>, %w2: tensor<64x8xf32>,
                %w3: tensor<64x1xf32>, %s: tensor<32x1xf32>) -> (tensor<32x16xf32>, tensor<32x8xf32>, tensor<32x1xf32>) {{
  %z = arith.constant 0.0 : f32
  %e1 = tensor.empty() : tensor<32x16xf32>
  %f1 = linalg.fill ins(%z : f32) outs(%e1 : tensor<32x16xf32>) -> tensor<32x16xf32>
  %r1 = linalg.matmul ins(%x, %w1 : tensor<32x64xf32>, tensor<64x16xf32>) outs(%f1 : tensor<32x16xf32>) -> tensor<32x16xf32>
  %ep = linalg.generic {{indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, 0)>, affine_map<(i, j) -> (i, j)>],
      iterator_types = ["parallel", "parallel"]}} ins(%r1, %s : tensor<32x16xf32>, tensor<32x1xf32>) outs(%e1 : tensor<32x16xf32>) {{
  ^bb0(%p: f32, %q: f32, %o: f32):
    %d = arith.divf %p, %q : f32
    linalg.yield %d : f32
  }} -> tensor<32x16xf32>
  %e2b = tensor.empty() : tensor<64x8xf32>
  %w2b = linalg.generic {{indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>],
      iterator_types = ["parallel", "parallel"]}} ins(%w2 : tensor<64x8xf32>) outs(%e2b : tensor<64x8xf32>) {{
  ^bb0(%p: f32, %o: f32):
    %d = arith.mulf %p, %p : f32
    linalg.yield %d : f32
  }} -> tensor<64x8xf32>
  %e2 = tensor.empty() : tensor<32x8xf32>
  %f2 = linalg.fill ins(%z : f32) outs(%e2 : tensor<32x8xf32>) -> tensor<32x8xf32>
  %r2 = linalg.generic {{{_PLAIN_GENERIC}, iterator_types = ["parallel", "parallel", "reduction"]}}
      ins(%x, %w2b : tensor<32x64xf32>, tensor<64x8xf32>) outs(%f2 : tensor<32x8xf32>) {{
  ^bb0(%p: f32, %q: f32, %o: f32):
    %m = arith.mulf %p, %q : f32
    %a = arith.addf %o, %m : f32
    linalg.yield %a : f32
  }} -> tensor<32x8xf32>
  %e3 = tensor.empty() : tensor<32x1xf32>
  %f3 = linalg.fill ins(%z : f32) outs(%e3 : tensor<32x1xf32>) -> tensor<32x1xf32>
  %r3 = linalg.matmul ins(%x, %w3 : tensor<32x64xf32>, tensor<64x1xf32>) outs(%f3 : tensor<32x1xf32>) -> tensor<32x1xf32>
  return %ep, %r2, %r3 : tensor<32x16xf32>, tensor<32x8xf32>, tensor<32x1xf32>
}}
"""

# B read transposed (x @ W.T, torch's linear), the inits not fills: the inits are concatenated
TRANSPOSED_SIBLINGS = f"""func.func @lin(%x: tensor<16x32xf32>, %w1: tensor<8x32xf32>, %w2: tensor<24x32xf32>,
                %c1: tensor<16x8xf32>, %c2: tensor<16x24xf32>) -> (tensor<16x8xf32>, tensor<16x24xf32>) {{
  %r1 = linalg.matmul {_TRANSPOSED} ins(%x, %w1 : tensor<16x32xf32>, tensor<8x32xf32>) outs(%c1 : tensor<16x8xf32>) -> tensor<16x8xf32>
  %r2 = linalg.matmul {_TRANSPOSED} ins(%x, %w2 : tensor<16x32xf32>, tensor<24x32xf32>) outs(%c2 : tensor<16x24xf32>) -> tensor<16x24xf32>
  return %r1, %r2 : tensor<16x8xf32>, tensor<16x24xf32>
}}
"""

# not siblings: another LHS, and a second product that reads the first's result (its B)
NOT_SIBLINGS = """func.func @no(%x: tensor<16x16xf32>, %y: tensor<16x16xf32>, %w: tensor<16x16xf32>, %c: tensor<16x16xf32>)
    -> (tensor<16x16xf32>, tensor<16x16xf32>) {
  %r1 = linalg.matmul ins(%x, %w : tensor<16x16xf32>, tensor<16x16xf32>) outs(%c : tensor<16x16xf32>) -> tensor<16x16xf32>
  %r2 = linalg.matmul ins(%x, %r1 : tensor<16x16xf32>, tensor<16x16xf32>) outs(%c : tensor<16x16xf32>) -> tensor<16x16xf32>
  %r3 = linalg.matmul ins(%y, %w : tensor<16x16xf32>, tensor<16x16xf32>) outs(%c : tensor<16x16xf32>) -> tensor<16x16xf32>
  return %r2, %r3 : tensor<16x16xf32>, tensor<16x16xf32>
}
"""


def _contractions(ir_text: str) -> list[str]:
    return [line for line in ir_text.splitlines() if "linalg.matmul" in line or '"reduction"]' in line]


def test_siblings_become_one_matmul_and_slices(ctx, tmp_path):
    load_text(ctx, tmp_path, SIBLINGS)
    ok(ctx, "target cpu --threads 1")
    ok(ctx, "apply pass lh-shared-lhs-matmuls")
    ir = ctx.session.current_ir
    contractions = _contractions(ir)
    assert len(contractions) == 1, contractions
    assert "tensor<32x64xf32>, tensor<64x25xf32>) outs(" in contractions[0], contractions
    assert "tensor.concat dim(1)" in ir
    slices = re.findall(r"tensor\.extract_slice %\S+\[0, (\d+)\] \[32, (\d+)\]", ir)
    assert slices == [("0", "16"), ("16", "8"), ("24", "1")], slices
    assert ir.count("linalg.fill") == 1   # (one fill of the merged init; the siblings' are dead and folded)
    lowered_run_passes(ctx)


def test_transposed_siblings_concatenate_rows_and_inits(ctx, tmp_path):
    load_text(ctx, tmp_path, TRANSPOSED_SIBLINGS)
    ok(ctx, "target cpu --threads 1")
    ok(ctx, "apply pass lh-shared-lhs-matmuls")
    ir = ctx.session.current_ir
    assert len(_contractions(ir)) == 1, ir
    assert "tensor.concat dim(0) %arg1, %arg2" in ir and "tensor.concat dim(1) %arg3, %arg4" in ir, ir
    lowered_run_passes(ctx)


def test_other_lhs_and_dependent_products_stay(ctx, tmp_path):
    load_text(ctx, tmp_path, NOT_SIBLINGS)
    ok(ctx, "target cpu --threads 1")
    before = ctx.session.current_ir
    ok(ctx, "apply pass lh-shared-lhs-matmuls")
    ir = ctx.session.current_ir
    assert len(_contractions(ir)) == 3 and "tensor.concat" not in ir and "extract_slice" not in ir, ir
    assert _contractions(ir) == _contractions(before)


def test_max_columns_leaves_wide_siblings(ctx, tmp_path):
    load_text(ctx, tmp_path, SIBLINGS)
    ok(ctx, "target cpu --threads 1")
    ok(ctx, "apply pass lh-shared-lhs-matmuls{max-columns=8}")
    contractions = _contractions(ctx.session.current_ir)
    # (the 16-column sibling stays; the 8- and 1-column ones merge)
    assert len(contractions) == 2 and any("tensor<64x9xf32>) outs(" in c for c in contractions), contractions


def test_min_lhs_bytes_leaves_a_small_lhs(ctx, tmp_path):
    load_text(ctx, tmp_path, SIBLINGS)   # (A: 32 x 64 f32, 8 KiB)
    ok(ctx, "target cpu --threads 1")
    ok(ctx, "apply pass lh-shared-lhs-matmuls{min-lhs-bytes=8193}")
    assert len(_contractions(ctx.session.current_ir)) == 3
    ok(ctx, "apply pass lh-shared-lhs-matmuls{min-lhs-bytes=8192}")
    assert len(_contractions(ctx.session.current_ir)) == 1


# the siblings with an A of 64 KiB (more than an L1 data cache: the selector's threshold)
WIDE_SIBLINGS = (SIBLINGS.replace("tensor<32x64xf32>", "tensor<A>").replace("tensor<64x", "tensor<256x")
                 .replace("tensor<32x", "tensor<64x").replace("tensor<A>", "tensor<64x256xf32>"))


def test_the_selector_merges_narrow_siblings(ctx, tmp_path):
    load_text(ctx, tmp_path, WIDE_SIBLINGS)
    ok(ctx, "target cpu --threads 1")
    data = ok(ctx, "select").data
    assert any(step.startswith("pass lh-shared-lhs-matmuls") for step in data["prepared"]), data["prepared"]
    ok(ctx, "select --apply")
    lowered_run_passes(ctx)
    load_text(ctx, tmp_path, SIBLINGS)   # (an A of 8 KiB: left as it is)
    data = ok(ctx, "select").data
    assert not any(step.startswith("pass lh-shared-lhs-matmuls") for step in data["prepared"]), data["prepared"]
