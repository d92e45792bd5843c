"""Old vs new CPU selections of the same fixtures, timed alternately: what a selector change (such as the
thread-count rule of workbench/common/cpu_cost.py) does to run times on this machine.

    python bench/cpu_split_ab.py --baseline-tree DIR --fixtures DIR --only a,b [--plan-threads N]
                                 [--threads N] [--rounds R] [--iterations K]

The baseline selection runs in a process of its own from `--baseline-tree` (a checkout of the old code,
e.g. `git worktree add --detach /tmp/base main`): `load`, `target cpu --threads P`, `select --apply`, `save`.
This tree selects the same fixture likewise; both get `bench` and `apply cpu-lower` and are run
(`run --inputs random --threads N`, N = P unless given: `--plan-threads 16 --threads 2` runs 16-task plans on 2
cores) round after round, old and new alternating (which goes first alternates too). Per fixture: the median and
minimum over rounds of each run's median, new/old, and the `threads` of each generic step of both plans.
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
from _common import fixture_names, run_lines  # noqa: E402

SAVE = r'''
import sys
sys.path.insert(0, ".")
from workbench.commands import CommandContext, default_registry
from workbench.session import Session
s = Session(); s.journal_enabled = False
ctx = CommandContext(s, default_registry())
for line in (f"load {sys.argv[1]}", f"target cpu --threads {sys.argv[2]}", "select --apply", f"save {sys.argv[3]}"):
    res = ctx.registry.dispatch(line, ctx)
    if not res.ok:
        raise SystemExit(f"{line}: {res.error}")
s.close()
'''


def generic_threads(session) -> list:
    return [a.step.params.get("threads") for a in session.active_steps if a.step.spec.endswith("cpu/generic.py")]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--baseline-tree", required=True, help="a checkout of the old code")
    ap.add_argument("--fixtures", default=str(ROOT / "tests" / "fixtures" / "torch"))
    ap.add_argument("--only", default="")
    ap.add_argument("--plan-threads", type=int, default=2, help="the cores both selections plan for")
    ap.add_argument("--threads", type=int, default=0, help="the cores of the runs (default: --plan-threads)")
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument("--iterations", type=int, default=20)
    args = ap.parse_args()
    os.environ.setdefault("LH_WORKBENCH_STATE_DIR", tempfile.mkdtemp(prefix="lh-bench-state-"))
    sys.path.insert(0, str(ROOT))
    from workbench.commands import CommandContext, default_registry
    from workbench.session import Session

    fixtures = Path(args.fixtures)
    plan, threads = args.plan_threads, args.threads or args.plan_threads
    work = Path(tempfile.mkdtemp(prefix="lh-split-ab-"))
    print(f"plans for {plan} cores, runs on {threads}; baseline {args.baseline_tree}")
    for name in fixture_names(fixtures, args.only):
        saved = work / f"old_{name}.yaml"
        subprocess.run([sys.executable, "-c", SAVE, str(fixtures / f"{name}.mlir"), str(plan), str(saved)],
                       cwd=args.baseline_tree, check=True, env={**os.environ, "PYTHONPATH": args.baseline_tree})
        sessions = {}
        for which in ("old", "new"):
            s = Session()
            s.journal_enabled = False
            ctx = CommandContext(s, default_registry())
            first = ([f"replay {saved}"] if which == "old" else
                     [f"load {fixtures / (name + '.mlir')}", f"target cpu --threads {plan}", "select --apply"])
            run_lines(ctx, first + [f"bench warmup=2 iterations={args.iterations}", "apply cpu-lower"], f"{name} {which}")
            s.run_allowed = True    # (the baseline's selection, saved by this bench)
            sessions[which] = (s, ctx)
        times: dict[str, list[float]] = {"old": [], "new": []}
        for r in range(args.rounds):
            for which in (("old", "new") if r % 2 == 0 else ("new", "old")):
                res = run_lines(sessions[which][1], [f"run --inputs random --threads {threads}"], f"{name} {which}")
                times[which].append(res.data["run"]["median_s"] * 1e3)
        old, new = times["old"], times["new"]
        print(f"{name:16s} old {statistics.median(old):9.4f} ms (min {min(old):9.4f})  new {statistics.median(new):9.4f} ms "
              f"(min {min(new):9.4f})  new/old {statistics.median(new) / statistics.median(old):5.2f}  threads old "
              f"{generic_threads(sessions['old'][0])} new {generic_threads(sessions['new'][0])}", flush=True)
        for s, _ in sessions.values():
            s.close()


if __name__ == "__main__":
    main()
