"""Standalone benchmark for the CPU f32 matmul schedule in matmul.py.

Builds the tensor payload, applies the transform schedule produced by
``matmul_tiling(**default_params(m, n, k))`` with the transform interpreter,
runs ``LOWERING_PASSES`` with the PassManager, JITs the result with the
ExecutionEngine (opt_level=3), checks the result against numpy and prints
GFLOP/s for the schedule and for numpy limited to one thread.

Usage:
    python _bench_matmul_standalone.py [SIZE ...] [--params JSON] [--dump-ir FILE]
A SIZE is either ``N`` (square) or ``MxNxK``.  Default: 512 1024 2048.

For a fair numpy baseline, run with OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE unset:
    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python _bench_matmul_standalone.py
"""

import argparse
import ctypes
import importlib.util
import json
import os
import sys
import time

import numpy as np

import mlir
from mlir import ir, passmanager
from mlir.dialects.transform import interpreter
from mlir.execution_engine import ExecutionEngine
from mlir.runtime import get_ranked_memref_descriptor

_HERE = os.path.dirname(os.path.abspath(__file__))
_spec = importlib.util.spec_from_file_location("_lh_cpu_matmul", os.path.join(_HERE, "matmul.py"))
matmul_sched = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(matmul_sched)

MLIR_LIB_DIR = os.path.join(list(mlir.__path__)[0], "lib")
SHARED_LIBS = [
    os.path.join(MLIR_LIB_DIR, "libmlir_c_runner_utils.so"),
    os.path.join(MLIR_LIB_DIR, "libmlir_runner_utils.so"),
]


def payload(m: int, n: int, k: int) -> str:
    return f"""
func.func @matmul(%A: tensor<{m}x{k}xf32>, %B: tensor<{k}x{n}xf32>, %C: tensor<{m}x{n}xf32>) -> tensor<{m}x{n}xf32>
    attributes {{llvm.emit_c_interface}} {{
  %0 = linalg.matmul ins(%A, %B : tensor<{m}x{k}xf32>, tensor<{k}x{n}xf32>)
                     outs(%C : tensor<{m}x{n}xf32>) -> tensor<{m}x{n}xf32>
  return %0 : tensor<{m}x{n}xf32>
}}

// Benchmark wrapper: calls @matmul `iters` times (accumulating into C).
func.func @bench(%A: tensor<{m}x{k}xf32>, %B: tensor<{k}x{n}xf32>, %C: tensor<{m}x{n}xf32>, %iters: index) -> tensor<{m}x{n}xf32>
    attributes {{llvm.emit_c_interface}} {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %r = scf.for %i = %c0 to %iters step %c1 iter_args(%acc = %C) -> (tensor<{m}x{n}xf32>) {{
    %t = func.call @matmul(%A, %B, %acc) : (tensor<{m}x{k}xf32>, tensor<{k}x{n}xf32>, tensor<{m}x{n}xf32>) -> tensor<{m}x{n}xf32>
    scf.yield %t : tensor<{m}x{n}xf32>
  }}
  return %r : tensor<{m}x{n}xf32>
}}
"""


def compile_module(m, n, k, params, dump_ir=None):
    ctx = ir.Context()
    with ctx, ir.Location.unknown():
        module = ir.Module.parse(payload(m, n, k))
        sched_text = matmul_sched.matmul_tiling(**params)
        sched = ir.Module.parse(sched_text)
        entry = None
        for op in sched.body.operations:
            if "sym_name" in op.attributes and ir.StringAttr(op.attributes["sym_name"]).value == "__transform_main":
                entry = op
        t0 = time.perf_counter()
        interpreter.apply_named_sequence(module, entry, sched)
        if dump_ir:
            with open(dump_ir, "w") as f:
                f.write(str(module))
        for p in matmul_sched.LOWERING_PASSES:
            pm = passmanager.PassManager.parse(f"builtin.module({p})")
            pm.run(module.operation)
        if dump_ir:
            with open(dump_ir + ".llvm.mlir", "w") as f:
                f.write(str(module))
        t1 = time.perf_counter()
        engine = ExecutionEngine(module, opt_level=3, shared_libs=SHARED_LIBS)
        t2 = time.perf_counter()
    return ctx, module, engine, (t1 - t0, t2 - t1)


def _desc_ptr(arr):
    d = get_ranked_memref_descriptor(arr)
    return d, ctypes.pointer(ctypes.pointer(d))


def run_mlir(engine, fn, A, B, C, iters=None):
    # Result descriptor (same rank/type as C); the C interface returns it via out-param.
    res = get_ranked_memref_descriptor(np.empty_like(C))
    res_p = ctypes.pointer(ctypes.pointer(res))
    keep = []
    args = [res_p]
    for arr in (A, B, C):
        d, p = _desc_ptr(arr)
        keep.append(d)
        args.append(p)
    if iters is not None:
        it = ctypes.c_longlong(iters)
        args.append(ctypes.pointer(it))
    engine.invoke(fn, *args)
    # Rebuild a numpy view of the returned buffer.
    shape = C.shape
    buf = (ctypes.c_float * (shape[0] * shape[1])).from_address(
        ctypes.addressof(res.aligned.contents) + res.offset * 4)
    out = np.ctypeslib.as_array(buf).reshape(shape).copy()
    return out


def bench_numpy(A, B, min_time=0.5):
    from threadpoolctl import threadpool_limits
    with threadpool_limits(limits=1):
        A @ B
        best = float("inf")
        total, reps = 0.0, 0
        while total < min_time or reps < 3:
            t = time.perf_counter()
            A @ B
            dt = time.perf_counter() - t
            best = min(best, dt)
            total += dt
            reps += 1
    return best


def bench_one(m, n, k, params=None, dump_ir=None, min_time=0.5):
    if params is None:
        params = matmul_sched.default_params(m, n, k)
    ctx, module, engine, (t_lower, t_jit) = compile_module(m, n, k, params, dump_ir)
    rng = np.random.default_rng(0)
    A = rng.standard_normal((m, k), dtype=np.float32)
    B = rng.standard_normal((k, n), dtype=np.float32)
    C = rng.standard_normal((m, n), dtype=np.float32)
    ref = C.astype(np.float64) + A.astype(np.float64) @ B.astype(np.float64)
    out = run_mlir(engine, "matmul", A, B, C.copy())
    err = np.max(np.abs(out - ref)) / np.max(np.abs(ref))
    # Timing: wrapper loop inside the JIT code; choose iters for ~min_time/3 per sample.
    flops = 2.0 * m * n * k
    Cw = np.zeros((m, n), dtype=np.float32)
    t = time.perf_counter()
    run_mlir(engine, "bench", A, B, Cw, iters=1)
    one = time.perf_counter() - t
    iters = max(1, int(min_time / 3 / max(one, 1e-6)))
    best = float("inf")
    for _ in range(3):
        t = time.perf_counter()
        run_mlir(engine, "bench", A, B, Cw, iters=iters)
        best = min(best, (time.perf_counter() - t) / iters)
    t_np = bench_numpy(A, B, min_time)
    return {
        "shape": f"{m}x{n}x{k}",
        "params": params,
        "max_rel_err": float(err),
        "mlir_gflops": flops / best / 1e9,
        "numpy_1t_gflops": flops / t_np / 1e9,
        "lower_s": t_lower,
        "jit_s": t_jit,
    }


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("sizes", nargs="*", default=["512", "1024", "2048"])
    ap.add_argument("--params", default=None, help="JSON dict overriding default_params")
    ap.add_argument("--dump-ir", default=None)
    ap.add_argument("--min-time", type=float, default=0.5)
    args = ap.parse_args()
    for s in args.sizes:
        if "x" in s:
            m, n, k = (int(v) for v in s.split("x"))
        else:
            m = n = k = int(s)
        params = matmul_sched.default_params(m, n, k)
        if args.params:
            params.update(json.loads(args.params))
        r = bench_one(m, n, k, params, args.dump_ir, args.min_time)
        ok = "OK" if r["max_rel_err"] < 1e-4 else "WRONG"
        print(f"{r['shape']:>16}  mlir {r['mlir_gflops']:7.1f} GFLOP/s   numpy(1t) {r['numpy_1t_gflops']:7.1f} GFLOP/s"
              f"   ratio {r['mlir_gflops'] / r['numpy_1t_gflops']:.2f}   max_rel_err {r['max_rel_err']:.2e} {ok}"
              f"   (lower {r['lower_s']:.2f}s, jit {r['jit_s']:.2f}s)")
        print(f"{'':>16}  params {json.dumps(r['params'])}", flush=True)


if __name__ == "__main__":
    main()
