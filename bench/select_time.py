"""How long `select --apply` takes (the CPU target, one thread), against another checkout in the same run.

    python bench/select_time.py [--layers 4,8,16] [--mlir A.mlir,B.mlir] [--repeats 3] [--against DIR | --against-rev REV]

Payloads: tests/fixtures/torch/transformer_layer.mlir (a torch-mlir export: attention + MLP, hidden 32)
stacked N times in one function (`--layers`: each layer its own copy of the weights), generated here
without torch, plus any `--mlir` files (e.g. bench/hf_models.py's LH_HF_SIZE=bench imports: GPT-2 at 4
layers, hidden 256, 28 MB of weights). Each run is a fresh process (`load`, `target cpu --threads 1`,
then `select --apply` timed alone); this checkout and the other one alternate (a shared machine's load
affects both alike). `--against-rev REV` extracts REV's workbench/ and pipelines/ with `git archive` into a
temp dir (`--against DIR`: such a dir made before). Both must select the same steps, parameters and IR
(the run fails otherwise): the speed-up is for the same session; `--ir-may-differ`: the same steps and
parameters, the IR of each may differ (a change that makes other, equivalent IR; how many steps differ is printed).
Prints one line per run, a table of medians, then: RESULT select_ratio=<geomean of against / this>
"""
from __future__ import annotations

import argparse
import json
import math
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LAYER = ROOT / "tests" / "fixtures" / "torch" / "transformer_layer.mlir"

ONE_RUN = r"""
import json, os, sys, tempfile, time
root, path = sys.argv[1], sys.argv[2]
sys.path.insert(0, root)
os.chdir(root)
os.environ.setdefault("LH_WORKBENCH_STATE_DIR", tempfile.mkdtemp(prefix="lh-select-time-"))
from workbench.commands import CommandContext, default_registry
from workbench.session import Session
s = Session(); s.journal_enabled = False
ctx = CommandContext(s, default_registry())
for line in (f"load {path}", "target cpu --threads 1"):
    r = ctx.registry.dispatch(line, ctx)
    assert r.ok, r.error
t = time.perf_counter()
r = ctx.registry.dispatch("select --apply", ctx)
seconds = time.perf_counter() - t
assert r.ok, r.error
steps = [[a.step.kind, a.step.label(), a.output_sha] for a in s.steps]
print(json.dumps({"seconds": seconds, "steps": steps, "sha": s.current_sha}))
s.close()
"""

_VALUE = re.compile(r"%([A-Za-z_$.][\w$.]*|\d+)")
_RESOURCE_USE = re.compile(r"dense_resource<([^>]+)>")
_RESOURCE_ENTRY = re.compile(r'^(\s*)([^\s:]+): "0x([0-9A-Fa-f]+)"(,?)$')


def stacked_layers(n: int, layer: Path = LAYER) -> str:
    """`layer`'s @main (one tensor in, the same type out) applied `n` times in one function: each copy's
    values renamed, its weights a copy of their own (named per layer, first data byte changed)."""
    lines = layer.read_text().splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.lstrip().startswith("func.func @main("))
    ret = next(i for i in range(start, len(lines)) if lines[i].lstrip().startswith("return "))
    header = re.match(r"(\s*func\.func @main\()%arg0: ([^)]+)\) -> (.*) \{$", lines[start])
    if header is None or header.group(2) != header.group(3):
        raise SystemExit(f"{layer}: @main does not map one tensor to the same type")
    result = re.match(r"\s*return (%\S+) : ", lines[ret]).group(1)
    body = lines[start + 1:ret]
    out = lines[:start + 1]
    current = "%arg0"
    for i in range(n):
        def value(m, i=i, current=current):
            return current if m.group(0) == "%arg0" else f"%L{i}_{m.group(1)}"
        for ln in body:
            out.append(_RESOURCE_USE.sub(lambda m, i=i: f"dense_resource<{m.group(1)}_L{i}>", _VALUE.sub(value, ln)))
        current = f"%L{i}_{result[1:]}"
    out.append(lines[ret].replace(result, current, 1))
    for ln in lines[ret + 1:]:
        entry = _RESOURCE_ENTRY.match(ln)
        if entry is None:
            out.append(ln)
            continue
        indent, name, data, comma = entry.groups()
        for i in range(n):
            # (the first 4 bytes are the blob's alignment; then the first element's low byte)
            byte = (int(data[8:10], 16) + i) % 256 if len(data) >= 10 else None
            copy = data if byte is None else f"{data[:8]}{byte:02X}{data[10:]}"
            out.append(f'{indent}{name}_L{i}: "0x{copy}"' + ("," if comma or i < n - 1 else ""))
    return "\n".join(out) + "\n"


def run_once(root: Path, path: Path) -> dict:
    p = subprocess.run([sys.executable, "-c", ONE_RUN, str(root), str(path)], capture_output=True, text=True)
    if p.returncode != 0:
        raise SystemExit(f"{root} on {path.name} failed:\n{p.stderr[-2000:]}")
    return json.loads(p.stdout.strip().splitlines()[-1])


def archive(rev: str, into: Path) -> Path:
    into.mkdir(parents=True, exist_ok=True)
    tar = subprocess.run(["git", "-C", str(ROOT), "archive", rev, "workbench", "pipelines"], capture_output=True,
                         check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=tar, check=True)
    return into


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--layers", default="4,8,16", help="stacked transformer layers, comma-separated (empty: none)")
    ap.add_argument("--mlir", default="", help="more payloads, comma-separated")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--against", type=Path, help="another checkout's root (holding workbench/ and pipelines/)")
    ap.add_argument("--against-rev", help="a git revision of this repository to extract and time against")
    ap.add_argument("--ir-may-differ", action="store_true",
                    help="the same steps and parameters required, not the same IR (the steps whose IR differs are counted)")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        against = a.against
        if a.against_rev:
            against = archive(a.against_rev, tmp / "against")
        payloads: list[Path] = []
        for n in [int(x) for x in a.layers.split(",") if x]:
            path = tmp / f"transformer_x{n}.mlir"
            path.write_text(stacked_layers(n))
            payloads.append(path)
        payloads += [Path(p).resolve() for p in a.mlir.split(",") if p]
        ratios, rows = [], []
        for path in payloads:
            mine, theirs = [], []
            for _ in range(a.repeats):
                new = run_once(ROOT, path)
                mine.append(new["seconds"])
                print(f"{path.name}: this checkout {new['seconds']:.2f} s ({len(new['steps'])} steps)", flush=True)
                if against:
                    old = run_once(against, path)
                    theirs.append(old["seconds"])
                    print(f"{path.name}: {a.against_rev or against} {old['seconds']:.2f} s", flush=True)
                    # (a step's label names its schedule file by path: the other checkout's differs)
                    same = [[k, re.sub(r"\S*/pipelines/", "pipelines/", lbl), sha] for k, lbl, sha in new["steps"]]
                    was = [[k, re.sub(r"\S*/pipelines/", "pipelines/", lbl), sha] for k, lbl, sha in old["steps"]]
                    if a.ir_may_differ:
                        if [s[:2] for s in same] != [s[:2] for s in was]:
                            raise SystemExit(f"{path.name}: the two checkouts selected different steps")
                        differ = sum(x[2] != y[2] for x, y in zip(same, was))
                        print(f"{path.name}: {differ} of {len(same)} steps made other IR", flush=True)
                    elif same != was:
                        raise SystemExit(f"{path.name}: the two checkouts selected different steps or IR")
            row = [path.name, len(new["steps"]), statistics.median(mine)]
            if theirs:
                row.append(statistics.median(theirs))
                ratios.append(row[3] / row[2])
            rows.append(row)
    print(f"{'payload':28s} {'steps':>5s} {'this s':>8s}" + (f" {'against s':>10s} {'ratio':>6s}" if ratios else ""))
    for row in rows:
        line = f"{row[0]:28s} {row[1]:5d} {row[2]:8.2f}"
        if len(row) > 3:
            line += f" {row[3]:10.2f} {row[3] / row[2]:6.2f}"
        print(line)
    result = "RESULT " + " ".join(f"{r[0].removesuffix('.mlir')}_s={r[2]:.2f}" for r in rows)
    if ratios:
        result += f" select_ratio={math.exp(sum(map(math.log, ratios)) / len(ratios)):.2f}"
    print(result)


if __name__ == "__main__":
    main()
