"""What `run --check` costs beyond the run itself, for f32 matmuls up to 4096^3 on the CPU.

For each size: load a tensor matmul, apply the shipped schedule with the CPU selector's parameters,
`bench`, `cpu-matmul-lower`; then time (wall clock, whole command) `run` and `run --check` (a fresh
session each, so the reference cache is cold). The check's reference is the unscheduled payload through
`cpu-reference` (BLAS for plain f32 matmuls, loops for the rest); before, it was `cpu-naive` (scalar
loops): that baseline is measured in the same run for the sizes where it finishes (--naive-up-to).

    python bench/check_overhead.py [--sizes 1024,2048,4096] [--naive-up-to 1024]
Last line: RESULT check4096_overhead_s=... check4096_overhead_in_numpy_matmuls=... check1024_vs_naive_ratio=...
(ratio > 1: the new check is faster; the overhead includes one more call of the scheduled code, which the
check needs, the reference's compile, BLAS run and transfers, and the comparison)
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from _common import run_lines, write_matmul_payload  # noqa: E402  (bench/_common.py)
from workbench.commands import CommandContext, default_registry  # noqa: E402
from workbench.session import Session  # noqa: E402
from workbench.targets import get_target  # noqa: E402


def timed_run(payload: Path, n: int, run_line: str, reference: str | None = None) -> tuple[float, dict]:
    ctx = CommandContext(Session(), default_registry())
    try:
        if reference:
            ctx.session.target.__class__.reference_lowering = reference
        run_lines(ctx, (f"load {payload}",), str(n))
        info = ctx.session.inspect()
        spec, chosen = get_target("cpu").select_params(info)[0]
        kv = " ".join(f"{k}={v}" for k, v in chosen.items())
        run_lines(ctx, ("bench warmup=1 iterations=3", f"apply {spec}{{{kv}}}", "apply cpu-matmul-lower"), str(n))
        t0 = time.perf_counter()
        run_lines(ctx, (run_line,), str(n))
        return time.perf_counter() - t0, ctx.session.last_run
    finally:
        if reference:
            ctx.session.target.__class__.reference_lowering = "cpu-reference"
        ctx.session.close()


def numpy_matmul_seconds(n: int) -> float:
    """One numpy f32 n^3 matmul on all cores, now: how loaded the machine is (others share it)."""
    import numpy as np

    a = np.random.default_rng(0).uniform(-1, 1, (n, n)).astype(np.float32)
    t0 = time.perf_counter()
    a @ a
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1024,2048,4096")
    ap.add_argument("--naive-up-to", type=int, default=1024, help="also time the old cpu-naive reference up to this size")
    args = ap.parse_args()
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        for n in (int(s) for s in args.sizes.split(",")):
            payload = write_matmul_payload(Path(tmp) / f"matmul{n}.mlir", n)
            plain_s, _ = timed_run(payload, n, "run")
            checked_s, run = timed_run(payload, n, "run --check")
            check = run["check"]
            if not check or not check.get("passed"):
                raise SystemExit(f"{n}: check did not pass: {check}")
            overhead = checked_s - plain_s
            numpy_s = numpy_matmul_seconds(n)
            print(f"{n}^3: run {plain_s:.2f} s, run --check {checked_s:.2f} s: the check adds {overhead:.2f} s "
                  f"(max rel err {check['max_rel_err']:.2e}); numpy A @ B takes {numpy_s:.2f} s now", flush=True)
            results[f"check{n}_overhead_s"] = f"{overhead:.2f}"
            results[f"check{n}_overhead_in_numpy_matmuls"] = f"{overhead / numpy_s:.2f}"
            if n <= args.naive_up_to:
                naive_s, nrun = timed_run(payload, n, "run --check", reference="cpu-naive")
                naive_overhead = naive_s - plain_s
                print(f"{n}^3: with the cpu-naive reference the check adds {naive_overhead:.2f} s", flush=True)
                results[f"check{n}_vs_naive_ratio"] = f"{naive_overhead / max(overhead, 1e-3):.2f}"
    print("RESULT " + " ".join(f"{k}={v}" for k, v in results.items()))


if __name__ == "__main__":
    main()
