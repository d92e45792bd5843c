"""A/B of lowered modules (`--emit` after `bench` + `apply cpu-lower`), compiled once each in this process,
then their benchmark wrappers called alternately (rounds x variants): on a busy shared host the variants
see the same load, where separate `run`s (each a fresh JIT compile of a model: a minute) do not.

    python bench/ab_lowered.py A.mlir B.mlir [C.mlir ...] --npy in0.npy[,in1.npy] --outputs 1x784x192xf32
        [--rounds 6] [--iterations 20] [--threads 1]
    (or --random 8x64x56x56xf32[,...]: seeded uniform [-1, 1) inputs instead of --npy)

Every variant's outputs of the first round are compared with the first variant's (largest difference relative
to the first's largest magnitude, printed; `MISMATCH` and exit status 1 above 1e-4): variants of a schedule
must compute the same thing. The last line: `RESULT variants=N mismatches=0|1 variant1_cpu_ratio=...` (each
variant's median CPU time per call against the first's: > 1 means faster than the first, the baseline).

Prints per variant the median of each round's median and the min over rounds (ms), and per round the
variants' medians; `cpu`: this thread's CPU time per call over the whole wrapper call (warm-up included,
divided by --iterations), which other processes' load on the cores changes less than the wall clock
(with --threads 1 the code runs on this thread). It runs under `run`'s malloc settings (targets/base.py
MALLOC_KEEP: freed blocks stay with the allocator), re-executing itself with them where they are not set. Run it with the MLIR wheels' Python, from the repository root (PYTHONPATH=.).
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


def _wrapper_iterations(text: str) -> int | None:
    """The timed calls of the module's bench wrapper (its `lh.bench` attribute's iterations), None without one."""
    import re

    match = re.search(r"lh\.bench = \{.*?\biterations = (\d+) : i64", text)
    return int(match.group(1)) if match else None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("modules", nargs="+")
    source = ap.add_mutually_exclusive_group(required=True)
    source.add_argument("--npy")
    source.add_argument("--random", help="input types, e.g. 8x64x56x56xf32: seeded random inputs")
    ap.add_argument("--outputs", required=True, help="comma-separated output types, e.g. 1x784x192xf32")
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--iterations", type=int, default=0,
                    help="the wrapper's timed calls (its `bench iterations=`); default: read from the modules")
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    from workbench.targets.base import MALLOC_KEEP, keep_freed_memory

    if any(name not in os.environ for name in MALLOC_KEEP):
        # (glibc reads them at start: run again with `run`'s settings, else a variant with large temporaries
        # faults them in at every call here and not under `run`: 2x on a strided conv's padded phases)
        os.execve(sys.executable, [sys.executable] + sys.argv, keep_freed_memory(dict(os.environ)))
    os.environ["OMP_NUM_THREADS"] = str(args.threads)
    os.environ["MLIR_ASYNC_RUNTIME_NUM_THREADS"] = str(args.threads)
    from mlir import ir

    from workbench.targets import get_target
    from workbench.worker import run_worker

    target = get_target("cpu")
    rng = np.random.default_rng(0)
    inputs = ([np.load(p) for p in args.npy.split(",")] if args.npy else
              [rng.uniform(-1, 1, spec["shape"]).astype(spec["dtype"]) for spec in map(_spec, args.random.split(","))])
    specs = [_spec(t) for t in args.outputs.split(",")]
    jits = []
    wrapper_iterations = {path: _wrapper_iterations(Path(path).read_text()) for path in args.modules}
    if len(set(wrapper_iterations.values())) != 1 or args.iterations not in (0, *wrapper_iterations.values()):
        # (the wrapper writes one time per iteration into the times buffer: a shorter one is a heap overrun)
        sys.exit(f"ab_lowered: the modules' bench wrappers time {wrapper_iterations} calls"
                 + (f", not --iterations {args.iterations}" if args.iterations else "") + ": emit them alike")
    args.iterations = next(iter(wrapper_iterations.values()))
    for path in args.modules:
        text = Path(path).read_text()
        jit = run_worker.jit_compile({"llvm": text, "libs": target.shared_libs() + target.extra_libraries(text),
                                      "opt_level": 3, "bench": "_lh_bench"})
        assert isinstance(jit, run_worker.Jit), jit
        print(f"compiled {path} in {jit.compile_s:.1f} s", flush=True)
        jits.append(jit)
    medians: list[list[float]] = [[] for _ in jits]
    cpu: list[list[float]] = [[] for _ in jits]
    first_outputs: list[list[np.ndarray]] = []
    mismatch = False
    for r in range(args.rounds):
        row = []
        for i, jit in enumerate(jits):
            with jit.context, ir.Location.unknown():
                times = np.zeros(args.iterations, dtype=np.float64)
                outputs = run_worker.output_buffers(specs)
                t0 = time.thread_time()
                run_worker._invoke(jit.engine, "_lh_bench", [a.copy() for a in inputs] + outputs + [times])
                cpu[i].append((time.thread_time() - t0) / args.iterations * 1e3)
            if r == 0:
                first_outputs.append([np.array(o, copy=True) for o in outputs])
                mismatch |= _report_difference(args.modules[i], first_outputs[0], first_outputs[-1]) if i else False
            medians[i].append(float(np.median(times)) * 1e3)
            row.append(f"{medians[i][-1]:8.3f} (cpu {cpu[i][-1]:8.3f})")
        print(f"round {r}: " + " ".join(row), flush=True)
    for path, m, c in zip(args.modules, medians, cpu):
        print(f"{Path(path).name}: median of medians {statistics.median(m):.3f} ms, min {min(m):.3f} ms; "
              f"cpu per call: median {statistics.median(c):.3f} ms, min {min(c):.3f} ms")
    # (each variant's speed against the first's, by the median CPU time per call: > 1 faster than the first)
    first = statistics.median(cpu[0])
    ratios = " ".join(f"variant{i}_cpu_ratio={first / statistics.median(c):.3f}" for i, c in enumerate(cpu) if i)
    print(f"RESULT variants={len(jits)} mismatches={int(mismatch)}" + (f" {ratios}" if ratios else ""), flush=True)
    if mismatch:
        sys.exit(1)


def _report_difference(path: str, reference: list, outputs: list) -> bool:
    """Print the variant's largest output difference from the first variant's; True where it is a mismatch."""
    worst = 0.0
    for ref, out in zip(reference, outputs):
        ref64, out64 = np.asarray(ref, dtype=np.float64), np.asarray(out, dtype=np.float64)
        scale = max(float(np.max(np.abs(ref64))) if ref64.size else 0.0, 1e-30)
        worst = max(worst, float(np.max(np.abs(out64 - ref64))) / scale if ref64.size else 0.0)
    bad = not worst <= 1e-4   # (NaN: a mismatch too)
    print(f"{Path(path).name}: outputs differ from the first variant's by {worst:.2e} of its largest"
          + ("  MISMATCH" if bad else ""), flush=True)
    return bad


if __name__ == "__main__":
    main()
