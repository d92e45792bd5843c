"""f32 matmul through the shipped CPU pipeline vs numpy `A @ B`, measured in the same run.

For each size: a session loads a tensor matmul payload, inserts the benchmark wrapper, applies
`pipelines/cpu/matmul.py[gen=matmul_tiling]` with the CPU selector's parameters and the CPU
lowering, then `run --check` (isolated JIT run, timed with rtclock inside the wrapper).
numpy is timed on 1 thread (threadpoolctl) and on all cores; the workbench runs the single-core
schedule pinned to 1 core (`run --threads 1`) and `matmul_parallel.py` (forall over N chunks on MLIR's
async runtime) on all cores. Ratios are workbench / numpy throughput (> 1: the workbench is faster).

    python bench/cpu_matmul.py [--sizes 512,1024,2048] [--iterations 10]
Last line: RESULT matmul1024_1t_ratio=... matmul1024_all_ratio=... ...
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path


ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from _common import numpy_matmul_gflops, run_lines, usable_cores, write_matmul_payload  # noqa: E402  (bench/_common.py)
from workbench.commands import CommandContext, default_registry  # noqa: E402
from workbench.session import Session  # noqa: E402
from workbench.targets import get_target  # noqa: E402


def workbench_gflops(ctx: CommandContext, n: int, iterations: int, workdir: Path, threads: int) -> tuple[float, dict, bool]:
    """GFLOP/s of the shipped schedule: single-core (`matmul.py`, run pinned to 1 core) when threads == 1,
    else the forall-parallel variant (`matmul_parallel.py`) on `threads` cores."""
    payload = write_matmul_payload(workdir / f"matmul{n}.mlir", n)
    res = ctx.registry.dispatch(f"load {payload}", ctx)
    assert res.ok, res.error
    if threads == 1:
        info = ctx.session.inspect()
        (spec, chosen), = get_target("cpu").select_params(info)  # one matmul: one whole-module step
        lowering = "cpu-matmul-lower"
    else:
        sys.path.insert(0, str(ROOT / "pipelines" / "cpu"))
        import matmul_parallel

        spec = "pipelines/cpu/matmul_parallel.py[gen=matmul_parallel]"
        chosen = matmul_parallel.default_params(n, n, n, threads)
        lowering = "cpu-matmul-parallel-lower"
    kv = " ".join(f"{k}={v}" for k, v in chosen.items())
    run_lines(ctx, (f"bench warmup=2 iterations={iterations}", f"apply {spec}{{{kv}}}", f"apply {lowering}",
                    f"run --check --threads {threads}"), str(n))
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
    cores = usable_cores()
    try:
        with tempfile.TemporaryDirectory() as d:
            for n in sizes:
                wb1, params1, ok1 = workbench_gflops(ctx, n, args.iterations, Path(d), 1)
                wball, paramsall, okall = workbench_gflops(ctx, n, args.iterations, Path(d), cores)
                np1 = numpy_matmul_gflops(n, 1, max(3, args.iterations))
                npall = numpy_matmul_gflops(n, None, max(3, args.iterations))
                results[n] = (wb1, wball, np1, npall)
                print(f"{n}^3 f32: 1 core: workbench {wb1:6.1f} GFLOP/s (check {'ok' if ok1 else 'FAILED'}) vs numpy "
                      f"{np1:6.1f} -> {wb1 / np1:.2f} | {cores} cores: workbench {wball:6.1f} (check "
                      f"{'ok' if okall else 'FAILED'}) vs numpy {npall:6.1f} -> {wball / npall:.2f}", flush=True)
                print(f"    params 1 core {params1}; {cores} cores {paramsall}", flush=True)
    finally:
        session.close()
    parts = []
    for n, (wb1, wball, np1, npall) in results.items():
        parts += [f"matmul{n}_1t_ratio={wb1 / np1:.3f}", f"matmul{n}_all_ratio={wball / npall:.3f}",
                  f"matmul{n}_1t_gflops={wb1:.1f}", f"matmul{n}_all_gflops={wball:.1f}"]
    print("RESULT " + " ".join(parts))


if __name__ == "__main__":
    main()
