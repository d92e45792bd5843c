"""Parallel loops on libgomp's team (lh-parallel-to-gomp, lh-gomp-dispatch) and on MLIR's async runtime
(LH_WORKBENCH_PARALLEL_RUNTIME=async): the same results on thread counts that do not divide the
iterations, nested loops sequential in their chunk, a clear error where a run has no libgomp."""
from __future__ import annotations

import re

import numpy as np
import pytest
from mlir import ir, passmanager

from conftest import FIXTURES, load_npys, ok
from workbench.common.parallel_runtime import find_gomp

needs_gomp = pytest.mark.skipif(find_gomp() is None, reason="no libgomp on this machine")

ODD = FIXTURES / "payloads" / "forall_2d_odd.mlir"
NESTED = FIXTURES / "payloads" / "forall_nested.mlir"


def _outlined(text: str) -> str:
    import workbench.worker.ir_walk  # noqa: F401  (the bindings' casters)
    from workbench.worker.cpu import gomp_parallel

    with ir.Context():
        m = ir.Module.parse(text)
        passmanager.PassManager.parse("builtin.module(func.func(scf-forall-to-parallel))").run(m.operation)
        assert gomp_parallel.outline_parallel_loops(m) == 1
        m.operation.verify()
        return str(m)


def test_outlining_passes_buffers_and_remakes_constants():
    out = _outlined("""
func.func @f(%a: memref<7x5xf32>, %b: memref<7x5xf32>) {
  %c1 = arith.constant 1 : index
  %two = arith.constant 2.0 : f32
  scf.forall (%i, %j) in (7, 5) {
    %t = memref.alloca() : memref<4xf32>
    %v = memref.load %a[%i, %j] : memref<7x5xf32>
    %w = arith.mulf %v, %two : f32
    memref.store %w, %t[%c1] : memref<4xf32>
    %x = memref.load %t[%c1] : memref<4xf32>
    memref.store %x, %b[%i, %j] : memref<7x5xf32>
  }
  return
}""")
    sig = re.search(r"func\.func private @f_lh_par0\((.*?)\) attributes \{lh\.parallel_body\}", out)
    assert sig, out
    # begin, end and the two buffers: the constants (bounds, 1, 2.0) are re-made inside, not passed
    assert sig.group(1).count("index") == 2 and sig.group(1).count("memref<7x5xf32>") == 2, sig.group(1)
    body = out[sig.end():out.index("func.func @f(")]
    assert body.index("memref.alloca") < body.index("scf.for"), body   # once per thread, before the loop
    assert "scf.forall" not in out and "scf.parallel" not in out
    assert re.search(r"call @f_lh_par0\(%c0\w*, %\d+, %arg0, %arg1\)", out), out


def _run(ctx, payload, threads: int, outdir) -> tuple:
    ok(ctx, f"load {payload}")
    ok(ctx, "bench iterations=2")
    ok(ctx, "apply cpu-lower")
    ok(ctx, f"run --threads {threads} --save-outputs {outdir}")
    return load_npys(outdir, "input")[0], load_npys(outdir, "output")[0], ctx.session.current_ir


@needs_gomp
@pytest.mark.parametrize("threads", [2, 3])
def test_a_forall_on_libgomp_covers_every_iteration(ctx, tmp_path, threads):
    res = ok(ctx, "target cpu")
    assert res.data["parallel_runtime"] == "libgomp" and "parallel loops on libgomp" in res.summary
    a, out, lowered = _run(ctx, ODD, threads, tmp_path)
    assert "llvm.call @GOMP_parallel(" in lowered and "llvm.call @mlirAsyncRuntime" not in lowered
    i, j = np.indices(a.shape)
    np.testing.assert_allclose(out, 2 * a + i * j, rtol=1e-6)


@needs_gomp
def test_identical_parallel_bodies_are_compiled_once(ctx, tmp_path):
    """Two loops that outline to the same body (a model's repeated block of one shape) call one function:
    before, each had its own copy (ResNet-50: 52 groups of copies, 23% of the lowered lines, each compiled
    by LLVM again), its own dispatcher and its own thread function."""
    a, out, lowered = _run(ctx, FIXTURES / "payloads" / "forall_2d_odd_twice.mlir", 2, tmp_path)
    bodies = re.findall(r"llvm\.func @(f_lh_par\d+)\(", lowered)
    assert bodies == ["f_lh_par0"], bodies
    assert lowered.count("llvm.call @f_lh_par0_dispatch(") == 2, lowered
    i, j = np.indices(a.shape)
    np.testing.assert_allclose(out, 2 * (2 * a + i * j) + i * j, rtol=1e-6)


def test_nested_foralls_run_sequentially_in_their_chunk(ctx, tmp_path):
    """The inner forall becomes a loop in the outer one's chunk; with the async runtime (or libgomp) the
    result is right and the run ends (the async runtime's nested tasks ran past the 120 s timeout)."""
    a, out, lowered = _run(ctx, NESTED, 2, tmp_path)
    assert lowered.count("llvm.call @GOMP_parallel(") <= 1   # one loop on the team (none: the async runtime)
    i, j = np.indices(a.shape)
    np.testing.assert_allclose(out, a * (i + 1) + j, rtol=1e-6)


def test_the_async_runtime_when_asked(tmp_path, monkeypatch):
    from workbench.commands import CommandContext, default_registry
    from workbench.session import Session

    monkeypatch.setenv("LH_WORKBENCH_PARALLEL_RUNTIME", "async")
    s = Session()   # its compile worker starts with the setting
    try:
        c = CommandContext(s, default_registry())
        assert ok(c, "target cpu").data["parallel_runtime"] == "async runtime"
        a, out, lowered = _run(c, ODD, 3, tmp_path)
    finally:
        s.close()
    assert "GOMP_parallel" not in lowered and "llvm.call @mlirAsyncRuntimeExecute(" in lowered
    i, j = np.indices(a.shape)
    np.testing.assert_allclose(out, 2 * a + i * j, rtol=1e-6)


@needs_gomp
def test_a_run_without_libgomp_says_so_and_loses_nothing(ctx, monkeypatch):
    from workbench.common import parallel_runtime

    ok(ctx, f"load {ODD}")
    ok(ctx, "bench iterations=2")
    ok(ctx, "apply cpu-lower")
    before = ctx.session.current_ir
    monkeypatch.setattr(parallel_runtime, "find_gomp", lambda: None)
    res = ctx.registry.dispatch("run --threads 2", ctx)
    assert not res.ok and "libgomp" in res.error and "\n" not in res.error, res.error
    assert ctx.session.current_ir == before


def test_an_unknown_runtime_option_is_refused(ctx):
    ok(ctx, f"load {ODD}")
    res = ctx.registry.dispatch('apply pass:func.func(scf-forall-to-parallel)', ctx)
    res = ctx.registry.dispatch('apply pass:lh-parallel-to-gomp{runtime=tbb}', ctx)
    assert not res.ok and "runtime='tbb'" in res.error, res.error
