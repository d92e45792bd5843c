"""The torch corpus on the `cuda` target through the selector path, against eager torch on the same GPU.

    python bench/gpu_models.py [--fixtures tests/fixtures/torch] [--only a,b] [--jobs N] [--iterations K]
                               [--compile-only] [--torch-python PY] [--no-torch] [--json out.json]

For every exported fixture (NAME.mlir + NAME.expected.json, written by scripts/export_corpus.py):
`load`, `target cuda`, `select --apply` (the cuda selector's schedules), `bench`, `apply cuda-lower`,
`run --check` (torch's inputs from the sidecar; the outputs compared with the unscheduled payload on
the CPU reference and with torch's outputs, rtol 1e-3 / atol 1e-4 for f32 as on the CPU path), then a
second `run` for the time, alone on the GPU. Fixtures are compiled and checked by --jobs processes at
once (default: usable cores - 2); the timed runs take a lock, so one kernel sequence at a time uses
the GPU. `--compile-only` stops after `apply cuda-lower` (no GPU needed: finds compile failures here).

The same modules are timed in eager torch on the GPU (examples/torch/corpus.py, the fixture's inputs,
CUDA events around 20 calls after warm-up, median of 5) in a process of its own, before our runs.
Times are per call of the entry function (device buffers in place, a stream synchronize after each
call, or with --calls-per-sample N one after N back-to-back calls); both sides are launch-bound at the
fixtures' test sizes.

A fixture is covered when every step works and both checks pass. Per fixture: ok / FAILED with the
step and the first error line; the failures are grouped by their first error line at the end.
Last line: RESULT coverage=K/N geomean_vs_torch_ratio=... torch_timed=... (ratio: torch time / ours,
> 1: the workbench is faster; geometric mean over the covered fixtures torch timed).
"""
from __future__ import annotations

import argparse
import json
import math
import multiprocessing as mp
import os
import re
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
from _common import (TORCH_PRELUDE, fixture_names, geomean, run_torch_worker, torch_python,  # noqa: E402
                     usable_cores)

# -- the torch side (runs under the torch Python, on the GPU: only torch, numpy and json) ------------
TORCH_WORKER = TORCH_PRELUDE + r'''
names, fixtures = sys.argv[2].split(","), sys.argv[3]
dev = torch.device("cuda")
torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False

for name in names:
    entry = corpus.CORPUS.get(name)
    if entry is None:
        print(json.dumps({"name": name, "error": "not in the corpus"})); continue
    try:
        side = json.load(open(f"{fixtures}/{name}.expected.json"))
        module = entry.module("test").eval()
        if entry.dtype == "bf16":
            module = module.to(torch.bfloat16)
        module = module.to(dev)
        xs = [tensor(f"{fixtures}/{p}", entry.dtype).to(dev) for p in side["inputs"]]
        print(json.dumps({"name": name, "time": cuda_median_s(module, xs)}), flush=True)
    except Exception as e:
        print(json.dumps({"name": name, "error": f"{type(e).__name__}: {e}".splitlines()[0]}), flush=True)
'''


def torch_times(python: str, fixtures: Path, names: list[str]) -> dict:
    return run_torch_worker(python, TORCH_WORKER, [",".join(names), str(fixtures)], timeout=1800)


# -- the workbench side ------------------------------------------------------------------------------
_LOCK = None


def _init(lock) -> None:
    global _LOCK
    _LOCK = lock
    sys.path.insert(0, str(ROOT))


def first_line(text: str) -> str:
    return next((ln.strip() for ln in str(text).splitlines() if ln.strip()), "?")


def ours(job: tuple) -> dict:
    """{"name", "ok", "stage", "error", "schedules", "time"} for one fixture through the selector path."""
    name, fixtures, iterations, timeout, compile_only, calls_per_sample = job
    from workbench.commands import CommandContext, default_registry
    from workbench.session import Session

    s = Session()
    s.journal_enabled = False
    ctx = CommandContext(s, default_registry())
    rec: dict = {"name": name, "ok": False}
    t0 = time.perf_counter()
    lines = [f"load {Path(fixtures) / (name + '.mlir')}", "target cuda", "select --apply",
             f"bench warmup=2 iterations={iterations} calls_per_sample={calls_per_sample}", "apply cuda-lower"]
    if not compile_only:
        lines.append(f"run --check --timeout {timeout}")
    try:
        for line in lines:
            res = ctx.registry.dispatch(line, ctx)
            if not res.ok and line.startswith("select") and "nothing to select" in str(res.error):
                rec["schedules"] = []  # no op the selector schedules: cuda-lower maps it naively
                continue
            if not res.ok:
                rec["stage"] = line.split()[0] + (" " + line.split()[1] if line.startswith(("apply", "select")) else "")
                rec["error"] = first_line(res.error)
                return rec
            if line.startswith("select"):
                rec["schedules"] = [e["schedule"].split("/")[-1] for e in (res.data or {}).get("selections", [])]
        if not compile_only:
            run = s.last_run
            if not run["check"]["passed"] or not (run.get("expected_check") or {}).get("passed", False):
                rec["stage"] = "check"
                bad = run["check"] if not run["check"]["passed"] else run.get("expected_check") or {}
                rec["error"] = "outputs differ: " + first_line(json.dumps({k: v for k, v in bad.items()
                                                                          if k not in ("outputs",)})[:300])
                return rec
            with _LOCK:  # the timed run alone on the GPU
                res = ctx.registry.dispatch(f"run --timeout {timeout}", ctx)
            if not res.ok:
                rec["stage"], rec["error"] = "run (timed)", first_line(res.error)
                return rec
            rec["time"] = res.data["run"]["median_s"]
        rec["ok"] = True
        return rec
    except Exception as e:  # a bug of the bench or the session: a failure of this fixture, not of the bench
        rec["stage"], rec["error"] = "bench", f"{type(e).__name__}: {first_line(e)}"
        return rec
    finally:
        rec["wall_s"] = round(time.perf_counter() - t0, 1)
        s.close()


def cause(error: str) -> str:
    """The first error line without its numbers, names and SSA values: failures grouped by cause."""
    error = re.sub(r"step \d+ \(pipeline [^)]*\) failed \((stage \d+ of \d+: )?", "", error)
    e = re.sub(r"%[\w#]+|@[\w.$-]+|\b\d+(x\d+)*x?\w*\b|'[^']*'|\"[^\"]*\"", "_", error)
    return e[:110]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--fixtures", default=str(ROOT / "tests" / "fixtures" / "torch"))
    ap.add_argument("--only", default="", help="comma-separated fixture names, or @FILE (bench/device_corpus.txt: "
                                               "the fixed set for comparisons across sessions)")
    ap.add_argument("--shard", default="", help="K/N: the K-th (from 0) of N interleaved parts of the fixtures")
    ap.add_argument("--jobs", type=int, default=0, help="fixtures compiled and checked at once")
    ap.add_argument("--iterations", type=int, default=20)
    ap.add_argument("--calls-per-sample", type=int, default=1,
                    help="back-to-back calls in each timed sample, one stream synchronization a sample (as torch's "
                         "events around 20 calls); 1: a synchronize after each call")
    ap.add_argument("--timeout", type=float, default=120.0, help="seconds per run")
    ap.add_argument("--compile-only", action="store_true", help="stop after `apply cuda-lower` (no GPU needed)")
    ap.add_argument("--torch-python", default=None)
    ap.add_argument("--no-torch", action="store_true")
    ap.add_argument("--json", default="", help="write every record here")
    args = ap.parse_args()
    os.environ.setdefault("LH_WORKBENCH_STATE_DIR", tempfile.mkdtemp(prefix="lh-bench-state-"))
    fixtures = Path(args.fixtures)
    names = fixture_names(fixtures, args.only, args.shard)
    jobs = args.jobs or max(1, usable_cores() - 2)
    t_start = time.perf_counter()
    python = None if (args.no_torch or args.compile_only) else torch_python(args.torch_python, "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)")
    base = torch_times(python, fixtures, names) if python else {}
    print(f"{len(names)} fixtures, {jobs} jobs; torch on the GPU: {python or 'not available'} "
          f"({time.perf_counter() - t_start:.0f} s)", flush=True)
    print(f"{'fixture (ms)':28s} {'ours':>9s} {'torch':>9s} {'ratio':>6s}  schedules", flush=True)
    records, ratios = [], []
    ctx = mp.get_context("spawn")
    lock = ctx.Lock()
    work = [(n, str(fixtures), args.iterations, args.timeout, args.compile_only, args.calls_per_sample) for n in names]
    with ctx.Pool(jobs, initializer=_init, initargs=(lock,)) as pool:
        for rec in pool.imap(ours, work):
            tb = base.get(rec["name"]) or {}
            rec["torch"] = tb.get("time")
            records.append(rec)
            sched = ",".join(rec.get("schedules") or []) or "-"
            if not rec["ok"]:
                print(f"{rec['name']:28s} FAILED [{rec.get('stage')}] {rec.get('error', '')[:160]}", flush=True)
                continue
            if args.compile_only:
                print(f"{rec['name']:28s} compiled ({rec['wall_s']} s)  {sched}", flush=True)
                continue
            line = f"{rec['name']:28s} {rec['time'] * 1e3:9.4f}"
            if rec["torch"] and rec["time"] > 0:
                rec["ratio"] = rec["torch"] / rec["time"]
                ratios.append(rec["ratio"])
                line += f" {rec['torch'] * 1e3:9.4f} {rec['ratio']:6.2f}"
            else:
                line += f" {'-':>9s} {'-':>6s}"
            print(f"{line}  {sched}", flush=True)
    covered = sum(r["ok"] for r in records)
    failures = Counter(cause(f"[{r.get('stage')}] {r.get('error', '')}") for r in records if not r["ok"])
    if failures:
        print("failures by cause:")
        for c, k in failures.most_common():
            print(f"  {k:3d}  {c}")
    print(f"covered {covered}/{len(records)} in {time.perf_counter() - t_start:.0f} s")
    if args.json:
        Path(args.json).write_text(json.dumps(records, indent=1))
    what = "compiled" if args.compile_only else "coverage"
    print(f"RESULT {what}={covered}/{len(records)} geomean_vs_torch_ratio={geomean(ratios):.3f} "
          f"torch_timed={len(ratios)} calls_per_sample={args.calls_per_sample}")


if __name__ == "__main__":
    main()
