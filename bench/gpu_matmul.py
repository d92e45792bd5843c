"""cuda target vs cuBLAS (torch) on the matmul set of issue 14, through the workbench's cuda pipeline:
`load`, `target cuda`, `select --apply` (the selector's schedule for each op, or --configs), `bench`,
`run --target cuda --save-outputs`, with torch timed on the same GPU in the same process.

    python bench/gpu_matmul.py [--cases 4096,bf16] [--configs 'gen=matmul_wgmma block_m=128 ...;...']

Cases: f16 and bf16 (operands and result) 4096^3, 8192^3, 1000^3, 2048x4096x1024, 4096x4096x512,
batch 16 x 1024^3; f32 2048^3 through the opt-in TF32 schedule (matmul_wgmma tf32=1 on B stored K x N,
which it copies transposed first; against torch with TF32 allowed, tolerance 5e-3); the f32 MLP of examples/mlp.mlir (against eager torch, TF32 off); the
attention-like chain softmax(Q K^T / 8) V in f16 as torch-mlir exports it (bench/payloads/, 16 heads of
1024 x 64; against the same chain in eager torch, flash attention's time printed beside it).
K-major cases (B stored N x K as in x @ w^T, read by the wgmma kernel with K-major B): fp8 e4m3 / e5m2
operands, A B^T into a zero-filled bf16 result (f32 accumulation; the kernel reads no C) against
`torch._scaled_mm` (scales 1.0, bf16 out, B column-major: the same bytes), and f32 operands read as
tf32 (`matmul_wgmma tf32=1`), C + A B^T, against `torch.addmm` with TF32 allowed.
Fused-epilogue cases (f16 C + A B, then + bias row vector and relu / gelu (tanh form) in one generic,
fused into the wgmma kernel's write-back by the selector's schedule) against eager torch
(`relu(addmm(C, A, B) + bias)`, `gelu(..., approximate="tanh")`).
Each workbench run: seeded uniform(-1, 1) inputs, device buffers filled before the timed loop,
`iterations` timed samples (stream synchronized before the second rtclock), median; a sample is one call, or with
--calls-per-sample N the mean of N calls launched back to back with one synchronization (the bench step's
calls_per_sample), which is how torch's CUDA events around 20-50 calls time torch. Every case is
checked: its saved inputs go through torch on the GPU (float32, TF32 off) and the workbench's output
must match within the element type's tolerance (max abs err / max abs value). The baseline is the
payload's own computation, C + A B (`torch.addmm` / `torch.baddbmm`, cuBLAS with beta = 1); the plain
`torch.matmul` (no C) is printed beside it. torch: CUDA events around 20-50 calls after warm-up,
per-call mean of 5 repeats, median.
f32 1000^3 and 2048^3 (CUDA cores, against cuBLAS without TF32) are printed too, outside the geomean, and so is
f16acc_4096: the f16 payload (C + A B, f16 everywhere) through the wgmma kernel with its opt-in f16 accumulator
(`matmul_wgmma{... acc=f16}`, F16ACC_SCHEDULES; with --configs, those with acc=f16 added) against the same
torch f16 addmm (cuBLAS accumulates in f32), checked within f16_accumulation_error_bound(K).
Last line: RESULT <case>_ratio=<workbench TFLOP/s / torch TFLOP/s> ... geomean_ratio=<over checked cases of the set>
(a case that fails or does not match gets no ratio and is named in failed=).
"""
from __future__ import annotations

import argparse
import math
import os
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from workbench.worker.cuda.wgmma_matmul import f16_accumulation_error_bound  # noqa: E402  (text only, no MLIR)

# (key, batch, m, n, k); batch 0 = linalg.matmul
SHAPES = [("4096", 0, 4096, 4096, 4096), ("8192", 0, 8192, 8192, 8192), ("1000", 0, 1000, 1000, 1000),
          ("2048x4096x1024", 0, 2048, 4096, 1024), ("4096x4096x512", 0, 4096, 4096, 512),
          ("b16x1024", 16, 1024, 1024, 1024)]
DTYPES = ("f16", "bf16")
# f32 (CUDA cores, TF32 off on both sides) outside the issue's set: printed and in the RESULT line as
# f32_*_ratio, not in its geomean. 1000^3 takes the generated tiled kernel (no multiple of 64),
# 2048^3 matmul_simt_smem
F32_CASES = [("f32_1000", "f32", (0, 1000, 1000, 1000)), ("f32_2048", "f32", (0, 2048, 2048, 2048))]
TOLERANCE = {"f16": 2e-2, "bf16": 3e-2, "f32": 1e-4, "tf32": 5e-3, "f8E4M3FN": 3e-2, "f8E5M2": 3e-2,
             "tf32wg": 5e-3}
# f16 accumulation (opt-in, not in the geomean: less accurate than torch's f32 accumulation): the f16
# payload through the wgmma kernel with acc=f16, whose half-size accumulators allow 128x256 per warpgroup;
# the best of these schedules counts
F16ACC_CASES = [("f16acc_4096", "f16acc", (0, 4096, 4096, 4096))]
F16ACC_SCHEDULES = ["pipelines/cuda/matmul.py[gen=matmul_wgmma]{block_m=256 block_n=256 stages=3 consumers=2 acc=f16}",
                    "pipelines/cuda/matmul.py[gen=matmul_wgmma]{block_m=128 block_n=256 stages=4 acc=f16}",
                    "pipelines/cuda/matmul.py[gen=matmul_wgmma]{block_m=128 block_n=256 stages=4 consumers=2 acc=f16}"]
# K-major cases: (name, operand type, (batch, m, n, k)) with the payload C + A B^T
KMAJOR_CASES = [("e4m3_4096", "f8E4M3FN", (0, 4096, 4096, 4096)), ("e4m3_8192", "f8E4M3FN", (0, 8192, 8192, 8192)),
                ("e4m3_2048x4096x1024", "f8E4M3FN", (0, 2048, 4096, 1024)),
                ("e4m3_4096x4096x512", "f8E4M3FN", (0, 4096, 4096, 512)),
                ("e5m2_4096", "f8E5M2", (0, 4096, 4096, 4096)),
                ("tf32wg_4096", "tf32wg", (0, 4096, 4096, 4096)), ("tf32wg_2048", "tf32wg", (0, 2048, 2048, 2048))]
# the tf32 cases' schedule (TF32 is opt-in: the selector never picks it); fp8 takes the selector's.
# Measured on the H100 (e4m3 4096^3 / 8192^3 / 2048x4096x1024): 128x256 two consumers 4 stages
# 0.930 / 1.056 / 0.900, with the producer warpgroup 0.932 / 1.095 / 0.855, 128x128 6 stages 0.51-0.62
TF32_KMAJOR_SCHEDULE = "pipelines/cuda/matmul.py[gen=matmul_wgmma]{block_m=128 block_n=256 consumers=2 stages=4 tf32=1}"
# the opt-in TF32 schedule for a plain f32 payload (B stored K x N) against torch with TF32 allowed: the
# wgmma kernel, which reads tf32 B K-major only, after a transposed copy of B (matmul_tf32's mma.sync
# form took 0.524 ms at 2048^3 on the H200, 0.126x torch)
TF32_SCHEDULES = ["pipelines/cuda/matmul.py[gen=matmul_wgmma]{block_m=128 block_n=256 consumers=2 stages=4 tf32=1}"]


def payload(batch: int, m: int, n: int, k: int, dtype: str) -> str:
    pre = f"{batch}x" if batch else ""
    op = "linalg.batch_matmul" if batch else "linalg.matmul"
    a, b, c = (f"tensor<{pre}{m}x{k}x{dtype}>", f"tensor<{pre}{k}x{n}x{dtype}>", f"tensor<{pre}{m}x{n}x{dtype}>")
    return (f"func.func @mm(%A: {a}, %B: {b}, %C: {c}) -> {c} {{\n"
            f"  %0 = {op} ins(%A, %B : {a}, {b}) outs(%C : {c}) -> {c}\n  return %0 : {c}\n}}\n")


EPILOGUE_CASES = [("f16_4096_bias_relu", "relu", (4096, 4096, 4096)), ("f16_4096_bias_gelu", "gelu", (4096, 4096, 4096))]


def epilogue_payload(m: int, n: int, k: int, act: str) -> str:
    a, b, c, row = f"tensor<{m}x{k}xf16>", f"tensor<{k}x{n}xf16>", f"tensor<{m}x{n}xf16>", f"tensor<{n}xf16>"
    if act == "relu":
        body = ["%z = arith.constant 0.0 : f16", "%r = arith.maximumf %s, %z : f16"]
    else:
        body = ["%k0 = arith.constant 0.044715 : f16", "%k1 = arith.constant 0.7978845608 : f16",
                "%h = arith.constant 0.5 : f16", "%one = arith.constant 1.0 : f16", "%s2 = arith.mulf %s, %s : f16",
                "%s3 = arith.mulf %s2, %s : f16", "%t0 = arith.mulf %s3, %k0 : f16", "%t1 = arith.addf %s, %t0 : f16",
                "%t2 = arith.mulf %t1, %k1 : f16", "%t3 = math.tanh %t2 : f16", "%t4 = arith.addf %t3, %one : f16",
                "%t5 = arith.mulf %s, %t4 : f16", "%r = arith.mulf %t5, %h : f16"]
    ident, bcast = "affine_map<(d0, d1) -> (d0, d1)>", "affine_map<(d0, d1) -> (d1)>"
    lines = "\n    ".join(["%s = arith.addf %x, %y : f16"] + body)
    return (f"func.func @lin(%A: {a}, %B: {b}, %C: {c}, %E: {row}) -> {c} {{\n"
            f"  %0 = linalg.matmul ins(%A, %B : {a}, {b}) outs(%C : {c}) -> {c}\n  %e = tensor.empty() : {c}\n"
            f"  %1 = linalg.generic {{indexing_maps = [{ident}, {bcast}, {ident}], iterator_types = "
            f"[\"parallel\", \"parallel\"]}} ins(%0, %E : {c}, {row}) outs(%e : {c}) {{\n"
            f"  ^bb0(%x: f16, %y: f16, %o: f16):\n    {lines}\n    linalg.yield %r : f16\n  }} -> {c}\n"
            f"  return %1 : {c}\n}}\n")


def torch_epilogue(m: int, n: int, k: int, act: str) -> float:
    import torch

    g = torch.Generator(device="cuda").manual_seed(0)
    a, b, c = (torch.rand(*s, device="cuda", dtype=torch.float16, generator=g) * 2 - 1 for s in ((m, k), (k, n), (m, n)))
    bias = torch.rand(n, device="cuda", dtype=torch.float16, generator=g) * 2 - 1
    if act == "relu":
        return timed(lambda: torch.relu(torch.addmm(c, a, b) + bias), 20)
    return timed(lambda: torch.nn.functional.gelu(torch.addmm(c, a, b) + bias, approximate="tanh"), 20)


def check_epilogue(out: Path, act: str) -> float:
    import torch

    a, b, c, bias = (_torch_tensor(x, torch) for x in _load(out, "input"))
    x = (c + a @ b).half().float() + bias
    want = torch.relu(x) if act == "relu" else torch.nn.functional.gelu(x, approximate="tanh")
    got = _torch_tensor(_load(out, "output")[0], torch)
    return float((got - want).abs().max() / want.abs().max())


def kmajor_payload(m: int, n: int, k: int, ab: str, c_type: str, zero_init: bool = False) -> str:
    """C + A B^T with B stored N x K (linalg.matmul with a transposed B indexing map); zero_init: A B^T
    into a result filled with 0 (what torch-mlir writes for x @ w.t()), no C argument."""
    a, b, c = f"tensor<{m}x{k}x{ab}>", f"tensor<{n}x{k}x{ab}>", f"tensor<{m}x{n}x{c_type}>"
    maps = ("affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, "
            "affine_map<(d0, d1, d2) -> (d0, d1)>")
    args, init = f"%A: {a}, %B: {b}, %C: {c}", "%C"
    if zero_init:
        args, init = f"%A: {a}, %B: {b}", "%F"
    head = (f"  %z = arith.constant 0.0 : {c_type}\n  %E = tensor.empty() : {c}\n"
            f"  %F = linalg.fill ins(%z : {c_type}) outs(%E : {c}) -> {c}\n") if zero_init else ""
    return (f"func.func @mm({args}) -> {c} {{\n{head}"
            f"  %0 = linalg.matmul indexing_maps = [{maps}] ins(%A, %B : {a}, {b}) outs({init} : {c}) -> {c}\n"
            f"  return %0 : {c}\n}}\n")


def torch_kmajor(m: int, n: int, k: int, dtype: str) -> float:
    """cuBLAS on A B^T: fp8 through torch._scaled_mm (scales 1.0, bf16 out), tf32 through addmm."""
    import torch

    g = torch.Generator(device="cuda").manual_seed(0)
    a = torch.rand(m, k, device="cuda", generator=g) * 2 - 1
    w = torch.rand(n, k, device="cuda", generator=g) * 2 - 1
    calls = 50 if m * n * k <= 2 ** 36 else 20
    if dtype == "tf32wg":
        c = torch.rand(m, n, device="cuda", generator=g) * 2 - 1
        torch.backends.cuda.matmul.allow_tf32 = True
        try:
            return timed(lambda: torch.addmm(c, a, w.t()), calls)
        finally:
            torch.backends.cuda.matmul.allow_tf32 = False
    f8 = {"f8E4M3FN": torch.float8_e4m3fn, "f8E5M2": torch.float8_e5m2}[dtype]
    a8, w8 = a.to(f8), w.to(f8)
    one = torch.ones((), device="cuda")
    if dtype == "f8E5M2":  # cuBLAS takes e5m2 x e5m2 not at all: e5m2 A with e4m3 B (the fastest it has)
        w8 = w.to(torch.float8_e4m3fn)
    return timed(lambda: torch._scaled_mm(a8, w8.t(), scale_a=one, scale_b=one, out_dtype=torch.bfloat16), calls)


def check_kmajor(out: Path, dtype: str) -> float:
    import ml_dtypes
    import torch

    one_byte = {"f8E4M3FN": ml_dtypes.float8_e4m3fn, "f8E5M2": ml_dtypes.float8_e5m2}.get(dtype)

    def load(x):
        if x.dtype.kind == "V" and x.dtype.itemsize == 1:
            x = x.view(one_byte)
        return _torch_tensor(x, torch)

    a, b, *c = (load(x) for x in _load(out, "input"))
    want = torch.matmul(a, b.t()) + (c[0] if c else 0)
    got = load(_load(out, "output")[0])
    return float((got - want).abs().max() / want.abs().max())


def workbench_run(src: Path, schedule: str, iterations: int, out: Path, timeout: int, calls_per_sample: int = 1) -> dict:
    """load, (schedule or `target cuda` + `select --apply`), bench, run; the run's data and selections."""
    from workbench.commands import CommandContext, default_registry
    from workbench.session import Session

    s = Session()
    ctx = CommandContext(s, default_registry())
    lines = [f"load {src}", "target cuda"]
    lines += [f"apply {schedule}"] if schedule else ["select --apply"]
    lines += [f"bench warmup=2 iterations={iterations} calls_per_sample={calls_per_sample}", f"run --target cuda --timeout {timeout} --save-outputs {out}"]
    selected = schedule
    try:
        for line in lines:
            res = ctx.registry.dispatch(line, ctx)
            if not res.ok:
                return {"ok": False, "error": f"{line}: {res.error}"}
            if line.startswith("select"):
                selected = "; ".join(f"{e['schedule']}{{{' '.join(f'{k}={v}' for k, v in e['params'].items())}}}"
                                     for e in res.data["selections"])
        return {"ok": True, "run": res.data["run"], "selected": selected}
    finally:
        s.close()


def _torch_tensor(a: np.ndarray, torch):
    """A saved input on the GPU in float32 (ml_dtypes bf16 has no torch conversion of its own; np.save
    writes it as raw 2-byte items)."""
    if a.dtype.kind == "V" and a.dtype.itemsize == 2:
        import ml_dtypes

        a = a.view(ml_dtypes.bfloat16)
    return torch.from_numpy(np.ascontiguousarray(a.astype(np.float32))).cuda()


def _load(out: Path, prefix: str) -> list:
    files = sorted(out.glob(f"{prefix}*.npy"), key=lambda f: int(f.stem[len(prefix):]))
    return [np.load(f) for f in files]


def check_matmul(out: Path) -> float:
    """max |workbench - (C + A B)| / max |C + A B|, the reference computed by torch on the GPU in f32."""
    import torch

    a, b, c = (_torch_tensor(x, torch) for x in _load(out, "input"))
    want = c + torch.matmul(a, b)
    got = _torch_tensor(_load(out, "output")[0], torch)
    return float((got - want).abs().max() / want.abs().max())


def timed(fn, calls: int) -> float:
    import torch

    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    per = []
    for _ in range(5):
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        e0.record()
        for _ in range(calls):
            fn()
        e1.record()
        torch.cuda.synchronize()
        per.append(e0.elapsed_time(e1) / calls / 1e3)
    return float(np.median(per))


def torch_matmul(batch: int, m: int, n: int, k: int, dtype: str, tf32: bool = False) -> dict:
    """cuBLAS through torch on the payload's computation, C + A B into a new tensor (`addmm` /
    `baddbmm`: beta = 1, C read), and, for information, the plain product A B (`matmul`, no C)."""
    import torch

    tdt = {"f16": torch.float16, "bf16": torch.bfloat16, "f32": torch.float32}[dtype]
    g = torch.Generator(device="cuda").manual_seed(0)
    pre = (batch,) if batch else ()
    a = torch.rand(*pre, m, k, device="cuda", dtype=tdt, generator=g) * 2 - 1
    b = torch.rand(*pre, k, n, device="cuda", dtype=tdt, generator=g) * 2 - 1
    c = torch.rand(*pre, m, n, device="cuda", dtype=tdt, generator=g) * 2 - 1
    calls = 50 if m * n * k * max(batch, 1) <= 2 ** 36 else 20
    add = torch.baddbmm if batch else torch.addmm
    torch.backends.cuda.matmul.allow_tf32 = tf32
    try:
        return {"addmm": timed(lambda: add(c, a, b), calls), "matmul": timed(lambda: torch.matmul(a, b), calls)}
    finally:
        torch.backends.cuda.matmul.allow_tf32 = False


def mlp_reference(out: Path):
    """examples/mlp.mlir in eager torch (f32, TF32 off): its time and the check of the saved output."""
    import torch

    x, w1, b1, w2, b2, w3, b3 = (_torch_tensor(t, torch) for t in _load(out, "input"))

    def mlp():
        h = torch.relu(x @ w1 + b1)
        h = torch.relu(h @ w2 + b2)
        return torch.relu(h @ w3 + b3)

    want = mlp()
    got = _torch_tensor(_load(out, "output")[0], torch)
    return timed(mlp, 50), float((got - want).abs().max() / want.abs().max())


#: the attention-like chain: softmax(Q K^T / 8) V on 16 heads of 1024 x 64 in f16, as torch-mlir exports
#: bench/payloads/attention.py (f32 accumulation and softmax, f16 tensors between the ops)
ATTENTION = ROOT / "bench/payloads/attention_f16.mlir"
ATTENTION_SHAPE = (16, 1024, 64)


def attention_reference(out: Path):
    """The chain in eager torch (f16, as the model runs): its time and the check of the saved output
    against torch in f32; flash attention's time (F.scaled_dot_product_attention) for information."""
    import torch

    q, k, v = (_torch_tensor(t, torch) for t in _load(out, "input"))
    want = torch.softmax(q @ k.transpose(-1, -2) * 0.125, dim=-1) @ v
    got = _torch_tensor(_load(out, "output")[0], torch)
    q16, k16, v16 = (t.half() for t in (q, k, v))
    eager = timed(lambda: torch.softmax(q16 @ k16.transpose(-1, -2) * 0.125, dim=-1) @ v16, 50)
    flash = timed(lambda: torch.nn.functional.scaled_dot_product_attention(q16[None], k16[None], v16[None]), 50)
    return eager, float((got - want).abs().max() / want.abs().max()), flash


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--cases", default="", help="comma-separated substrings: run only the cases whose name has one")
    ap.add_argument("--configs", default="",
                    help="';'-separated schedules to run on every matmul case instead of the selector's, each "
                         "'gen=NAME k=v ...' of pipelines/cuda/matmul.py")
    ap.add_argument("--iterations", type=int, default=10)
    ap.add_argument("--calls-per-sample", type=int, default=1,
                    help="back-to-back calls in each timed sample of the workbench (one stream synchronization a "
                         "sample, as torch's CUDA events around 20-50 calls); 1: each call synchronized")
    ap.add_argument("--timeout", type=int, default=300, help="seconds per workbench run (a hung kernel is killed)")
    args = ap.parse_args()
    import torch

    torch.backends.cuda.matmul.allow_tf32 = False  # f32 stays f32 (the references and the MLP)
    os.environ.setdefault("LH_WORKBENCH_STATE_DIR", tempfile.mkdtemp(prefix="lh-state-"))
    work = Path(tempfile.mkdtemp(prefix="lh-gpu-bench-"))
    wanted = [w for w in args.cases.split(",") if w]
    schedules = [""]
    if args.configs:
        schedules = []
        for c in args.configs.split(";"):
            first, _, params = c.strip().partition(" ")
            schedules.append(f"pipelines/cuda/matmul.py[{first}]{{{params}}}")
    rows, ratios, failed = [], {}, []
    cases = [(f"{dtype}_{key}", dtype, shape) for dtype in DTYPES for key, *shape in SHAPES] + [
        ("tf32_2048", "tf32", (0, 2048, 2048, 2048)), ("mlp_f32", "f32", None),
        ("attention_f16", "f16", ("attention",))] + KMAJOR_CASES + [
        (name, "f16", ("epilogue", act, shape)) for name, act, shape in EPILOGUE_CASES] + F32_CASES + F16ACC_CASES
    for name, dtype, shape in cases:
        if wanted and not any(w in name for w in wanted):
            continue
        kmajor = (name, dtype, shape) in KMAJOR_CASES
        act = shape[1] if shape and shape[0] == "epilogue" else ""
        attention = bool(shape) and shape[0] == "attention"
        if attention:
            b, sq, hd = ATTENTION_SHAPE
            src, flops = ATTENTION, 2 * 2.0 * b * sq * sq * hd
            runs, ref = [""], None
        elif act:
            m, n, k = shape[2]
            src = work / f"{name}.mlir"
            src.write_text(epilogue_payload(m, n, k, act))
            flops = 2.0 * m * n * k
            runs, ref, ref_s = schedules, None, torch_epilogue(m, n, k, act)
        elif kmajor:
            batch, m, n, k = shape
            src = work / f"{name}.mlir"
            # fp8 as torch._scaled_mm computes it (A B^T, nothing added), tf32 as addmm (C + A B^T)
            src.write_text(kmajor_payload(m, n, k, "f32" if dtype == "tf32wg" else dtype,
                                          "f32" if dtype == "tf32wg" else "bf16", zero_init=dtype != "tf32wg"))
            flops = 2.0 * m * n * k
            runs = schedules if args.configs else [TF32_KMAJOR_SCHEDULE if dtype == "tf32wg" else ""]
            ref, ref_s = None, torch_kmajor(m, n, k, dtype)
        elif shape is None:  # the MLP example
            src, flops = ROOT / "examples/mlp.mlir", 2.0 * 128 * (256 * 512 + 512 * 512 + 512 * 128)
            runs, ref = [""], None
        else:
            batch, m, n, k = shape
            src = work / f"{name}.mlir"
            operands = {"tf32": "f32", "f16acc": "f16"}.get(dtype, dtype)
            src.write_text(payload(batch, m, n, k, operands))
            flops = 2.0 * max(batch, 1) * m * n * k
            runs = TF32_SCHEDULES if dtype == "tf32" and not args.configs else schedules
            if dtype == "f16acc":
                runs = [with_f16_acc(sc) for sc in schedules] if args.configs else F16ACC_SCHEDULES
            ref = torch_matmul(batch, m, n, k, operands, tf32=dtype == "tf32")
            ref_s = ref["addmm"]
        for schedule in runs:
            out = work / f"out_{name}_{abs(hash(schedule))}"
            r = workbench_run(src, schedule, args.iterations, out, args.timeout, args.calls_per_sample)
            if not r["ok"]:
                print(f"FAILED {name} {schedule or 'select'}: {r['error'][-1500:]}", flush=True)
                failed.append(name)
                continue
            if act:
                err = check_epilogue(out, act)
            elif kmajor:
                err = check_kmajor(out, dtype)
            elif shape is None:
                ref_s, err = mlp_reference(out)
            elif attention:
                ref_s, err, flash = attention_reference(out)
                print(f"{name}: torch flash attention (F.scaled_dot_product_attention) {flash * 1e3:.3f} ms",
                      flush=True)
            else:
                err = check_matmul(out)
            t = r["run"]["median_s"]
            good = err <= (f16_accumulation_error_bound(shape[3]) if dtype == "f16acc" else TOLERANCE[dtype])
            ratio = ref_s / t
            rows.append((name, r["selected"], t, flops / t / 1e12, ref_s, flops / ref_s / 1e12, err, good, ratio))
            print(f"{name}: {r['selected']}: {t * 1e3:.3f} ms ({flops / t / 1e12:.1f} TFLOP/s), torch "
                  f"{ref_s * 1e3:.3f} ms ({flops / ref_s / 1e12:.1f}), ratio {ratio:.3f}, max rel err {err:.2e} "
                  f"{'ok' if good else 'WRONG'}"
                  + (f" (torch matmul without C: {ref['matmul'] * 1e3:.3f} ms)" if ref else ""), flush=True)
            if good:
                ratios[name] = max(ratios.get(name, 0.0), ratio)
            elif name not in failed:
                failed.append(name)
            shutil_rm(out)
    print(f"\n{'case':<22} {'median':>10} {'TFLOP/s':>8} {'torch':>10} {'TFLOP/s':>8} {'rel err':>9}  ratio  schedule")
    for name, sel, t, tf, rs, rtf, err, good, ratio in rows:
        print(f"{name:<22} {t * 1e3:>8.3f}ms {tf:>8.1f} {rs * 1e3:>8.3f}ms {rtf:>8.1f} {err:>9.2e}  "
              f"{ratio:.3f}{'' if good else ' WRONG'}  {sel}")
    in_set = [v for k, v in ratios.items() if not any(k == name for name, _, _ in F32_CASES + F16ACC_CASES)]
    geo = math.exp(sum(math.log(v) for v in in_set) / len(in_set)) if in_set else float("nan")
    failed = sorted(set(f for f in failed if f not in ratios))
    print("RESULT " + " ".join(f"{k}_ratio={v:.4f}" for k, v in ratios.items())
          + f" geomean_ratio={geo:.4f} calls_per_sample={args.calls_per_sample}"
          + (f" failed={','.join(failed)}" if failed else ""))
    return 0


def with_f16_acc(schedule: str) -> str:
    """A --configs schedule for the f16acc case: matmul_wgmma with acc=f16 (added where it names none)."""
    if "gen=matmul_wgmma" not in schedule or "acc=" in schedule:
        return schedule
    return schedule[:-1].rstrip() + " acc=f16}"


def shutil_rm(path: Path) -> None:
    import shutil

    shutil.rmtree(path, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
