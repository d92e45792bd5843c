"""cuda target: f16 accumulation in the Hopper wgmma kernel (`matmul_wgmma{acc=f16}`, f16 operands
only): wgmma.mma_async ... .f16.f16.f16, half the accumulator registers (128x256 per warpgroup), the
kernel's own store of the .f16x2 fragments. Lowering tests run anywhere; `*_checked` need a GPU."""
from __future__ import annotations

import importlib.util
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from conftest import load_npys, ok
from cuda_helpers import as_float64, check_matmul_run, needs_gpu, ptx_of

ROOT = Path(__file__).resolve().parents[1]
def _mlir_opt() -> Path:
    """The MLIR wheel's mlir-opt (a test oracle only; the product never runs it)."""
    spec = importlib.util.find_spec("mlir")
    paths = list(spec.submodule_search_locations or []) if spec else []
    return Path(paths[0]) / "bin" / "mlir-opt" if paths else Path("/nonexistent/mlir-opt")


MLIR_OPT = _mlir_opt()
WGMMA = "pipelines/cuda/matmul.py[gen=matmul_wgmma]"


def f16_payload(tmp_path: Path, m: int, n: int, k: int, out: str = "f16") -> Path:
    """C + A x B with f16 operands and a C (and result) of `out`."""
    a, b, c = f"tensor<{m}x{k}xf16>", f"tensor<{k}x{n}xf16>", f"tensor<{m}x{n}x{out}>"
    p = tmp_path / f"mm_{m}x{n}x{k}_{out}.mlir"
    p.write_text(f"func.func @mm(%A: {a}, %B: {b}, %C: {c}) -> {c} {{\n"
                 f"  %0 = linalg.matmul ins(%A, %B : {a}, {b}) outs(%C : {c}) -> {c}\n  return %0 : {c}\n}}\n")
    return p


def transposed_b_payload(tmp_path: Path, m: int, n: int, k: int, ab: str = "f16") -> Path:
    """C + A x B^T (B stored N x K: x @ w^T), f16 C."""
    a, b, c = f"tensor<{m}x{k}x{ab}>", f"tensor<{n}x{k}x{ab}>", f"tensor<{m}x{n}xf16>"
    maps = ("affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, "
            "affine_map<(d0, d1, d2) -> (d0, d1)>")
    p = tmp_path / f"mm_bt_{m}x{n}x{k}_{ab}.mlir"
    p.write_text(f"func.func @mm(%A: {a}, %B: {b}, %C: {c}) -> {c} {{\n"
                 f"  %0 = linalg.matmul indexing_maps = [{maps}] ins(%A, %B : {a}, {b}) outs(%C : {c}) -> {c}\n"
                 f"  return %0 : {c}\n}}\n")
    return p


def torch_matmul_payload(tmp_path: Path, m: int, n: int, k: int) -> Path:
    """torch's f16 `A @ B` as torch-mlir writes it: a fill of 0 into an f32 result, the matmul, a
    rounding to f16 (the wgmma rewrite drops the fill and fuses the rounding)."""
    a, b, acc, out = f"tensor<{m}x{k}xf16>", f"tensor<{k}x{n}xf16>", f"tensor<{m}x{n}xf32>", f"tensor<{m}x{n}xf16>"
    ident = "affine_map<(d0, d1) -> (d0, d1)>"
    p = tmp_path / f"torch_mm_{m}x{n}x{k}.mlir"
    p.write_text(
        f"func.func @mm(%A: {a}, %B: {b}) -> {out} {{\n  %z = arith.constant 0.0 : f32\n"
        f"  %e = tensor.empty() : {acc}\n  %f = linalg.fill ins(%z : f32) outs(%e : {acc}) -> {acc}\n"
        f"  %0 = linalg.matmul ins(%A, %B : {a}, {b}) outs(%f : {acc}) -> {acc}\n  %e2 = tensor.empty() : {out}\n"
        f"  %1 = linalg.generic {{indexing_maps = [{ident}, {ident}], iterator_types = [\"parallel\", \"parallel\"]}} "
        f"ins(%0 : {acc}) outs(%e2 : {out}) {{\n  ^bb0(%x: f32, %o: f16):\n    %t = arith.truncf %x : f32 to f16\n"
        f"    linalg.yield %t : f16\n  }} -> {out}\n  return %1 : {out}\n}}\n")
    return p


def tolerance(k: int) -> float:
    from workbench.worker.cuda.wgmma_matmul import f16_accumulation_error_bound

    return f16_accumulation_error_bound(k)


# -- lowering (no GPU needed) ------------------------------------------------------------------

@pytest.mark.parametrize("shape, params, n, wgmma, stores", [
    # one consumer warpgroup of 128 x 256 (f32: 256 registers per thread, refused): 2 m64 pieces x 4 k16
    ((256, 512, 512), "block_m=128 block_n=256 stages=4", 256, 8, 2 * 64),
    # two consumers of 128 x 256 each (block_m=256: f32 allows 64 rows per consumer only)
    ((512, 512, 512), "block_m=256 block_n=256 stages=3 consumers=2", 256, 8, 2 * 64),
    ((512, 512, 1024), "block_m=256 block_n=256 stages=3 consumers=2 specialize=1", 256, 8, 2 * 64),
    # the f32 tiles take acc=f16 too; edges (1000 is no tile multiple)
    ((1000, 1000, 1000), "block_m=128 block_n=128 stages=4", 128, 8, 2 * 32),
    ((256, 256, 512), "block_m=64 block_n=256 stages=4", 256, 4, 64),
])
def test_wgmma_f16_accumulator_lowers(ctx, tmp_path, shape, params, n, wgmma, stores):
    ok(ctx, f"load {f16_payload(tmp_path, *shape)}")
    ok(ctx, f"apply {WGMMA}{{{params} acc=f16}}")
    assert re.search(r'lh\.wgmma = \{acc = "f16", block_m', ctx.session.current_ir)
    ok(ctx, "apply cuda-lower{chip=sm_90a}")
    ptx = ptx_of(ctx.session.current_ir)
    assert ptx.count(f"wgmma.mma_async.sync.aligned.m64n{n}k16.f16.f16.f16") == wgmma
    assert ".f32.f16.f16" not in ptx
    # one wgmma group per K step, one left in flight; all done before the fragments are stored
    assert ptx.count("wgmma.fence.sync.aligned") == ptx.count("wgmma.commit_group.sync.aligned") == 1
    assert "wgmma.wait_group.sync.aligned \t1;" in ptx and "wgmma.wait_group.sync.aligned \t0;" in ptx
    # the kernel's own fragment store: one 32-bit shared store per .f16x2 register; the write-back
    # reads 8 halves (16 bytes) at a time
    assert ptx.count("st.shared.b32") == stores and "ld.shared.v4.b32" in ptx
    assert "ld.local" not in ptx and "st.local" not in ptx


@pytest.mark.skipif(shutil.which("ptxas") is None, reason="no ptxas here (assembling the PTX is optional)")
@pytest.mark.parametrize("params, acc", [("block_m=128 block_n=256 stages=4 acc=f16", "f16"),
                                         ("block_m=256 block_n=256 stages=3 consumers=2 acc=f16", "f16"),
                                         ("block_m=128 block_n=128 stages=4", "f32")])
def test_wgmma_f16_accumulator_fits_the_registers(ctx, tmp_path, params, acc):
    """ptxas on the lowered kernel: the 128x256 tiles of one warpgroup (128 registers of .f16x2
    accumulators per thread; f32 would need 256) assemble without spills, like the f32 128x128 tile."""
    ok(ctx, f"load {f16_payload(tmp_path, 512, 512, 1024)}")
    ok(ctx, f"apply {WGMMA}{{{params}}}")
    ok(ctx, "apply cuda-lower{chip=sm_90a}")
    ptx = tmp_path / "k.ptx"
    ptx.write_text(ptx_of(ctx.session.current_ir))
    assert f".{acc}.f16.f16" in ptx.read_text()
    p = subprocess.run([shutil.which("ptxas"), "-arch=sm_90a", "-v", str(ptx), "-o", str(tmp_path / "k.cubin")],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-2000:]
    assert "0 bytes spill stores" in p.stderr and "0 bytes spill loads" in p.stderr, p.stderr
    assert "serialized" not in p.stderr, p.stderr  # wgmma kept asynchronous (no register moves between them)


@pytest.mark.parametrize("params, message", [
    ("block_m=256 block_n=256 acc=f16", "need 256 registers per thread"),           # one consumer: too many
    ("block_m=128 block_n=256", "acc=f16 with f16 operands: half the registers"),   # f32 says what would fit
    ("block_m=256 block_n=256 consumers=2", "each consumer warpgroup takes 64 rows (block_m = 128; 256 with acc=f16)"),
    ("block_m=256 block_n=256 stages=4 consumers=2 acc=f16", "KiB of shared memory"),
    ("block_m=128 block_n=128 acc=bf16", "expected one of ['f32', 'f16']"),
    ("block_m=128 block_n=128 tf32=1 acc=f16", "acc=f16 needs f16 operands"),
])
def test_wgmma_f16_accumulator_config_errors(ctx, tmp_path, params, message):
    ok(ctx, f"load {f16_payload(tmp_path, 256, 256, 256)}")
    res = ctx.registry.dispatch(f"apply {WGMMA}{{{params}}}", ctx)
    assert not res.ok and message in res.error, res.error
    assert "lh.wgmma" not in ctx.session.current_ir


@pytest.mark.parametrize("payload, ab", [("plain", "bf16"), ("kmajor", "f8E4M3FN")])
def test_wgmma_f16_accumulator_refuses_other_operands(ctx, tmp_path, payload, ab):
    """acc=f16 on bf16 or fp8 operands: the rewrite says so in one line and the module is left as it was."""
    if payload == "plain":
        p = tmp_path / "mm_bf16.mlir"
        a, b, c = "tensor<256x256xbf16>", "tensor<256x256xbf16>", "tensor<256x256xbf16>"
        p.write_text(f"func.func @mm(%A: {a}, %B: {b}, %C: {c}) -> {c} {{\n"
                     f"  %0 = linalg.matmul ins(%A, %B : {a}, {b}) outs(%C : {c}) -> {c}\n  return %0 : {c}\n}}\n")
        params = "block_m=128 block_n=128"
    else:
        p, params = transposed_b_payload(tmp_path, 256, 256, 256, ab), "block_m=128 block_n=128 consumers=2"
    ok(ctx, f"load {p}")
    ok(ctx, f"apply {WGMMA}{{{params} acc=f16}}")
    before = ctx.session.current_ir
    res = ctx.registry.dispatch("apply cuda-lower{chip=sm_90a}", ctx)
    assert not res.ok and "rewrite wgmma-kernels" in res.error
    assert f"acc=f16 needs f16 operands (wgmma accumulates in f16 only for f16 x f16): A and B are {ab}" in res.error
    assert "\n" not in res.error.strip()
    assert ctx.session.current_ir == before


def test_wgmma_f16_accumulator_kmajor_b_lowers(ctx, tmp_path):
    """x @ w^T (B K-major) with acc=f16: 4 wgmma of 32 bytes of K per step, one group per step."""
    ok(ctx, f"load {transposed_b_payload(tmp_path, 256, 256, 512)}")
    ok(ctx, f"apply {WGMMA}{{block_m=128 block_n=128 consumers=2 acc=f16}}")
    ok(ctx, "apply cuda-lower{chip=sm_90a}")
    ptx = ptx_of(ctx.session.current_ir)
    assert ptx.count("wgmma.mma_async.sync.aligned.m64n128k16.f16.f16.f16") == 4 and ".f32.f16.f16" not in ptx
    assert ptx.count("wgmma.commit_group.sync.aligned") == 1 and ptx.count("st.shared.b32") == 32
    assert "transpose" not in ptx and "ld.local" not in ptx


def batch_payload(tmp_path: Path) -> Path:
    p = tmp_path / "bmm.mlir"
    a, b, c = "tensor<3x136x128xf16>", "tensor<3x128x200xf16>", "tensor<3x136x200xf16>"
    p.write_text(f"func.func @bmm(%A: {a}, %B: {b}, %C: {c}) -> {c} {{\n"
                 f"  %0 = linalg.batch_matmul ins(%A, %B : {a}, {b}) outs(%C : {c}) -> {c}\n  return %0 : {c}\n}}\n")
    return p


def test_batch_matmul_with_f16_accumulator_lowers(ctx, tmp_path):
    """linalg.batch_matmul (the batch as the grid's z) takes acc=f16 like linalg.matmul."""
    ok(ctx, f"load {batch_payload(tmp_path)}")
    ok(ctx, f"apply {WGMMA}{{block_m=128 block_n=256 stages=2 acc=f16}}")
    ok(ctx, "apply cuda-lower{chip=sm_90a}")
    ptx = ptx_of(ctx.session.current_ir)
    assert ptx.count("wgmma.mma_async.sync.aligned.m64n256k16.f16.f16.f16") == 8 and ".f32.f16.f16" not in ptx
    assert ptx.count("st.shared.b32") == 128 and "ld.local" not in ptx


def _wgmma_operands(nvvm: str) -> list[tuple]:
    """Each nvvm.wgmma.mma_async of lowered kernel text (arith lowered too) as (increment of the A
    descriptor, increment of the B descriptor, shape and types/layouts), the increments read off the
    llvm.add of a constant that feeds each descriptor operand (0 where none)."""
    consts = dict(re.findall(r"(%\d+) = llvm\.mlir\.constant\((-?\d+) : i\d+\) : i64", nvvm))
    adds = {m[0]: int(consts.get(m[2], consts.get(m[1], 0)))
            for m in re.findall(r"(%\d+) = llvm\.add (%\d+), (%\d+) : i64", nvvm)}
    out = []
    for a, b, rest in re.findall(r"nvvm\.wgmma\.mma_async (%\d+), (%\d+), %\w+, (<m = .*?)\s*:", nvvm):
        out.append((adds.get(a, 0), adds.get(b, 0), re.sub(r"D\[<f(16|32)>", "D[<acc>", rest)))
    return out


@pytest.mark.skipif(not MLIR_OPT.exists(), reason="mlir-opt (test oracle) not in the venv")
@pytest.mark.parametrize("cfg", [dict(block_m=128, block_n=128), dict(block_m=128, block_n=128, consumers=2),
                                 dict(block_m=64, block_n=256, b_kmajor=1), dict(block_m=128, block_n=128, consumers=2,
                                                                                  b_kmajor=1)])
def test_wgmma_f16_accumulator_descriptors_match_upstream(tmp_path, cfg):
    """The acc=f16 kernel issues nvvm.wgmma.mma_async itself: the same instructions, descriptor advances
    (per m64 piece and k16 part), shapes and operand layouts as upstream's lowering of the f32 kernel's
    nvgpu.warpgroup.mma (mlir-opt as the oracle), only the accumulator type differs."""
    from workbench.worker.cuda.wgmma_matmul import kernel_text

    seen = {}
    for acc in ("f32", "f16"):
        src = tmp_path / f"k_{acc}.mlir"
        src.write_text(kernel_text("k", 256, 256, 512, c_type="f16", acc=acc, **cfg))
        p = subprocess.run([str(MLIR_OPT), str(src), "--convert-nvgpu-to-nvvm", "--convert-arith-to-llvm"],
                           capture_output=True, text=True, timeout=120)
        assert p.returncode == 0, p.stderr[-2000:]
        seen[acc] = _wgmma_operands(p.stdout)
        assert f"D[<{acc}>" in p.stdout
    pieces = 1 if cfg.get("b_kmajor") or cfg.get("consumers") == 2 else 2
    assert len(seen["f32"]) == pieces * 4 and seen["f16"] == seen["f32"], seen
    # K x N B: the descriptors move within the op (K-major B: each part has descriptors of its own)
    assert any(a and b for a, b, _ in seen["f16"]) != bool(cfg.get("b_kmajor"))


def test_tune_leaves_the_accumulator_alone():
    """acc is opt-in for tune too: its candidates are f32 alone unless asked for (`tune N acc=[f32,f16]`),
    so a tuning run never trades accuracy for speed by itself; the other choices stay tunable."""
    from workbench.steps.params import candidate_values, generator_schema

    schema, _ = generator_schema(ROOT / "pipelines/cuda/matmul.py", "matmul_wgmma")
    assert candidate_values(schema.params["acc"]) == ["f32"]
    assert schema.params["acc"].coerce("f16") == "f16" and schema.params["acc"].default == "f32"
    assert candidate_values(schema.params["specialize"]) == [0, 1]


def _step_of(ctx, prefix: str) -> int:
    """The history index of the step whose spec starts with `prefix`."""
    res = ok(ctx, "history")
    steps = [h for h in res.data["history"] if str(h.get("spec", "")).startswith(prefix)]
    assert steps, res.data
    return steps[-1]["index"]


def test_selected_f16_matmul_takes_acc_f16_from_its_params(ctx, tmp_path):
    """The payload path: an f16 x f16 -> f16 linalg.matmul, `select --apply` (wgmma, f32 accumulation),
    then `params <step> acc=f16` re-applies the schedule with the f16 accumulator."""
    ok(ctx, f"load {f16_payload(tmp_path, 512, 512, 512)}")
    ok(ctx, "target cuda")
    ok(ctx, "select --apply")
    assert "lh.wgmma" in ctx.session.current_ir and "acc =" not in ctx.session.current_ir
    step = _step_of(ctx, "pipelines/cuda/matmul.py[gen=matmul_wgmma]")
    schema = ok(ctx, f"params {step}")
    assert "acc" in str(schema.data["table"]) and "f16" in str(schema.data["table"])
    ok(ctx, f"params {step} acc=f16")
    assert 'acc = "f16"' in ctx.session.current_ir
    ok(ctx, "apply cuda-lower{chip=sm_90a}")
    ptx = ptx_of(ctx.session.current_ir)
    assert re.search(r"wgmma\.mma_async\.sync\.aligned\.m64n\d+k16\.f16\.f16\.f16", ptx) and ".f32.f16.f16" not in ptx


def test_torch_matmul_with_f16_accumulator_is_one_kernel(ctx, tmp_path):
    """torch's `A @ B` (zero fill, f32 result, rounding to f16) with acc=f16: still one kernel that
    loads no C and writes f16 (the f16 accumulator widened, rounded once more to f16: exact)."""
    ok(ctx, f"load {torch_matmul_payload(tmp_path, 256, 512, 256)}")
    ok(ctx, f"apply {WGMMA}{{block_m=128 block_n=256 stages=4 acc=f16}}")
    ok(ctx, "apply cuda-lower{chip=sm_90a}")
    ptx = ptx_of(ctx.session.current_ir)
    entries = re.findall(r"\.entry (\w+)", ptx)
    assert len(entries) == 1 and entries[0].startswith("lh_wgmma_matmul"), entries
    assert ptx.count("wgmma.mma_async.sync.aligned.m64n256k16.f16.f16.f16") == 8
    assert "ld.global" not in ptx and "st.global.v4.b32" in ptx


# -- runs on the GPU ---------------------------------------------------------------------------

@needs_gpu
@pytest.mark.parametrize("shape, params", [
    ((256, 512, 1024), "block_m=128 block_n=256 stages=4"),
    ((512, 512, 512), "block_m=256 block_n=256 stages=3 consumers=2"),
    ((512, 512, 1024), "block_m=256 block_n=256 stages=3 consumers=2 specialize=1"),
    ((200, 328, 136), "block_m=128 block_n=128 stages=4"),
    ((300, 264, 520), "block_m=64 block_n=256 stages=3"),
    ((1000, 1000, 264), "block_m=256 block_n=256 stages=3 consumers=2"),
])
def test_gpu_wgmma_f16_accumulator_checked(ctx, tmp_path, shape, params):
    """f16 x f16 -> f16 with acc=f16 against the CPU reference (--check) and numpy in float64 within
    the f16-accumulation bound for K (f16_accumulation_error_bound)."""
    ok(ctx, f"load {f16_payload(tmp_path, *shape)}")
    ok(ctx, f"apply {WGMMA}{{{params} acc=f16}}")
    check_matmul_run(ctx, tmp_path, tolerance(shape[2]))


@needs_gpu
def test_gpu_wgmma_f16_accumulator_kmajor_b_checked(ctx, tmp_path):
    ok(ctx, f"load {transposed_b_payload(tmp_path, 300, 200, 520)}")
    ok(ctx, f"apply {WGMMA}{{block_m=128 block_n=128 consumers=2 acc=f16}}")
    check_matmul_run(ctx, tmp_path, tolerance(520), transpose_b=True)


@needs_gpu
def test_gpu_wgmma_f16_accumulator_is_f16_checked(ctx, tmp_path):
    """f16 x f16 -> f32 (no rounding of the result): acc=f16 is within its bound of numpy and measurably
    off it (an f32 accumulation stays within 1e-5 here), so the sums really are f16."""
    k = 1024
    ok(ctx, f"load {f16_payload(tmp_path, 256, 256, k, out='f32')}")
    ok(ctx, f"apply {WGMMA}{{block_m=128 block_n=256 stages=4 acc=f16}}")
    ok(ctx, f"run --target cuda --iterations 3 --save-outputs {tmp_path / 'o'}")
    a, b, c = (as_float64(x) for x in load_npys(tmp_path / "o", "input"))
    want = c + a @ b
    err = np.abs(as_float64(load_npys(tmp_path / "o", "output")[0]) - want).max() / np.abs(want).max()
    assert 1e-5 < err < tolerance(k), err


@needs_gpu
def test_gpu_batch_matmul_wgmma_f16_accumulator_checked(ctx, tmp_path):
    ok(ctx, f"load {batch_payload(tmp_path)}")
    ok(ctx, f"apply {WGMMA}{{block_m=128 block_n=256 stages=2 acc=f16}}")
    check_matmul_run(ctx, tmp_path, tolerance(128))


@needs_gpu
def test_gpu_selected_matmul_with_f16_accumulator_checked(ctx, tmp_path):
    """The payload path on the GPU: select, `params <step> acc=f16`, a checked run."""
    ok(ctx, f"load {f16_payload(tmp_path, 512, 384, 768)}")
    ok(ctx, "target cuda")
    ok(ctx, "select --apply")
    ok(ctx, f"params {_step_of(ctx, 'pipelines/cuda/matmul.py[gen=matmul_wgmma]')} acc=f16")
    check_matmul_run(ctx, tmp_path, tolerance(768))


@needs_gpu
def test_gpu_torch_matmul_with_f16_accumulator_checked(ctx, tmp_path):
    ok(ctx, f"load {torch_matmul_payload(tmp_path, 256, 512, 512)}")
    ok(ctx, f"apply {WGMMA}{{block_m=128 block_n=256 stages=4 acc=f16}}")
    ok(ctx, f"run --target cuda --iterations 3 --save-outputs {tmp_path / 'o'}")
    a, b = (as_float64(x) for x in load_npys(tmp_path / "o", "input"))
    want = a @ b
    err = np.abs(as_float64(load_npys(tmp_path / "o", "output")[0]) - want).max() / np.abs(want).max()
    assert err < tolerance(512), err
