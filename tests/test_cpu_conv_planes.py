"""lh-conv-planes: unit-stride channels-first convolutions whose rows are no whole number of vectors are
computed over the input's flattened plane (taps at kh * W + kw, whole input rows, the extra columns sliced
off); the selector path runs them and matches the unscheduled payload on AVX-512 and AVX2."""
from __future__ import annotations

import re

import pytest

from conftest import ok

#: torch's form: a zero pad of the input, the bias broadcast as the init
PADDED_CONV = """func.func @main(%x: tensor<2x4x14x14xf32>, %w: tensor<8x4x3x3xf32>, %bias: tensor<8xf32>) -> tensor<2x8x14x14xf32> {
  %zero = arith.constant 0.0 : f32
  %p = tensor.pad %x low[0, 0, 1, 1] high[0, 0, 1, 1] {
  ^bb0(%a: index, %b: index, %c: index, %d: index):
    tensor.yield %zero : f32
  } : tensor<2x4x14x14xf32> to tensor<2x4x16x16xf32>
  %e = tensor.empty() : tensor<2x8x14x14xf32>
  %init = linalg.broadcast ins(%bias : tensor<8xf32>) outs(%e : tensor<2x8x14x14xf32>) dimensions = [0, 2, 3]
  %r = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>}
       ins(%p, %w : tensor<2x4x16x16xf32>, tensor<8x4x3x3xf32>) outs(%init : tensor<2x8x14x14xf32>) -> tensor<2x8x14x14xf32>
  return %r : tensor<2x8x14x14xf32>
}
"""

#: no padding, a 3 x 5 window dilated along w, the init an argument
VALID_DILATED = """func.func @main(%x: tensor<2x4x12x29xf32>, %w: tensor<8x4x3x5xf32>, %init: tensor<2x8x10x21xf32>) -> tensor<2x8x10x21xf32> {
  %r = linalg.conv_2d_nchw_fchw {dilations = dense<[1, 2]> : vector<2xi64>, strides = dense<1> : vector<2xi64>}
       ins(%x, %w : tensor<2x4x12x29xf32>, tensor<8x4x3x5xf32>) outs(%init : tensor<2x8x10x21xf32>) -> tensor<2x8x10x21xf32>
  return %r : tensor<2x8x10x21xf32>
}
"""

DEPTHWISE = """func.func @main(%x: tensor<2x8x14x14xf32>, %w: tensor<8x3x3xf32>) -> tensor<2x8x12x12xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2x8x12x12xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e : tensor<2x8x12x12xf32>) -> tensor<2x8x12x12xf32>
  %r = linalg.depthwise_conv_2d_nchw_chw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>}
       ins(%x, %w : tensor<2x8x14x14xf32>, tensor<8x3x3xf32>) outs(%init : tensor<2x8x12x12xf32>) -> tensor<2x8x12x12xf32>
  return %r : tensor<2x8x12x12xf32>
}
"""

CONV3D = """func.func @main(%x: tensor<1x4x6x10x12xf32>, %w: tensor<8x4x3x3x3xf32>, %init: tensor<1x8x4x8x10xf32>) -> tensor<1x8x4x8x10xf32> {
  %r = linalg.conv_3d_ncdhw_fcdhw {dilations = dense<1> : vector<3xi64>, strides = dense<1> : vector<3xi64>}
       ins(%x, %w : tensor<1x4x6x10x12xf32>, tensor<8x4x3x3x3xf32>) outs(%init : tensor<1x8x4x8x10xf32>) -> tensor<1x8x4x8x10xf32>
  return %r : tensor<1x8x4x8x10xf32>
}
"""

#: two convolutions reading one pad (the pad cannot be widened in place: it gets a pad of its own)
SHARED_PAD = PADDED_CONV.replace(
    "  return %r : tensor<2x8x14x14xf32>",
    """  %r2 = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>}
       ins(%p, %w : tensor<2x4x16x16xf32>, tensor<8x4x3x3xf32>) outs(%r : tensor<2x8x14x14xf32>) -> tensor<2x8x14x14xf32>
  return %r2 : tensor<2x8x14x14xf32>""")


def _rewrite(text: str, lanes: int = 16) -> tuple[int, str]:
    from mlir import ir

    from workbench.worker.cpu.conv_planes import conv_planes

    with ir.Context(), ir.Location.unknown():
        module = ir.Module.parse(text)
        n = conv_planes(module, lanes)
        assert module.operation.verify()
        return n, str(module)


def test_a_padded_convolution_runs_over_the_plane_of_its_widened_pad():
    n, text = _rewrite(PADDED_CONV)
    assert n == 1
    assert "linalg.conv_2d_nchw_fchw" not in text
    # the input's own pad widened by one row (the last taps read past the plane), not padded again
    assert text.count("tensor.pad") == 1 and "high[0, 0, 2, 1]" in text
    assert "tensor<2x4x17x16xf32> into tensor<2x4x272xf32>" in text
    assert "d2 + d4 * 16 + d5" in text                      # taps at kh * 16 + kw
    # the bias broadcast made at the wider shape, flattened (no copy, no collapse of it: the convolution's init
    # is the broadcast itself, which the window schedule fuses into its tiles), the extra columns sliced off
    assert re.search(r"linalg.broadcast ins\(%\w+ : tensor<8xf32>\) outs\(%\w+ : tensor<2x8x224xf32>\) dimensions = \[0, 2\]",
                     text), text
    assert "tensor<2x8x14x16xf32> to tensor<2x8x14x14xf32>" in text
    assert text.count("linalg.broadcast") == 1


def test_dilated_and_3d_convolutions_flatten_their_planes():
    n, text = _rewrite(VALID_DILATED)
    assert n == 1 and "d2 + d4 * 29 + d5 * 2" in text and "tensor<2x8x10x29xf32> to tensor<2x8x10x21xf32>" in text
    n, text = _rewrite(CONV3D)
    assert n == 1 and "d2 + d4 * 120 + d5 * 12 + d6" in text
    assert "tensor<1x8x4x10x12xf32> to tensor<1x8x4x8x10xf32>" in text


def test_whole_rows_padded_rows_strided_pointwise_depthwise_narrow_and_wasteful_convolutions_are_left():
    whole = PADDED_CONV.replace("14x14", "32x32").replace("16x16", "34x34")      # rows of 32: whole vectors
    strided = PADDED_CONV.replace("2x8x14x14", "2x8x7x7").replace("strides = dense<1>", "strides = dense<2>")
    pointwise = VALID_DILATED.replace("8x4x3x5", "8x4x1x1").replace("2x8x10x21", "2x8x12x29").replace(
        "dilations = dense<[1, 2]>", "dilations = dense<1>")
    bf16 = PADDED_CONV.replace("f32", "bf16")
    wasteful = VALID_DILATED.replace("12x29", "12x9").replace("8x4x3x5", "8x4x3x7").replace("2x8x10x21", "2x8x10x3").replace(
        "dilations = dense<[1, 2]>", "dilations = dense<1>")   # 9 wide rows for 3 outputs
    padded_rows = VALID_DILATED.replace("12x29", "12x68").replace("2x8x10x21", "2x8x10x60")   # lh-pad-conv-rows: 64
    for text in (whole, strided, pointwise, bf16, wasteful, DEPTHWISE, padded_rows):
        n, out = _rewrite(text)
        assert n == 0 and "linalg.generic" not in out
    n, _ = _rewrite(PADDED_CONV.replace("14x14", "24x24").replace("16x16", "26x26"), lanes=8)   # 24: 3 AVX2 vectors
    assert n == 0


def test_a_shared_pad_is_padded_again_not_widened():
    n, text = _rewrite(SHARED_PAD)
    assert n == 2
    assert "high[0, 0, 1, 1]" in text   # the shared pad stays, each convolution pads it one row more
    assert text.count("linalg.generic") == 2


@pytest.mark.parametrize("cpu", ["host", "avx2"])
@pytest.mark.parametrize("name", ["padded", "valid_dilated", "conv3d", "shared_pad"])
def test_conv_planes_run_and_match(ctx, tmp_path, cpu, name):
    text = {"padded": PADDED_CONV, "valid_dilated": VALID_DILATED, "conv3d": CONV3D,
            "shared_pad": SHARED_PAD}[name]
    payload = tmp_path / f"{name}.mlir"
    payload.write_text(text)
    ok(ctx, f"load {payload}")
    try:
        ok(ctx, f"target cpu --cpu {cpu}")
        ok(ctx, "select --apply")
        assert "lh-conv-planes" in " ".join(a.step.label() for a in ctx.session.active_steps)
        ok(ctx, "bench warmup=1 iterations=2")
        ok(ctx, "apply cpu-lower")
        assert ok(ctx, "run --check --iterations 1 --warmup 0").data["run"]["check"]["passed"]
    finally:
        ok(ctx, "target cpu --cpu host")


def test_a_long_plane_takes_two_vectors_per_tile_and_a_remainder():
    """The selector: a plane of an odd number of vectors (56 x 58 = 203) gets tiles of two vectors and
    one tile of the rest, not one vector per tile (a broadcast load per multiply-add)."""
    from workbench.targets.cpu_selector import window_params

    loops = {"domain": [8, 64, 3248, 64, 3, 3], "iterators": ["parallel"] * 3 + ["reduction"] * 3,
             "operand_dims": [[0, 3, -1], [1, 3, 4, 5], [0, 1, 2]],
             "operand_terms": [[[[0, 1]], [[3, 1]], [[2, 1], [4, 58], [5, 1]]], [[[1, 1]], [[3, 1]], [[4, 1]], [[5, 1]]],
                               [[[0, 1]], [[1, 1]], [[2, 1]]]],
             "num_inputs": 2, "body": ["arith.mulf", "arith.addf", "linalg.yield"], "projected": False}
    p = window_params(loops, 16)
    assert p["tile"][2] == 32 and p["remainder"] == [2, 3232, 16], p
