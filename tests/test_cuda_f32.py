"""cuda target, f32 matmul on CUDA cores with A and B staged in shared memory (matmul_simt_smem):
lowering checked on the PTX on any machine; runs checked against numpy where an NVIDIA GPU is present."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from conftest import matmul_payload, ok
from cuda_helpers import check_matmul_run, cuda_matmul_module, needs_gpu, ptx_of

ROOT = Path(__file__).resolve().parents[1]
GEN = "pipelines/cuda/matmul.py[gen=matmul_simt_smem]"


def f32_payload(tmp_path: Path, m: int, n: int, k: int) -> Path:
    return matmul_payload(tmp_path / f"mm_{m}x{n}x{k}_f32.mlir", m, n, k, "mm", "f32")


# -- lowering (no GPU needed) ------------------------------------------------------------------

def test_simt_smem_lowers_to_cp_async_pipeline_and_shared_fmas(ctx, tmp_path):
    """128x128x8 blocks of 16x16 threads, 8x8 register tiles, K fragments of 4, 3 stages."""
    ok(ctx, f"load {f32_payload(tmp_path, 256, 256, 64)}")
    ok(ctx, f"apply {GEN}{{block_m=128 block_n=128 block_k=8 thread_m=8 thread_n=8 thread_k=4 stages=3}}")
    ir = ctx.session.current_ir
    assert "memref<3x128x8xf32, #gpu.address_space<workgroup>>" in ir
    assert "memref<3x8x128xf32, #gpu.address_space<workgroup>>" in ir and "lh.barrier_after" in ir
    ok(ctx, "apply cuda-lower{chip=sm_90}")
    ptx = ptx_of(ctx.session.current_ir)
    assert ".maxntid 16, 16, 1" in ptx
    assert ptx.count(".shared .align 128 .b8") == 2 and ptx.count("[12288];") == 2  # 3 x 4 KiB each
    # prologue: steps 0 and 1, one 16-byte cp.async of A and one of B per thread each; the loop:
    # wait for all but the newest group, barrier, compute, the predicated copies of step k+2
    assert ptx.count("cp.async.cg.shared.global") == 4 and ptx.count("cp.async.ca.shared.global") == 2
    assert ptx.count("cp.async.commit_group") == 3
    assert re.search(r"cp\.async\.wait_group\s+1;\s*bar\.sync\s+0;", ptx) and ptx.count("bar.sync") == 1
    # per K step and thread: 8x8x8 FMAs on registers; A read as 8 rows x 2 16-byte pieces, B as 8 rows
    # x 2 pieces, all 128-bit shared loads (the loads are annotated alignment = 16)
    assert ptx.count("fma.rn.f32") == 512
    assert len(re.findall(r"ld\.shared\.v4\.(?:b32|f32)", ptx)) == 32 == ptx.count("ld.shared")
    # C: read before the K loop and written after it, 8x8 per thread as 16-byte pieces
    assert len(re.findall(r"ld\.global\.v4\.(?:b32|f32)", ptx)) == 16 == ptx.count("ld.global")
    assert len(re.findall(r"st\.global\.v4\.(?:b32|f32)", ptx)) == 16 == ptx.count("st.global")
    assert "ld.local" not in ptx and "st.local" not in ptx


def test_simt_smem_without_inner_k_loop_and_two_stages(ctx, tmp_path):
    """thread_k = block_k (no inner K tiling), stages=2 (wait for every group), 4x4 tiles of 256 threads."""
    ok(ctx, f"load {f32_payload(tmp_path, 128, 128, 64)}")
    ok(ctx, f"apply {GEN}{{block_m=64 block_n=64 block_k=16 thread_m=4 thread_n=4 thread_k=16 stages=2}}")
    ok(ctx, "apply cuda-lower{chip=sm_90}")
    ptx = ptx_of(ctx.session.current_ir)
    assert ptx.count("[8192];") == 2  # 2 x 64x16 f32 and 2 x 16x64 f32
    assert re.search(r"cp\.async\.wait_group\s+0;\s*bar\.sync\s+0;", ptx) and ptx.count("bar.sync") == 1
    assert ptx.count("fma.rn.f32") == 4 * 4 * 16
    # A: 4 rows x 4 pieces, B: 16 rows x 1 piece
    assert len(re.findall(r"ld\.shared\.v4\.(?:b32|f32)", ptx)) == 32 == ptx.count("ld.shared")
    assert "ld.local" not in ptx


@pytest.mark.parametrize("params, message", [
    ("block_m=128 block_n=128 block_k=16 thread_m=8 thread_n=8 stages=4", "static limit 48 KiB"),
    ("block_m=128 block_n=128 block_k=8 thread_m=8 thread_n=8 stages=1", "stages must be 2..8"),
    ("block_m=128 block_n=128 block_k=8 thread_m=8 thread_n=2 thread_k=4", "multiples of 4"),
    ("block_m=128 block_n=64 block_k=8 thread_m=8 thread_n=4 thread_k=4", "not a multiple of 256 threads"),
    ("block_m=128 block_n=128 block_k=8 thread_m=8 thread_n=8 thread_k=16", "thread_k must divide block_k"),
])
def test_simt_smem_config_errors(params, message):
    mm = cuda_matmul_module()
    kwargs = {k: int(v) for k, v in (kv.split("=") for kv in params.split())}
    with pytest.raises(ValueError, match=message):
        mm.matmul_simt_smem(**kwargs)


def test_simt_smem_schema():
    from workbench.steps.params import generator_schema

    schema, _ = generator_schema(ROOT / "pipelines/cuda/matmul.py", "matmul_simt_smem")
    assert set(schema.params) == {"block_m", "block_n", "block_k", "thread_m", "thread_n", "thread_k", "stages"}
    assert schema.params["thread_k"].min == 1


def test_selector_picks_simt_smem_for_f32():
    mm = cuda_matmul_module()
    # from 256 blocks of 128x64 (2048^3: 512): the generated tiled kernel, two shared tile pairs, padded A rows
    gen, params = mm.select(2048, 2048, 2048, "f32", "sm_90")
    assert gen == "matmul_simt_tiles"
    assert (params["tile_m"], params["tile_n"], params["stages"], params["a_pad"]) == (128, 64, 2, 4)
    mm.matmul_simt_tiles(**params)  # a valid configuration
    # fewer than 256 blocks of 128x64 (1024^3: 128): 64x64 blocks (measured faster up to 1024^3)
    gen, params = mm.select(1024, 1024, 1024, "f32", "sm_90")
    assert gen == "matmul_simt_smem" and (params["block_m"], params["block_n"], params["stages"]) == (64, 64, 3)
    mm.matmul_simt_smem(**params)
    # no cp.async before sm_80, shapes the shared tiles do not divide: the generated tiled kernel where
    # large (matmul_simt_tiles), matmul_simt where small; other element types: matmul_simt
    assert mm.select(2048, 2048, 2048, "f32", "sm_75")[0] == "matmul_simt_tiles"
    assert mm.select(1000, 1000, 1000, "f32", "sm_90")[0] == "matmul_simt_tiles"
    assert mm.select(96, 64, 64, "f32", "sm_90")[0] == "matmul_simt"
    assert mm.select(256, 256, 24, "f32", "sm_90")[0] == "matmul_simt"
    assert mm.select(256, 256, 256, "f64", "sm_90")[0] == "matmul_simt"
    assert mm.select(2048, 2048, 2048, "f32", "sm_90a")[0] == "matmul_simt_tiles"


def test_selected_f32_schedule_lowers(ctx, tmp_path):
    """`select --apply` on an f32 matmul: the shared-memory schedule, lowered without local memory."""
    ok(ctx, f"load {f32_payload(tmp_path, 256, 128, 512)}")
    ok(ctx, "target cuda")
    res = ok(ctx, "select --apply")
    (spec, params), = ((e["schedule"], e["params"]) for e in res.data["selections"])
    assert spec.endswith("[gen=matmul_simt_smem]") and (params["block_m"], params["block_n"]) == (64, 64)
    ok(ctx, "apply cuda-lower{chip=sm_90}")
    ptx = ptx_of(ctx.session.current_ir)
    assert ptx.count("fma.rn.f32") == 4 * 4 * 16 and "cp.async.cg.shared.global" in ptx
    assert "ld.local" not in ptx and "st.local" not in ptx


# -- runs on the GPU ---------------------------------------------------------------------------

@needs_gpu
@pytest.mark.parametrize("shape, params", [
    ((256, 256, 512), "block_m=128 block_n=128 block_k=8 thread_m=8 thread_n=8 thread_k=4 stages=3"),
    ((256, 256, 512), "block_m=128 block_n=128 block_k=8 thread_m=8 thread_n=8 thread_k=8 stages=4"),
    ((384, 256, 128), "block_m=128 block_n=128 block_k=16 thread_m=8 thread_n=4 thread_k=4 stages=3"),
    ((128, 192, 96), "block_m=64 block_n=64 block_k=16 thread_m=4 thread_n=4 thread_k=16 stages=2"),
    ((256, 128, 320), "block_m=128 block_n=64 block_k=32 thread_m=8 thread_n=4 thread_k=4 stages=2"),
    ((128, 256, 64), "block_m=64 block_n=128 block_k=16 thread_m=8 thread_n=8 thread_k=4 stages=4"),
])
def test_gpu_simt_smem_checked(ctx, tmp_path, shape, params):
    ok(ctx, f"load {f32_payload(tmp_path, *shape)}")
    ok(ctx, f"apply {GEN}{{{params}}}")
    check_matmul_run(ctx, tmp_path, 1e-5)


@needs_gpu
def test_gpu_selected_f32_schedule_checked(ctx, tmp_path):
    ok(ctx, f"load {f32_payload(tmp_path, 512, 256, 256)}")
    ok(ctx, "target cuda")
    res = ok(ctx, "select --apply")
    (spec, _), = ((e["schedule"], e["params"]) for e in res.data["selections"])
    assert spec.endswith("[gen=matmul_simt_smem]")
    check_matmul_run(ctx, tmp_path, 1e-5)


# -- TF32 (opt-in: matmul_tf32) ---------------------------------------------------------------

def test_tf32_lowers_to_mma_sync_tf32(ctx, tmp_path):
    """matmul_tf32: f32 operands on the tensor cores (m16n8k8 mma.sync .tf32, f32 accumulation), the
    cp.async pipeline of matmul_mma_smem with 16-byte pieces of 4 floats."""
    ok(ctx, f"load {matmul_payload(tmp_path / 'mm.mlir', 256, 256, 256)}")
    ok(ctx, "apply pipelines/cuda/matmul.py[gen=matmul_tf32]{block_m=64 block_n=64 block_k=32 warp_m=32 warp_n=32 stages=3}")
    ok(ctx, "apply cuda-lower{chip=sm_90a}")
    ptx = ptx_of(ctx.session.current_ir)
    # a 32x32 warp tile, K step 32: 2 (m16) x 4 (n8) x 4 (k8) mma per step
    assert ptx.count("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32") == 32
    assert "cp.async.cg.shared.global" in ptx and "cp.async.wait_group" in ptx
    assert "ld.local" not in ptx and "st.local" not in ptx
    # the selector never picks it: f32 stays f32 unless asked for
    assert cuda_matmul_module().select(2048, 2048, 2048, "f32", "sm_90a")[0] != "matmul_tf32"


def test_tf32_config_errors():
    mm = cuda_matmul_module()
    with pytest.raises(ValueError, match="48 KiB"):
        mm.matmul_tf32(block_m=128, block_n=128, block_k=32, stages=3)
    with pytest.raises(ValueError, match="multiple of 8"):
        mm.matmul_tf32(block_k=12)


@needs_gpu
@pytest.mark.parametrize("params", ["block_m=64 block_n=64 block_k=32 warp_m=32 warp_n=32 stages=3",
                                    "block_m=128 block_n=64 block_k=16 warp_m=64 warp_n=32 stages=4"])
def test_gpu_tf32_matches_numpy_within_tf32_rounding(ctx, tmp_path, params):
    """No `--check` (its f32 tolerance is f32's): the output against float64 numpy within TF32's
    error (10-bit mantissa products, f32 sums): ~1e-3 of the largest magnitude."""
    import numpy as np
    from cuda_helpers import as_float64
    from conftest import load_npys

    ok(ctx, f"load {matmul_payload(tmp_path / 'mm.mlir', 256, 192, 512)}")
    ok(ctx, f"apply pipelines/cuda/matmul.py[gen=matmul_tf32]{{{params}}}")
    ok(ctx, f"run --target cuda --iterations 3 --save-outputs {tmp_path / 'o'}")
    a, b, c = (as_float64(x) for x in load_npys(tmp_path / "o", "input"))
    want = c + a @ b
    err = np.abs(as_float64(load_npys(tmp_path / "o", "output")[0]) - want).max() / np.abs(want).max()
    assert 1e-7 < err < 5e-3, err  # not exact f32 (TF32 was used), within TF32's rounding


@pytest.mark.parametrize("m,n,k", [(128, 512, 256), (128, 128, 512), (4096, 64, 64)])
def test_simt_tiles_fill_the_multiprocessors(m, n, k):
    """matmul_simt's tile: the largest that still gives each of the 132 SMs a block, else the one with
    the most blocks; a 64 x 64 tile where it already fills them; every tile divides M and N and has
    at least 32 threads."""
    mm = cuda_matmul_module()
    gen, params = mm.select_one_of_many(m, n, k, "f32", "sm_90a", sms=132)
    assert gen == "matmul_simt"
    bm, bn = params["block_m"], params["block_n"]
    blocks = (m // bm) * (n // bn)
    assert m % bm == 0 and n % bn == 0 and (bm // params["thread_m"]) * (bn // params["thread_n"]) >= 32
    if (m // 64) * (n // 64) >= 132:
        assert (bm, bn) == (64, 64)
    else:
        assert blocks >= 132 or (bm, bn) == (16, 16), (bm, bn, blocks)
    mm.matmul_simt(**params)  # a valid configuration


@pytest.mark.parametrize("m,n,k", [(128, 512, 256), (1000, 1000, 1000), (2048, 2048, 2048), (100, 10, 1000),
                                   (197, 768, 3072), (7, 13, 17)])
def test_simt_k_step_keeps_the_fragments_in_registers(m, n, k):
    """matmul_simt's K step: the deepest that divides K with the thread's A and B fragments
    ((thread_m + thread_n) x block_k floats) within SIMT_FRAGMENT_FLOATS (a 4 x 4 tile over 64 steps
    of K spilled: 4x slower), and no deeper than 64; the tiles divide their dims."""
    mm = cuda_matmul_module()
    p = mm._simt_params(m, n, k)
    tm, tn, bk = p["thread_m"], p["thread_n"], p["block_k"]
    assert m % p["block_m"] == 0 and n % p["block_n"] == 0 and k % bk == 0
    assert p["block_m"] % tm == 0 and p["block_n"] % tn == 0
    assert (tm + tn) * bk <= mm.SIMT_FRAGMENT_FLOATS and bk <= 64
    deeper = [d for d in range(bk + 1, min(k, 64) + 1) if k % d == 0]
    assert all((tm + tn) * d > mm.SIMT_FRAGMENT_FLOATS for d in deeper), (p, deeper)
    mm.matmul_simt(**p)


def test_simt_tiles_use_any_divisor():
    """Dims that are not multiples of a power of two get tiles of their own divisors (1000^3: 50 x 40
    blocks of 5 x 4 threads, K steps of 40; the power-of-two divisors gave 8 x 8 x 8, 2.7x slower on
    the H200); a small matmul's threads take 2 x 1 outputs (latency bound: more, shorter threads)."""
    mm = cuda_matmul_module()
    p = mm._simt_params(1000, 1000, 1000)
    assert (p["block_m"], p["block_n"], p["block_k"], p["thread_m"], p["thread_n"]) == (50, 40, 40, 5, 4)
    p = mm._simt_params(128, 512, 256)
    assert (p["block_m"], p["block_n"], p["block_k"], p["thread_m"], p["thread_n"]) == (16, 16, 64, 2, 1)


@needs_gpu
@pytest.mark.parametrize("shape", [(250, 120, 200), (128, 512, 256)])
def test_gpu_selected_simt_with_any_divisor_tiles_checked(ctx, tmp_path, shape):
    """Shapes matmul_simt_smem does not take (not multiples of 64, or several matmuls' per-op form):
    matmul_simt with the divisor tiles, checked against numpy."""
    ok(ctx, f"load {f32_payload(tmp_path, *shape)}")
    ok(ctx, "target cuda")
    p = cuda_matmul_module()._simt_params(*shape)
    ok(ctx, "apply " + GEN.replace("matmul_simt_smem", "matmul_simt") + "{" + " ".join(f"{k}={v}" for k, v in p.items()) + "}")
    check_matmul_run(ctx, tmp_path, 1e-5)
