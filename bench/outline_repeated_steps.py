"""lh-outline-repeated-steps on one long function (the first preparation step of `select`): a chain of N scalar
`arith.addf` ops (nothing to outline: the whole pass is the search), in this process.

    python bench/outline_repeated_steps.py [--ops 100000] [--repeats 3] [--against DIR]

`--against DIR` times another checkout's workbench/ (e.g. `git archive HEAD~1 workbench | tar -x -C DIR`) in
alternation with this one, each in a fresh process (a shared machine's load affects both alike).
Prints one line per run, then: RESULT ops=<N> seconds=<median> [against=<median>]
"""
from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

ONE_RUN = """
import sys, time
sys.path.insert(0, sys.argv[1])
from mlir import ir
from workbench.worker import repeated_steps
with ir.Context():
    module = ir.Module.parse(open(sys.argv[2]).read())
    t = time.perf_counter()
    repeated_steps.outline_repeated_steps(module)
    print(time.perf_counter() - t)
"""


def payload(n: int) -> str:
    body = "".join(f"  %v{i} = arith.addf {'%a' if i == 0 else f'%v{i - 1}'}, %a : f32\n" for i in range(n))
    return f"func.func @g(%a: f32) -> f32 {{\n{body}  return %v{n - 1} : f32\n}}\n"


def run_once(root: Path, path: Path) -> float:
    out = subprocess.run([sys.executable, "-c", ONE_RUN, str(root), str(path)], capture_output=True, text=True,
                         check=True)
    return float(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--ops", type=int, default=100_000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--against", type=Path, help="another checkout's root (holding workbench/)")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "ops.mlir"
        path.write_text(payload(a.ops))
        mine, theirs = [], []
        for _ in range(a.repeats):
            mine.append(run_once(ROOT, path))
            print(f"this checkout: {mine[-1]:.2f} s", flush=True)
            if a.against:
                theirs.append(run_once(a.against, path))
                print(f"{a.against}: {theirs[-1]:.2f} s", flush=True)
    line = f"RESULT ops={a.ops} seconds={statistics.median(mine):.2f}"
    if theirs:
        line += f" against={statistics.median(theirs):.2f}"
    print(line)


if __name__ == "__main__":
    main()
