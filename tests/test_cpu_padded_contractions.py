"""lh-pad-contraction-dims: f32 contractions whose M has no divisor of 4 (ViT's 197 tokens) or whose N is no
multiple of the vector lanes run over padded rows / columns, so that the matmul schedules get whole register
tiles; the selector path runs and matches in every contraction layout, on AVX-512 and AVX2."""
from __future__ import annotations

import pytest

from conftest import ok

MATMUL = """func.func @main(%a: tensor<MxKxf32>, %b: tensor<KxNxf32>) -> tensor<MxNxf32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<MxNxf32>
  %c = linalg.fill ins(%z : f32) outs(%e : tensor<MxNxf32>) -> tensor<MxNxf32>
  %r = linalg.matmul ins(%a, %b : tensor<MxKxf32>, tensor<KxNxf32>) outs(%c : tensor<MxNxf32>) -> tensor<MxNxf32>
  return %r : tensor<MxNxf32>
}
"""

# torch-mlir's `x @ w.T`: a generic reading B as N x K; and a batch matmul (attention's scores over 197 tokens)
TRANSPOSED_B = """#a = affine_map<(m, n, k) -> (m, k)>
#b = affine_map<(m, n, k) -> (n, k)>
#c = affine_map<(m, n, k) -> (m, n)>
func.func @main(%x: tensor<MxKxf32>, %w: tensor<NxKxf32>) -> tensor<MxNxf32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<MxNxf32>
  %c = linalg.fill ins(%z : f32) outs(%e : tensor<MxNxf32>) -> tensor<MxNxf32>
  %r = linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %w : tensor<MxKxf32>, tensor<NxKxf32>) outs(%c : tensor<MxNxf32>) {
  ^bb0(%p: f32, %q: f32, %acc: f32):
    %m = arith.mulf %p, %q : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<MxNxf32>
  return %r : tensor<MxNxf32>
}
"""

BATCH = """func.func @main(%a: tensor<3xMxKxf32>, %b: tensor<3xKxNxf32>) -> tensor<3xMxNxf32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<3xMxNxf32>
  %c = linalg.fill ins(%z : f32) outs(%e : tensor<3xMxNxf32>) -> tensor<3xMxNxf32>
  %r = linalg.batch_matmul ins(%a, %b : tensor<3xMxKxf32>, tensor<3xKxNxf32>) outs(%c : tensor<3xMxNxf32>) -> tensor<3xMxNxf32>
  return %r : tensor<3xMxNxf32>
}
"""


def _payload(template: str, m: int, n: int, k: int) -> str:
    return template.replace("M", str(m)).replace("N", str(n)).replace("K", str(k))


def _rewrite(text: str, lanes: int = 16) -> tuple[int, str]:
    from mlir import ir

    from workbench.worker.cpu.padded_contractions import pad_contraction_dims

    with ir.Context(), ir.Location.unknown():
        module = ir.Module.parse(text)
        n = pad_contraction_dims(module, lanes)
        assert module.operation.verify()
        return n, str(module)


def test_dims_without_a_whole_tile_are_rounded_up_where_it_pays():
    from workbench.worker.cpu.padded_contractions import padded_columns, padded_rows

    # 197 (one-row tiles) -> 200, 42 (two-row tiles) -> 44 (not 48: four rows are full speed), 13 -> 16,
    # 5 -> 8, 3 -> 4; multiples of 4 stay, and so do 1 and 2 rows (a tile of mostly padding)
    assert [padded_rows(m) for m in (197, 42, 13, 5, 3, 256, 500, 12, 1, 2)] == \
        [200, 44, 16, 8, 4, 256, 500, 12, 1, 2]
    # columns: whole vectors where they beat the power-of-two tiles that divide N (8 of 16: a half vector
    # either way, left)
    assert [padded_columns(n, 16) for n in (1000, 100, 64, 20, 10, 8, 2)] == [1008, 112, 64, 32, 16, 8, 2]
    assert [padded_columns(n, 8) for n in (1000, 20, 12)] == [1000, 24, 16]


def test_a_wide_n_is_padded_until_its_packed_blocks_are_whole_register_tiles():
    """N past 4 packed blocks (2048 columns) is cut in blocks that divide it: a vocabulary of 32003 (whole 8-lane
    vectors: 32008 = 8 x 4001) left blocks of one vector, A packed again for every 8 columns (LLaMA-style LM
    head, 128 x 256 x 32003: 12 GFLOP/s on one core). It is padded a register tile (two vectors) at a time
    until a block of at least 4 tiles divides it; N that has one stays."""
    from workbench.worker.cpu.padded_contractions import MIN_BLOCK_TILES, padded_columns, widest_block

    assert padded_columns(32003, 8) == 32016 and widest_block(32016, 16) == 464
    assert padded_columns(32003, 16) == 32032
    assert padded_columns(50257, 16) == 50304 and padded_columns(50257, 8) == 50288   # GPT-2's vocabulary
    assert padded_columns(3000, 8) == 3008        # 3000 = 8 x 375: no block of two-vector tiles
    for n in (32000, 151936, 128256, 4096, 2048, 1000, 2000):   # blocks of >= 4 tiles divide them (or N is
        assert padded_columns(n, 16) == (1008 if n == 1000 else n)  # small enough to be one block)
    for n in range(2049, 2300):
        for lanes in (8, 16):
            padded = padded_columns(n, lanes)
            assert n <= padded <= n + 8 * 2 * lanes and widest_block(padded, 2 * lanes) >= MIN_BLOCK_TILES * 2 * lanes


def test_a_wide_vocabulary_is_padded_to_the_n_with_blocks():
    n, text = _rewrite(_payload(MATMUL, 16, 32003, 32), lanes=8)
    assert n == 1 and "tensor<32x32003xf32> to tensor<32x32016xf32>" in text
    assert "tensor<16x32016xf32> to tensor<16x32003xf32>" in text


def test_odd_rows_are_padded_and_the_extra_rows_sliced_off():
    n, text = _rewrite(_payload(MATMUL, 197, 64, 32))
    assert n == 1
    assert "tensor<197x32xf32> to tensor<200x32xf32>" in text            # A's rows padded with zeros
    assert "linalg.matmul" in text and "-> tensor<200x64xf32>" in text
    assert "tensor<200x64xf32> to tensor<197x64xf32>" in text            # the extra rows sliced off
    assert "lh.pad_target" not in text
    # the fill of the init becomes a fill of the padded init (no copy of a zeroed tensor)
    assert "linalg.fill ins(%cst : f32) outs(%0 : tensor<200x64xf32>)" in text.replace("%cst_0", "%cst")


def test_columns_are_padded_to_whole_vectors_with_enough_rows():
    n, text = _rewrite(_payload(MATMUL, 64, 1000, 32))
    assert n == 1 and "tensor<32x1000xf32> to tensor<32x1008xf32>" in text
    n, text = _rewrite(_payload(MATMUL, 64, 1000, 32), lanes=8)
    assert n == 0          # 1000 is whole 8-lane vectors
    n, _ = _rewrite(_payload(MATMUL, 4, 1000, 32))
    assert n == 0          # four rows: padding B would cost as much as the product


@pytest.mark.parametrize("template", [TRANSPOSED_B, BATCH])
def test_every_layout_is_padded_along_its_m_loop(template):
    n, text = _rewrite(_payload(template, 197, 48, 32))
    assert n == 1
    assert ("tensor<197x32xf32> to tensor<200x32xf32>" in text) or ("tensor<3x197x32xf32> to tensor<3x200x32xf32>" in text)
    assert "x48x32xf32> to" not in text and "x32x48xf32> to" not in text   # B is not padded (48 is whole)


def test_whole_tiles_and_other_ops_are_left():
    for text in (_payload(MATMUL, 64, 64, 32), _payload(MATMUL, 196, 48, 32), _payload(MATMUL, 2, 48, 32)):
        n, out = _rewrite(text)
        assert n == 0 and "tensor.pad" not in out
    bf16 = _payload(MATMUL, 197, 64, 32).replace("f32>", "bf16>").replace("0.0 : f32", "0.0 : bf16") \
        .replace("(%z : f32)", "(%z : bf16)")
    assert _rewrite(bf16)[0] == 0     # (the bf16 paths have their own layouts)


@pytest.mark.parametrize("cpu", ["host", "avx2"])
@pytest.mark.parametrize("template,dims", [(MATMUL, (197, 64, 32)), (TRANSPOSED_B, (197, 48, 64)),
                                           (BATCH, (13, 40, 16)), (MATMUL, (24, 100, 32))])
def test_padded_contractions_run_and_match(ctx, tmp_path, cpu, template, dims):
    payload = tmp_path / "odd.mlir"
    payload.write_text(_payload(template, *dims))
    ok(ctx, f"load {payload}")
    try:
        ok(ctx, f"target cpu --cpu {cpu} --threads 1")
        ok(ctx, "select --apply")
        labels = [a.step.label() for a in ctx.session.active_steps]
        assert any("lh-pad-contraction-dims" in label for label in labels), labels
        # the schedule's register tile is whole rows of 4 or 8 now (without the pad: 1 row for 197 and 13)
        schedule = next(a.step for a in ctx.session.active_steps if "reg_m" in (a.step.params or {}))
        assert schedule.params["reg_m"] >= 4
        ok(ctx, "bench warmup=1 iterations=2")
        ok(ctx, "apply cpu-lower")
        assert ok(ctx, "run --check --iterations 1 --warmup 0").data["run"]["check"]["passed"]
    finally:
        ok(ctx, "target cpu --cpu host")


@pytest.mark.parametrize("cpu", ["host", "avx2", "avx512"])
def test_a_wide_prime_n_gets_packed_blocks_of_whole_tiles_and_matches(ctx, tmp_path, cpu):
    """16 x 32 @ 32 x 2053 (a prime N past 4 packed blocks): padded until blocks of at least 4 two-vector tiles
    divide it (without: blocks of one vector on AVX2, 2056 = 8 x 257); runs and matches where the host can."""
    payload = tmp_path / "wide.mlir"
    payload.write_text(_payload(MATMUL, 16, 2053, 32))
    ok(ctx, f"load {payload}")
    try:
        ok(ctx, f"target cpu --cpu {cpu} --threads 1")
        ok(ctx, "select --apply")
        schedule = next(a.step for a in ctx.session.active_steps if "reg_n" in (a.step.params or {}))
        assert schedule.params["block_n"] >= 4 * schedule.params["reg_n"], schedule.params
        ok(ctx, "bench warmup=1 iterations=2")
        ok(ctx, "apply cpu-lower")
        if ctx.session.target.machine.missing_here():
            return   # (AVX-512 code on an AVX2 host: selected and lowered)
        assert ok(ctx, "run --check --iterations 1 --warmup 0").data["run"]["check"]["passed"]
    finally:
        ok(ctx, "target cpu --cpu host")


def test_bad_options_fail_in_one_line_without_a_traceback(ctx, tmp_path):
    payload = tmp_path / "odd.mlir"
    payload.write_text(_payload(MATMUL, 197, 64, 32))
    ok(ctx, f"load {payload}")
    for option, message in (("lanes=abc", "option lanes='abc' is not an integer"),
                            ("lanes=0", "option lanes=0 must be >= 1")):
        res = ctx.registry.dispatch(f"pass lh-pad-contraction-dims{{{option}}}", ctx)
        assert not res.ok and message in res.error, res.error
        assert "\n" not in res.error and "Traceback" not in (res.detail or "")
        assert ctx.session.cursor == 0


def test_a_prime_depth_is_padded_to_whole_k_steps_where_rows_are_padded():
    from mlir import ir

    from workbench.worker.cpu.padded_contractions import pad_contraction_dims, padded_depth

    assert [padded_depth(k, 4) for k in (49, 197, 52, 3, 50)] == [52, 200, 52, 3, 52]
    assert padded_depth(49, 0) == 49
    # Swin's attention times V: 49 rows (-> 52) and K = 49 (-> 52); B's rows padded with zeros too
    with ir.Context(), ir.Location.unknown():
        module = ir.Module.parse(_payload(BATCH, 49, 32, 49))
        assert pad_contraction_dims(module, 16, 4) == 1 and module.operation.verify()
        text = str(module)
    assert "tensor<3x49x49xf32> to tensor<3x52x52xf32>" in text
    assert "tensor<3x49x32xf32> to tensor<3x52x32xf32>" in text
    # rows of whole tiles: A is not copied for K alone
    with ir.Context(), ir.Location.unknown():
        module = ir.Module.parse(_payload(BATCH, 48, 32, 49))
        assert pad_contraction_dims(module, 16, 4) == 0


def test_the_selector_pads_a_prime_depth_and_the_kernel_unrolls_k(ctx, tmp_path):
    payload = tmp_path / "window.mlir"
    payload.write_text(_payload(BATCH, 49, 32, 49))
    ok(ctx, f"load {payload}")
    try:
        ok(ctx, "target cpu --threads 1")
        ok(ctx, "select --apply")
        schedule = next(a.step for a in ctx.session.active_steps if "reg_k" in (a.step.params or {}))
        # (without K padded: block_k 49, reg_k 1, pack tiles of 1)
        assert schedule.params["block_k"] == 52 and schedule.params["reg_k"] == 4
        ok(ctx, "bench warmup=1 iterations=2")
        ok(ctx, "apply cpu-lower")
        assert ok(ctx, "run --check --iterations 1 --warmup 0").data["run"]["check"]["passed"]
    finally:
        ok(ctx, "target cpu --cpu host")
