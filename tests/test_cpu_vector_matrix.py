"""A vector-matrix product (x[1, k] @ W[k, n], torch's `x @ W` on a vector) on the selector path: its window
schedule keeps the reduction outermost, W streamed row by row, instead of init_registers' register tiles, each
of which walks a 32-column strip of W down all its rows (cpu_selector.streams_an_input_across_rows; 4096 x 4096
on one thread of the 2-core Zen 3, thread CPU time: 8.3 -> 5.3 ms, torch 3.4)."""
from __future__ import annotations

import pytest

from conftest import ok

VECMAT = """func.func @main(%x: tensor<KxN_x>, %w: tensor<KxNxf32>) -> tensor<1xNxf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1xNxf32>
  %init = linalg.fill ins(%zero : f32) outs(%e : tensor<1xNxf32>) -> tensor<1xNxf32>
  %r = linalg.matmul ins(%x, %w : tensor<KxN_x>, tensor<KxNxf32>) outs(%init : tensor<1xNxf32>) -> tensor<1xNxf32>
  return %r : tensor<1xNxf32>
}
"""


def _payload(tmp_path, k: int, n: int):
    path = tmp_path / f"vecmat_{k}x{n}.mlir"
    path.write_text(VECMAT.replace("KxN_x", f"1x{k}xf32").replace("KxN", f"{k}x{n}").replace("xNx", f"x{n}x"))
    return path


def _generic_params(ctx, cpu: str) -> dict:
    ok(ctx, f"target cpu --threads 1 --cpu {cpu}")
    (params,) = [e["params"] for e in ok(ctx, "select --apply").data["selections"] if "generic.py" in e["schedule"]]
    return params


def test_the_rule():
    """An input read once (every loop of more than one step indexes it) along a reduction loop that is not its
    innermost dim, that the schedule's order takes outside the columns, larger than the L2: W of a
    vector-matrix product. Not a convolution's filter (reused across
    the batch and positions), not a W within the L2, not without an L2 size."""
    from workbench.targets.cpu_selector import streams_an_input_across_rows

    vecmat = {"num_inputs": 2, "iterators": ["parallel", "parallel", "reduction"], "domain": [1, 4096, 4096],
              "operand_dims": [[0, 2], [2, 1], [0, 1]]}
    assert streams_an_input_across_rows(vecmat, 512 * 1024, [0, 2, 1])
    # (an order with the reduction inside the columns walks the strip down the rows either way: the register
    # tiles at least keep its accumulators in registers)
    assert not streams_an_input_across_rows(vecmat, 512 * 1024, [0, 1, 2])
    assert not streams_an_input_across_rows(vecmat, 512 * 1024)   # (the op's own order: the same)
    assert not streams_an_input_across_rows(vecmat, 0, [0, 2, 1])
    small = dict(vecmat, domain=[1, 256, 256])
    assert not streams_an_input_across_rows(small, 512 * 1024, [0, 2, 1])
    matmul = dict(vecmat, domain=[64, 4096, 4096])   # W reused by 64 rows of x
    assert not streams_an_input_across_rows(matmul, 512 * 1024, [0, 2, 1])
    conv1x1 = {"num_inputs": 2, "iterators": ["parallel"] * 3 + ["reduction"] * 2, "domain": [8, 256, 784, 256, 1],
               "operand_dims": [[0, 3, 2], [1, 3, 4], [0, 1, 2]]}
    assert not streams_an_input_across_rows(conv1x1, 512 * 1024)


@pytest.mark.parametrize("cpu", ["zen3", "skylake-avx512"])
def test_a_vector_matrix_product_streams_its_matrix_on_both_isas(ctx, tmp_path, cpu):
    """1 x 1024 @ 1024 x 2048 (8 MB of W, more than either L2): no init_registers, the reduction loop outermost."""
    try:
        ok(ctx, f"load {_payload(tmp_path, 1024, 2048)}")
        params = _generic_params(ctx, cpu)
        assert not params.get("init_registers") and not params.get("fuse_init"), params
    finally:
        ok(ctx, "target cpu --cpu host --threads 0")


@pytest.mark.parametrize("threads", [1, 2])
def test_a_vector_matrix_product_runs_and_matches(ctx, tmp_path, threads):
    """The host's ISA, 1 and 2 threads: selected without init_registers, lowered, run --check passes."""
    try:
        ok(ctx, f"load {_payload(tmp_path, 1024, 2048)}")
        ok(ctx, f"target cpu --threads {threads}")
        (params,) = [e["params"] for e in ok(ctx, "select --apply").data["selections"]
                     if "generic.py" in e["schedule"]]
        assert not params.get("init_registers"), params
        ok(ctx, "bench warmup=0 iterations=1")
        ok(ctx, "apply cpu-lower")
        assert ok(ctx, f"run --check --threads {threads} --iterations 1 --warmup 0").data["run"]["check"]["passed"]
    finally:
        ok(ctx, "target cpu --cpu host --threads 0")
