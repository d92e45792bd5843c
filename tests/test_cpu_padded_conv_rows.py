"""lh-pad-conv-rows: convolutions whose output rows are a little short of a multiple of 16 run over padded
rows (input widened with zeros, init padded, result sliced); the selector path runs and matches on AVX-512
and AVX2."""
from __future__ import annotations

import pytest

from conftest import lowered_run_passes, ok, selected_step_labels

CONV = """func.func @main(%i: tensor<2x4x5xINxf32>, %w: tensor<8x4x3x3xf32>, %b: tensor<2x8xOHxOUTxf32>) -> tensor<2x8xOHxOUTxf32> {
  %r = linalg.conv_2d_nchw_fchw {dilations = dense<[1, D]> : vector<2xi64>, strides = dense<[H, S]> : vector<2xi64>}
       ins(%i, %w : tensor<2x4x5xINxf32>, tensor<8x4x3x3xf32>) outs(%b : tensor<2x8xOHxOUTxf32>) -> tensor<2x8xOHxOUTxf32>
  return %r : tensor<2x8xOHxOUTxf32>
}
"""


def _conv(width: int, stride: int = 1, dilation: int = 1, h_stride: int = 1) -> str:
    out = (width - 2 * dilation - 1) // stride + 1
    return (CONV.replace("xINx", f"x{width}x").replace("xOUTx", f"x{out}x").replace("S]", f"{stride}]")
            .replace("D]", f"{dilation}]").replace("[H,", f"[{h_stride},").replace("xOHx", f"x{(5 - 3) // h_stride + 1}x"))


def _rewrite(text: str, split_max_plane_bytes: int = 0) -> tuple[int, str]:
    from mlir import ir

    from workbench.worker.cpu.padded_conv_rows import pad_conv_rows

    with ir.Context(), ir.Location.unknown():
        module = ir.Module.parse(text)
        n = pad_conv_rows(module, split_max_plane_bytes)
        assert module.operation.verify()
        return n, str(module)


def test_rows_just_short_of_whole_vectors_are_padded():
    from workbench.worker.cpu.padded_conv_rows import padded_width

    assert [padded_width(w) for w in (60, 30, 56, 52, 64, 12)] == [64, 32, 56, 52, 64, 12]
    n, text = _rewrite(_conv(62))   # rows of 60 -> 64: the input widened to 66, the init to 64
    assert n == 1
    assert "tensor<2x4x5x62xf32> to tensor<2x4x5x66xf32>" in text
    assert "tensor<2x8x3x60xf32> to tensor<2x8x3x64xf32>" in text
    assert "tensor<2x8x3x64xf32> to tensor<2x8x3x60xf32>" in text   # the extra outputs sliced off
    n, text = _rewrite(_conv(32, dilation=2))   # rows of 28 (dilated window): 32 would be 1/7 extra
    assert n == 0
    n, text = _rewrite(_conv(34, dilation=2))   # rows of 30 -> 32, the input widened to 36
    assert n == 1 and "tensor<2x4x5x34xf32> to tensor<2x4x5x36xf32>" in text


def test_whole_rows_and_strided_rows_are_left():
    for text in (_conv(66), _conv(58), _conv(122, stride=2)):   # 64 (whole), 56 (half vectors), strided
        n, out = _rewrite(text)
        assert n == 0 and "tensor.pad" not in out


@pytest.mark.parametrize("cpu", ["host", "avx2"])
@pytest.mark.parametrize("width,dilation", [(62, 1), (34, 2)])
def test_padded_rows_run_and_match(ctx, tmp_path, cpu, width, dilation):
    """A stride along h (unit-stride convolutions are computed over the input's plane first:
    lh-conv-planes, which leaves the padded rows to these)."""
    payload = tmp_path / "conv_rows.mlir"
    payload.write_text(_conv(width, dilation=dilation, h_stride=2))
    ok(ctx, f"load {payload}")
    try:
        ok(ctx, f"target cpu --cpu {cpu}")
        ok(ctx, "select --apply")
        labels = " ".join(a.step.label() for a in ctx.session.active_steps)
        assert "lh-pad-conv-rows" in labels and "lh-conv-planes" not in labels
        ok(ctx, "bench warmup=1 iterations=2")
        ok(ctx, "apply cpu-lower")
        assert ok(ctx, "run --check --iterations 1 --warmup 0").data["run"]["check"]["passed"]
    finally:
        ok(ctx, "target cpu --cpu host")


CONV3D = """func.func @main(%i: tensor<1x2x16x32x32xf32>, %w: tensor<3x2x3x3x3xf32>, %b: tensor<3xf32>) -> tensor<1x3x14x30x30xf32> {
  %e = tensor.empty() : tensor<1x3x14x30x30xf32>
  %bias = linalg.broadcast ins(%b : tensor<3xf32>) outs(%e : tensor<1x3x14x30x30xf32>) dimensions = [0, 2, 3, 4]
  %r = linalg.conv_3d_ncdhw_fcdhw {dilations = dense<1> : vector<3xi64>, strides = dense<1> : vector<3xi64>}
       ins(%i, %w : tensor<1x2x16x32x32xf32>, tensor<3x2x3x3x3xf32>) outs(%bias : tensor<1x3x14x30x30xf32>) -> tensor<1x3x14x30x30xf32>
  return %r : tensor<1x3x14x30x30xf32>
}
"""


def test_aliasing_channel_planes_get_a_row_more():
    """Padded to 34, the 16 x 32 x 34 f32 planes are 17 x 4 KiB apart: every channel's rows in the same L1 sets;
    a row more per plane (16 x 33 x 34) is not. The bias broadcast is made anew at the padded shape."""
    from workbench.worker.cpu.padded_conv_rows import unaliased_rows

    assert unaliased_rows([1, 2, 16, 32, 34], 32) == 1
    assert unaliased_rows([1, 2, 16, 30, 34], 32) == 0     # 16320 bytes: no multiple of 4 KiB
    assert unaliased_rows([1, 2, 16, 32, 34], 16) == 0     # bf16: 8.5 KiB planes
    assert unaliased_rows([1, 2, 2, 512], 32) == 1        # 2-D: two rows of 2 KiB
    assert unaliased_rows([1, 2, 2, 2, 1024], 32) == 0     # rows of 4 KiB: a row more does not help
    assert unaliased_rows([1, 2, 32, 34], 32) == 0         # 1-D
    n, text = _rewrite(CONV3D)
    assert n == 1
    assert "tensor<1x2x16x32x32xf32> to tensor<1x2x16x33x34xf32>" in text
    assert "outs(%1 : tensor<1x3x14x30x32xf32>) dimensions = [0, 2, 3, 4]" in text   # the broadcast anew
    assert text.count("tensor.pad") == 1                                               # the input's only
    n, text = _rewrite(_conv(62))   # 2 x 4 x 5 x 66 planes (5 x 66 x 4 bytes): no alias, no extra row
    assert "tensor<2x4x5x62xf32> to tensor<2x4x5x66xf32>" in text


@pytest.mark.parametrize("threads", [1, 2])
def test_unaliased_conv3d_runs_and_matches(ctx, tmp_path, threads):
    payload = tmp_path / "conv3d_rows.mlir"
    payload.write_text(CONV3D)
    ok(ctx, f"load {payload}")
    ok(ctx, f"target cpu --threads {threads}")
    ok(ctx, "select --apply")
    labels = " ".join(a.step.label() for a in ctx.session.active_steps)
    assert "lh-pad-conv-rows" in labels and "lh-conv-planes" not in labels
    assert "16x33x34" in ctx.session.current_ir
    ok(ctx, "bench warmup=1 iterations=2")
    ok(ctx, "apply cpu-lower")
    assert ok(ctx, f"run --check --iterations 1 --warmup 0 --threads {threads}").data["run"]["check"]["passed"]


CONV1D = """func.func @main(%i: tensor<2x8x302xf32>, %w: tensor<8x8x3xf32>, %b: tensor<8xf32>) -> tensor<2x8x300xf32> {
  %e = tensor.empty() : tensor<2x8x300xf32>
  %bias = linalg.broadcast ins(%b : tensor<8xf32>) outs(%e : tensor<2x8x300xf32>) dimensions = [0, 2]
  %r = linalg.conv_1d_ncw_fcw {dilations = dense<1> : vector<1xi64>, strides = dense<1> : vector<1xi64>}
       ins(%i, %w : tensor<2x8x302xf32>, tensor<8x8x3xf32>) outs(%bias : tensor<2x8x300xf32>) -> tensor<2x8x300xf32>
  return %r : tensor<2x8x300xf32>
}
"""


def test_long_rows_are_split_at_the_last_whole_tile():
    """Rows of 300 (-> 304): two convolutions over outputs [0, 288) and [288, 300), each writing its slice of the
    result (no padded result and no copy of it); the bias broadcast made anew into each slice; the input still
    padded to what the padded rows would read."""
    n, text = _rewrite(CONV1D, 8 * 300 * 4)   # (an image's input channels x positions: 9600 bytes)
    assert n == 1
    assert text.count("linalg.conv_1d_ncw_fcw") == 2 and text.count("linalg.broadcast") == 2
    assert "tensor<2x8x302xf32> to tensor<2x8x306xf32>" in text                     # (the input's pad)
    assert "%arg1 : tensor<2x8x290xf32>, tensor<8x8x3xf32>) outs(%broadcasted : tensor<2x8x288xf32>)" in text
    assert "%arg1 : tensor<2x8x14xf32>, tensor<8x8x3xf32>) outs(%broadcasted_2 : tensor<2x8x12xf32>)" in text
    assert text.count("tensor.insert_slice") == 2 and "x304x" not in text
    n, text = _rewrite(_conv(272, h_stride=2), 1 << 20)   # a 2-D one, its init an argument: sliced, not made anew
    assert n == 1 and text.count("linalg.conv_2d_nchw_fchw") == 2 and "x272xf32> into" not in text
    assert "tensor.extract_slice %arg2[0, 0, 0, 0] [2, 8, 2, 256]" in text
    assert "[0, 0, 0, 256] [2, 8, 2, 14] [1, 1, 1, 1] : tensor<2x8x2x270xf32> to tensor<2x8x2x14xf32>" in text
    # a plane over the limit (the selector cuts it into blocks of positions that divide the padded row) stays padded
    # a result an elementwise op reads (in place, through the padded result's slice): no copy to save, stays padded
    relu = CONV1D.replace("  return %r : tensor<2x8x300xf32>", """  %y = linalg.generic {indexing_maps = [affine_map<(a, b, c) -> (a, b, c)>, affine_map<(a, b, c) -> (a, b, c)>],
      iterator_types = ["parallel", "parallel", "parallel"]} ins(%r : tensor<2x8x300xf32>) outs(%e : tensor<2x8x300xf32>) {
  ^bb0(%v: f32, %o: f32):
    %z = arith.constant 0.0 : f32
    %m = arith.maximumf %v, %z : f32
    linalg.yield %m : f32
  } -> tensor<2x8x300xf32>
  return %y : tensor<2x8x300xf32>""")
    n, text = _rewrite(relu, 1 << 20)
    assert n == 1 and text.count("linalg.conv_1d_ncw_fcw") == 1 and "tensor<2x8x304xf32> to tensor<2x8x300xf32>" in text
    n, text = _rewrite(CONV1D, 8 * 300 * 4 - 1)
    assert n == 1 and text.count("linalg.conv_1d_ncw_fcw") == 1 and "tensor<2x8x304xf32> to tensor<2x8x300xf32>" in text

@pytest.mark.parametrize("text", [CONV1D, _conv(272, h_stride=2)], ids=["conv1d_bias", "conv2d_init"])
def test_split_rows_run_and_match(ctx, tmp_path, text):
    assert "lh-pad-conv-rows" in " ".join(selected_step_labels(ctx, tmp_path, text, 1))
    lowered_run_passes(ctx)
