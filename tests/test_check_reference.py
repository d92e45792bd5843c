"""The reference of `run --check` scales: plain f32 matmuls are computed by BLAS, every other op by loops."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from conftest import load_npys, matmul_payload, ok
from workbench.targets import get_target

PAYLOADS = Path(__file__).parent / "payloads"


def test_every_target_checks_against_cpu_reference():
    for name in ("cpu", "cuda", "mpi", "sycl"):
        assert get_target(name).reference_lowering == "cpu-reference"


def test_reference_lowering_computes_matmuls_with_blas(ctx, tmp_path):
    ok(ctx, f"load {matmul_payload(tmp_path / 'mm.mlir', 96, 80, 64)}")
    ok(ctx, "bench iterations=1")
    ok(ctx, "apply cpu-reference")
    text = ctx.session.current_ir
    assert "cblas_sgemm" in text and "lh_ukernel_sgemm" in text


def test_big_matmul_checked_against_blas_reference_equals_numpy(ctx, tmp_path):
    ok(ctx, f"load {matmul_payload(tmp_path / 'mm.mlir', 512, 384, 640)}")
    ok(ctx, "select --apply")
    ok(ctx, "bench warmup=0 iterations=1")
    ok(ctx, "apply cpu-matmul-lower")
    run = ok(ctx, f"run --check --save-outputs {tmp_path / 'out'}").data["run"]
    assert run["check"]["passed"], run
    a, b, c = load_npys(tmp_path / "out", "input")
    want = c.astype(np.float64) + a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_allclose(load_npys(tmp_path / "out", "reference")[0], want, rtol=1e-4, atol=1e-3)
    np.testing.assert_allclose(load_npys(tmp_path / "out", "output")[0], want, rtol=1e-4, atol=1e-3)


def test_ops_blas_does_not_compute_keep_a_loop_reference(ctx, tmp_path):
    # bf16 matmul: no sgemm; the reference lowers it to loops and the check still runs
    ok(ctx, f"load {PAYLOADS / 'matmul_bf16.mlir'}")
    ok(ctx, "bench iterations=1")
    ok(ctx, "apply cpu-reference")
    assert "cblas_sgemm" not in ctx.session.current_ir
    ok(ctx, "undo")
    ok(ctx, "undo")
    run = ok(ctx, "run --check").data["run"]
    assert run["check"]["passed"], run
