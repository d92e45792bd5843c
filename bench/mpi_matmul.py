"""Sharded f32 matmul on 1 vs 2 MPI ranks through the mpi target (partition -> schedule -> bench -> lower).

For each rank count R a payload `C + A @ B` (N x N x N) is written with a 1-D grid of R
processes: A and C split by rows, B replicated (no communication). A session applies
`mpi-partition` (per-rank M = N / R), the shipped CPU matmul schedule with the CPU selector's
parameters for the per-rank shape, `bench`, `mpi-lower`, then `run --target mpi --ranks R`
(per-iteration time = slowest rank). `--check` also compares with the unsharded reference
(naive loops: slow at 2048, so off by default; the tests check smaller sizes).

    python bench/mpi_matmul.py [--size 2048] [--iterations 10] [--check]
Last line: RESULT speedup_2_ranks_ratio=... (median time on 1 rank / on 2 ranks)
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from _common import run_lines  # noqa: E402  (bench/_common.py)
from workbench.commands import CommandContext, default_registry  # noqa: E402
from workbench.session import Session  # noqa: E402
from workbench.targets import get_target  # noqa: E402


def payload(n: int, ranks: int) -> str:
    t = f"tensor<{n}x{n}xf32>"
    return f"""module attributes {{mpi.dlti = #dlti.map<"MPI:Implementation" = "MPICH">}} {{
  shard.grid @grid(shape = {ranks}) {{sym_visibility = "private"}}
  func.func @matmul(%A: {t}, %B: {t}, %C: {t}) -> {t} {{
    %rows = shard.sharding @grid split_axes = [[0]] : !shard.sharding
    %repl = shard.sharding @grid split_axes = [[]] : !shard.sharding
    %a = shard.shard %A to %rows : {t}
    %b = shard.shard %B to %repl : {t}
    %c = shard.shard %C to %rows : {t}
    %0 = linalg.matmul ins(%a, %b : {t}, {t}) outs(%c : {t}) -> {t}
    %r = shard.shard %0 to %rows annotate_for_users : {t}
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
    params = get_target("cpu").select_params(ctx.session.inspect())  # per-rank shape
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
    ap.add_argument("--iterations", type=int, default=10)
    ap.add_argument("--check", action="store_true", help="compare with the unsharded reference (slow)")
    args = ap.parse_args()
    os.environ.setdefault("LH_WORKBENCH_STATE_DIR", tempfile.mkdtemp(prefix="lh-bench-"))
    ok, why = get_target("mpi").can_run()
    if not ok:
        raise SystemExit(f"mpi target unavailable: {why}")
    session = Session()
    session.journal_enabled = False
    ctx = CommandContext(session, default_registry())
    results = {}
    try:
        with tempfile.TemporaryDirectory() as d:
            for ranks in (1, 2):
                r = run(ctx, args.size, ranks, args.iterations, args.check, Path(d))
                results[ranks] = r
                chk = r["check"]
                per_rank = [f"{min(t) * 1e3:.1f}" for t in r["rank_times_s"]]
                print(f"{args.size}^3 f32 on {ranks} rank{'s' if ranks > 1 else ''}: median {r['median_s'] * 1e3:.1f} ms "
                      f"(min {r['min_s'] * 1e3:.1f} ms; per-rank min {', '.join(per_rank)} ms), "
                      f"{r['gflops']:.1f} GFLOP/s"
                      + (f", check {'ok' if chk['passed'] else 'FAILED'}" if chk else "")
                      + f" | params {r['params']}", flush=True)
    finally:
        session.close()
    # on a 2-core machine anything else running takes a core from one of the two ranks
    print(f"load average (1 min) at the end: {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")
    speedup = results[1]["median_s"] / results[2]["median_s"]
    print(f"RESULT speedup_2_ranks_ratio={speedup:.3f} gflops_1_rank={results[1]['gflops']:.1f} "
          f"gflops_2_ranks={results[2]['gflops']:.1f}")


if __name__ == "__main__":
    main()
