"""Calibration of the CPU selector's thread-count rule (workbench/common/cpu_cost.py): what one parallel op
costs to dispatch on MLIR's async runtime, and how fast one core streams an elementwise op.

    python bench/cpu_dispatch.py [--threads N] [--rounds R] [--iterations K]

An f32 add of two R x 1024 tensors (`c = a + b`, 12 bytes an element) through the selector path
(`select --apply`, `bench`, `apply cpu-lower`), its generic step's `threads` set by `params` (the forall's task
count), run with `run --threads N` (default: every usable core). For each size it times the op on one task and on
2..N tasks, alternating them round after round (the box may be shared: the minimum over rounds of each median
is reported). From the smallest size (the op itself ~1 us) the dispatch cost `t(k) - t(1)` per task count k;
from the largest the one-core streaming rate (bytes / t(1)). The numbers go into cpu_cost.py's constants by
hand, with this command line.

Last line: RESULT dispatch_us=... task_us=... stream_gbs=...
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
from _common import run_lines, usable_cores  # noqa: E402


def payload(path: Path, rows: int, cols: int = 1024) -> Path:
    t = f"tensor<{rows}x{cols}xf32>"
    path.write_text(
        "#id = affine_map<(d0, d1) -> (d0, d1)>\n"
        f"func.func @add(%a: {t}, %b: {t}) -> {t} {{\n"
        f"  %e = tensor.empty() : {t}\n"
        f"  %c = linalg.generic {{indexing_maps = [#id, #id, #id], iterator_types = [\"parallel\", \"parallel\"]}}\n"
        f"       ins(%a, %b : {t}, {t}) outs(%e : {t}) {{\n"
        "  ^bb0(%x: f32, %y: f32, %o: f32):\n"
        "    %s = arith.addf %x, %y : f32\n"
        "    linalg.yield %s : f32\n"
        f"  }} -> {t}\n"
        f"  return %c : {t}\n}}\n")
    return path


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--threads", type=int, default=0, help="cores of the run (default: usable cores)")
    ap.add_argument("--tasks", default="", help="task counts to time besides 1 (default: 2..threads, and 4x threads)")
    ap.add_argument("--rows", default="4,256,4096", help="row counts of the R x 1024 add (the first: the dispatch)")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--iterations", type=int, default=200)
    args = ap.parse_args()
    os.environ.setdefault("LH_WORKBENCH_STATE_DIR", tempfile.mkdtemp(prefix="lh-bench-state-"))
    sys.path.insert(0, str(ROOT))
    from workbench.commands import CommandContext, default_registry
    from workbench.session import Session

    threads = args.threads or usable_cores()
    tasks = [int(t) for t in args.tasks.split(",")] if args.tasks else sorted({*range(2, threads + 1), 4 * threads})
    work = Path(tempfile.mkdtemp(prefix="lh-dispatch-"))
    results: dict[int, dict[int, float]] = {}
    for rows in (int(r) for r in args.rows.split(",")):
        sessions = []
        for k in [1] + tasks:
            s = Session()
            s.journal_enabled = False
            ctx = CommandContext(s, default_registry())
            run_lines(ctx, [f"load {payload(work / f'add{rows}.mlir', rows)}", f"target cpu --threads {threads}",
                            "select --apply"], "select")
            step = next(i + 1 for i, a in enumerate(s.active_steps) if a.step.spec.endswith("cpu/generic.py"))
            run_lines(ctx, [f"params {step} threads={k} split=0", f"bench warmup=20 iterations={args.iterations}",
                            "apply cpu-lower"], f"{k} tasks")
            sessions.append((k, s, ctx))
        best: dict[int, float] = {}
        for _ in range(args.rounds):
            for k, s, ctx in sessions:
                res = run_lines(ctx, [f"run --threads {threads}"], f"{k} tasks")
                best[k] = min(best.get(k, float("inf")), res.data["run"]["median_s"])
        for _, s, _ in sessions:
            s.close()
        results[rows] = best
        print(f"{rows:6d} x 1024 ({rows * 1024 * 12 / 1e6:7.3f} MB moved): "
              + "  ".join(f"{k} task{'s' if k > 1 else ''} {t * 1e6:8.2f} us" for k, t in sorted(best.items())),
              flush=True)
    small, large = min(results), max(results)
    base = results[small][1]
    extra = {k: results[small][k] - base for k in tasks}
    # the fixed part: two tasks' extra time; the per-task part: the slope over the task counts above two
    dispatch = extra[min(tasks)]
    slope = [(extra[k] - dispatch) / (k - min(tasks)) for k in tasks if k > min(tasks)]
    task = max(0.0, sorted(slope)[len(slope) // 2]) if slope else 0.0
    stream = large * 1024 * 12 / results[large][1]
    print(f"dispatch of a parallel op: {dispatch * 1e6:.1f} us for 2 tasks, + {task * 1e6:.2f} us per further task; "
          f"one core streams {stream / 1e9:.1f} GB/s ({large} x 1024 add)")
    print(f"RESULT dispatch_us={dispatch * 1e6:.2f} task_us={task * 1e6:.2f} stream_gbs={stream / 1e9:.2f}")


if __name__ == "__main__":
    main()
