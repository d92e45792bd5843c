"""Ops that write through an index (index_put, index_add, index_copy, index_reduce, put), exported and run
through the CPU selector path: the time of `run` (median) per op.

    python bench/index_writes.py [--exporter workbench/importers/torch_export.py] [--only a,b]
                                 [--threads 1] [--iterations 20] [--torch-python PY]

Each op is a model of its own over x: 512 x 32 (f32) and 2048 index entries in [0, 512) (duplicates; the
assignments: a permutation of the 512 rows); it is
exported by --exporter (another checkout's torch_export.py measures that checkout's decompositions:
alternate the two, timings on a shared machine are noisy) under the torch Python, then `target cpu --threads
N`, `select --apply`, `bench`, `apply cpu-lower`, `run --check` (against the unscheduled payload and torch).

Last line: RESULT <op>_ms=... for every op that exported and ran (the others: a line saying why).
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
from _common import torch_python  # noqa: E402
from cpu_models import ours  # noqa: E402

TARGETS, ENTRIES, WIDTH = 512, 2048, 32

#: assignments (index_put, index_copy) write 512 distinct rows (a permutation: torch leaves which duplicate
#: wins unspecified, and its CPU kernel runs in parallel chunks at this size); the others 2048 entries
PERMUTATION = "(i[:512] * 0 + torch.arange(512) * 331) % 512"
MODELS = {
    "index_put": f"y = x.clone()\n        y[{PERMUTATION}] = v[:512]\n        return y",
    "index_put_accumulate": "return x.index_put((i,), v, accumulate=True)",
    "index_add": "return x.index_add(0, i, v, alpha=0.5)",
    "index_copy": f"return x.index_copy(0, {PERMUTATION}, v[:512])",
    "index_reduce_amax": "return x.index_reduce(0, i, v, 'amax')",
    "put_accumulate": "return x.put(i * 7 % x.numel(), v[:, 0], accumulate=True)",
}


def export(exporter: Path, python: str, name: str, out: Path) -> str:
    """Exports op NAME's model into `out`; "" or the exporter's last line where it failed."""
    cls = "".join(w.capitalize() for w in name.split("_"))      # (the exporter names its files NAME again)
    (out / f"{name}.py").write_text(f"import torch\n\nclass {cls}(torch.nn.Module):\n    def forward(self, x, i, v):\n"
                                    f"        {MODELS[name]}\n")
    inputs = f"{TARGETS}x{WIDTH}xf32,{ENTRIES}xi64[0:{TARGETS}],{ENTRIES}x{WIDTH}xf32"
    p = subprocess.run([python, str(exporter), f"{out / name}.py:{cls}", "--inputs", inputs, "--out", str(out)],
                       capture_output=True, text=True, cwd=out, timeout=600)
    if p.returncode != 0:
        return (p.stdout + p.stderr).strip().splitlines()[-1][:300]
    return ""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--exporter", default=str(ROOT / "workbench" / "importers" / "torch_export.py"))
    ap.add_argument("--only", default="", help="comma-separated ops (" + ", ".join(MODELS) + ")")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--iterations", type=int, default=20)
    ap.add_argument("--torch-python", default=None)
    args = ap.parse_args()
    python = torch_python(args.torch_python)
    if not python:
        raise SystemExit("no torch Python (--torch-python or LH_WORKBENCH_TORCH_PYTHON)")
    names = args.only.split(",") if args.only else list(MODELS)
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp)
        for name in names:
            failed = export(Path(args.exporter).resolve(), python, name, out)
            rec = {"ok": False, "error": f"export failed: {failed}"} if failed else \
                ours(name, out, args.threads, args.iterations, 300.0, False)
            if not rec["ok"]:
                print(f"{name:24s} {rec.get('error')}", flush=True)
                continue
            results[name] = rec["t1"] if args.threads == 1 else rec["tall"]
            print(f"{name:24s} {results[name] * 1e3:9.4f} ms  ({args.threads} thread{'s' if args.threads > 1 else ''}, "
                  f"exporter {os.path.relpath(args.exporter)})", flush=True)
    print("RESULT " + " ".join(f"{n}_ms={t * 1e3:.4f}" for n, t in results.items()))


if __name__ == "__main__":
    main()
