"""Serial tune vs `tune --workers N`: how soon the parallel search gets within 5% of the serial best.

One session (f32 matmul n^3, the CPU selector's dict on pipelines/cpu/matmul.py, the benchmark
wrapper, cpu-matmul-lower) is tuned twice over the same space with the same number of trials and the
same TPE seed, into two fresh studies: first with one worker, then with `--workers N` (compilations
overlap, timed runs take turns on the machine-wide lock, so the timings of both are comparable;
`--measure-slots K` lets K go at once, each on a core of its own).
Every finished trial's time and best-so-far are recorded from the progress events.

    python bench/tune_scaling.py [--n 1024] [--trials 32] [--workers 8]

Reported: serial wall time and best; the parallel tune's wall time, its best, and the time at which
its best-so-far first came within 5% of the serial best.
Last line: RESULT time_to_within5_ratio=<serial wall / parallel time to within 5%> (goal >= 5 with
8 workers on 16 cores) wall_ratio=<serial wall / parallel wall> best_ratio=<serial best / parallel best>
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from _common import MATMUL_TUNE_SPACE, run_lines, usable_cores, write_matmul_payload  # noqa: E402  (bench/_common.py)
from workbench.commands import CommandContext, default_registry  # noqa: E402
from workbench.session import Session  # noqa: E402

SPACE = MATMUL_TUNE_SPACE


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=1024)
    ap.add_argument("--trials", type=int, default=32)
    ap.add_argument("--workers", type=int, default=8)
    ap.add_argument("--iterations", type=int, default=5)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--measure-slots", type=int, default=0,
                    help="timed runs at once in the parallel tune, each on a core of its own (default 1: one at a time)")
    args = ap.parse_args()
    os.environ.setdefault("LH_WORKBENCH_STATE_DIR", tempfile.mkdtemp(prefix="lh-tune-scaling-"))
    session = Session()
    session.journal_enabled = False
    ctx = CommandContext(session, default_registry(), progress=lambda m: print("  ..", m, flush=True))
    events: list[tuple[float, float | None]] = []

    def on_event(ev: dict, message: str) -> None:
        if ev.get("phase") == "trial":
            events.append((time.monotonic(), ev.get("best_s")))
            print("  ..", message, flush=True)

    ctx.progress_event = on_event
    print(f"f32 matmul {args.n}^3, {args.trials} TPE trials, {usable_cores()} usable cores", flush=True)
    runs = {}
    try:
        with tempfile.TemporaryDirectory() as d:
            payload = write_matmul_payload(Path(d) / f"matmul{args.n}.mlir", args.n)
            run_lines(ctx, [f"load {payload}", "select --apply", f"bench warmup=1 iterations={args.iterations}",
                            "apply cpu-matmul-lower"])
            for workers in (1, args.workers):
                events.clear()
                t0 = time.monotonic()
                slots = f"--measure-slots {args.measure_slots} " if args.measure_slots and workers > 1 else ""
                res = run_lines(ctx, [f"tune 1 --workers {workers} {slots}--trials {args.trials} --sampler tpe "
                                      f"--seed {args.seed} --iterations {args.iterations} --warmup 1 --no-baseline "
                                      f"--confirm 0 --storage {Path(d) / f'w{workers}.db'} {SPACE}"])
                wall = time.monotonic() - t0
                best = res.data["tune"]["best"]["median_s"]
                runs[workers] = {"wall": wall, "best": best, "series": [(t - t0, b) for t, b in events]}
                if workers > 1:
                    print(f"measurement slots (one core each): {res.data['tune'].get('measure_slots') or 'none: one lock'}",
                          flush=True)
                print(f"workers={workers}: {wall:.1f} s, best {best * 1e3:.3f} ms "
                      f"({2 * args.n ** 3 / best / 1e9:.1f} GFLOP/s)", flush=True)
    finally:
        session.close()
    serial, par = runs[1], runs[args.workers]
    target = serial["best"] * 1.05
    reached = next((t for t, b in par["series"] if b is not None and b <= target), None)
    if reached is None:
        print(f"the {args.workers}-worker tune never came within 5% of the serial best", flush=True)
        reached = par["wall"] * 10  # a penalty: the ratio then reports failure (< goal)
    else:
        print(f"{args.workers} workers within 5% of the serial best after {reached:.1f} s "
              f"(serial tune: {serial['wall']:.1f} s)", flush=True)
    print(f"RESULT time_to_within5_ratio={serial['wall'] / reached:.3f} wall_ratio={serial['wall'] / par['wall']:.3f} "
          f"best_ratio={serial['best'] / par['best']:.3f} workers={args.workers} trials={args.trials} n={args.n}",
          flush=True)


if __name__ == "__main__":
    main()
