"""Reductions, norms and elementwise ops of the torch corpus at their bench shapes on the cuda target,
against eager torch on the same GPU.

    python bench/gpu_reductions.py [--only softmax,sum_dim] [--iterations 20] [--no-naive]

The corpus fixtures (tests/fixtures/torch, test shapes) whose payloads carry no weights are resized to
the corpus entry's bench shape (4096x4096 rows for softmax, log_softmax, sum_dim, logsumexp, var_mean,
gelu; 64x256x1024 for mean_dim): the tensor types' dimensions are substituted (constants that depend
on the size, e.g. var's 1 / (N - 1), keep the test size's value: the timing is what is compared).
Each runs through the workbench twice: `naive` (no schedule: cuda-lower's default mapping, one thread
per output for reductions) and `selected` (`select --apply`: elementwise fusion, the row-reduction
kernel), both with `run --check` against the CPU reference on seeded random inputs; times are the
run's median per call (device buffers in place, a stream synchronize after each call). torch: the
corpus module at the bench shape, CUDA events around 20 calls after warm-up, median of 5, in a
process of its own.

Last line: RESULT <name>_ratio=<torch time / selected time> ... geomean_ratio=... (> 1: faster than torch)
"""
from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
from _common import TORCH_PRELUDE, geomean, run_torch_worker  # noqa: E402  (bench/_common.py)
FIXTURES = ROOT / "tests" / "fixtures" / "torch"

# name -> {test dim: bench dim} (positional sizes of the fixture's tensor types)
CASES = {
    "softmax": {8: 4096, 32: 4096},
    "log_softmax": {8: 4096, 32: 4096},
    "sum_dim": {8: 4096, 16: 4096},
    "logsumexp": {8: 4096, 16: 4096},
    "var_mean": {8: 4096, 16: 4096},
    "gelu": {8: 4096, 32: 4096},
    "mean_dim": {4: 64, 8: 256, 16: 1024},
    "layer_norm": {4: 16, 8: 512, 32: 1024},
    "rms_norm": {4: 16, 8: 512, 32: 1024},
}

TORCH_WORKER = TORCH_PRELUDE + r'''
names = sys.argv[2].split(",")
torch.backends.cuda.matmul.allow_tf32 = False
for name in names:
    try:
        entry = corpus.CORPUS[name]
        module = entry.module("bench").eval().cuda()
        xs = []
        for s in entry.bench_shapes:
            dims = [int(d) for d in s.split("[")[0].split("x")[:-1]]
            xs.append(torch.rand(dims, device="cuda") * 2 - 1)
        print(json.dumps({"name": name, "time": cuda_median_s(module, xs)}), flush=True)
    except Exception as e:
        print(json.dumps({"name": name, "error": f"{type(e).__name__}: {e}".splitlines()[0]}), flush=True)
'''


def resized(text: str, sizes: dict[int, int]) -> str:
    """The fixture's text with the dimensions of its tensor types (and expand_shape output shapes)
    mapped through `sizes`; other numbers untouched. 1-D f32 weights (`dense_resource` blobs of the
    test size: layer_norm's, rms_norm's) become dense constants of the new size, values 0.5 .. 1.5 (not
    a splat: elementwise fusion would fold a splat into the body and drop its loads)."""
    def weights(m: re.Match) -> str:
        n = sizes.get(int(m.group(1)), int(m.group(1)))
        values = ", ".join(f"{0.5 + (i % 101) / 100:.2f}" for i in range(n))
        return f"dense<[{values}]> : tensor<{m.group(1)}xf32>"

    text = re.sub(r"dense_resource<[\w.]+> : tensor<(\d+)xf32>",
                  lambda m: weights(m) if int(m.group(1)) in sizes else m.group(0), text)

    def dims(m: re.Match) -> str:
        parts = m.group(1).split("x")
        return "tensor<" + "x".join(str(sizes.get(int(p), int(p))) for p in parts) + "x"

    text = re.sub(r"tensor<((?:\d+x)*\d+)x", dims, text)
    return re.sub(r"output_shape \[([\d, ]+)\]",
                  lambda m: "output_shape [" + ", ".join(str(sizes.get(int(p), int(p))) for p in m.group(1).split(", ")) + "]",
                  text)


def ours(path: Path, select: bool, iterations: int) -> dict:
    sys.path.insert(0, str(ROOT))
    from workbench.commands import CommandContext, default_registry
    from workbench.session import Session

    s = Session()
    s.journal_enabled = False
    ctx = CommandContext(s, default_registry())
    try:
        lines = [f"load {path}", "target cuda"] + (["select --apply"] if select else []) + [
            f"bench warmup=3 iterations={iterations}", "run --check --timeout 600"]
        for line in lines:
            res = ctx.registry.dispatch(line, ctx)
            if not res.ok and line.startswith("select") and "nothing to select" in str(res.error):
                continue  # no op the selector schedules (gelu: the preparation's fusion alone)
            if not res.ok:
                return {"error": f"`{line}`: {str(res.error).splitlines()[0]}"}
        run = s.last_run
        if not run["check"]["passed"]:
            return {"error": f"check failed: {run['check']}"[:200]}
        return {"time": run["median_s"]}
    finally:
        s.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", default="")
    ap.add_argument("--iterations", type=int, default=20)
    ap.add_argument("--no-naive", action="store_true")
    ap.add_argument("--json", default="")
    args = ap.parse_args()
    os.environ.setdefault("LH_WORKBENCH_STATE_DIR", tempfile.mkdtemp(prefix="lh-bench-state-"))
    names = [n for n in CASES if not args.only or n in args.only.split(",")]
    base = run_torch_worker(sys.executable, TORCH_WORKER, [",".join(names)], timeout=900)
    tmp = Path(tempfile.mkdtemp(prefix="lh-gpu-red-"))
    print(f"{'case (ms)':14s} {'shape':>12s} {'naive':>9s} {'selected':>9s} {'torch':>9s} {'torch/sel':>9s}")
    ratios, fields, records = [], [], []
    for name in names:
        text = resized((FIXTURES / f"{name}.mlir").read_text(), CASES[name])
        path = tmp / f"{name}.mlir"
        path.write_text(text)
        shape = re.search(r"func\.func @\w+\(%arg0: tensor<([\dx]+)x", text).group(1)
        rec = {"name": name, "shape": shape, "torch": (base.get(name) or {}).get("time")}
        rec["naive"] = None if args.no_naive else ours(path, False, args.iterations)
        rec["selected"] = ours(path, True, args.iterations)
        records.append(rec)

        def ms(r):
            if r is None:
                return "-"
            return f"{r['time'] * 1e3:.4f}" if "time" in r else "FAILED"

        line = f"{name:14s} {shape:>12s} {ms(rec['naive']):>9s} {ms(rec['selected']):>9s} "
        line += f"{rec['torch'] * 1e3:9.4f}" if rec["torch"] else f"{'-':>9s}"
        if rec["torch"] and "time" in rec["selected"]:
            r = rec["torch"] / rec["selected"]["time"]
            ratios.append(r)
            fields.append(f"{name}_ratio={r:.3f}")
            line += f" {r:9.3f}"
        print(line, flush=True)
        for k in ("naive", "selected"):
            if rec[k] and "error" in rec[k]:
                print(f"    {k}: {rec[k]['error'][:200]}")
    if args.json:
        Path(args.json).write_text(json.dumps(records, indent=1))
    print("RESULT " + " ".join(fields + [f"geomean_ratio={geomean(ratios):.3f}"]))


if __name__ == "__main__":
    main()
