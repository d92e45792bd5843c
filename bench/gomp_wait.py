"""A multi-threaded run beside other load: the workbench's wait setting vs libgomp's long spin, same run.

Where other tasks have CPUs, the cpu target's runs let their OpenMP threads sleep soon at a parallel
loop's end (GOMP_SPINCOUNT=1000, workbench/common/parallel_runtime.py); libgomp's default spin (300000)
keeps a finished thread on its core while a team mate waits behind the other load. This script runs a
payload (default examples/mlp.mlir, selector path) on all usable cores with `--busy K` busy-looping
processes beside it, alternating the workbench's setting with an explicit `GOMP_SPINCOUNT=300000` (the
user's choice, which the workbench leaves alone), then both again with the machine idle.

    python bench/gomp_wait.py [--payload FILE] [--busy K] [--repeats R]
Last line: RESULT busy_ratio=... idle_ratio=... (spinning time / workbench time: > 1, the workbench faster)
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from unittest import mock

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from _common import run_lines, usable_cores  # noqa: E402  (bench/_common.py)
from workbench.commands import CommandContext, default_registry  # noqa: E402
from workbench.session import Session  # noqa: E402

SPIN = {"GOMP_SPINCOUNT": "300000"}   # libgomp's default, set explicitly: the workbench leaves a user's choice


def timed(ctx, env: dict, threads: int) -> float:
    with mock.patch.dict(os.environ, env):
        res = ctx.registry.dispatch(f"run --threads {threads}", ctx)
    assert res.ok, res.error
    return res.data["run"]["median_s"]


def measure(ctx, threads: int, repeats: int) -> tuple[float, float]:
    ours, spin = [], []
    for _ in range(repeats):
        ours.append(timed(ctx, {}, threads))
        spin.append(timed(ctx, SPIN, threads))
    return statistics.median(ours), statistics.median(spin)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--payload", default=str(ROOT / "examples" / "mlp.mlir"))
    ap.add_argument("--busy", type=int, default=1, help="busy-looping processes beside the run")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--iterations", type=int, default=20)
    args = ap.parse_args()
    for name in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT"):
        os.environ.pop(name, None)
    os.environ.setdefault("LH_WORKBENCH_STATE_DIR", tempfile.mkdtemp(prefix="lh-bench-"))
    threads = usable_cores()
    session = Session()
    session.journal_enabled = False
    ctx = CommandContext(session, default_registry())
    try:
        run_lines(ctx, (f"load {args.payload}", f"target cpu --threads {threads}", "select --apply",
                        f"bench warmup=2 iterations={args.iterations}", "apply cpu-lower"), "prepare")
        spinners = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(args.busy)]
        try:
            busy_ours, busy_spin = measure(ctx, threads, args.repeats)
        finally:
            for p in spinners:
                p.kill()
                p.wait()
        idle_ours, idle_spin = measure(ctx, threads, args.repeats)
    finally:
        session.close()
    print(f"{Path(args.payload).name} on {threads} threads, {args.busy} busy process(es) beside it: workbench "
          f"{busy_ours * 1e3:.3f} ms, GOMP_SPINCOUNT=300000 {busy_spin * 1e3:.3f} ms; idle: {idle_ours * 1e3:.3f} / "
          f"{idle_spin * 1e3:.3f} ms")
    print(f"RESULT busy_ratio={busy_spin / busy_ours:.3f} idle_ratio={idle_spin / idle_ours:.3f} threads={threads} "
          f"busy={args.busy}")


if __name__ == "__main__":
    main()
