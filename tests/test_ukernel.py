"""Ukernel choice as a parameter (issue 5): impl=ukernel marks the matmul at configuration time,
`rewrite: ukernel-calls` (in cpu-matmul-lower) replaces it by a BLAS sgemm call after
bufferization, the run finds the library (numpy's bundled OpenBLAS), results are checked."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from workbench.commands import CommandContext, default_registry
from workbench.common import ukernels
from workbench.session import Session
from conftest import load_npys as load, matmul_payload as mm_payload, ok

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture
def ctx(compile_client):
    s = Session(client=compile_client)
    s.journal_enabled = False
    return CommandContext(s, default_registry())


def test_numpy_openblas_is_located():
    lib = ukernels.library_for_abi("openblas64")
    assert "numpy.libs" in lib or "scipy_openblas" in lib
    assert ukernels.libraries_for_symbols({"scipy_cblas_sgemm64_"}) == [lib]
    assert ukernels.libraries_for_symbols({"something_else"}) == []


@pytest.mark.parametrize("m,n,k", [(64, 96, 80), (128, 128, 128)])
def test_ukernel_lowering_is_correct(ctx, tmp_path, m, n, k):
    ok(ctx, f"load {mm_payload(tmp_path / 'mm.mlir', m, n, k)}")
    ok(ctx, "apply pipelines/cpu/matmul.py[gen=matmul_tiling]{impl=ukernel}")
    ir = ctx.session.current_ir
    assert 'linalg.matmul {lh.ukernel = "sgemm"}' in ir and "memref<" in ir  # decided now, lowered later
    ok(ctx, "bench iterations=3")
    ok(ctx, "apply cpu-matmul-lower")
    ir = ctx.session.current_ir
    assert "llvm.call @scipy_cblas_sgemm64_" in ir or "llvm.call @cblas_sgemm" in ir
    assert "llvm.func @scipy_cblas_sgemm64_" in ir or "llvm.func @cblas_sgemm" in ir
    res = ok(ctx, f"run --check --save-outputs {tmp_path / 'o'}")
    assert res.data["run"]["check"]["passed"]
    a, b, c = [x.astype(np.float64) for x in load(tmp_path / "o", "input")[:3]]
    np.testing.assert_allclose(load(tmp_path / "o", "output")[0], c + a @ b, rtol=1e-4, atol=1e-4)


def test_rewrite_is_a_noop_without_marks_and_rejects_tensors(ctx, tmp_path):
    ok(ctx, f"load {mm_payload(tmp_path / 'mm.mlir', 32, 32, 32)}")
    res = ok(ctx, "apply rewrite ukernel-calls")
    assert res.data["step"]["noop"] is True
    ok(ctx, "undo")
    # a mark on a tensor op (before bufferization) is an error naming the cause
    marked = (tmp_path / "mm.mlir").read_text().replace("linalg.matmul ins", 'linalg.matmul {lh.ukernel = "sgemm"} ins')
    (tmp_path / "marked.mlir").write_text(marked)
    ok(ctx, f"load {tmp_path / 'marked.mlir'}")
    res = ctx.registry.dispatch("apply rewrite ukernel-calls", ctx)
    assert not res.ok and "runs after bufferization" in res.error
    res = ctx.registry.dispatch("apply rewrite ukernel-calls{library=mkl}", ctx)
    assert not res.ok and "expected one of" in res.error


def test_codegen_and_ukernel_compared_by_tune(ctx, tmp_path):
    ok(ctx, f"load {mm_payload(tmp_path / 'mm.mlir', 128, 128, 128)}")
    ok(ctx, "target cpu --threads 1")   # (the one-core schedule, whose `impl` chooses the microkernel)
    ok(ctx, "select --apply")
    ok(ctx, "bench iterations=3")
    ok(ctx, "apply cpu-matmul-lower")
    res = ok(ctx, f"tune 1 --sampler grid --no-baseline --iterations 3 --storage {tmp_path / 'u.db'} "
                  "impl=[codegen,ukernel]")
    trials = {t["params"]["impl"]: t for t in res.data["tune"]["trials"]}
    assert set(trials) == {"codegen", "ukernel"} and all(t["state"] == "COMPLETE" for t in trials.values())
    assert trials["codegen"]["gflops"] > 1 and trials["ukernel"]["gflops"] > 1


def test_selector_picks_the_ukernel_when_n_is_no_vector_multiple(ctx, tmp_path):
    # (a few rows: with 8 or more, lh-pad-contraction-dims pads N to whole vectors and codegen takes it,
    # measured faster than the ukernel at 256x768x1000 on the AVX-512 EPYC: 4.2 against 4.6 ms)
    ok(ctx, f"load {mm_payload(tmp_path / 'mm0.mlir', 64, 100, 48)}")
    padded = ok(ctx, "select").data["selections"][-1]["params"]
    lanes = ctx.session.target.machine.vector_bits // 32
    # 100 columns padded to whole vectors: 112 on AVX-512, 104 on AVX2
    assert padded["impl"] == "codegen" and padded["block_n"] % lanes == 0, padded
    ok(ctx, f"load {mm_payload(tmp_path / 'mm.mlir', 4, 100, 48)}")
    res = ok(ctx, "select --apply")
    assert res.data["params"]["impl"] == "ukernel" and ctx.session.steps[0].step.selected_by == "cpu-selector"
    ok(ctx, "bench iterations=2")
    ok(ctx, "apply cpu-matmul-lower")
    assert "sgemm" in ctx.session.current_ir
    assert ok(ctx, "run --check").data["run"]["check"]["passed"]
    ok(ctx, f"load {mm_payload(tmp_path / 'mm2.mlir', 64, 128, 48)}")
    assert ok(ctx, "select").data["selections"][-1]["params"]["impl"] == "codegen"
