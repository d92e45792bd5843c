"""A/B of lowered modules (`--emit` after `bench` + `apply cpu-lower`), compiled once each in this process,
then their benchmark wrappers called alternately (rounds x variants): on a busy shared host the variants
see the same load, where separate `run`s (each a fresh JIT compile of a model: a minute) do not.

    python bench/ab_lowered.py A.mlir B.mlir [C.mlir ...] --npy in0.npy[,in1.npy] --outputs 1x784x192xf32
        [--rounds 6] [--iterations 20] [--threads 1]

Prints per variant the median of each round's median and the min over rounds (ms), and per round the
variants' medians; `cpu`: this thread's CPU time per call over the whole wrapper call (warm-up included,
divided by --iterations), which other processes' load on the cores changes less than the wall clock
(with --threads 1 the code runs on this thread). Run it with the MLIR wheels' Python, from the repository root (PYTHONPATH=.).
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def _spec(text: str) -> dict:
    *dims, dtype = text.split("x")
    return {"shape": [int(d) for d in dims], "dtype": {"f32": "float32", "f64": "float64", "i64": "int64"}[dtype]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("modules", nargs="+")
    ap.add_argument("--npy", required=True)
    ap.add_argument("--outputs", required=True, help="comma-separated output types, e.g. 1x784x192xf32")
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--iterations", type=int, default=20, help="the wrapper's timed calls (its `bench iterations=`)")
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    os.environ["OMP_NUM_THREADS"] = str(args.threads)
    os.environ["MLIR_ASYNC_RUNTIME_NUM_THREADS"] = str(args.threads)
    from mlir import ir

    from workbench.targets import get_target
    from workbench.worker import run_worker

    target = get_target("cpu")
    inputs = [np.load(p) for p in args.npy.split(",")]
    specs = [_spec(t) for t in args.outputs.split(",")]
    jits = []
    for path in args.modules:
        text = Path(path).read_text()
        jit = run_worker.jit_compile({"llvm": text, "libs": target.shared_libs() + target.extra_libraries(text),
                                      "opt_level": 3, "bench": "_lh_bench"})
        assert isinstance(jit, run_worker.Jit), jit
        print(f"compiled {path} in {jit.compile_s:.1f} s", flush=True)
        jits.append(jit)
    medians: list[list[float]] = [[] for _ in jits]
    cpu: list[list[float]] = [[] for _ in jits]
    for r in range(args.rounds):
        row = []
        for i, jit in enumerate(jits):
            with jit.context, ir.Location.unknown():
                times = np.zeros(args.iterations, dtype=np.float64)
                t0 = time.thread_time()
                run_worker._invoke(jit.engine, "_lh_bench",
                                   [a.copy() for a in inputs] + run_worker.output_buffers(specs) + [times])
                cpu[i].append((time.thread_time() - t0) / args.iterations * 1e3)
            medians[i].append(float(np.median(times)) * 1e3)
            row.append(f"{medians[i][-1]:8.3f} (cpu {cpu[i][-1]:8.3f})")
        print(f"round {r}: " + " ".join(row), flush=True)
    for path, m, c in zip(args.modules, medians, cpu):
        print(f"{Path(path).name}: median of medians {statistics.median(m):.3f} ms, min {min(m):.3f} ms; "
              f"cpu per call: median {statistics.median(c):.3f} ms, min {min(c):.3f} ms")


if __name__ == "__main__":
    main()
