"""Sharded f32 matmul on 1, 2, 4 and 8 MPI ranks through the mpi target, with the parallel efficiency.

For each rank count R a payload `C + A @ B` (N x N x N) is written on a grid of R processes:
1-D for R <= 2 (A and C split by rows, B replicated), 2-D beyond (2x2 for 4, 2x4 for 8: M split
over grid axis 0, N over axis 1; A by rows, B by columns, C by blocks; no communication). A
session applies `mpi-partition` (per-rank shapes), the shipped CPU matmul schedule with the CPU
selector's parameters for the per-rank shape, `bench`, `mpi-lower`, then `run --target mpi`
(per-iteration time = slowest rank). Parallel efficiency on R ranks = t(1) / (R * t(R)).
`--check` also compares with the unsharded reference (naive loops: slow at 2048+).
Rank counts above the usable cores are skipped unless `--oversubscribe` (then only correctness
means anything).

    python bench/mpi_matmul.py [--size 4096] [--ranks 1,2,4,8] [--iterations 10] [--check]
Last line: RESULT efficiency_2_ratio=... efficiency_4_ratio=... efficiency_8_ratio=...
  speedup_2_ratio=... (t(1)/t(R)) gflops_1=... gflops_R=...
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from _common import run_lines, usable_cores  # noqa: E402  (bench/_common.py)
from workbench.commands import CommandContext, default_registry  # noqa: E402
from workbench.session import Session  # noqa: E402
from workbench.targets import get_target  # noqa: E402


GRIDS = {1: (1,), 2: (2,), 4: (2, 2), 8: (2, 4), 16: (4, 4)}


def payload(n: int, ranks: int) -> str:
    t = f"tensor<{n}x{n}xf32>"
    grid = GRIDS.get(ranks, (ranks,))
    if len(grid) == 1:
        sa, sb, sc = "[[0]]", "[[]]", "[[0]]"
    else:
        sa, sb, sc = "[[0]]", "[[], [1]]", "[[0], [1]]"
    return f"""module attributes {{mpi.dlti = #dlti.map<"MPI:Implementation" = "MPICH">}} {{
  shard.grid @grid(shape = {'x'.join(map(str, grid))}) {{sym_visibility = "private"}}
  func.func @matmul(%A: {t}, %B: {t}, %C: {t}) -> {t} {{
    %sa = shard.sharding @grid split_axes = {sa} : !shard.sharding
    %sb = shard.sharding @grid split_axes = {sb} : !shard.sharding
    %sc = shard.sharding @grid split_axes = {sc} : !shard.sharding
    %a = shard.shard %A to %sa : {t}
    %b = shard.shard %B to %sb : {t}
    %c = shard.shard %C to %sc : {t}
    %0 = linalg.matmul ins(%a, %b : {t}, {t}) outs(%c : {t}) -> {t}
    %r = shard.shard %0 to %sc annotate_for_users : {t}
    return %r : {t}
  }}
}}
"""


def run(ctx: CommandContext, n: int, ranks: int, iterations: int, check: bool, workdir: Path) -> dict:
    path = workdir / f"sharded_matmul{n}_{ranks}.mlir"
    path.write_text(payload(n, ranks))

    def do(line: str):
        return run_lines(ctx, [line], f"{ranks} ranks")

    do(f"load {path}")
    do("apply mpi-partition")
    params = get_target("mpi").select_params(ctx.session.inspect())  # per-rank shape, one core per rank
    (spec, chosen), = params  # one matmul: one whole-module step
    kv = " ".join(f"{k}={v}" for k, v in chosen.items())
    # the schedule bufferizes (and vectorizes every copy): the wrapper goes after it
    do(f"apply {spec}{{{kv}}}")
    do(f"bench warmup=1 iterations={iterations}")
    do("apply mpi-lower")
    do(f"run --target mpi --ranks {ranks} --timeout 900" + (" --check" if check else ""))
    r = dict(ctx.session.last_run)
    r["params"] = chosen
    return r


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=2048)
    ap.add_argument("--ranks", default="1,2,4,8", help="comma-separated rank counts (1 is the baseline)")
    ap.add_argument("--iterations", type=int, default=10)
    ap.add_argument("--check", action="store_true", help="compare with the unsharded reference (slow)")
    ap.add_argument("--oversubscribe", action="store_true", help="also run rank counts above the usable cores")
    args = ap.parse_args()
    os.environ.setdefault("LH_WORKBENCH_STATE_DIR", tempfile.mkdtemp(prefix="lh-bench-"))
    ok, why = get_target("mpi").can_run()
    if not ok:
        raise SystemExit(f"mpi target unavailable: {why}")
    cores = usable_cores()
    wanted = sorted({1, *(int(r) for r in args.ranks.split(",") if r)})
    counts = [r for r in wanted if r <= cores or args.oversubscribe]
    skipped = [r for r in wanted if r not in counts]
    if skipped:
        print(f"skipping {', '.join(map(str, skipped))} ranks: only {cores} usable cores (--oversubscribe runs them)")
    session = Session()
    session.journal_enabled = False
    ctx = CommandContext(session, default_registry())
    results = {}
    try:
        with tempfile.TemporaryDirectory() as d:
            for ranks in counts:
                r = run(ctx, args.size, ranks, args.iterations, args.check, Path(d))
                results[ranks] = r
                chk = r["check"]
                per_rank = [f"{min(t) * 1e3:.1f}" for t in r["rank_times_s"]]
                if r.get("rank_cpus"):
                    print(f"  {ranks} rank(s) pinned to CPUs {r['rank_cpus']}", flush=True)
                grid = "x".join(map(str, GRIDS.get(ranks, (ranks,))))
                eff = results[1]["median_s"] / (ranks * r["median_s"])
                print(f"{args.size}^3 f32 on {ranks} rank{'s' if ranks > 1 else ''} (grid {grid}): median "
                      f"{r['median_s'] * 1e3:.1f} ms (min {r['min_s'] * 1e3:.1f} ms; per-rank min "
                      f"{', '.join(per_rank)} ms), {r['gflops']:.1f} GFLOP/s, parallel efficiency {eff:.2f}"
                      + (f", check {'ok' if chk['passed'] else 'FAILED'}" if chk else "")
                      + f" | params {r['params']}", flush=True)
    finally:
        session.close()
    print(f"load average (1 min) at the end: {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")
    t1 = results[1]["median_s"]
    fields = [f"efficiency_{r}_ratio={t1 / (r * results[r]['median_s']):.3f}" for r in counts if r > 1]
    fields += [f"speedup_{r}_ratio={t1 / results[r]['median_s']:.3f}" for r in counts if r > 1]
    fields += [f"gflops_{r}={results[r]['gflops']:.1f}" for r in counts]
    print("RESULT " + " ".join(fields) + f" size={args.size} cores={cores}")


if __name__ == "__main__":
    main()
