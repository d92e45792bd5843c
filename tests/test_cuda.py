"""cuda target (issue 6): lowering to serialized GPU modules on any machine; runs checked against
the CPU reference where an NVIDIA GPU and its driver are present (skipped otherwise)."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from conftest import load_npys as _load, matmul_payload, ok
from cuda_helpers import as_float64, check_matmul_run, cuda_matmul_module, lowered_host_calls, needs_gpu, ptx_of

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"


def f16_payload(tmp_path: Path, m: int, n: int, k: int) -> Path:
    return matmul_payload(tmp_path / f"mm_{m}x{n}x{k}_f16.mlir", m, n, k, "mm", "f16")


# -- lowering (no GPU needed) ------------------------------------------------------------------

def test_matmul_f32_lowers_to_gpu_binary(ctx):
    ok(ctx, f"load {EXAMPLES / 'matmul.mlir'}")
    ok(ctx, "bench iterations=3")
    ok(ctx, "apply pipelines/cuda/matmul.py[gen=matmul_simt]{block_m=32 block_n=32 thread_m=4 thread_n=4 block_k=16}")
    assert "gpu.launch" in ctx.session.current_ir and "#gpu.block" not in ctx.session.current_ir
    ok(ctx, "apply cuda-lower{chip=sm_90}")
    ir = ctx.session.current_ir
    assert "gpu.binary @" in ir and "gpu.launch " not in ir and "gpu.module" not in ir
    ptx = ptx_of(ir)
    assert ".target sm_90" in ptx and ".entry" in ptx
    # the vectorized 4x4x16 thread tile: 4*4*16 multiply-adds, unrolled
    assert ptx.count("mul.rn.f32") + ptx.count("fma.rn.f32") >= 4 * 4 * 16
    # the GPU wrapper: device buffers for the 4 arguments of _lh_call and of _lh_bench, each freed;
    # copies in (4) and out (4) in both; the payload itself copies its result into the output (1)
    calls = lowered_host_calls(ir)
    assert calls["mgpuMemAlloc"] == calls["mgpuMemFree"] >= 8, calls
    assert ir.count("gpu.launch_func ") == 1 and calls["mgpuStreamSynchronize"] >= 3, calls
    assert re.search(r"llvm\.func @_lh_bench\(", ir) and re.search(r"llvm\.func @_mlir_ciface__lh_call\(", ir)


def test_matmul_f16_lowers_to_mma_sync(ctx, tmp_path):
    ok(ctx, f"load {f16_payload(tmp_path, 128, 64, 64)}")
    ok(ctx, "apply pipelines/cuda/matmul.py[gen=matmul_mma]{block_m=64 block_n=64 warp_m=32 warp_n=32}")
    ok(ctx, "apply cuda-lower{chip=sm_80 features=+ptx76}")
    ptx = ptx_of(ctx.session.current_ir)
    assert ".target sm_80" in ptx
    assert "mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16" in ptx


def test_matmul_f16_shared_memory_lowers_to_cp_async_ldmatrix(ctx, tmp_path):
    ok(ctx, f"load {f16_payload(tmp_path, 256, 128, 64)}")
    ok(ctx, "apply pipelines/cuda/matmul.py[gen=matmul_mma_smem]{block_m=128 block_n=128 block_k=32 warp_m=64 warp_n=64}")
    ir = ctx.session.current_ir
    assert "memref.global \"private\" @" in ir and "#gpu.address_space<workgroup>" in ir
    ok(ctx, "apply cuda-lower{chip=sm_90}")
    ptx = ptx_of(ctx.session.current_ir)
    assert ".shared .align" in ptx  # the A and B tiles
    # per K step and thread: 128x32 + 32x128 halves / 128 threads / 8 per 16-byte cp.async = 8 copies
    assert ptx.count("cp.async.cg.shared.global") == 8 and "cp.async.wait_group" in ptx
    # per K step and warp: A 4 (m) x 2 (k) ldmatrix.x4, B 8 (n) x 2 (k) ldmatrix.x2.trans, 64 mma
    assert ptx.count("ldmatrix.sync.aligned.m8n8.x4.shared.b16") == 8
    assert ptx.count("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16") == 16
    assert ptx.count("mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16") == 64
    assert "bar.sync" in ptx and "ld.local" not in ptx


def test_matmul_f16_multistage_pipeline_lowers(ctx, tmp_path):
    """stages=3: 3 shared buffers per operand, 2 cp.async groups in flight, one barrier per K step."""
    ok(ctx, f"load {f16_payload(tmp_path, 256, 128, 256)}")
    ok(ctx, "apply pipelines/cuda/matmul.py[gen=matmul_mma_smem]{block_m=128 block_n=128 block_k=32 warp_m=64 warp_n=64 stages=3}")
    ir = ctx.session.current_ir
    assert "memref<3x128x32xf16, #gpu.address_space<workgroup>>" in ir and "lh.barrier_after" in ir
    ok(ctx, "apply cuda-lower{chip=sm_90}")
    ptx = ptx_of(ctx.session.current_ir)
    assert ptx.count(".shared .align 128 .b8") == 2 and ptx.count("[24576];") == 2  # 3 x 8 KiB each
    # prologue: stages 0 and 1 (2 groups, 16-byte cp.async.cg); the loop: wait for all but the
    # newest group, barrier, ldmatrix + mma on slot k mod 3, then the predicated copies of step k+2
    assert ptx.count("cp.async.commit_group") == 3 and ptx.count("cp.async.cg.shared.global") == 16
    assert re.search(r"cp\.async\.wait_group\s+1;\s*bar\.sync\s+0;", ptx)
    assert ptx.count("bar.sync") == 1 and ptx.count("cp.async.ca.shared.global") == 8
    assert ptx.count("mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16") == 64 and "ld.local" not in ptx
    # the C tile: 64x64 / 32 lanes = 128 halves per thread, read and written as 32-bit pairs
    # (vector.load/store of vector<2xf16> annotated alignment = 4; element alignment splits them)
    assert ptx.count("ld.global.b32") == ptx.count("st.global.b32") == 64
    assert "ld.global.b16" not in ptx and "st.global.b16" not in ptx


def test_matmul_f16_multistage_8_warps_lowers(ctx, tmp_path):
    """128x256x32 blocks of 8 warps (64x64), stages=2: 2 x (8 + 16 KiB) = 48 KiB of shared memory."""
    ok(ctx, f"load {f16_payload(tmp_path, 256, 256, 128)}")
    ok(ctx, "apply pipelines/cuda/matmul.py[gen=matmul_mma_smem]{block_m=128 block_n=256 block_k=32 warp_m=64 warp_n=64 stages=2}")
    ok(ctx, "apply cuda-lower{chip=sm_90}")
    ptx = ptx_of(ctx.session.current_ir)
    assert ".maxntid 128, 2, 1" in ptx
    assert "[16384];" in ptx and "[32768];" in ptx
    assert re.search(r"cp\.async\.wait_group\s+0;\s*bar\.sync\s+0;", ptx) and ptx.count("bar.sync") == 1
    assert ptx.count("mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16") == 64 and "ld.local" not in ptx
    assert ptx.count("st.global.b32") == 64 and "st.global.b16" not in ptx


def test_matmul_f16_multistage_shared_memory_limit():
    mm = cuda_matmul_module()
    with pytest.raises(ValueError, match="48 KiB"):
        mm.matmul_mma_smem(block_m=128, block_n=128, block_k=32, stages=4)


def test_matmul_f16_wgmma_lowers_to_tma_and_wgmma(ctx, tmp_path):
    """matmul_wgmma marks the matmul; cuda-lower's rewrite builds the TMA + wgmma kernel for sm_90a."""
    ok(ctx, f"load {f16_payload(tmp_path, 256, 256, 512)}")
    ok(ctx, "apply pipelines/cuda/matmul.py[gen=matmul_wgmma]{block_m=128 block_n=128 stages=4}")
    assert 'lh.wgmma = {block_m = 128 : i64, block_n = 128 : i64, consumers = 1 : i64' in ctx.session.current_ir
    ok(ctx, "apply cuda-lower{chip=sm_90a}")
    ir = ctx.session.current_ir
    ptx = ptx_of(ir)
    assert ".target sm_90a" in ptx and ".maxntid 128, 1, 1" in ptx
    # 128x128 block tile, K step 64: 2 (m64) x 4 (k16) wgmma per step, one group left in flight
    assert ptx.count("wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16") == 8
    assert "wgmma.wait_group.sync.aligned \t1;" in ptx and "wgmma.wait_group.sync.aligned \t0;" in ptx
    # the producer issues A (128x64) and two B boxes (64x64) per K step: in the prologue and the loop
    assert ptx.count("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes") == 6
    assert ptx.count("mbarrier.try_wait.parity.shared.b64") == 2  # full (consumers), empty (producer)
    assert "bar.sync \t1, 128;" in ptx  # consumers only, before the accumulators reuse the slots
    # C: 8 halves (16 bytes) at a time, 4 steps per epilogue iteration with their loads issued first
    assert ptx.count("ld.global.v4.b32") == ptx.count("st.global.v4.b32") == 4
    assert ptx.rindex("ld.global.v4.b32") < ptx.index("st.global.v4.b32")
    assert "ld.local" not in ptx and "st.local" not in ptx
    assert lowered_host_calls(ir).get("mgpuTensorMapEncodeTiledMemref") == 2
    # 4 slots of 16 + 16 KiB and 1 KiB for the 1024-byte alignment of the swizzled tiles
    assert re.search(r"llvm\.mlir\.constant\(132096 : i32\)", ir)


def test_matmul_f16_wgmma_warp_specialized_lowers(ctx, tmp_path):
    """specialize=1 consumers=2: a producer warpgroup (setmaxnreg 40) and two m64n256 consumers (232)."""
    ok(ctx, f"load {f16_payload(tmp_path, 256, 256, 256)}")
    ok(ctx, "apply pipelines/cuda/matmul.py[gen=matmul_wgmma]{block_m=128 block_n=256 stages=3 consumers=2 specialize=1}")
    ok(ctx, "apply cuda-lower{chip=sm_90a}")
    ptx = ptx_of(ctx.session.current_ir)
    assert ".maxntid 384, 1, 1" in ptx
    assert "setmaxnreg.dec.sync.aligned.u32 \t40;" in ptx and "setmaxnreg.inc.sync.aligned.u32 \t232;" in ptx
    assert ptx.count("wgmma.mma_async.sync.aligned.m64n256k16.f32.f16.f16") == 4
    # only the producer loop issues TMA: A and four 64-column B boxes
    assert ptx.count("cp.async.bulk.tensor.2d") == 5
    assert "bar.sync \t1, 256;" in ptx


def test_wgmma_writes_f32_results_of_f16_operands(ctx):
    """examples/matmul_f16.mlir (f16 x f16 -> f32): the selector picks the wgmma kernel, whose
    epilogue adds the f32 accumulators to C without converting to f16."""
    ok(ctx, f"load {EXAMPLES / 'matmul_f16.mlir'}")
    ok(ctx, "target cuda")
    res = ok(ctx, "select --apply")
    (spec, params), = ((e["schedule"], e["params"]) for e in res.data["selections"])
    # 256x256: 16 tiles of 64x128 (one consumer) fill more of the 132 SMs than 4 of 128x256
    assert spec.endswith("[gen=matmul_wgmma]") and (params["block_m"], params["block_n"]) == (64, 128), params
    ok(ctx, "apply cuda-lower{chip=sm_90a}")
    ptx = ptx_of(ctx.session.current_ir)
    assert ptx.count("wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16") == 4
    # 8 floats per step: two 16-byte loads and stores, 4 steps per iteration; no f16 conversion
    assert ptx.count("ld.global.v4.b32") == ptx.count("st.global.v4.b32") == 8
    assert "cvt.rn.f16.f32" not in ptx and "cvt.f32.f16" not in ptx


def zero_init_matmul_payload(path: Path, batch: int, m: int, n: int, k: int, zero: str = "0.0") -> Path:
    """torch's `A @ B` as torch-mlir writes it: f16 operands, a linalg.fill of `zero` into an empty f32
    result, the (batch) matmul accumulating into it, the result rounded to f16."""
    pre, op = (f"{batch}x", "linalg.batch_matmul") if batch else ("", "linalg.matmul")
    a, b = f"tensor<{pre}{m}x{k}xf16>", f"tensor<{pre}{k}x{n}xf16>"
    acc, out = f"tensor<{pre}{m}x{n}xf32>", f"tensor<{pre}{m}x{n}xf16>"
    ident = "affine_map<(" + ", ".join(f"d{i}" for i in range(3 if batch else 2)) + ") -> (" + \
        ", ".join(f"d{i}" for i in range(3 if batch else 2)) + ")>"
    par = ", ".join(['"parallel"'] * (3 if batch else 2))
    path.write_text(
        f"func.func @mm(%A: {a}, %B: {b}) -> {out} {{\n  %z = arith.constant {zero} : f32\n"
        f"  %e = tensor.empty() : {acc}\n  %f = linalg.fill ins(%z : f32) outs(%e : {acc}) -> {acc}\n"
        f"  %0 = {op} ins(%A, %B : {a}, {b}) outs(%f : {acc}) -> {acc}\n  %e2 = tensor.empty() : {out}\n"
        f"  %1 = linalg.generic {{indexing_maps = [{ident}, {ident}], iterator_types = [{par}]}} ins(%0 : {acc}) "
        f"outs(%e2 : {out}) {{\n  ^bb0(%x: f32, %o: f16):\n    %t = arith.truncf %x : f32 to f16\n"
        f"    linalg.yield %t : f16\n  }} -> {out}\n  return %1 : {out}\n}}\n")
    return path


@pytest.mark.parametrize("batch", [0, 4])
def test_torch_matmul_is_one_wgmma_kernel(ctx, tmp_path, batch):
    """torch's f16 `A @ B` (a fill of 0, a matmul accumulating in f32, a rounding to f16) is one
    kernel: the rewrite drops the zero fill (the kernel never loads C) and fuses the rounding into the
    write-back, which stores f16 (batched too). A fill of another value stays a kernel of its own and
    the wgmma kernel then reads C."""
    loads = {}
    for zero in ("0.0", "1.0"):
        ok(ctx, f"load {zero_init_matmul_payload(tmp_path / f'mm{zero}.mlir', batch, 256, 256, 128, zero)}")
        ok(ctx, "target cuda")
        ok(ctx, "select --apply")
        ok(ctx, "apply cuda-lower{chip=sm_90a}")
        ptx = ptx_of(ctx.session.current_ir)
        entries = re.findall(r"\.entry (\w+)", ptx)
        wgmma = [e for e in entries if e.startswith("lh_wgmma_matmul")]
        assert len(wgmma) == 1 and len(entries) == (1 if zero == "0.0" else 2), entries
        kernel = ptx[ptx.index(".entry lh_wgmma_matmul"):].split(".entry ")[1]
        loads[zero] = kernel.count("ld.global")
        assert "cvt.rn.f16x2.f32" in kernel  # the f16 result is written by the matmul's kernel
    assert loads["0.0"] == 0 and loads["1.0"] > 0, loads


ATTENTION_F16 = ROOT / "tests/payloads/attention_f16/attention.mlir"


def test_attention_reads_k_in_place(ctx):
    """torch's softmax(Q K^T / 8) V in f16: the transpose of K folds into the first batch matmul's maps
    (lh-transposed-b-matmuls), whose wgmma kernel reads K K-major; with the zero fills dropped and the
    roundings fused into the write-backs, the chain is three kernels: two matmuls and one row kernel."""
    ok(ctx, f"load {ATTENTION_F16}")
    ok(ctx, "target cuda")
    res = ok(ctx, "select --apply")
    assert "pass lh-transposed-b-matmuls" in res.data["prepared"]
    first = next(e["params"] for e in res.data["selections"] if e["params"].get("op") == "batch_matmul_0")
    assert (first["block_m"], first["consumers"]) in ((128, 2), (64, 1)), first  # 64 rows per consumer
    assert "linalg.transpose" not in ctx.session.current_ir
    # the scale after Q K^T is the first matmul's epilogue (written in f16: lh-narrow-widened-results),
    # not the first op of the softmax's row kernel
    chain = next(e["params"]["op"] for e in res.data["selections"] if e["schedule"].endswith("[gen=gpu_rows]"))
    assert "lh-narrow-widened-results" in " ".join(res.data["prepared"])
    assert "generic_0" not in chain.split(","), chain
    ok(ctx, "apply cuda-lower{chip=sm_90a}")
    ptx = ptx_of(ctx.session.current_ir)
    entries = re.findall(r"\.entry (\w+)", ptx)
    assert len(entries) == 3 and sum(e.startswith("lh_wgmma_matmul") for e in entries) == 2, entries
    first = ptx[ptx.index(".entry lh_wgmma_matmul_128x128x64"):].split(".entry ")[1]
    assert "cvt.rn.f16x2.f32" in first and "mul.rn.f16x2" in first  # rounding and scale in its write-back


@pytest.mark.parametrize("dtype, folded", [("f16", True), ("f32", False)])
def test_transposed_b_folds_only_for_wgmma_operands(ctx, tmp_path, dtype, folded):
    """q @ k.transpose(-1, -2) as torch-mlir writes it: in f16 the transpose folds into the batch
    matmul's maps (the wgmma kernel reads B K-major); in f32 it stays: matmul_simt reads B [k][n]."""
    q, kt, s_ = f"tensor<2x128x64x{dtype}>", f"tensor<2x64x128x{dtype}>", "tensor<2x128x128xf32>"
    path = tmp_path / f"qk_{dtype}.mlir"
    path.write_text(
        f"func.func @qk(%q: {q}, %k: {q}) -> {s_} {{\n  %z = arith.constant 0.0 : f32\n"
        f"  %e0 = tensor.empty() : {kt}\n"
        f"  %t = linalg.transpose ins(%k : {q}) outs(%e0 : {kt}) permutation = [0, 2, 1]\n"
        f"  %e1 = tensor.empty() : {s_}\n  %f = linalg.fill ins(%z : f32) outs(%e1 : {s_}) -> {s_}\n"
        f"  %s = linalg.batch_matmul ins(%q, %t : {q}, {kt}) outs(%f : {s_}) -> {s_}\n  return %s : {s_}\n}}\n")
    ok(ctx, f"load {path}")
    ok(ctx, "target cuda")
    from workbench.targets import get_target

    steps = get_target("cuda").preparation_steps(ctx.session.inspect())
    assert ("pass lh-transposed-b-matmuls" in steps) == folded
    if folded:
        res = ok(ctx, "select --apply")
        assert "pass lh-transposed-b-matmuls" in res.data["prepared"]
        assert "linalg.transpose" not in ctx.session.current_ir
        ok(ctx, "apply cuda-lower{chip=sm_90a}")
        entries = re.findall(r"\.entry (\w+)", ptx_of(ctx.session.current_ir))
        assert len(entries) == 1 and entries[0].startswith("lh_wgmma_matmul"), entries


def test_wgmma_rewrite_as_its_own_step_shows_the_kernel_and_replays(ctx, tmp_path):
    """The configuration (matmul_wgmma) and the late lowering (rewrite wgmma-kernels) are separate
    steps a user can look at one by one; the saved session replays to the same IR."""
    from workbench.session import Session, read_session_file, replay_into

    ok(ctx, f"load {f16_payload(tmp_path, 256, 256, 512)}")
    ok(ctx, "apply pipelines/cuda/matmul.py[gen=matmul_wgmma]{block_m=128 block_n=256 consumers=2}")
    res = ctx.registry.dispatch("apply rewrite wgmma-kernels", ctx)
    assert not res.ok and "runs after bufferization" in res.error  # still on tensors
    ok(ctx, "apply pipelines/lib/bufferize.mlir")
    ok(ctx, "apply rewrite wgmma-kernels")
    ir = ctx.session.current_ir
    assert "lh.wgmma" not in ir and "linalg.matmul" not in ir
    for op in ("nvgpu.tma.create.descriptor", "nvgpu.tma.async.load", "nvgpu.mbarrier.try_wait.parity",
               "nvgpu.warpgroup.mma ", "nvgpu.warpgroup.mma.store", "gpu.launch"):
        assert op in ir, op
    assert "call @lh_wgmma_matmul_256x256x512_" in ir
    ok(ctx, "apply cuda-lower{chip=sm_90a}")  # the rewrite stage in cuda-lower is now a no-op
    assert ptx_of(ctx.session.current_ir).count("wgmma.mma_async.sync.aligned.m64n256k16.f32.f16.f16") == 4
    path = ctx.session.save(tmp_path / "wgmma.yaml")
    assert "rewrite: wgmma-kernels" in path.read_text()
    fresh = Session()
    try:
        loaded = read_session_file(path)
        fresh.load(loaded.payload)
        assert all(r.ok for r in replay_into(fresh, loaded))
        assert fresh.current_ir == ctx.session.current_ir
    finally:
        fresh.close()


def test_timed_device_call_allocates_nothing(ctx, tmp_path):
    """The timed call writes the entry's result straight into the device output buffer: no
    cudaMalloc / cudaFree / extra copy inside it (forward_result_buffers in the GPU wrapper)."""
    ok(ctx, f"load {f16_payload(tmp_path, 256, 256, 512)}")
    ok(ctx, "apply pipelines/cuda/matmul.py[gen=matmul_wgmma]{block_m=128 block_n=128}")
    ok(ctx, "bench")
    ok(ctx, "apply cuda-lower{chip=sm_90a}")
    ir = ctx.session.current_ir
    body = ir[ir.index("llvm.func @_lh_device_call("):]
    body = body[:body.index("\n  }")]
    assert "llvm.call @mm(" in body
    assert "mgpuMemAlloc" not in body and "mgpuMemFree" not in body and "mgpuMemcpy" not in body
    # the entry itself: bufferization wrote the result in place into C and copied it into the out
    # parameter; the wgmma rewrite folds that copy (the kernel reads C and writes the output)
    entry = ir[ir.index("llvm.func @mm("):]
    entry = entry[:entry.index("\n  }")]
    assert "llvm.call @lh_wgmma_matmul_256x256x512_" in entry and "mgpuMemcpy" not in entry
    # no stream created or destroyed per call: one stream per process (lh-reuse-gpu-stream)
    calls = lowered_host_calls(ir)
    assert calls["mgpuStreamCreate"] == 1 and "mgpuStreamDestroy" not in calls, calls
    assert "llvm.call @lh_reused_gpu_stream()" in ir[ir.index("llvm.func @lh_wgmma_matmul_256x256x512_"):]
    # the wrapper still allocates and copies around the timed loop
    bench = ir[ir.index("llvm.func @_lh_bench("):]
    assert "mgpuMemAlloc" in bench[:bench.index("\n  }")]


@pytest.mark.parametrize("params, message", [
    ("block_m=256 block_n=256 stages=2", "need 512 registers per thread"),
    ("block_m=128 block_n=256 stages=6 consumers=2", "KiB of shared memory"),
    ("block_m=64 block_n=96", "block_n=96"),
    ("block_m=128 block_n=64", "64 computes wrong results"),
    ("block_m=64 block_n=64 consumers=2", "multiple of 64 rows"),
    ("block_m=256 block_n=128 consumers=2", "each consumer warpgroup takes 64 rows"),
])
def test_matmul_wgmma_config_errors(ctx, tmp_path, params, message):
    ok(ctx, f"load {f16_payload(tmp_path, 256, 256, 256)}")
    res = ctx.registry.dispatch(f"apply pipelines/cuda/matmul.py[gen=matmul_wgmma]{{{params}}}", ctx)
    assert not res.ok and message in res.error
    assert "lh.wgmma" not in ctx.session.current_ir  # the failed step left the module as it was


def test_matmul_wgmma_rewrite_refuses_k_not_multiple_of_8(ctx, tmp_path):
    ok(ctx, f"load {f16_payload(tmp_path, 128, 128, 100)}")
    ok(ctx, "apply pipelines/cuda/matmul.py[gen=matmul_wgmma]{block_m=128 block_n=128}")
    before = ctx.session.current_ir
    res = ctx.registry.dispatch("apply cuda-lower{chip=sm_90a}", ctx)
    assert not res.ok and "rewrite wgmma-kernels" in res.error and "K=100 is not a multiple of 8" in res.error
    assert ctx.session.current_ir == before


def test_matmul_wgmma_edges_lower_with_predicated_stores(ctx, tmp_path):
    """1000x1000x1000 (no tile multiple): ceil(1000/128) x ceil(1000/128) blocks, ceil(1000/64) = 16
    K steps (TMA fills the part of the last boxes past K, M and N with zeros), C loads clamped into
    the matrix and the stores predicated; the aligned kernel has no such guards."""
    ok(ctx, f"load {f16_payload(tmp_path, 1000, 1000, 1000)}")
    ok(ctx, "apply pipelines/cuda/matmul.py[gen=matmul_wgmma]{block_m=128 block_n=128 stages=4}")
    ok(ctx, "apply cuda-lower{chip=sm_90a}")
    ir = ctx.session.current_ir
    ptx = ptx_of(ir)
    assert ptx.count("wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16") == 8
    assert ptx.count("ld.global.v4.b32") == ptx.count("st.global.v4.b32") == 4
    # C loads clamped to row 999 / column 992 (the last 8 columns), stores skipped past row 999
    assert ptx.count("min.u64") >= 4 and ", 999;" in ptx and ", 992;" in ptx
    assert re.search(r"setp\.gt\.u64 \t%p\d+, %rd\d+, 999;", ptx)
    assert "ld.local" not in ptx and "st.local" not in ptx
    # the aligned kernel has no guards
    ok(ctx, f"load {f16_payload(tmp_path, 1024, 1024, 1024)}")
    ok(ctx, "apply pipelines/cuda/matmul.py[gen=matmul_wgmma]{block_m=128 block_n=128 stages=4}")
    ok(ctx, "apply cuda-lower{chip=sm_90a}")
    aligned = ptx_of(ctx.session.current_ir)
    assert ", 1023;" not in aligned and ", 1016;" not in aligned


def test_matmul_wgmma_bf16_lowers(ctx, tmp_path):
    """bf16 x bf16 -> f32: the same kernel with bf16 TMA boxes and m64nNk16 bf16 wgmma."""
    p = tmp_path / "mm_bf16.mlir"
    a, b, c = "tensor<256x512xbf16>", "tensor<512x256xbf16>", "tensor<256x256xf32>"
    _typed_matmul(p, a, b, c)
    ok(ctx, f"load {p}")
    ok(ctx, "target cuda")
    res = ok(ctx, "select --apply")
    assert any("gen=matmul_wgmma" in spec for spec in _selected_specs(res)), res.data
    ok(ctx, "apply cuda-lower{chip=sm_90a}")
    ptx = ptx_of(ctx.session.current_ir)
    assert "wgmma.mma_async.sync.aligned.m64n" in ptx and ".f32.bf16.bf16" in ptx
    assert ".f16.f16" not in ptx


def transposed_b_payload(tmp_path: Path, m: int, n: int, k: int, ab: str, c_type: str) -> Path:
    """C + A x B^T (B stored N x K, the x @ w^T of a linear layer): linalg.matmul with a transposed B map."""
    a, b, c = f"tensor<{m}x{k}x{ab}>", f"tensor<{n}x{k}x{ab}>", f"tensor<{m}x{n}x{c_type}>"
    maps = ("affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, "
            "affine_map<(d0, d1, d2) -> (d0, d1)>")
    p = tmp_path / f"mm_bt_{m}x{n}x{k}_{ab}_{c_type}.mlir"
    _typed_matmul(p, a, b, c, maps)
    return p


@pytest.mark.parametrize("ab, c_type, params, wgmma", [
    ("f8E4M3FN", "f32", "block_m=128 block_n=128 consumers=2", "m64n128k32.f32.e4m3.e4m3"),
    ("f8E5M2", "bf16", "block_m=64 block_n=256 stages=4", "m64n256k32.f32.e5m2.e5m2"),
    ("f32", "f32", "block_m=128 block_n=256 consumers=2 stages=3 tf32=1", "m64n256k8.f32.tf32.tf32"),
    ("f16", "f16", "block_m=128 block_n=128 consumers=2", "m64n128k16.f32.f16.f16"),
])
def test_matmul_wgmma_kmajor_b_lowers(ctx, tmp_path, ab, c_type, params, wgmma):
    """x @ w^T (B K-major): fp8 (e4m3, e5m2) and tf32 wgmma, which read B only K-major; one TMA box of
    block_n x 128 bytes per K step and 4 wgmma of 32 bytes of K each, the descriptors advanced inside
    the swizzled rows; fp8 TMA descriptors made for ui8 (the lowering knows no fp8 tensor-map type)."""
    ok(ctx, f"load {transposed_b_payload(tmp_path, 256, 256, 512, ab, c_type)}")
    ok(ctx, f"apply pipelines/cuda/matmul.py[gen=matmul_wgmma]{{{params}}}")
    ok(ctx, "apply cuda-lower{chip=sm_90a}")
    ir = ctx.session.current_ir
    ptx = ptx_of(ir)
    assert ptx.count(f"wgmma.mma_async.sync.aligned.{wgmma}") == 4
    assert "transpose" not in ptx and "ld.local" not in ptx
    # prologue + loop: one A and one B box per K step
    assert ptx.count("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes") == 4
    assert lowered_host_calls(ir).get("mgpuTensorMapEncodeTiledMemref") == 2
    assert "unrealized_conversion_cast" not in ir


def test_selector_picks_kmajor_wgmma_for_fp8(ctx, tmp_path):
    """fp8 x @ w^T: `select` picks the K-major wgmma kernel (64 rows per consumer warpgroup)."""
    mm = cuda_matmul_module()
    gen, params = mm.select(4096, 4096, 4096, "bf16", "sm_90a", "f8E4M3FN")
    assert gen == "matmul_wgmma" and params["block_m"] // params["consumers"] == 64, params
    assert mm.select(4096, 4096, 4096, "bf16", "sm_80", "f8E4M3FN")[0] != "matmul_wgmma"
    ok(ctx, f"load {transposed_b_payload(tmp_path, 512, 384, 256, 'f8E5M2', 'f32')}")
    ok(ctx, "target cuda")
    res = ok(ctx, "select --apply")
    assert any("gen=matmul_wgmma" in spec for spec in _selected_specs(res)), res.data
    ok(ctx, "apply cuda-lower{chip=sm_90a}")
    assert "wgmma.mma_async.sync.aligned.m64n" in ptx_of(ctx.session.current_ir)


def epilogue_payload(tmp_path: Path, m: int, n: int, k: int, ty: str, kind: str) -> Path:
    """C + A x B followed by an elementwise generic: `bias_relu` (row-vector bias, then max with 0),
    `bias_gelu` (bias, then gelu in torch's tanh form) or `residual` (+ an M x N matrix, times 0.5)."""
    a, b, c, row = f"tensor<{m}x{k}x{ty}>", f"tensor<{k}x{n}x{ty}>", f"tensor<{m}x{n}x{ty}>", f"tensor<{n}x{ty}>"
    ident, bcast = "affine_map<(d0, d1) -> (d0, d1)>", "affine_map<(d0, d1) -> (d1)>"
    extra, extra_t, second_map = (c, c, ident) if kind == "residual" else (row, row, bcast)
    body = {"bias_relu": "%s = arith.addf %x, %y : T\n    %z = arith.constant 0.0 : T\n    %r = arith.maximumf %s, %z : T",
            "residual": "%s = arith.addf %x, %y : T\n    %h = arith.constant 0.5 : T\n    %r = arith.mulf %s, %h : T",
            "bias_gelu": "\n    ".join([
                "%s = arith.addf %x, %y : T", "%k0 = arith.constant 0.044715 : T", "%k1 = arith.constant 0.7978845608 : T",
                "%h = arith.constant 0.5 : T", "%one = arith.constant 1.0 : T", "%s2 = arith.mulf %s, %s : T",
                "%s3 = arith.mulf %s2, %s : T", "%t0 = arith.mulf %s3, %k0 : T", "%t1 = arith.addf %s, %t0 : T",
                "%t2 = arith.mulf %t1, %k1 : T", "%t3 = math.tanh %t2 : T", "%t4 = arith.addf %t3, %one : T",
                "%t5 = arith.mulf %s, %t4 : T", "%r = arith.mulf %t5, %h : T"])}[kind].replace("T", ty)
    p = tmp_path / f"mm_{kind}_{m}x{n}x{k}_{ty}.mlir"
    p.write_text(f"func.func @lin(%A: {a}, %B: {b}, %C: {c}, %E: {extra_t}) -> {c} {{\n"
                 f"  %0 = linalg.matmul ins(%A, %B : {a}, {b}) outs(%C : {c}) -> {c}\n"
                 f"  %e = tensor.empty() : {c}\n"
                 f"  %1 = linalg.generic {{indexing_maps = [{ident}, {second_map}, {ident}], iterator_types = "
                 f"[\"parallel\", \"parallel\"]}} ins(%0, %E : {c}, {extra}) outs(%e : {c}) {{\n"
                 f"  ^bb0(%x: {ty}, %y: {ty}, %o: {ty}):\n    {body}\n    linalg.yield %r : {ty}\n  }} -> {c}\n"
                 f"  return %1 : {c}\n}}\n")
    return p


@pytest.mark.parametrize("kind, ty, fused_op", [("bias_relu", "f16", "max.NaN.f32"), ("residual", "bf16", "mul.rn.bf16x2"),
                                               ("bias_gelu", "f16", "ex2.approx")])
def test_wgmma_fuses_elementwise_epilogue(ctx, tmp_path, kind, ty, fused_op):
    """matmul + bias + relu (or + residual, * 0.5): the elementwise generic runs in the wgmma kernel's
    epilogue (one kernel, no second pass over the result), each op rounded to its type (bf16 ops
    become bf16x2 instructions)."""
    ok(ctx, f"load {epilogue_payload(tmp_path, 256, 256, 512, ty, kind)}")
    ok(ctx, "target cuda")
    ok(ctx, "select --apply")
    ok(ctx, "apply cuda-lower{chip=sm_90a}")
    ptx = ptx_of(ctx.session.current_ir)
    entries = re.findall(r"\.entry (\w+)", ptx)
    assert len(entries) == 1 and entries[0].startswith("lh_wgmma_matmul_256x256x512_"), entries
    assert fused_op in ptx


@pytest.mark.parametrize("ab, c_type, params, message", [
    ("f8E4M3FN", "f32", "block_m=128 block_n=128", "needs 64 rows per consumer warpgroup"),
    ("f32", "f32", "block_m=128 block_n=128 consumers=2", "tf32=1"),
])
def test_matmul_wgmma_kmajor_b_refusals(ctx, tmp_path, ab, c_type, params, message):
    ok(ctx, f"load {transposed_b_payload(tmp_path, 256, 256, 512, ab, c_type)}")
    ok(ctx, f"apply pipelines/cuda/matmul.py[gen=matmul_wgmma]{{{params}}}")
    res = ctx.registry.dispatch("apply cuda-lower{chip=sm_90a}", ctx)
    assert not res.ok and message in res.error


@pytest.mark.parametrize("ab, c_type, params, wgmma", [
    ("f8E4M3FN", "f32", "block_m=128 block_n=128 consumers=2", "m64n128k32.f32.e4m3.e4m3"),
    ("f32", "f32", "block_m=128 block_n=128 consumers=2 tf32=1", "m64n128k8.f32.tf32.tf32"),
])
def test_matmul_wgmma_plain_b_of_kmajor_only_types_is_transposed_first(ctx, tmp_path, ab, c_type, params, wgmma):
    """fp8 and tf32 with B stored K x N: wgmma reads these types K-major only, so the rewrite copies B
    transposed into a new buffer (a linalg.transpose, mapped to a kernel of its own) and calls the
    K-major kernel; before, the lowering refused."""
    p = tmp_path / f"mm_{ab}.mlir"
    _typed_matmul(p, f"tensor<128x256x{ab}>", f"tensor<256x192x{ab}>", f"tensor<128x192x{c_type}>")
    ok(ctx, f"load {p}")
    ok(ctx, f"apply pipelines/cuda/matmul.py[gen=matmul_wgmma]{{{params}}}")
    ok(ctx, "apply cuda-lower{chip=sm_90a}")
    ptx = ptx_of(ctx.session.current_ir)
    entries = re.findall(r"\.entry (\w+)", ptx)
    assert len(entries) == 2 and sum(e.startswith("lh_wgmma_matmul_128x192x256_") for e in entries) == 1, entries
    assert f"wgmma.mma_async.sync.aligned.{wgmma}" in ptx
    # the copy: 32 x 32 tiles through shared memory (4 elements a thread each way, a barrier between)
    transpose = ptx[ptx.index(".entry lh_transpose_256x192_"):]
    transpose = transpose[:transpose.find(".entry", 1) if ".entry" in transpose[1:] else None]
    assert transpose.count("st.shared") == 4 and transpose.count("ld.shared") == 4 and "bar.sync" in transpose


def test_batch_matmul_wgmma_lowers(ctx, tmp_path):
    """linalg.batch_matmul 4 x (192x256x128) f16: the selector picks the wgmma kernel, the batch is the
    grid's z, the operands are collapsed to 2-D views for the TMA descriptors."""
    p = tmp_path / "bmm.mlir"
    a, b, c = "tensor<4x192x128xf16>", "tensor<4x128x256xf16>", "tensor<4x192x256xf16>"
    p.write_text(f"func.func @bmm(%A: {a}, %B: {b}, %C: {c}) -> {c} {{\n"
                 f"  %0 = linalg.batch_matmul ins(%A, %B : {a}, {b}) outs(%C : {c}) -> {c}\n  return %0 : {c}\n}}\n")
    ok(ctx, f"load {p}")
    ok(ctx, "target cuda")
    res = ok(ctx, "select --apply")
    assert any("gen=matmul_wgmma" in spec for spec in _selected_specs(res)), res.data
    ok(ctx, "apply pipelines/lib/bufferize.mlir")
    ok(ctx, "apply rewrite wgmma-kernels")
    ir = ctx.session.current_ir
    assert "linalg.batch_matmul" not in ir
    assert re.search(r"memref\.collapse_shape %\w+ \[\[0, 1\], \[2\]\] : memref<4x192x128xf16> into memref<768x128xf16>", ir)
    assert re.search(r"memref\.collapse_shape %\w+ \[\[0, 1\], \[2\]\] : memref<4x128x256xf16> into memref<512x256xf16>", ir)
    ok(ctx, "apply cuda-lower{chip=sm_90a}")
    ptx = ptx_of(ctx.session.current_ir)
    assert "wgmma.mma_async.sync.aligned.m64n" in ptx and "%ctaid.z" in ptx
    # K not a multiple of 64: a B box would read the next batch's rows; refused, left to the naive mapping
    mm = cuda_matmul_module()
    assert mm.select_batch(4, 192, 256, 100, "f16", "sm_90a") is None


def test_short_k_matmuls_get_tiles_two_of_which_fit_a_multiprocessor():
    """With one or two K steps a wgmma block is its loads and its write-back; only a second block on
    the same multiprocessor overlaps them, so the selector takes a tile whose shared memory fits twice
    (attention's Q K^T, K = 64), while a long K keeps the 128 x 256 tile that fills one."""
    from workbench.worker.cuda.wgmma_matmul import check_config

    mm = cuda_matmul_module()

    def shared(m, n, k, p):
        return check_config(m, n, k, p["block_m"], p["block_n"], p["stages"], p["consumers"], p["specialize"])["shared"]

    for gen, p, (m, n, k) in [(*mm.select_batch(16, 1024, 1024, 64, "f16", "sm_90a", "f16", 132, "transpose_b"),
                               (1024, 1024, 64)),
                              (*mm.select(4096, 4096, 128, "f16", "sm_90a", "f16"), (4096, 4096, 128))]:
        assert gen == "matmul_wgmma" and 2 * shared(m, n, k, p) <= mm.SHARED_PER_SM, p
    gen, p = mm.select(4096, 4096, 4096, "f16", "sm_90a", "f16")
    assert (p["block_m"], p["block_n"], p["consumers"]) == (128, 256, 2)
    assert 2 * shared(4096, 4096, 4096, p) > mm.SHARED_PER_SM


def test_mlp_select_configures_each_matmul(ctx):
    """examples/mlp.mlir (three f32 matmuls of different shapes): one entry per matmul, each matching
    its op by id (after `rewrite tag-ops`), so the schedule set up for one does not hit the others."""
    ok(ctx, f"load {EXAMPLES / 'mlp.mlir'}")
    ok(ctx, "target cuda")
    res = ok(ctx, "select --apply")
    entries = res.data["selections"]
    assert [e["params"]["op"] for e in entries] == ["matmul_0", "matmul_1", "matmul_2"], entries
    assert all(e["schedule"].endswith("[gen=matmul_simt]") for e in entries)
    # each layer's zeroing fill and bias + relu epilogue (fused by the preparation) go into its kernel
    assert [(e["params"]["fill"], e["params"]["epilogue"]) for e in entries] == [
        ("fill_0", "generic_0"), ("fill_1", "generic_1"), ("fill_2", "generic_2")], entries
    ir = ctx.session.current_ir
    assert ir.count("gpu.launch ") == 3 and "linalg.matmul" not in ir
    assert ir.count("linalg.fill") == 3 and ir.count("linalg.generic") == 3   # tiles, inside the launches
    body = ir[ir.index("gpu.launch "):]
    assert body.index("linalg.fill") < body.index("scf.for") < body.index("linalg.generic")
    ok(ctx, "apply cuda-lower{chip=sm_90a}")
    ptx = ptx_of(ctx.session.current_ir)
    # three kernels, each with its register tile and K step unrolled into FMAs, and no other kernel
    assert ctx.session.current_ir.count("gpu.launch_func") == 3
    unrolled = sum(e["params"]["thread_m"] * e["params"]["thread_n"] * e["params"]["block_k"] for e in entries)
    assert ptx.count("fma.rn.f32") >= unrolled >= 3 * 2 * 2 * 16


def test_two_f16_matmuls_get_their_own_wgmma_tiles(ctx, tmp_path):
    p = tmp_path / "two.mlir"
    p.write_text("""func.func @two(%A: tensor<4096x512xf16>, %B: tensor<512x4096xf16>, %C: tensor<4096x4096xf16>,
                %X: tensor<256x256xf16>, %Y: tensor<256x256xf16>, %Z: tensor<256x256xf16>)
    -> (tensor<4096x4096xf16>, tensor<256x256xf16>) {
  %0 = linalg.matmul ins(%A, %B : tensor<4096x512xf16>, tensor<512x4096xf16>) outs(%C : tensor<4096x4096xf16>) -> tensor<4096x4096xf16>
  %1 = linalg.matmul ins(%X, %Y : tensor<256x256xf16>, tensor<256x256xf16>) outs(%Z : tensor<256x256xf16>) -> tensor<256x256xf16>
  return %0, %1 : tensor<4096x4096xf16>, tensor<256x256xf16>
}
""")
    ok(ctx, f"load {p}")
    ok(ctx, "target cuda")
    res = ok(ctx, "select --apply")
    (e0, e1) = res.data["selections"]
    assert (e0["params"]["block_n"], e0["params"]["op"]) == (256, "matmul_0")
    assert (e1["params"]["block_m"], e1["params"]["block_n"], e1["params"]["op"]) == (64, 128, "matmul_1")
    ok(ctx, "apply cuda-lower{chip=sm_90a}")
    ptx = ptx_of(ctx.session.current_ir)
    assert "wgmma.mma_async.sync.aligned.m64n256k16" in ptx and "wgmma.mma_async.sync.aligned.m64n128k16" in ptx


def _typed_matmul(path: Path, a: str, b: str, c: str, maps: str = "") -> None:
    """A payload `@mm` of one linalg.matmul with operand types a, b, c (tensor types; `maps`: its
    indexing_maps, e.g. a transposed B)."""
    with_maps = f" indexing_maps = [{maps}]" if maps else ""
    path.write_text(f"func.func @mm(%A: {a}, %B: {b}, %C: {c}) -> {c} {{\n"
                    f"  %0 = linalg.matmul{with_maps} ins(%A, %B : {a}, {b}) outs(%C : {c}) -> {c}\n"
                    f"  return %0 : {c}\n}}\n")


def _selected_specs(res) -> list[str]:
    return [e["schedule"] for e in res.data["selections"]]


def test_softmax_lowers_to_gpu_binary(ctx):
    ok(ctx, f"load {EXAMPLES / 'softmax.mlir'}")
    ok(ctx, "bench iterations=2")
    ok(ctx, "apply pipelines/cuda/softmax.py[gen=softmax_rows]{rows_per_block=16}")
    ok(ctx, "apply cuda-lower")
    ir = ctx.session.current_ir
    assert ir.count("gpu.binary @") >= 4  # fills, max, exp, sum, divide: one kernel each
    ptx = ptx_of(ir)
    assert "ex2.approx" in ptx and "__nv_" not in ptx  # exp without libdevice
    # the temporaries (the row statistics) live on the device, allocated once per process and kept
    # (lh-cache-gpu-temporaries); the wrapper's device copies of the arguments are allocated and freed
    calls = lowered_host_calls(ir)
    assert calls["lh_cached_gpu_alloc"] == calls["lh_cached_gpu_free"] >= 1, calls
    assert calls["mgpuMemAlloc"] == calls["mgpuMemFree"] >= 2, calls


def test_unscheduled_payload_is_mapped_naively(ctx):
    """Without a schedule the default lowering still produces only GPU kernels (no host loops on device data)."""
    ok(ctx, f"load {EXAMPLES / 'mlp.mlir'}")
    ok(ctx, "apply cuda-lower")
    ir = ctx.session.current_ir
    assert ir.count("gpu.binary @") >= 9  # 3 x (fill, matmul, bias, relu) minus fused/canonicalized copies
    assert "llvm.load" not in ir.split("llvm.func @mlp(")[1].split("llvm.func ")[0].replace("llvm.load %arg", "")


def test_chip_option_and_bad_chip(ctx):
    ok(ctx, f"load {EXAMPLES / 'matmul.mlir'}")
    res = ctx.registry.dispatch("apply cuda-lower{chip=gfx90a}", ctx)
    assert not res.ok and "expected sm_NN" in res.error
    assert ctx.session.cursor == 0  # failed step: session unchanged
    ok(ctx, "apply cuda-lower{chip=sm_86 features=+ptx80}")
    assert ".target sm_86" in ptx_of(ctx.session.current_ir)


def test_selector_picks_tensor_cores_for_f16(ctx, tmp_path):
    from workbench.targets import get_target

    # sm_90 (the detected chip, or the default without a GPU): the TMA + wgmma kernel
    ok(ctx, f"load {f16_payload(tmp_path, 256, 128, 64)}")
    (spec, params), = get_target("cuda").select_params(ctx.session.inspect())
    assert spec.endswith("cuda/matmul.py[gen=matmul_wgmma]") and params["block_n"] == 128
    ok(ctx, f"load {EXAMPLES / 'matmul.mlir'}")
    (spec, params), = get_target("cuda").select_params(ctx.session.inspect())
    assert spec.endswith("cuda/matmul.py[gen=matmul_simt_smem]") and 256 % params["block_m"] == 0
    mm = cuda_matmul_module()
    # large squares: 128x256 blocks, two consumer warpgroups, 4 stages, a warp-specialized producer past K = 4096
    for shape in ((4096, 4096, 4096), (8192, 8192, 8192), (2048, 4096, 1024), (4096, 4096, 512)):
        gen, params = mm.select(*shape, "f16", "sm_90a", "f16", 132)
        assert gen == "matmul_wgmma" and params == {"block_m": 128, "block_n": 256, "stages": 4, "consumers": 2,
                                                    "specialize": int(shape[2] > 4096)}, (shape, params)
    # not a tile multiple, few tiles: smaller tiles fill the 132 SMs (1000^3: 16 x 8 tiles of 64x128)
    gen, params = mm.select(1000, 1000, 1000, "f16", "sm_90a", "f16", 132)
    assert gen == "matmul_wgmma" and (params["block_m"], params["block_n"]) == (64, 128)
    # the SM count matters: on a (hypothetical) 16-SM part the big tile fills the waves
    assert mm.select(1024, 1024, 1024, "f16", "sm_90a", "f16", 16)[1]["block_n"] == 256
    # bf16 operands, f32 or bf16 results
    assert mm.select(512, 512, 512, "f32", "sm_90a", "bf16")[0] == "matmul_wgmma"
    assert mm.select(512, 512, 512, "bf16", "sm_90a", "bf16")[0] == "matmul_wgmma"
    # stages never exceed the K steps
    assert mm.select(4096, 4096, 128, "f16", "sm_90a", "f16")[1]["stages"] == 2
    # before Hopper, or K not a multiple of 8: the cp.async + mma.sync schedule
    gen, params = mm.select(256, 128, 64, "f16", "sm_80")
    assert gen == "matmul_mma_smem" and 256 % params["block_m"] == 0 and params["warp_m"] % 16 == 0
    gen, params = mm.select(256, 256, 100, "f16", "sm_90")
    assert gen != "matmul_wgmma"


def test_schedule_params_validated():
    from workbench.steps.params import generator_schema

    schema, _ = generator_schema(ROOT / "pipelines/cuda/matmul.py", "matmul_mma")
    assert set(schema.params) == {"block_m", "block_n", "warp_m", "warp_n", "unroll_k"}
    schema, _ = generator_schema(ROOT / "pipelines/cuda/matmul.py", "matmul_mma_smem")
    assert set(schema.params) == {"block_m", "block_n", "block_k", "warp_m", "warp_n", "vector_bits", "stages"}
    assert schema.params["warp_m"].min == 16


def test_missing_libcuda_is_a_clear_error_not_an_abort(tmp_path):
    """No driver: `targets` says why, `run --target cuda` fails with one line, the session lives on."""
    env = dict(os.environ, LH_WORKBENCH_LIBCUDA="libcuda-not-here.so.1", LH_WORKBENCH_STATE_DIR=str(tmp_path))
    p = subprocess.run([sys.executable, "-m", "workbench.cli", "targets", "--json"], cwd=ROOT,
                       capture_output=True, text=True, env=env, timeout=120)
    assert p.returncode == 0, p.stderr
    targets = {t["name"]: t for t in json.loads(p.stdout)}
    assert targets["cuda"]["can_run"] is False
    assert "cannot load libcuda-not-here.so.1" in targets["cuda"]["reason"]
    script = tmp_path / "run.lhw"
    script.write_text("run --target cuda\npass canonicalize\n")
    p = subprocess.run([sys.executable, "-m", "workbench.cli", str(EXAMPLES / "matmul.mlir"), "--script", str(script),
                        "--json", str(tmp_path / "r.json")], cwd=ROOT, capture_output=True, text=True, env=env,
                       timeout=300)
    assert p.returncode == 1, p.stdout + p.stderr
    run = json.loads((tmp_path / "r.json").read_text())["run"]
    assert "cannot run here" in run["error"] and "libcuda-not-here.so.1" in run["error"]
    assert "Aborted" not in p.stderr and "SIGABRT" not in p.stdout + p.stderr


def test_gpu_run_worker_refuses_without_driver(monkeypatch):
    """The worker-side guard: no ExecutionEngine with the CUDA runtime is built without the driver."""
    from workbench.worker.cuda import run_worker as gpu_run_worker

    monkeypatch.setenv("LH_WORKBENCH_LIBCUDA", "libcuda-not-here.so.1")
    ans = gpu_run_worker.handle_gpu_run({"llvm": "this is never parsed", "libs": []})
    assert ans["ok"] is False and "cannot load libcuda-not-here.so.1" in ans["error"]
    assert gpu_run_worker.CUDA_ERROR.search("'cuLaunchKernel(...)' failed with 'CUDA_ERROR_INVALID_VALUE'")


def test_gpu_run_worker_turns_a_cuda_error_the_runtime_printed_into_a_failure(monkeypatch, capfd):
    """The CUDA runtime wrappers print a failed call on fd 2 and go on: the worker reads what the run wrote
    there, fails the run with the first error, and passes the text on to its own stderr."""
    import os

    from workbench.worker.cuda import run_worker as gpu_run_worker

    def run_printing(req):
        os.write(2, b"'cuLaunchKernel(...)' failed with 'CUDA_ERROR_INVALID_VALUE'\n")
        return {"ok": True}

    monkeypatch.setattr(gpu_run_worker.cuda_probe, "probe_here", lambda: {"ok": True, "reason": "a test GPU"})
    monkeypatch.setattr(gpu_run_worker, "handle_run", run_printing)
    ans = gpu_run_worker.handle_gpu_run({})
    assert ans["ok"] is False and ans["error"].startswith("CUDA error in the runtime: 'cuLaunchKernel(...)'")
    assert "CUDA_ERROR_INVALID_VALUE" in capfd.readouterr().err


# -- runs on the GPU ---------------------------------------------------------------------------

@needs_gpu
def test_gpu_matmul_f32_checked(ctx, tmp_path):
    ok(ctx, f"load {EXAMPLES / 'matmul.mlir'}")
    ok(ctx, "apply pipelines/cuda/matmul.py[gen=matmul_simt]{block_m=32 block_n=32 thread_m=4 thread_n=4 block_k=16}")
    res = ok(ctx, f"run --target cuda --check --iterations 5 --save-outputs {tmp_path}")
    run = res.data["run"]
    assert run["check"]["passed"] and run["check"]["max_rel_err"] < 1e-5, run["check"]
    a, b, c = (x.astype(np.float64) for x in _load(tmp_path, "input"))
    np.testing.assert_allclose(_load(tmp_path, "output")[0], c + a @ b, rtol=1e-4, atol=1e-4)
    assert len(run["times_s"]) == 5 and 0 < run["median_s"] < 0.1


@needs_gpu
def test_gpu_matmul_f16_tensor_cores_checked(ctx, tmp_path):
    ok(ctx, f"load {f16_payload(tmp_path, 256, 128, 512)}")
    ok(ctx, "apply pipelines/cuda/matmul.py[gen=matmul_mma]{block_m=64 block_n=64 warp_m=32 warp_n=32}")
    check_matmul_run(ctx, tmp_path, 1e-2)


@needs_gpu
@pytest.mark.parametrize("params", ["block_m=64 block_n=64 block_k=32 warp_m=32 warp_n=32",
                                    "block_m=128 block_n=128 block_k=32 warp_m=64 warp_n=64",
                                    "block_m=64 block_n=64 block_k=32 warp_m=32 warp_n=32 stages=2",
                                    "block_m=128 block_n=128 block_k=32 warp_m=64 warp_n=64 stages=3",
                                    "block_m=128 block_n=128 block_k=16 warp_m=64 warp_n=64 stages=4",
                                    "block_m=128 block_n=256 block_k=32 warp_m=64 warp_n=64 stages=2",
                                    "block_m=128 block_n=128 block_k=32 warp_m=64 warp_n=32 stages=3"])
def test_gpu_matmul_f16_shared_memory_checked(ctx, tmp_path, params):
    ok(ctx, f"load {f16_payload(tmp_path, 256, 256, 512)}")
    ok(ctx, f"apply pipelines/cuda/matmul.py[gen=matmul_mma_smem]{{{params}}}")
    check_matmul_run(ctx, tmp_path, 1e-2)


@needs_gpu
@pytest.mark.parametrize("params", ["block_m=128 block_n=128 stages=4",
                                    "block_m=128 block_n=128 stages=2",
                                    "block_m=64 block_n=256 stages=4",
                                    "block_m=128 block_n=256 stages=3 consumers=2",
                                    "block_m=128 block_n=128 stages=4 specialize=1",
                                    "block_m=128 block_n=256 stages=4 consumers=2 specialize=1"])
def test_gpu_matmul_f16_wgmma_checked(ctx, tmp_path, params):
    ok(ctx, f"load {f16_payload(tmp_path, 256, 512, 1024)}")
    ok(ctx, f"apply pipelines/cuda/matmul.py[gen=matmul_wgmma]{{{params}}}")
    check_matmul_run(ctx, tmp_path, 1e-2)


@needs_gpu
@pytest.mark.parametrize("shape, params", [
    ((200, 328, 136), "block_m=128 block_n=128 stages=4"),
    ((72, 264, 520), "block_m=64 block_n=256 stages=3"),
    ((300, 200, 72), "block_m=128 block_n=256 stages=4 consumers=2 specialize=1"),
    ((1000, 1000, 264), "block_m=64 block_n=128 stages=6"),
])
def test_gpu_matmul_wgmma_edges_checked(ctx, tmp_path, shape, params):
    """Shapes that are no tile multiple: TMA zero fill past M, N, K; clamped loads, predicated stores."""
    ok(ctx, f"load {f16_payload(tmp_path, *shape)}")
    ok(ctx, f"apply pipelines/cuda/matmul.py[gen=matmul_wgmma]{{{params}}}")
    check_matmul_run(ctx, tmp_path, 1e-2)


@needs_gpu
@pytest.mark.parametrize("shape, ab, c_type, params, tol, one_byte", [
    ((256, 512, 1024), "f8E4M3FN", "f32", "block_m=128 block_n=256 consumers=2", 1e-2, "float8_e4m3fn"),
    ((200, 264, 528), "f8E5M2", "bf16", "block_m=64 block_n=128 stages=5", 3e-2, "float8_e5m2"),
    ((256, 512, 1024), "f32", "f32", "block_m=128 block_n=256 consumers=2 stages=3 tf32=1", 5e-3, ""),
    ((300, 200, 136), "f16", "f16", "block_m=128 block_n=128 consumers=2", 1e-2, ""),
])
def test_gpu_matmul_wgmma_kmajor_b_checked(ctx, tmp_path, shape, ab, c_type, params, tol, one_byte):
    """x @ w^T through the K-major wgmma kernel: fp8, tf32, f16, edges included, against numpy (fp8:
    numpy only: the CPU reference lowering leaves fp8 arith.extf unlowered; tf32: numpy only, the
    reference is f32 and the run's check holds f32's tolerance)."""
    ok(ctx, f"load {transposed_b_payload(tmp_path, *shape, ab, c_type)}")
    ok(ctx, f"apply pipelines/cuda/matmul.py[gen=matmul_wgmma]{{{params}}}")
    check_matmul_run(ctx, tmp_path, tol, transpose_b=True, one_byte=one_byte or "float8_e4m3fn",
                     cpu_check=ab in ("f16", "bf16"))


@needs_gpu
@pytest.mark.parametrize("shape, ty, kind", [((200, 264, 136), "f16", "bias_relu"), ((256, 320, 128), "f16", "residual"),
                                             ((192, 256, 128), "f16", "bias_gelu")])
def test_gpu_wgmma_fused_epilogue_checked(ctx, tmp_path, shape, ty, kind):
    """The fused epilogue against the CPU reference (--check) and numpy (small K: the CPU reference
    accumulates in the operands' 16-bit type)."""
    ok(ctx, f"load {epilogue_payload(tmp_path, *shape, ty, kind)}")
    ok(ctx, "target cuda")
    ok(ctx, "select --apply")
    res = ok(ctx, f"run --target cuda --check --iterations 3 --save-outputs {tmp_path / 'o'}")
    assert res.data["run"]["check"]["passed"], res.data["run"]["check"]
    a, b, c, e = (as_float64(x) for x in _load(tmp_path / "o", "input"))
    got = as_float64(_load(tmp_path / "o", "output")[0])
    mm = c + a @ b
    x = mm + e
    want = {"bias_relu": np.maximum(x, 0), "residual": x * 0.5,
            "bias_gelu": 0.5 * x * (1 + np.tanh(0.7978845608 * (x + 0.044715 * x ** 3)))}[kind]
    assert np.abs(got - want).max() / np.abs(want).max() < 3e-2


@needs_gpu
def test_gpu_batch_matmul_wgmma_checked(ctx, tmp_path):
    p = tmp_path / "bmm.mlir"
    a, b, c = "tensor<3x136x128xf16>", "tensor<3x128x200xf16>", "tensor<3x136x200xf16>"
    p.write_text(f"func.func @bmm(%A: {a}, %B: {b}, %C: {c}) -> {c} {{\n"
                 f"  %0 = linalg.batch_matmul ins(%A, %B : {a}, {b}) outs(%C : {c}) -> {c}\n  return %0 : {c}\n}}\n")
    ok(ctx, f"load {p}")
    ok(ctx, "apply pipelines/cuda/matmul.py[gen=matmul_wgmma]{block_m=128 block_n=128 stages=2}")
    check_matmul_run(ctx, tmp_path, 1e-2)


def _has_bf16_inputs() -> bool:
    from workbench.common.dtypes import RunInputError, numpy_dtype

    try:
        numpy_dtype("bf16")
        return True
    except RunInputError:
        return False


@needs_gpu
@pytest.mark.skipif(not _has_bf16_inputs(), reason="no host-side bf16 inputs (workbench.common.dtypes)")
@pytest.mark.parametrize("out", ["f32", "bf16"])
def test_gpu_matmul_bf16_wgmma_checked(ctx, tmp_path, out):
    p = tmp_path / "mm_bf16.mlir"
    # K = 72 for the bf16 result: the CPU reference of `run --check` accumulates in the result type
    # (linalg.matmul's semantics; the kernel accumulates in f32), so its own error grows with K
    k = 200 if out == "f32" else 72
    a, b, c = f"tensor<256x{k}xbf16>", f"tensor<{k}x264xbf16>", f"tensor<256x264x{out}>"
    _typed_matmul(p, a, b, c)
    ok(ctx, f"load {p}")
    ok(ctx, "apply pipelines/cuda/matmul.py[gen=matmul_wgmma]{block_m=128 block_n=128 stages=3}")
    check_matmul_run(ctx, tmp_path, 1e-4 if out == "f32" else 3e-2)


@needs_gpu
def test_gpu_matmul_f16_f32_wgmma_checked(ctx, tmp_path):
    ok(ctx, f"load {EXAMPLES / 'matmul_f16.mlir'}")
    ok(ctx, "apply pipelines/cuda/matmul.py[gen=matmul_wgmma]{block_m=128 block_n=128 stages=3}")
    check_matmul_run(ctx, tmp_path, 1e-4)  # f32 accumulation, written as f32: no f16 rounding (~1e-3)
    assert _load(tmp_path / "o", "output")[0].dtype == np.float32


@needs_gpu
def test_gpu_softmax_checked(ctx, tmp_path):
    ok(ctx, f"load {EXAMPLES / 'softmax.mlir'}")
    ok(ctx, "apply pipelines/cuda/softmax.py[gen=softmax_rows]{rows_per_block=16}")
    res = ok(ctx, f"run --target cuda --check --iterations 3 --save-outputs {tmp_path}")
    assert res.data["run"]["check"]["passed"], res.data["run"]["check"]
    (x,) = _load(tmp_path, "input")
    e = np.exp(x - x.max(axis=1, keepdims=True))
    np.testing.assert_allclose(_load(tmp_path, "output")[0], e / e.sum(axis=1, keepdims=True), rtol=1e-5, atol=1e-6)


@needs_gpu
def test_gpu_attention_chain_checked(ctx):
    """The f16 attention chain through the selector (K read in place, fused roundings) matches the CPU
    reference."""
    ok(ctx, f"load {ATTENTION_F16}")
    ok(ctx, "target cuda")
    ok(ctx, "select --apply")
    res = ok(ctx, "run --target cuda --check --iterations 3")
    assert res.data["run"]["check"]["passed"], res.data["run"]["check"]


@needs_gpu
def test_gpu_unscheduled_mlp_checked(ctx):
    ok(ctx, f"load {EXAMPLES / 'mlp.mlir'}")
    res = ok(ctx, "run --target cuda --check --iterations 2")
    assert res.data["run"]["check"]["passed"], res.data["run"]["check"]


@needs_gpu
def test_gpu_mlp_selected_per_op_checked(ctx):
    ok(ctx, f"load {EXAMPLES / 'mlp.mlir'}")
    ok(ctx, "target cuda")
    ok(ctx, "select --apply")
    res = ok(ctx, "run --target cuda --check --iterations 3")
    assert res.data["run"]["check"]["passed"], res.data["run"]["check"]


@needs_gpu
def test_gpu_runtime_error_is_detected(ctx, tmp_path):
    """A launch the driver rejects (2048 threads per block) fails the run; it is not silently 'fine'."""
    p = tmp_path / "bad_launch.mlir"
    p.write_text("""func.func @bad(%a: memref<16xf32>) {
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %c2048 = arith.constant 2048 : index
  gpu.launch blocks(%bx, %by, %bz) in (%x = %c1, %y = %c1, %z = %c1)
             threads(%tx, %ty, %tz) in (%u = %c2048, %v = %c1, %w = %c1) {
    %f = arith.constant 1.0 : f32
    %i = arith.remui %tx, %c16 : index
    memref.store %f, %a[%i] : memref<16xf32>
    gpu.terminator
  }
  return
}
""")
    ok(ctx, f"load {p}")
    res = ctx.registry.dispatch("run --target cuda --iterations 1", ctx)
    assert not res.ok and "CUDA error" in res.error and "cuLaunchKernel" in res.error, res.error
    ok(ctx, "history")


def _matmul_with(consumer: dict, fill_consumers=(1,), matmul_consumers=(2,)) -> list[dict]:
    """Inspection records: a fill (0) -> matmul (1) -> `consumer` (2), 64 x 32 x 16."""
    fill = {"id": "fill_0", "op": "linalg.fill", "consumers": list(fill_consumers), "producers": [-1, -1]}
    mm = {"id": "matmul_0", "op": "linalg.matmul", "dims": {"m": 64, "n": 32, "k": 16},
          "producers": [-1, -1, 0], "consumers": list(matmul_consumers)}
    return [fill, mm, consumer]


def _elementwise(domain, reads, iterators=("parallel", "parallel")) -> dict:
    return {"id": "generic_0", "op": "linalg.generic", "kind": "elementwise", "producers": [1, -1, -1],
            "consumers": [], "loops": {"domain": list(domain), "iterators": list(iterators), "num_inputs": 2,
                                       "operand_dims": [list(reads), [1], [0, 1]]}}


@pytest.mark.parametrize("records, expected", [
    (_matmul_with(_elementwise((64, 32), (0, 1))), {"fill": "fill_0", "epilogue": "generic_0"}),
    # the matmul's result read transposed, or an op over another domain: no epilogue
    (_matmul_with(_elementwise((64, 32), (1, 0))), {"fill": "fill_0"}),
    (_matmul_with(_elementwise((32, 64), (0, 1))), {"fill": "fill_0"}),
    # a second reader of the result (it must stay in memory), a second reader of the fill
    (_matmul_with(_elementwise((64, 32), (0, 1)), matmul_consumers=(2, 3)), {"fill": "fill_0"}),
    (_matmul_with(_elementwise((64, 32), (0, 1)), fill_consumers=(1, 2)), {"epilogue": "generic_0"}),
])
def test_simt_neighbours_are_only_ops_of_the_matmuls_own_tiles(records, expected):
    from workbench.targets.cuda import simt_neighbours

    assert simt_neighbours(records[1], records) == expected


@needs_gpu
@pytest.mark.parametrize("shape, ab, c_type, params, tol, one_byte", [
    ((256, 320, 192), "f8E4M3FN", "f32", "block_m=128 block_n=128 consumers=2", 1e-2, "float8_e4m3fn"),
    ((200, 264, 136), "f32", "f32", "block_m=128 block_n=256 consumers=2 tf32=1", 5e-3, ""),
])
def test_gpu_matmul_wgmma_plain_b_transposed_first_checked(ctx, tmp_path, shape, ab, c_type, params, tol, one_byte):
    """fp8 and tf32 with B stored K x N (transposed into a copy, then the K-major kernel) against numpy."""
    m, n, k = shape
    p = tmp_path / f"mm_{ab}.mlir"
    _typed_matmul(p, f"tensor<{m}x{k}x{ab}>", f"tensor<{k}x{n}x{ab}>", f"tensor<{m}x{n}x{c_type}>")
    ok(ctx, f"load {p}")
    ok(ctx, f"apply pipelines/cuda/matmul.py[gen=matmul_wgmma]{{{params}}}")
    check_matmul_run(ctx, tmp_path, tol, one_byte=one_byte or "float8_e4m3fn", cpu_check=False)


TRANSPOSES = """func.func @t(%a: tensor<64x96xf32>, %b: tensor<2x3x40x24xf32>, %c: tensor<8x16x32xf32>, %d: tensor<50x70xf16>)
    -> (tensor<96x64xf32>, tensor<2x3x24x40xf32>, tensor<16x8x32xf32>, tensor<70x50xf16>) {
  %ea = tensor.empty() : tensor<96x64xf32>
  %ta = linalg.transpose ins(%a : tensor<64x96xf32>) outs(%ea : tensor<96x64xf32>) permutation = [1, 0]
  %eb = tensor.empty() : tensor<2x3x24x40xf32>
  %tb = linalg.transpose ins(%b : tensor<2x3x40x24xf32>) outs(%eb : tensor<2x3x24x40xf32>) permutation = [0, 1, 3, 2]
  %ec = tensor.empty() : tensor<16x8x32xf32>
  %tc = linalg.transpose ins(%c : tensor<8x16x32xf32>) outs(%ec : tensor<16x8x32xf32>) permutation = [1, 0, 2]
  %ed = tensor.empty() : tensor<70x50xf16>
  %td = linalg.transpose ins(%d : tensor<50x70xf16>) outs(%ed : tensor<70x50xf16>) permutation = [1, 0]
  return %ta, %tb, %tc, %td : tensor<96x64xf32>, tensor<2x3x24x40xf32>, tensor<16x8x32xf32>, tensor<70x50xf16>
}
"""


def test_matrix_transposes_take_the_shared_memory_kernel(ctx, tmp_path):
    """cuda-lower's gpu-transposes: transposes of the last two dims (a matrix, a 4-D tensor's last two:
    leading dims collapsed into the kernel's batch; f16 too) become the tiled kernel; a transpose that
    keeps the last dim in place ([1, 0, 2]: contiguous rows either way) keeps the naive mapping."""
    p = tmp_path / "transposes.mlir"
    p.write_text(TRANSPOSES)
    ok(ctx, f"load {p}")
    ok(ctx, "apply cuda-lower{chip=sm_90a}")
    entries = set(re.findall(r"\.entry (\w+)", ptx_of(ctx.session.current_ir)))
    tiled = {e for e in entries if e.startswith("lh_transpose_")}
    assert tiled == {"lh_transpose_64x96_f32_kernel", "lh_transpose_6x40x24_f32_kernel",
                     "lh_transpose_50x70_f16_kernel"}, entries
    assert len(entries - tiled) == 1, entries   # the [1, 0, 2] one, mapped naively


@needs_gpu
def test_gpu_transposes_match_the_reference(ctx, tmp_path):
    p = tmp_path / "transposes.mlir"
    p.write_text(TRANSPOSES)
    ok(ctx, f"load {p}")
    run = ok(ctx, "run --target cuda --check --iterations 2").data["run"]
    assert run["check"]["passed"], run["check"]
