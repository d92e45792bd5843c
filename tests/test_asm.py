"""`asm`: the machine code of the live module as `run` compiles it, without changing the session."""
from __future__ import annotations

from pathlib import Path

import pytest

from conftest import matmul_payload, ok

ROOT = Path(__file__).resolve().parents[1]


def _needs_objdump():
    from workbench.common.mlir_libs import find_llvm_tool

    if find_llvm_tool("llvm-objdump") is None:
        pytest.skip("llvm-objdump is neither in the llvm package nor on PATH")


def test_asm_shows_the_jit_code_for_the_target_cpu(ctx, tmp_path):
    """The selected f32 matmul compiles to FMAs on 512-bit registers for this (AVX-512) host model and
    to 256-bit ones under `target --cpu avx2`; a function filter narrows the text; the session's steps
    and IR stay as they were; --out writes the whole text."""
    _needs_objdump()
    ok(ctx, f"load {matmul_payload(tmp_path / 'mm.mlir', 64, 128, 64)}")
    ok(ctx, "target cpu --cpu avx512 --threads 1")
    ok(ctx, "select --apply")
    before = (ctx.session.cursor, ctx.session.current_sha)
    res = ok(ctx, "asm --grep vfmadd")
    assert res.data["format"] == "gas" and res.data["matches"] > 0 and "zmm" in res.body
    whole = ok(ctx, f"asm --out {tmp_path / 'all.s'}")
    assert whole.data["lines"] == len((tmp_path / "all.s").read_text().splitlines())
    one = ok(ctx, "asm matmul")
    assert "<matmul>:" in one.body and "<_lh_bench>:" not in one.body and one.data["lines"] < whole.data["lines"]
    assert (ctx.session.cursor, ctx.session.current_sha) == before
    from workbench.completion import Completer

    offered = [c.text for c in Completer(ctx.registry, ctx.session).complete("asm ")]
    assert "matmul" in offered and "_lh_bench" in offered
    ok(ctx, "target cpu --cpu avx2")
    avx2 = ok(ctx, "asm --grep vfmadd")
    assert avx2.data["matches"] > 0 and "ymm" in avx2.body and "zmm" not in avx2.body
    res = ctx.registry.dispatch("asm no_such_function", ctx)
    assert not res.ok and res.error == "asm: no function 'no_such_function' in the compiled module"
    res = ctx.registry.dispatch("asm --grep (", ctx)
    assert not res.ok and res.error.startswith("--grep: not a regular expression")
    ok(ctx, "target cpu --cpu host --threads 0")


def test_asm_of_a_cuda_module_is_the_kernels_ptx(ctx, fake_h100_driver, monkeypatch):
    """On cuda the text is the PTX of the kernels (cuda-lower keeps it, format=isa): attention's two
    matmuls are wgmma kernels, its softmax a row kernel with warp shuffles; a name picks kernels."""
    monkeypatch.setenv("LH_WORKBENCH_LIBCUDA", str(fake_h100_driver))
    ok(ctx, f"load {ROOT / 'tests' / 'payloads' / 'attention_f16' / 'attention.mlir'}")
    ok(ctx, "target cuda")
    ok(ctx, "select --apply")
    res = ok(ctx, "asm --grep wgmma.mma_async")
    assert res.data["format"] == "ptx" and res.data["matches"] > 0
    kernels = ok(ctx, "asm --grep ^//.----.kernel").body.splitlines()
    assert len(kernels) == 3 and sum("lh_wgmma_matmul" in k for k in kernels) == 2
    rows = ok(ctx, "asm main_kernel")
    assert "shfl.sync.bfly" in rows.body and "wgmma" not in rows.body
    res = ctx.registry.dispatch("asm nothing_like_this", ctx)
    assert not res.ok and "no kernel named like 'nothing_like_this'" in res.error
    ok(ctx, "target cpu")


_SMALL_ELEMENTWISE = """
func.func @main(%x: tensor<64x256xf32>) -> tensor<64x256xf32> {
  %e = tensor.empty() : tensor<64x256xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>],
                       iterator_types = ["parallel", "parallel"]} ins(%x : tensor<64x256xf32>) outs(%e : tensor<64x256xf32>) {
  ^bb0(%a: f32, %o: f32):
    %z = arith.constant 0.0 : f32
    %m = arith.maximumf %a, %z : f32
    %s = arith.mulf %m, %a : f32
    linalg.yield %s : f32
  } -> tensor<64x256xf32>
  return %r : tensor<64x256xf32>
}
"""


def test_code_for_another_machine_has_none_of_the_hosts_wider_instructions(ctx, tmp_path):
    """A session for an AVX2 machine on a wider host: ExecutionEngine calls the public functions through
    wrappers it compiles for the host, and LLVM inlined a small payload (and the benchmark wrapper over
    it) into them: zmm registers, {1to16} broadcasts and mask registers in code for AVX2. Every function,
    the engine's wrappers included, is AVX2 code now, the payload and the benchmark wrapper stay
    functions of their own, and the run still checks."""
    _needs_objdump()
    from workbench.targets.cpu_host import machine_for

    payload = tmp_path / "relu_mul.mlir"
    payload.write_text(_SMALL_ELEMENTWISE)
    ok(ctx, f"load {payload}")
    ok(ctx, "target cpu --cpu avx2 --threads 1")
    ok(ctx, "select --apply")
    ok(ctx, "bench warmup=1 iterations=3")
    ok(ctx, "apply cpu-lower")
    whole = ok(ctx, "asm").body
    assert "ymm" in whole
    for wider in ("zmm", "{1to", "%k1"):
        assert wider not in whole, wider
    assert "<main>:" in whole and "<_lh_bench>:" in whole
    if not machine_for("avx2").missing_here():
        assert ok(ctx, "run --check").data["run"]["check"]["passed"]
    ok(ctx, "target cpu --cpu host --threads 0")
