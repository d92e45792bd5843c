"""cuda target vs cuBLAS: f16 matmul 4096^3 and f32 matmul 2048^3 through the workbench's cuda
pipeline (shipped schedules in pipelines/cuda/matmul.py, `run --target cuda`) and torch.matmul
in the same process, on the same GPU.

    python bench/gpu_matmul.py [--f16-configs 'block_m=128 block_n=128 warp_m=64 warp_n=32;...']

Each workbench run: seeded uniform(-1, 1) inputs, device buffers filled before the timed loop,
`iterations` timed calls (rtclock around each call, stream synchronized before the second
read), median reported; the output is checked against numpy (float32/float64 on the CPU).
torch: CUDA events around 50 calls after warm-up, per-call mean of 5 repeats, median.
Last line: RESULT f16_4096_ratio=<cuda-pipeline TFLOP/s / cuBLAS TFLOP/s> f32_2048_ratio=...
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def payload(n: int, dtype: str) -> str:
    t = f"tensor<{n}x{n}x{dtype}>"
    return (f"func.func @matmul(%A: {t}, %B: {t}, %C: {t}) -> {t} {{\n"
            f"  %0 = linalg.matmul ins(%A, %B : {t}, {t}) outs(%C : {t}) -> {t}\n  return %0 : {t}\n}}\n")


def workbench_run(n: int, dtype: str, gen: str, params: str, iterations: int, workdir: Path,
                  timeout: int = 600) -> dict:
    from workbench.commands import CommandContext, default_registry
    from workbench.session import Session

    src = workdir / f"mm_{dtype}_{n}.mlir"
    src.write_text(payload(n, dtype))
    out = workdir / f"out_{dtype}_{n}_{abs(hash(params))}"
    s = Session()
    ctx = CommandContext(s, default_registry())
    try:
        for line in (f"load {src}", f"apply pipelines/cuda/matmul.py[gen={gen}]{{{params}}}",
                     f"bench warmup=2 iterations={iterations}",
                     f"run --target cuda --timeout {timeout} --save-outputs {out}"):
            res = ctx.registry.dispatch(line, ctx)
            if not res.ok:
                return {"ok": False, "error": f"{line}: {res.error}", "detail": res.detail}
        run = res.data["run"]
    finally:
        s.close()
    a, b, c = (np.load(out / f"input{i}.npy").astype(np.float32) for i in range(3))
    got = np.load(out / "output0.npy").astype(np.float64)
    want = c.astype(np.float64) + (a @ b).astype(np.float64)
    rel = float(np.abs(got - want).max() / np.abs(want).max())
    flops = 2.0 * n ** 3
    return {"ok": True, "median_s": run["median_s"], "min_s": run["min_s"], "tflops": flops / run["median_s"] / 1e12,
            "rel_err": rel, "compile_s": run.get("compile_s")}


def torch_run(n: int, dtype: str) -> dict:
    import torch

    tdt = {"f16": torch.float16, "f32": torch.float32}[dtype]
    torch.backends.cuda.matmul.allow_tf32 = False  # f32 stays f32 (the cuda pipeline computes in f32)
    g = torch.Generator(device="cuda").manual_seed(0)
    a = torch.rand(n, n, device="cuda", dtype=tdt, generator=g) * 2 - 1
    b = torch.rand(n, n, device="cuda", dtype=tdt, generator=g) * 2 - 1
    for _ in range(5):
        torch.matmul(a, b)
    torch.cuda.synchronize()
    per = []
    for _ in range(5):
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        e0.record()
        for _ in range(50):
            torch.matmul(a, b)
        e1.record()
        torch.cuda.synchronize()
        per.append(e0.elapsed_time(e1) / 50 / 1e3)
    med = float(np.median(per))
    return {"median_s": med, "tflops": 2.0 * n ** 3 / med / 1e12}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--f16-configs", default="gen=matmul_wgmma block_m=128 block_n=256 stages=4 consumers=2;"
                                             "gen=matmul_wgmma block_m=128 block_n=256 stages=4 consumers=2 specialize=1;"
                                             "gen=matmul_wgmma block_m=128 block_n=128 stages=4 specialize=1;"
                                             "gen=matmul_mma_smem block_m=128 block_n=256 block_k=16 warp_m=64 warp_n=64 stages=3;"
                                             "block_m=128 block_n=128 warp_m=64 warp_n=64 unroll_k=16",
                    help="';'-separated parameter sets; one may start with gen=NAME (default matmul_mma)")
    ap.add_argument("--f32-configs", default="gen=matmul_simt_smem block_m=128 block_n=64 block_k=32 thread_m=8 thread_n=4 thread_k=4 stages=2;"
                                             "gen=matmul_simt_smem block_m=64 block_n=128 block_k=16 thread_m=8 thread_n=8 thread_k=4 stages=4;"
                                             "gen=matmul_simt_smem block_m=128 block_n=128 block_k=16 thread_m=8 thread_n=8 thread_k=4 stages=3;"
                                             "block_m=64 block_n=64 block_k=32 thread_m=4 thread_n=4;"
                                             "block_m=64 block_n=64 block_k=64 thread_m=4 thread_n=4",
                    help="';'-separated parameter sets; one may start with gen=NAME (default matmul_simt)")
    ap.add_argument("--iterations", type=int, default=10)
    ap.add_argument("--timeout", type=int, default=600, help="seconds per workbench run (a hung kernel is killed)")
    args = ap.parse_args()
    os.environ.setdefault("LH_WORKBENCH_STATE_DIR", tempfile.mkdtemp(prefix="lh-state-"))
    work = Path(tempfile.mkdtemp(prefix="lh-gpu-bench-"))
    rows = []
    best = {}
    for dtype, n, default_gen, configs in (("f16", 4096, "matmul_mma", args.f16_configs),
                                   ("f32", 2048, "matmul_simt", args.f32_configs)):
        ref = torch_run(n, dtype)
        rows.append((f"torch.matmul {dtype} {n}^3", ref["median_s"], ref["tflops"], "", "cuBLAS"))
        for params in [c.strip() for c in configs.split(";") if c.strip()]:
            gen = default_gen
            if params.startswith("gen="):  # another generator of pipelines/cuda/matmul.py
                first, _, params = params.partition(" ")
                gen = first[len("gen="):]
            r = workbench_run(n, dtype, gen, params, args.iterations, work, args.timeout)
            if not r["ok"]:
                print(f"FAILED {dtype} {n} {gen}{{{params}}}: {r['error']}\n{(r.get('detail') or '')[-2000:]}", flush=True)
                continue
            tol = 2e-2 if dtype == "f16" else 1e-4
            ok = r["rel_err"] <= tol
            rows.append((f"cuda {gen} {dtype} {n}^3 {{{params}}}", r["median_s"], r["tflops"],
                         f"{r['rel_err']:.2e} {'ok' if ok else 'WRONG'}", f"{r['tflops'] / ref['tflops']:.3f}x"))
            print(rows[-1], flush=True)
            if ok and r["tflops"] / ref["tflops"] > best.get(dtype, (0.0, ""))[0]:
                best[dtype] = (r["tflops"] / ref["tflops"], f"gen={gen} {params}")
    print(f"\n{'kernel':<80} {'median':>10} {'TFLOP/s':>9}  {'max rel err':<16} vs cuBLAS")
    for name, t, tf, err, ratio in rows:
        print(f"{name:<80} {t * 1e3:>8.3f}ms {tf:>9.2f}  {err:<16} {ratio}")
    for dtype in ("f16", "f32"):
        if dtype in best:
            print(f"best {dtype}: {{{best[dtype][1]}}}")
    f16 = best.get("f16", (float("nan"),))[0]
    f32 = best.get("f32", (float("nan"),))[0]
    print(f"RESULT f16_4096_ratio={f16:.4f} f32_2048_ratio={f32:.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
