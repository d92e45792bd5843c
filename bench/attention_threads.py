"""Flash attention against the row blocks on N threads (docs/attention-round16.md): the payload selected for N
threads with CpuTarget.flash_attention on (lh-flash-attention{... parallel=1}: a forall over heads x row
blocks, the key loop inside) and off (the row blocks' forall, docs/attention-round14.md), each benched,
lowered and checked (`run --check` on seeded inputs against the unscheduled payload), then both lowered
modules compiled once and called alternately in one process (bench/ab_lowered.py).

    python bench/attention_threads.py bench/payloads/sdpa_1500.mlir --threads 16 [--rounds 6] [--iterations 10]

`--against serial`: the second variant is the serial flash nest (selected for one thread) instead of the row
blocks; `--run-threads T`: both modules called on T threads (default --threads), e.g. the 2-thread parallel
flash code on 1 thread against the serial code (docs/attention-round16.md, what a block's buffers cost).

Run it with the MLIR wheels' Python from the repository root (PYTHONPATH=.).
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("payload")
    ap.add_argument("--threads", type=int, required=True)
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--iterations", type=int, default=10)
    ap.add_argument("--against", choices=("rows", "serial"), default="rows")
    ap.add_argument("--run-threads", type=int, default=None)
    args = ap.parse_args()
    out = Path(tempfile.mkdtemp(prefix="lh-attention-threads-"))
    os.environ.setdefault("LH_WORKBENCH_STATE_DIR", str(out / "state"))
    from workbench.commands import CommandContext, default_registry
    from workbench.session import Session
    from workbench.targets.cpu import CpuTarget

    session = Session()
    ctx = CommandContext(session, default_registry())

    def ok(line: str):
        res = ctx.registry.dispatch(line, ctx)
        if not res.ok:
            sys.exit(f"{line}: {res.error}")
        return res

    ok(f"load {args.payload}")
    entry = next(f for f in ok("inspect").data["inspect"]["funcs"] if not f.get("declaration"))
    modules = []
    run_threads = args.run_threads or args.threads
    second = ("rows", False, args.threads) if args.against == "rows" else ("serial", True, 1)
    for variant, flash, threads in (("flash", True, args.threads), second):
        CpuTarget.flash_attention = flash
        ok(f"load {args.payload}")
        ok(f"target cpu --threads {threads}")
        data = ok("select --apply").data
        steps = [p for p in data["prepared"] if "flash" in p] + [
            f"attention_blocks rows={s['params'].get('rows')}" for s in data["selections"]
            if "attention_blocks" in str(s["schedule"])]
        ok(f"bench warmup=2 iterations={args.iterations}")
        ok("apply cpu-lower")
        run = ok(f"run --check --threads {run_threads}")
        print(f"{variant}: {steps}; check {'passed' if run.data['run']['check']['passed'] else 'FAILED'}; "
              f"{run.summary.splitlines()[0]}", flush=True)
        path = out / f"{Path(args.payload).stem}_{variant}.mlir"
        path.write_text(session.current_ir)
        modules.append(str(path))
    session.close()
    rng = np.random.default_rng(0)
    npys = []
    for n, t in enumerate(entry["args"]):
        shape = [int(d) for d in t[t.index("<") + 1:-1].split("x")[:-1]]
        np.save(out / f"in{n}.npy", rng.standard_normal(shape).astype(np.float32))
        npys.append(str(out / f"in{n}.npy"))
    outputs = ",".join(t[t.index("<") + 1:-1] for t in entry["results"])
    subprocess.run([sys.executable, str(ROOT / "bench" / "ab_lowered.py"), *modules, "--npy", ",".join(npys),
                    "--outputs", outputs, "--rounds", str(args.rounds), "--iterations", str(args.iterations),
                    "--threads", str(run_threads)], check=True,
                   env={**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))})


if __name__ == "__main__":
    main()
