"""Tuned vs default vs numpy: f32 matmul 1024^3 on one core, all in one run.

A session loads the payload, applies the CPU selector's dict to pipelines/cpu/matmul.py
(`select --apply`), the benchmark wrapper and cpu-matmul-lower. `tune` then searches the
schedule's space (Optuna TPE, seeded; every candidate compiled, run and checked in an isolated
worker) and `--apply-best` sets the winner. Default and tuned are re-measured alternately
(`--repeats` rounds each), numpy `A @ B` on one thread (threadpoolctl) in the same process.
Ratios are throughput ratios (> 1: the first is faster).

    python bench/tune_matmul.py [--n 1024] [--trials 16] [--timeout 600] [--with-ukernel] [--csv trials.csv]
Measured (2-vCPU AVX-512 EPYC, shared, load ~3): 12 TPE trials in 57 s, tuned 102.3 vs default 97.1
vs numpy 1 thread 93.3 GFLOP/s -> tuned_vs_default_ratio=1.054 tuned_vs_numpy_ratio=1.097 (noise ~±5%).
Last line: RESULT tuned_vs_default_ratio=... tuned_vs_numpy_ratio=...
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path


ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from _common import MATMUL_TUNE_SPACE, numpy_matmul_gflops, run_lines, write_matmul_payload  # noqa: E402  (bench/_common.py)
from workbench.commands import CommandContext, default_registry  # noqa: E402
from workbench.session import Session  # noqa: E402

SPACE = MATMUL_TUNE_SPACE


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=1024)
    ap.add_argument("--trials", type=int, default=16)
    ap.add_argument("--timeout", type=float, default=600.0, help="tuning time budget (s)")
    ap.add_argument("--iterations", type=int, default=10)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--with-ukernel", action="store_true", help="add impl=[codegen,ukernel] to the space")
    ap.add_argument("--csv", help="write every trial to this CSV file")
    args = ap.parse_args()
    os.environ.setdefault("LH_WORKBENCH_STATE_DIR", tempfile.mkdtemp(prefix="lh-tune-"))
    n = args.n
    session = Session()
    session.journal_enabled = False

    def progress(msg: str) -> None:
        print("  ..", msg, flush=True)

    ctx = CommandContext(session, default_registry(), progress=progress)

    def do(line: str):
        return run_lines(ctx, [line])

    try:
        with tempfile.TemporaryDirectory() as d:
            payload = write_matmul_payload(Path(d) / f"matmul{n}.mlir", n)
            do(f"load {payload}")
            do("target --threads 1")  # the single-core schedule (matmul.py), whose space SPACE is
            do("select --apply")
            default = dict(session.steps[0].step.params)
            do(f"bench warmup=2 iterations={args.iterations}")
            do("apply cpu-matmul-lower")
            space = SPACE + (" impl=[codegen,ukernel]" if args.with_ukernel else "")
            t0 = time.monotonic()
            res = do(f"tune 1 --trials {args.trials} --timeout {args.timeout} --sampler tpe --seed {args.seed} "
                     f"--iterations 5 --warmup 1 --storage {Path(d) / 'study.db'} " + (f"--csv {args.csv} " if args.csv else "") +
                     f"--no-baseline {space}")
            rep = res.data["tune"]
            tune_s = time.monotonic() - t0
            failed = sum(t["state"] == "FAIL" for t in rep["trials"])
            best = rep["best"]
            print(f"tuning: {len(rep['trials'])} trials ({failed} failed) in {tune_s:.0f} s; best trial "
                  f"{best['trial']}: {best['tuned']} {best['gflops']:.1f} GFLOP/s", flush=True)
            # re-measure default and tuned alternately on the same session
            tuned = dict(default)
            tuned.update(best["tuned"])
            gf = {"default": [], "tuned": []}
            for r in range(args.repeats):
                for name, params in (("default", default), ("tuned", tuned)):
                    kv = " ".join(f"{k}={v}" for k, v in params.items())
                    do(f"params 1 {kv}")
                    do(f"run --check --iterations {args.iterations}")
                    run = session.last_run
                    gf[name].append(run["gflops"])
            np_gf = numpy_matmul_gflops(n, 1, max(5, args.iterations))
    finally:
        session.close()
    g_def, g_tun = statistics.median(gf["default"]), statistics.median(gf["tuned"])
    print(f"default {default}: {g_def:.1f} GFLOP/s (runs {', '.join(f'{x:.1f}' for x in gf['default'])})")
    print(f"tuned   {tuned}: {g_tun:.1f} GFLOP/s (runs {', '.join(f'{x:.1f}' for x in gf['tuned'])})")
    print(f"numpy 1 thread: {np_gf:.1f} GFLOP/s")
    print(f"RESULT tuned_vs_default_ratio={g_tun / g_def:.3f} tuned_vs_numpy_ratio={g_tun / np_gf:.3f} "
          f"tuned_gflops={g_tun:.1f} default_gflops={g_def:.1f} numpy_1t_gflops={np_gf:.1f} trials={len(rep['trials'])}")


if __name__ == "__main__":
    main()
