"""f32 matmul through the shipped CPU pipeline vs numpy `A @ B`, measured in the same run.

For each size: a session loads a tensor matmul payload, inserts the benchmark wrapper, applies
`pipelines/cpu/matmul.py[gen=matmul_tiling]` with the CPU selector's parameters and the CPU
lowering, then `run --check` (isolated JIT run, timed with rtclock inside the wrapper).
numpy is timed on 1 thread (threadpoolctl) and on all cores; ratios are workbench / numpy
throughput (> 1 means the workbench is faster). The generated code is single-threaded.

    python bench/cpu_matmul.py [--sizes 512,1024,2048] [--iterations 10]
Last line: RESULT matmul1024_1t_ratio=... matmul1024_all_ratio=... ...
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from workbench.commands import CommandContext, default_registry  # noqa: E402
from workbench.session import Session  # noqa: E402
from workbench.targets import get_target  # noqa: E402


def numpy_gflops(n: int, threads: int | None, repeats: int) -> float:
    from threadpoolctl import threadpool_limits

    rng = np.random.default_rng(0)
    a = rng.uniform(-1, 1, (n, n)).astype(np.float32)
    b = rng.uniform(-1, 1, (n, n)).astype(np.float32)
    with threadpool_limits(limits=threads):
        a @ b
        times = []
        for _ in range(repeats):
            t0 = time.perf_counter()
            a @ b
            times.append(time.perf_counter() - t0)
    return 2 * n ** 3 / statistics.median(times) / 1e9


def workbench_gflops(ctx: CommandContext, n: int, iterations: int, workdir: Path) -> tuple[float, dict, bool]:
    payload = workdir / f"matmul{n}.mlir"
    t = f"tensor<{n}x{n}xf32>"
    payload.write_text(f"func.func @matmul(%A: {t}, %B: {t}, %C: {t}) -> {t} {{\n"
                       f"  %0 = linalg.matmul ins(%A, %B : {t}, {t}) outs(%C : {t}) -> {t}\n"
                       f"  return %0 : {t}\n}}\n")
    for line in (f"load {payload}",):
        res = ctx.registry.dispatch(line, ctx)
        assert res.ok, res.error
    info = ctx.session.inspect()
    params = get_target("cpu").select_params(info)
    spec, chosen = next(iter(params.items()))
    kv = " ".join(f"{k}={v}" for k, v in chosen.items())
    # the schedule bufferizes and vectorizes every copy in the module, so the wrapper goes after it
    for line in (f"apply {spec}{{{kv}}}", f"bench warmup=2 iterations={iterations}", "apply cpu-matmul-lower",
                 "run --check"):
        res = ctx.registry.dispatch(line, ctx)
        if not res.ok:
            raise SystemExit(f"{n}: `{line}` failed: {res.error}\n{res.detail or ''}")
    run = ctx.session.last_run
    return run["gflops"], chosen, run["check"]["passed"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="512,1024,2048")
    ap.add_argument("--iterations", type=int, default=10)
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    os.environ.setdefault("LH_WORKBENCH_STATE_DIR", tempfile.mkdtemp(prefix="lh-bench-"))
    session = Session()
    session.journal_enabled = False
    ctx = CommandContext(session, default_registry())
    results = {}
    try:
        with tempfile.TemporaryDirectory() as d:
            for n in sizes:
                wb, params, ok = workbench_gflops(ctx, n, args.iterations, Path(d))
                np1 = numpy_gflops(n, 1, max(3, args.iterations))
                npall = numpy_gflops(n, None, max(3, args.iterations))
                results[n] = (wb, np1, npall)
                print(f"{n}^3 f32: workbench {wb:7.1f} GFLOP/s (check {'ok' if ok else 'FAILED'}, {params}) | "
                      f"numpy 1 thread {np1:7.1f} | numpy all cores {npall:7.1f} | "
                      f"ratio 1t {wb / np1:.2f} all {wb / npall:.2f}", flush=True)
    finally:
        session.close()
    parts = []
    for n, (wb, np1, npall) in results.items():
        parts += [f"matmul{n}_1t_ratio={wb / np1:.3f}", f"matmul{n}_all_ratio={wb / npall:.3f}",
                  f"matmul{n}_gflops={wb:.1f}"]
    print("RESULT " + " ".join(parts))


if __name__ == "__main__":
    main()
