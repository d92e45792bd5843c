"""lh-row-matmuls-as-matvecs: a batch-1 linear layer (x @ W.T as torch-mlir writes it: a linalg.transpose of W and
a one-row linalg.matmul) becomes a matvec of W itself (no transpose of the weight on every call), which the
matvec schedule splits over the cores when W is past the L2; checked against the unscheduled payload."""
from __future__ import annotations

import pytest

from conftest import ok

LINEAR = """func.func @main(%x: tensor<MxKxf32>, %w: tensor<NxKxf32>) -> tensor<MxNxf32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<KxNxf32>
  %wt = linalg.transpose ins(%w : tensor<NxKxf32>) outs(%e : tensor<KxNxf32>) permutation = [1, 0]
  %e2 = tensor.empty() : tensor<MxNxf32>
  %c = linalg.fill ins(%z : f32) outs(%e2 : tensor<MxNxf32>) -> tensor<MxNxf32>
  %r = linalg.matmul ins(%x, %wt : tensor<MxKxf32>, tensor<KxNxf32>) outs(%c : tensor<MxNxf32>) -> tensor<MxNxf32>
  return %r : tensor<MxNxf32>
}
"""


def _payload(m: int, n: int, k: int) -> str:
    return LINEAR.replace("M", str(m)).replace("N", str(n)).replace("K", str(k))


def _rewrite(text: str) -> tuple[int, str]:
    from mlir import ir

    from workbench.worker.cpu.row_matvecs import row_matmuls_as_matvecs

    with ir.Context(), ir.Location.unknown():
        module = ir.Module.parse(text)
        n = row_matmuls_as_matvecs(module)
        assert module.operation.verify()
        return n, str(module)


def test_a_one_row_linear_reads_the_weight_in_place():
    n, text = _rewrite(_payload(1, 40, 24))
    assert n == 1
    assert "linalg.matvec ins(%arg1, %collapsed : tensor<40x24xf32>, tensor<24xf32>)" in text
    assert "linalg.transpose" not in text and "linalg.matmul" not in text


def test_several_rows_or_a_plain_weight_are_left():
    assert _rewrite(_payload(2, 40, 24))[0] == 0             # two rows: the packed matmul schedule
    plain = """func.func @main(%x: tensor<1x24xf32>, %b: tensor<24x40xf32>, %c: tensor<1x40xf32>) -> tensor<1x40xf32> {
  %r = linalg.matmul ins(%x, %b : tensor<1x24xf32>, tensor<24x40xf32>) outs(%c : tensor<1x40xf32>) -> tensor<1x40xf32>
  return %r : tensor<1x40xf32>
}
"""
    assert _rewrite(plain)[0] == 0                           # B not a transpose: x @ B reads B's rows already


@pytest.mark.parametrize("threads", [1, 4])
def test_one_row_linears_run_and_match(ctx, tmp_path, threads):
    payload = tmp_path / "linear1.mlir"
    payload.write_text(_payload(1, 1000, 2048))   # an 8 MB weight: past any L2, split over the cores
    ok(ctx, f"load {payload}")
    try:
        ok(ctx, f"target cpu --threads {threads}")
        ok(ctx, "select --apply")
        steps = [a.step for a in ctx.session.active_steps]
        assert "lh-row-matmuls-as-matvecs" in steps[0].label()
        matvec = next(s for s in steps if "matvec_tiling" in s.label())
        assert matvec.params.get("threads", 1) == threads and 1000 % threads == 0
        ok(ctx, "bench warmup=1 iterations=2")
        ok(ctx, "apply cpu-lower")
        assert ok(ctx, "run --check --iterations 1 --warmup 0").data["run"]["check"]["passed"]
    finally:
        ok(ctx, "target cpu --threads 0")


def test_the_fused_vector_times_matrix_form_is_taken_too():
    """After elementwise fusion folds the reshapes around a one-row matmul it is a generic x[k] * Wt[k, n]."""
    text = """#x = affine_map<(n, k) -> (k)>
#b = affine_map<(n, k) -> (k, n)>
#y = affine_map<(n, k) -> (n)>
func.func @main(%x: tensor<24xf32>, %w: tensor<40x24xf32>, %y: tensor<40xf32>) -> tensor<40xf32> {
  %e = tensor.empty() : tensor<24x40xf32>
  %wt = linalg.transpose ins(%w : tensor<40x24xf32>) outs(%e : tensor<24x40xf32>) permutation = [1, 0]
  %r = linalg.generic {indexing_maps = [#x, #b, #y], iterator_types = ["parallel", "reduction"]}
      ins(%x, %wt : tensor<24xf32>, tensor<24x40xf32>) outs(%y : tensor<40xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<40xf32>
  return %r : tensor<40xf32>
}
"""
    n, out = _rewrite(text)
    assert n == 1 and "linalg.matvec ins(%arg1, %arg0 : tensor<40x24xf32>, tensor<24xf32>)" in out
    assert "linalg.transpose" not in out and "linalg.generic" not in out


def test_a_k_loop_of_one_step_schedules(ctx, tmp_path):
    """K = 64 = the matvec's vec_k: one K step (GNN's 64-wide layers). Its loop folds away under the
    schedule's canonicalization; the handle the schedule keeps on it failed "tracking listener failed to find
    replacement op" until the invariant subsets were hoisted before the folding."""
    payload = tmp_path / "linear64.mlir"
    payload.write_text(_payload(1, 40, 64))
    ok(ctx, f"load {payload}")
    ok(ctx, "target cpu --threads 1")
    ok(ctx, "select --apply")
    index = next(i for i, a in enumerate(ctx.session.active_steps, 1) if "matvec_tiling" in a.step.label())
    ok(ctx, f"params {index} vec_k=64")
    ok(ctx, "bench warmup=1 iterations=2")
    ok(ctx, "apply cpu-lower")
    assert ok(ctx, "run --check --iterations 1 --warmup 0").data["run"]["check"]["passed"]
