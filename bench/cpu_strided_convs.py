"""Strided 2-D convolutions with and without lh-strided-conv-planes (phases along h and w), one thread, alternating:

    python bench/cpu_strided_convs.py [--only conv2d_strided,resnet_down,resnet_stem] [--cpu avx2|icelake]
                                      [--rounds 5] [--iterations 10] [--torch-python PY]

Cases: the corpus's conv2d_strided at bench size (8x64x112x112, 3x3 stride 2, 64 -> 64), a ResNet-18
downsampling conv (1x64x56x56, 3x3 stride 2, 64 -> 128), its stem (1x3x224x224, 7x7 stride 2, 3 -> 64) and the
ResNet-18 at 8 images (8x64x56x56 -> 128); patch2 / patch4 (window = stride: a 2x2 stride-2 downsampling,
ConvNeXt's 4x4 stride-4 stem: every phase a 1x1 convolution). Each payload is what torch-mlir writes (zero tensor.pad of the
input, the bias broadcast as the init; the filter an argument). Both variants are selected (`target cpu
--threads 1`), lowered and compiled once (`select --apply`, `bench`, `apply cpu-lower`, `run --check` against
the unscheduled payload); then `run --threads 1` alternates between them for --rounds rounds, and the fastest
call of each is reported (the minimum over rounds of each run's min_s: the 2-core host is shared, medians
moved by 20-30% between runs while minima stayed within a few percent). The old variant is the selector without the step (CpuTarget.strided_conv_planes
off). With --torch-python, torch's conv2d on one thread (fastest of --iterations calls) for the ratio.

Last line: RESULT <case>=<old ms>/<new ms> ... (speedup = old / new)
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

from _common import conv_payload  # noqa: E402  (bench/_common.py)

#: name -> (n, c, h, w, f, k, stride, pad)
CASES = {"conv2d_strided": (8, 64, 112, 112, 64, 3, 2, 1), "resnet_down": (1, 64, 56, 56, 128, 3, 2, 1),
         "resnet_stem": (1, 3, 224, 224, 64, 7, 2, 3), "resnet_down_b8": (8, 64, 56, 56, 128, 3, 2, 1),
         # patchify convs (window = stride: every phase a 1x1 convolution): a 2x2 downsampling, ConvNeXt's 4x4 stem
         "patch2": (1, 64, 56, 56, 128, 2, 2, 0), "patch4": (1, 3, 224, 224, 96, 4, 4, 0)}


def payload(n: int, c: int, h: int, w: int, f: int, k: int, s: int, p: int) -> str:
    """torch-mlir's form of the case's k x k convolution with a bias (bench/_common.py: conv_payload)."""
    return conv_payload(n, c, h, w, f, k, k, s, p)


TORCH = r'''
import json, statistics, sys, time, torch
n, c, h, w, f, k, s, p, iterations = (int(v) for v in sys.argv[1:10])
torch.set_num_threads(1)
conv = torch.nn.Conv2d(c, f, k, stride=s, padding=p).eval()
x = torch.rand(n, c, h, w)
with torch.inference_mode():
    for _ in range(2):
        conv(x)
    t = []
    for _ in range(iterations):
        t0 = time.perf_counter(); conv(x); t.append(time.perf_counter() - t0)
print(json.dumps(min(t)))
'''


def session(path: Path, cpu: str, planes: bool, iterations: int):
    sys.path.insert(0, str(ROOT))
    from workbench.commands import CommandContext, default_registry
    from workbench.session import Session
    from workbench.targets.cpu import CpuTarget

    CpuTarget.strided_conv_planes = planes
    s = Session()
    s.journal_enabled = False
    ctx = CommandContext(s, default_registry())
    for line in (f"load {path}", "target cpu --threads 1" + (f" --cpu {cpu}" if cpu else ""), "select --apply",
                 f"bench warmup=2 iterations={iterations}", "apply cpu-lower", "run --check --threads 1"):
        res = ctx.registry.dispatch(line, ctx)
        if not res.ok:
            raise SystemExit(f"{path.name} ({'new' if planes else 'old'}): {line}: {res.error}")
    labels = [a.step.label() for a in s.active_steps]
    assert planes == any("lh-strided-conv-planes" in label for label in labels), labels
    return ctx


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", default=",".join(CASES))
    ap.add_argument("--cpu", default="")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--iterations", type=int, default=20)
    ap.add_argument("--torch-python", default=os.environ.get("LH_WORKBENCH_TORCH_PYTHON", ""))
    args = ap.parse_args()
    os.environ.setdefault("LH_WORKBENCH_STATE_DIR", tempfile.mkdtemp(prefix="lh-bench-state-"))
    out = Path(tempfile.mkdtemp(prefix="lh-strided-"))
    results = []
    for name in args.only.split(","):
        path = out / f"{name}.mlir"
        path.write_text(payload(*CASES[name]))
        ctxs = {"old": session(path, args.cpu, False, args.iterations), "new": session(path, args.cpu, True, args.iterations)}
        best = {"old": [], "new": []}
        for _ in range(args.rounds):
            for key, ctx in ctxs.items():
                res = ctx.registry.dispatch("run --threads 1", ctx)
                assert res.ok, res.error
                best[key].append(res.data["run"]["min_s"])
        for ctx in ctxs.values():
            ctx.session.close()
        old, new = min(best["old"]), min(best["new"])
        line = f"{name:16s} old {old * 1e3:8.3f} ms  new {new * 1e3:8.3f} ms  speedup {old / new:5.2f}"
        if args.torch_python and not args.cpu:
            t = subprocess.run([args.torch_python, "-c", TORCH, *map(str, CASES[name]), str(args.iterations)],
                               capture_output=True, text=True, timeout=600)
            if t.returncode == 0:
                torch_s = json.loads(t.stdout.strip().splitlines()[-1])
                line += f"  torch {torch_s * 1e3:8.3f} ms  vs torch old {torch_s / old:4.2f} new {torch_s / new:4.2f}"
        print(line, flush=True)
        results.append(f"{name}={old * 1e3:.3f}/{new * 1e3:.3f}")
    print("RESULT " + " ".join(results))


if __name__ == "__main__":
    main()
