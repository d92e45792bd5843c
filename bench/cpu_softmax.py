"""f32 row softmax through the shipped CPU schedule vs numpy, measured in the same run.

For each shape: a session loads a softmax payload in destination-passing style
(`linalg.softmax ins(%x) outs(%out)`, the output buffer is an argument like matmul's C), inserts the
benchmark wrapper, applies `pipelines/cpu/softmax.py[gen=softmax_rows]` (parallel=0 pinned to 1 core,
`run --threads 1`; parallel=1 on all cores: the row forall on MLIR's async runtime) and
`cpu-softmax-lower`, then `run --check`. numpy computes `e = exp(x - max); e / sum(e)` in float32
(numpy's exp is SIMD; numpy is single-threaded for these ops, so its all-cores time is the same
computation, measured again). Ratios are workbench / numpy throughput (> 1: the workbench is faster).

    python bench/cpu_softmax.py [--shapes 4096x4096,256x16384] [--iterations 10]
Last line: RESULT softmax4096_1t_ratio=... softmax4096_all_ratio=... ...
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

from _common import run_lines, usable_cores  # noqa: E402  (bench/_common.py)
from workbench.commands import CommandContext, default_registry  # noqa: E402
from workbench.session import Session  # noqa: E402


def write_softmax_payload(path: Path, m: int, n: int) -> Path:
    t = f"tensor<{m}x{n}xf32>"
    path.write_text(f"func.func @softmax(%x: {t}, %out: {t}) -> {t} {{\n"
                    f"  %0 = linalg.softmax dimension(1) ins(%x : {t}) outs(%out : {t}) -> {t}\n"
                    f"  return %0 : {t}\n}}\n")
    return path


def numpy_softmax_s(m: int, n: int, repeats: int) -> float:
    """Median seconds of the float32 numpy softmax on seeded inputs."""
    x = np.random.default_rng(0).uniform(-1, 1, (m, n)).astype(np.float32)

    def softmax(v):
        e = np.exp(v - v.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)

    softmax(x)
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        softmax(x)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def workbench_s(ctx: CommandContext, payload: Path, m: int, n: int, iterations: int, threads: int) -> tuple[float, dict, bool]:
    sys.path.insert(0, str(ROOT / "pipelines" / "cpu"))
    import softmax

    params = softmax.default_params(m, n, threads)
    kv = " ".join(f"{k}={v}" for k, v in params.items())
    run_lines(ctx, (f"load {payload}", f"bench warmup=2 iterations={iterations}",
                    f"apply pipelines/cpu/softmax.py[gen=softmax_rows]{{{kv}}}", "apply cpu-softmax-lower",
                    f"run --check --threads {threads}"), f"{m}x{n}")
    run = ctx.session.last_run
    return run["median_s"], params, run["check"]["passed"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shapes", default="4096x4096,256x16384")
    ap.add_argument("--iterations", type=int, default=10)
    args = ap.parse_args()
    shapes = [tuple(int(v) for v in s.split("x")) for s in args.shapes.split(",")]
    os.environ.setdefault("LH_WORKBENCH_STATE_DIR", tempfile.mkdtemp(prefix="lh-bench-"))
    session = Session()
    session.journal_enabled = False
    ctx = CommandContext(session, default_registry())
    cores = usable_cores()
    results = {}
    try:
        with tempfile.TemporaryDirectory() as d:
            for m, n in shapes:
                payload = write_softmax_payload(Path(d) / f"softmax{m}x{n}.mlir", m, n)
                wb1, p1, ok1 = workbench_s(ctx, payload, m, n, args.iterations, 1)
                wball, pall, okall = workbench_s(ctx, payload, m, n, args.iterations, cores)
                np1 = numpy_softmax_s(m, n, max(3, args.iterations))
                gb = m * n * 4 * 2 / 1e9  # read x, write the result
                results[(m, n)] = (wb1, wball, np1)
                print(f"{m}x{n} f32: 1 core: workbench {wb1 * 1e3:7.2f} ms ({gb / wb1:5.1f} GB/s, check "
                      f"{'ok' if ok1 else 'FAILED'}) vs numpy {np1 * 1e3:7.2f} ms -> {np1 / wb1:.2f} | {cores} cores: "
                      f"workbench {wball * 1e3:7.2f} ms (check {'ok' if okall else 'FAILED'}) -> {np1 / wball:.2f}",
                      flush=True)
                print(f"    params 1 core {p1}; {cores} cores {pall}", flush=True)
    finally:
        session.close()
    parts = []
    for (m, n), (wb1, wball, np1) in results.items():
        tag = f"softmax{m}" if m == n else f"softmax{m}x{n}"
        parts += [f"{tag}_1t_ratio={np1 / wb1:.3f}", f"{tag}_all_ratio={np1 / wball:.3f}",
                  f"{tag}_1t_ms={wb1 * 1e3:.2f}", f"{tag}_all_ms={wball * 1e3:.2f}", f"{tag}_numpy_ms={np1 * 1e3:.2f}"]
    print("RESULT " + " ".join(parts))


if __name__ == "__main__":
    main()
