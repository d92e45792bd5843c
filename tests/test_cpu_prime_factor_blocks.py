"""A matmul whose N has a large prime factor (a LLaMA MLP's 688 = 16 x 43 hidden units): its only blocks of whole
register tiles that divide N are a tile or two wide, and the packed schedule packed A again for every block (43
times for 688 columns in blocks of 16). matmul.default_params takes one block of all N instead (block_k keeps it
within L2); the selector path runs it and matches. On this 2-core AVX-512 host, a 512 x 688 x 256 matmul, 1 thread,
three alternated rounds of 200 calls: median 7.7-10.8 ms (min 1.6) before, 1.27-1.38 ms (min 1.14) after."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

from conftest import ok

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "pipelines" / "cpu"))

import matmul  # noqa: E402  (pipelines/cpu/matmul.py)


@pytest.mark.parametrize("m,n,k,machine", [
    (512, 688, 256, {}),                                                               # AVX-512: 16-wide tiles
    (512, 688, 256, {"vector_bits": 256, "vector_registers": 16, "l2_bytes": 512 << 10}),   # AVX2, a 512 KiB L2
    (16, 1376, 256, {}),                                                               # 32 x 43: 2-vector tiles
])
def test_n_with_a_large_prime_factor_is_one_block(m, n, k, machine):
    params = matmul.default_params(m, n, k, row_split=True, **machine)
    assert params["block_n"] == n
    assert n % params["reg_n"] == 0
    # the packed B block stays within L2 and the 1 MiB stack limit: block_k is cut to fit
    assert params["block_n"] * params["block_k"] * 4 <= min(1 << 20, machine.get("l2_bytes", 1 << 20))
    assert k % params["block_k"] == 0


def test_n_with_large_divisors_keeps_its_blocks():
    assert matmul.default_params(1024, 1024, 1024)["block_n"] == 1024
    assert matmul.default_params(512, 4096, 4096)["block_n"] == 512
    assert matmul.default_params(256, 768, 256)["block_n"] == 384


PRIME_N = """func.func @main(%a: tensor<40x96xf32>, %b: tensor<96x688xf32>) -> tensor<40x688xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<40x688xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<40x688xf32>) -> tensor<40x688xf32>
  %0 = linalg.matmul ins(%a, %b : tensor<40x96xf32>, tensor<96x688xf32>) outs(%f : tensor<40x688xf32>) -> tensor<40x688xf32>
  return %0 : tensor<40x688xf32>
}
"""


@pytest.mark.parametrize("cpu", ["host", "avx2"])
def test_the_selector_path_runs_one_block_of_all_n_and_matches(ctx, tmp_path, cpu):
    path = tmp_path / "prime_n.mlir"
    path.write_text(PRIME_N)
    ok(ctx, f"load {path}")
    ok(ctx, f"target cpu --threads 1 --cpu {cpu}")
    try:
        (spec, params), = ctx.session.target.select_params(ctx.session.inspect())
        assert params["block_n"] == 688
        ok(ctx, "select --apply")
        ok(ctx, "bench warmup=0 iterations=2")
        ok(ctx, "apply cpu-lower")
        assert ok(ctx, "run --check").data["run"]["check"]["passed"]
    finally:
        ok(ctx, "target cpu --cpu host --threads 0")
