"""The torch corpus at its bench sizes through the generic CPU path, vs torch eager, same run.

Entries of examples/torch/corpus.py are exported at their `bench_shapes` with the torch Python
(scripts/export_corpus.py --shapes bench --time N: torch eager's median on one thread goes into each
sidecar), then each payload goes through `bench`, `apply cpu-lower`, `run --threads 1` (and with
--check, `run --check`: the unscheduled payload and torch's outputs). Ratios are torch time /
workbench time (> 1: the workbench is faster). The generic path lowers linalg to plain loops: this
measures where a model stands before any schedule, and what schedules gain over it.

    python bench/torch_corpus.py [--torch-python PY] [--only relu,softmax] [--iterations 3] [--check]
Last line: RESULT entries=N geomean_ratio=... <name>_ratio=...
"""
from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from _common import run_lines  # noqa: E402  (bench/_common.py)
from workbench.commands import CommandContext, default_registry  # noqa: E402
from workbench.session import Session  # noqa: E402

DEFAULT = "relu,gelu,softmax,layer_norm,sum_dim,transpose,cumsum,conv2d_1x1,batch_norm2d,max_pool2d"


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--torch-python", default=os.environ.get("LH_WORKBENCH_TORCH_PYTHON") or sys.executable)
    p.add_argument("--only", default=DEFAULT, help=f"corpus entries (default: {DEFAULT})")
    p.add_argument("--iterations", type=int, default=3)
    p.add_argument("--check", action="store_true", help="also run --check (the reference doubles the time)")
    args = p.parse_args()
    with tempfile.TemporaryDirectory(prefix="lh-torch-bench-") as tmp:
        export = subprocess.run([args.torch_python, str(ROOT / "scripts" / "export_corpus.py"), "--shapes", "bench",
                                 "--out", tmp, "--only", args.only, "--time", str(max(args.iterations, 3))],
                                capture_output=True, text=True)
        print(export.stdout.strip())
        if export.returncode not in (0, 1):
            raise SystemExit(f"export failed: {export.stderr.strip().splitlines()[-1:]}")
        session = Session()
        ctx = CommandContext(session, default_registry())
        ratios: dict[str, float] = {}
        try:
            for name in args.only.split(","):
                sidecar = Path(tmp) / f"{name}.expected.json"
                if not sidecar.is_file():
                    print(f"{name}: not exported")
                    continue
                torch_s = json.loads(sidecar.read_text())["torch_eager_median_s"]
                lines = [f"load {Path(tmp) / (name + '.mlir')}", f"bench iterations={args.iterations} warmup=1",
                         "apply cpu-lower", "run --threads 1 --timeout 600"]
                run_lines(ctx, lines, name)
                wb_s = session.last_run["median_s"]
                if args.check:
                    run_lines(ctx, ["run --check --threads 1 --timeout 600"], name)
                ratios[name] = torch_s / wb_s
                print(f"{name:<22} generic cpu {wb_s * 1e3:10.3f} ms   torch eager {torch_s * 1e3:9.3f} ms   "
                      f"ratio {ratios[name]:.4f}", flush=True)
        finally:
            session.close()
    if not ratios:
        raise SystemExit("nothing measured")
    geomean = math.exp(sum(math.log(r) for r in ratios.values()) / len(ratios))
    print("RESULT " + " ".join([f"entries={len(ratios)}", f"geomean_ratio={geomean:.4f}"]
                               + [f"{k}_ratio={v:.4f}" for k, v in ratios.items()]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
