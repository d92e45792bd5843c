"""A zero fill that several matmuls write into (torch-mlir's importer CSEs same-shaped matmuls' fills) is
cloned per matmul by the selector's preparation (lh-unshare-fills): each fuses into its matmul's tiles
(fill_init), no whole-output fill and copy are left, and the result matches."""
from __future__ import annotations

import re

import pytest

from conftest import ok

#: a 2-layer MLP with a residual, both linears initialized by ONE fill (as torch-mlir emits it)
SHARED_FILL_MLP = """#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @forward(%x: tensor<512x256xf32>, %w1: tensor<256x256xf32>, %w2: tensor<256x256xf32>) -> tensor<512x256xf32> {
  %cst = arith.constant 0.000000e+00 : f32
  %e0 = tensor.empty() : tensor<512x256xf32>
  %f0 = linalg.fill ins(%cst : f32) outs(%e0 : tensor<512x256xf32>) -> tensor<512x256xf32>
  %m0 = linalg.matmul ins(%x, %w1 : tensor<512x256xf32>, tensor<256x256xf32>) outs(%f0 : tensor<512x256xf32>) -> tensor<512x256xf32>
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%m0 : tensor<512x256xf32>) outs(%e0 : tensor<512x256xf32>) {
  ^bb0(%a: f32, %o: f32):
    %z = arith.maximumf %a, %cst : f32
    linalg.yield %z : f32
  } -> tensor<512x256xf32>
  %m2 = linalg.matmul ins(%r, %w2 : tensor<512x256xf32>, tensor<256x256xf32>) outs(%f0 : tensor<512x256xf32>) -> tensor<512x256xf32>
  %r2 = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]} ins(%m2, %x : tensor<512x256xf32>, tensor<512x256xf32>) outs(%e0 : tensor<512x256xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %y = arith.addf %a, %b : f32
    linalg.yield %y : f32
  } -> tensor<512x256xf32>
  return %r2 : tensor<512x256xf32>
}
"""


@pytest.mark.parametrize("threads", [1, 2])
def test_a_fill_two_matmuls_write_into_is_fused_into_each(ctx, tmp_path, threads):
    p = tmp_path / "mlp.mlir"
    p.write_text(SHARED_FILL_MLP)
    ok(ctx, f"load {p}")
    ok(ctx, f"target cpu --threads {threads}")
    res = ok(ctx, "select --apply")
    ir_text = ctx.session.current_ir
    # no whole-output fill (a 512x256 memref filled at the top level) and no copy of an output
    # (without the clones: one thread filled the whole 512x256 output first; two threads' chunk fills
    # already fused the shared fill, cpu.chunk_fills: that case checks the run)
    assert not re.search(r"linalg\.fill .*memref<512x256xf32", ir_text), ir_text
    assert "memref.copy" not in ir_text and "linalg.copy" not in ir_text
    matmuls = [e["params"] for e in res.data["selections"] if "matmul" in e["schedule"]]
    assert len(matmuls) == 2 and all(m.get("fill_init") for m in matmuls), matmuls
    ok(ctx, "bench warmup=1 iterations=2")
    ok(ctx, "apply cpu-lower")
    assert ok(ctx, f"run --check --threads {threads}").data["run"]["check"]["passed"]
