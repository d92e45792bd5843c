"""bf16 contractions on AMX tiles: on a machine model with AMX (`--cpu sapphirerapids`, or an AMX host) the
selector puts bf16 matmuls whose N is a multiple of 16 in the AMX layout (lh-vnni-contractions{amx=1}) and
schedules them with pipelines/cpu/matmul_amx.py, whose tile products lower to tileloadd / tdpbf16ps /
tilestored; without AMX they keep the vdpbf16ps path. The runs need an AMX host (skipped elsewhere)."""
from __future__ import annotations

import re

import pytest

from conftest import ok

MATMUL = """func.func @main(%a: tensor<MxKxbf16>, %b: tensor<KxNxbf16>) -> tensor<MxNxf32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<MxNxf32>
  %c = linalg.fill ins(%z : f32) outs(%e : tensor<MxNxf32>) -> tensor<MxNxf32>
  %r = linalg.matmul ins(%a, %b : tensor<MxKxbf16>, tensor<KxNxbf16>) outs(%c : tensor<MxNxf32>) -> tensor<MxNxf32>
  return %r : tensor<MxNxf32>
}
"""

BATCH = """func.func @main(%a: tensor<2xMxKxbf16>, %b: tensor<2xKxNxbf16>) -> tensor<2xMxNxf32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2xMxNxf32>
  %c = linalg.fill ins(%z : f32) outs(%e : tensor<2xMxNxf32>) -> tensor<2xMxNxf32>
  %r = linalg.batch_matmul ins(%a, %b : tensor<2xMxKxbf16>, tensor<2xKxNxbf16>) outs(%c : tensor<2xMxNxf32>) -> tensor<2xMxNxf32>
  return %r : tensor<2xMxNxf32>
}
"""

# torch's bf16 linear: x @ W.T with W transposed by a linalg.transpose, then a bias add and the cast back
LINEAR = """#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d1)>
func.func @main(%x: tensor<MxKxbf16>, %w: tensor<NxKxbf16>, %bias: tensor<Nxf32>) -> tensor<MxNxbf16> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<KxNxbf16>
  %wt = linalg.transpose ins(%w : tensor<NxKxbf16>) outs(%e : tensor<KxNxbf16>) permutation = [1, 0]
  %e2 = tensor.empty() : tensor<MxNxf32>
  %c = linalg.fill ins(%z : f32) outs(%e2 : tensor<MxNxf32>) -> tensor<MxNxf32>
  %r = linalg.matmul ins(%x, %wt : tensor<MxKxbf16>, tensor<KxNxbf16>) outs(%c : tensor<MxNxf32>) -> tensor<MxNxf32>
  %e3 = tensor.empty() : tensor<MxNxbf16>
  %o = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%r, %bias : tensor<MxNxf32>, tensor<Nxf32>) outs(%e3 : tensor<MxNxbf16>) {
  ^bb0(%v: f32, %bv: f32, %out: bf16):
    %s = arith.addf %v, %bv : f32
    %t = arith.truncf %s : f32 to bf16
    linalg.yield %t : bf16
  } -> tensor<MxNxbf16>
  return %o : tensor<MxNxbf16>
}
"""


def _payload(template: str, m: int, n: int, k: int) -> str:
    return template.replace("M", str(m)).replace("N", str(n)).replace("K", str(k))


def _host_has_amx() -> bool:
    from workbench.targets.cpu_host import host_machine

    return host_machine().amx


def _select_and_lower(ctx, tmp_path, text: str, cpu: str) -> list[str]:
    payload = tmp_path / "bf16.mlir"
    payload.write_text(text)
    ok(ctx, f"load {payload}")
    ok(ctx, f"target cpu --cpu {cpu} --threads 1")
    ok(ctx, "select --apply")
    labels = [a.step.label() for a in ctx.session.active_steps]
    ok(ctx, "bench warmup=1 iterations=2")
    ok(ctx, "apply cpu-lower")
    return labels


@pytest.mark.parametrize("template,dims", [(MATMUL, (64, 64, 128)), (BATCH, (16, 32, 64)), (LINEAR, (24, 48, 64))])
def test_amx_machines_get_amx_tile_products(ctx, tmp_path, template, dims):
    try:
        labels = _select_and_lower(ctx, tmp_path, _payload(template, *dims), "sapphirerapids")
        assert any("lh-vnni-contractions{amx=1}" in label for label in labels), labels
        assert any("matmul_amx.py" in label for label in labels), labels
        assert any("amx-accumulators.yaml" in label for label in labels), labels   # tiles carried across K
        carried = ctx.session.ir_at(1 + next(i for i, label in enumerate(labels) if "amx-accumulators" in label))
        # the K loop carries the result tiles (no result-tile store in it: each was a load and a store per
        # product until lh-amx-tile-accumulators merged the views the folded tile products read and wrote)
        k_loop = carried[carried.index("iter_args"):]
        k_loop = k_loop[:k_loop.index("scf.yield")]
        assert "amx.tile_mulf" in k_loop and "amx.tile_store" not in k_loop, k_loop
        # B tiles are one packed panel's 16 K pairs: 64-byte rows, 1 KiB contiguous
        assert re.search(r"amx.tile_load .*memref<\d+x32xbf16, strided<\[32, 1\]", k_loop), k_loop
        lowered = ctx.session.ir_at(ctx.session.cursor)
        assert "llvm.x86.tdpbf16ps.internal" in lowered
        assert "llvm.x86.tileloadd64.internal" in lowered and "llvm.x86.tilestored64.internal" in lowered
    finally:
        ok(ctx, "target cpu --cpu host")


def test_machines_without_amx_keep_the_vdpbf16ps_path(ctx, tmp_path):
    try:
        labels = _select_and_lower(ctx, tmp_path, _payload(MATMUL, 64, 64, 128), "zen4")
        assert not any("matmul_amx" in label or "amx=1" in label for label in labels), labels
        lowered = ctx.session.ir_at(ctx.session.cursor)
        assert "tdpbf16ps" not in lowered and "llvm.x86.avx512bf16.dpbf16ps" in lowered
    finally:
        ok(ctx, "target cpu --cpu host")


def test_columns_that_are_no_whole_tile_keep_the_vnni_layout(ctx, tmp_path):
    try:
        labels = _select_and_lower(ctx, tmp_path, _payload(MATMUL, 32, 24, 64), "sapphirerapids")
        assert any("matmul_vnni.py" in label for label in labels) and not any("matmul_amx" in x for x in labels)
    finally:
        ok(ctx, "target cpu --cpu host")


def test_tiles_larger_than_amx_tiles_are_refused():
    from workbench.targets.cpu import CpuTarget, _load_library_module

    amx = _load_library_module(CpuTarget.matmul_amx_schedule)
    with pytest.raises(ValueError, match="at most 16 rows"):
        amx.matmul_amx_tiling(block_m=64, tile_m=32)
    with pytest.raises(ValueError, match="tile_k=16 must divide block_k/2=8"):
        amx.matmul_amx_tiling(block_k=16)
    params = amx.default_params(200, 64, 96)
    assert params["tile_m"] <= 16 and 200 % params["tile_m"] == 0 and params["tile_n"] == 16
    assert (params["block_k"] // 2) % params["tile_k"] == 0 and 48 % params["tile_k"] == 0


@pytest.mark.skipif(not _host_has_amx(), reason="needs an AMX host (amx_tile in /proc/cpuinfo)")
@pytest.mark.parametrize("template,dims", [(MATMUL, (64, 64, 128)), (MATMUL, (40, 80, 96)), (BATCH, (16, 32, 64)),
                                           (LINEAR, (24, 48, 64))])
@pytest.mark.parametrize("threads", [1, 4])
def test_amx_tile_products_run_and_match(ctx, tmp_path, template, dims, threads):
    payload = tmp_path / "bf16.mlir"
    payload.write_text(_payload(template, *dims))
    ok(ctx, f"load {payload}")
    ok(ctx, f"target cpu --threads {threads}")
    ok(ctx, "select --apply")
    assert any("matmul_amx.py" in a.step.label() for a in ctx.session.active_steps)
    ok(ctx, "bench warmup=1 iterations=2")
    ok(ctx, "apply cpu-lower")
    assert ok(ctx, "run --check --iterations 1 --warmup 0").data["run"]["check"]["passed"]
