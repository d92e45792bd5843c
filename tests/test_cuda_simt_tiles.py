"""matmul_simt_tiles: the generated f32 CUDA-core kernel (workbench/worker/cuda/simt_matmul.py) for any
shape and for one matmul of several: shared-memory A/B tiles, register tiles of FMAs, guarded edges."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from conftest import matmul_payload, ok
from cuda_helpers import check_matmul_run, cuda_matmul_module, needs_gpu, ptx_of

GEN = "pipelines/cuda/matmul.py[gen=matmul_simt_tiles]"

TWO_MATMULS = """func.func @two(%x: tensor<{m}x{k}xf32>, %w1: tensor<{k}x{n}xf32>, %w2: tensor<{n}x{k}xf32>) -> tensor<{m}x{k}xf32> {{
  %z = arith.constant 0.0 : f32
  %e1 = tensor.empty() : tensor<{m}x{n}xf32>
  %f1 = linalg.fill ins(%z : f32) outs(%e1 : tensor<{m}x{n}xf32>) -> tensor<{m}x{n}xf32>
  %h = linalg.matmul ins(%x, %w1 : tensor<{m}x{k}xf32>, tensor<{k}x{n}xf32>) outs(%f1 : tensor<{m}x{n}xf32>) -> tensor<{m}x{n}xf32>
  %e2 = tensor.empty() : tensor<{m}x{k}xf32>
  %f2 = linalg.fill ins(%z : f32) outs(%e2 : tensor<{m}x{k}xf32>) -> tensor<{m}x{k}xf32>
  %y = linalg.matmul ins(%h, %w2 : tensor<{m}x{n}xf32>, tensor<{n}x{k}xf32>) outs(%f2 : tensor<{m}x{k}xf32>) -> tensor<{m}x{k}xf32>
  return %y : tensor<{m}x{k}xf32>
}}
"""


def _entries(ctx) -> list[str]:
    return re.findall(r"\.entry (\w+)", ptx_of(ctx.session.current_ir))


def test_kernel_stages_tiles_in_shared_memory_and_keeps_registers(ctx, tmp_path):
    """128 x 128 blocks of 8 x 8 register tiles, K steps of 8: per step 8 x 64 FMAs from 2 + 2 vector
    reads of shared memory per k, one vector load of A and of B from global memory (the next step's,
    issued before the FMAs; the first step's before the loop), two barriers (one more after the first
    tiles)."""
    ok(ctx, f"load {matmul_payload(tmp_path / 'mm.mlir', 512, 256, 1024, 'mm', 'f32')}")
    ok(ctx, f"apply {GEN}{{tile_m=128 tile_n=128 tile_k=8 thread_m=8 thread_n=8}}")
    ok(ctx, "apply cuda-lower{chip=sm_90a}")
    ptx = ptx_of(ctx.session.current_ir)
    assert ptx.count("fma.rn.f32") == 8 * 64 and ptx.count("ld.shared.v4") == 8 * 4
    assert ptx.count("bar.sync") == 3 and "ld.local" not in ptx and "st.local" not in ptx
    assert ptx.count("ld.global.v4") == 2 + 2 + 16    # the tiles' loads (first, next), C's in the write-back
    body = ptx[ptx.index("$L__BB0_"):]   # in the loop: the next tiles' loads come before the FMAs
    assert body.index("ld.global.v4") < body.index("fma.rn.f32")


@pytest.mark.parametrize("shape", [(130, 67, 45), (1000, 1000, 1000), (33, 200, 7)])
def test_any_shape_lowers(ctx, tmp_path, shape):
    """Dims of no tile multiple: guarded loads (element by element where K or N is no multiple of 4)."""
    ok(ctx, f"load {matmul_payload(tmp_path / 'mm.mlir', *shape, 'mm', 'f32')}")
    ok(ctx, f"apply {GEN}{{tile_m=64 tile_n=64 tile_k=16 thread_m=4 thread_n=4}}")
    ok(ctx, "apply cuda-lower{chip=sm_90a}")
    assert any(e.startswith("lh_simt_matmul_") for e in _entries(ctx))


@pytest.mark.parametrize("params, message", [
    ("tile_m=48 tile_n=64 tile_k=16 thread_m=6 thread_n=4", "multiples of 4"),
    ("tile_m=64 tile_n=60 tile_k=16 thread_m=4 thread_n=8", "does not divide"),
    ("tile_m=256 tile_n=256 tile_k=16 thread_m=4 thread_n=4", "threads per block"),
    ("tile_m=256 tile_n=256 tile_k=64 thread_m=16 thread_n=16", "shared memory"),
    ("tile_m=128 tile_n=64 tile_k=16 thread_m=8 thread_n=4 stages=3", "1 or 2 shared tile pairs"),
    ("tile_m=128 tile_n=64 tile_k=16 thread_m=8 thread_n=4 a_pad=2", "multiple of 4"),
    ("tile_m=128 tile_n=128 tile_k=32 thread_m=8 thread_n=8 stages=2", "shared memory"),
])
def test_config_errors(params, message):
    mm = cuda_matmul_module()
    kv = dict(p.split("=") for p in params.split())
    with pytest.raises(ValueError, match=message):
        mm.matmul_simt_tiles(**{k: int(v) for k, v in kv.items()})


def test_selector_gives_each_large_f32_matmul_of_several_the_tiled_kernel(ctx, tmp_path):
    """Two large f32 matmuls in one payload: one tiled-kernel step each (matmul_simt_smem takes a module
    of one matmul only); both lower to kernels of their own."""
    p = tmp_path / "two.mlir"
    p.write_text(TWO_MATMULS.format(m=512, n=768, k=1024))
    ok(ctx, f"load {p}")
    ok(ctx, "target cuda")
    res = ok(ctx, "select --apply")
    picked = [(e["schedule"].split("[gen=")[1], e["params"].get("op")) for e in res.data["selections"]]
    assert picked == [("matmul_simt_tiles]", "matmul_0"), ("matmul_simt_tiles]", "matmul_1")], picked
    ok(ctx, "apply cuda-lower{chip=sm_90a}")
    assert sum(e.startswith("lh_simt_matmul_") for e in _entries(ctx)) == 2


def test_small_f32_matmuls_keep_matmul_simt():
    """Below SIMT_TILES_MIN_WORK, matmul_simt (which also fuses the fill and the epilogue) stays."""
    mm = cuda_matmul_module()
    assert mm.select_one_of_many(128, 512, 512, "f32", "sm_90a")[0] == "matmul_simt"
    assert mm.select_one_of_many(1024, 1024, 1024, "f32", "sm_90a")[0] == "matmul_simt_tiles"
    assert mm.select_batch(8, 64, 64, 64, "f32", "sm_90a")[0] == "matmul_simt"
    assert mm.select_batch(16, 1024, 1024, 1024, "f32", "sm_90a")[0] == "matmul_simt_tiles"


def test_two_tile_pairs_take_one_barrier_per_step(ctx, tmp_path):
    """stages=2: two K steps per loop trip, one from each shared tile pair, each ending in the one barrier
    that publishes the next step's tiles (one more after the first tiles): 3 barriers in all against the
    single pair's 3 for one step per trip; a_pad=4: the A tile's rows 132 floats apart."""
    ok(ctx, f"load {matmul_payload(tmp_path / 'mm.mlir', 512, 256, 1024, 'mm', 'f32')}")
    ok(ctx, f"apply {GEN}{{tile_m=128 tile_n=64 tile_k=16 thread_m=8 thread_n=4 a_pad=4 stages=2}}")
    kernel = ctx.session.current_ir
    ok(ctx, "apply cuda-lower{chip=sm_90a}")
    ptx = ptx_of(ctx.session.current_ir)
    assert ptx.count("bar.sync") == 3
    assert ptx.count("fma.rn.f32") == 2 * 16 * 8 * 4         # two steps of 16 k x (8 x 4) per trip
    assert "ld.local" not in ptx and "st.local" not in ptx
    assert "a_pad = 4" in kernel and "stages = 2" in kernel


def test_selector_takes_two_tile_pairs_and_padded_a_rows_for_large_matmuls():
    mm = cuda_matmul_module()
    gen, params = mm.select_one_of_many(2048, 2048, 2048, "f32", "sm_90a")
    assert gen == "matmul_simt_tiles" and params["stages"] == 2 and params["a_pad"] == 4


@needs_gpu
@pytest.mark.parametrize("shape, params", [
    ((130, 67, 45), "tile_m=128 tile_n=64 tile_k=16 thread_m=8 thread_n=4 a_pad=4 stages=2"),
    ((256, 200, 80), "tile_m=128 tile_n=64 tile_k=16 thread_m=8 thread_n=4 a_pad=4 stages=2"),
    ((96, 128, 7), "tile_m=64 tile_n=64 tile_k=8 thread_m=4 thread_n=4 a_pad=12 stages=2"),
    ((130, 67, 45), "tile_m=64 tile_n=64 tile_k=16 thread_m=4 thread_n=4"),
    ((256, 200, 132), "tile_m=128 tile_n=128 tile_k=8 thread_m=8 thread_n=8"),
    ((96, 128, 64), "tile_m=128 tile_n=64 tile_k=8 thread_m=8 thread_n=4"),
])
def test_gpu_tiled_kernel_matches_numpy(ctx, tmp_path, shape, params):
    ok(ctx, f"load {matmul_payload(tmp_path / 'mm.mlir', *shape, 'mm', 'f32')}")
    ok(ctx, f"apply {GEN}{{{params}}}")
    check_matmul_run(ctx, tmp_path, 1e-5)


@needs_gpu
def test_gpu_two_selected_matmuls_match_the_reference(ctx, tmp_path):
    p = tmp_path / "two.mlir"
    p.write_text(TWO_MATMULS.format(m=500, n=300, k=1100))
    ok(ctx, f"load {p}")
    ok(ctx, "target cuda")
    ok(ctx, "select --apply")
    run = ok(ctx, "run --target cuda --check --iterations 2").data["run"]
    assert run["check"]["passed"], run["check"]
