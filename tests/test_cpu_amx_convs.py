"""bf16 convolutions on AMX tiles: on a machine model with AMX (`--cpu sapphirerapids`, or an AMX host)
lh-vnni-convs{amx=1} lays convolutions whose output channels are whole 16-row tiles out for AMX (filter
F x KH x KW x C/2 x 2, rows padded to 16-column tiles) and pipelines/cpu/conv_amx.py computes each window
position's tile as an AMX matmul read in place (no im2col): tileloadd / tdpbf16ps, the result tiles kept in
tile registers across the channel and window loops. Others keep the vdpbf16ps path. The runs need an AMX host
(skipped elsewhere)."""
from __future__ import annotations

import importlib.util

import pytest

from conftest import REPO, ok

CONV = """func.func @main(%i: tensor<2xCxHxWxbf16>, %w: tensor<FxCxKHxKWxbf16>) -> tensor<2xFxOHxOWxf32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2xFxOHxOWxf32>
  %o = linalg.fill ins(%z : f32) outs(%e : tensor<2xFxOHxOWxf32>) -> tensor<2xFxOHxOWxf32>
  %r = linalg.conv_2d_nchw_fchw {dilations = dense<[1, DIL]> : vector<2xi64>, strides = dense<[SH, 1]> : vector<2xi64>}
       ins(%i, %w : tensor<2xCxHxWxbf16>, tensor<FxCxKHxKWxbf16>) outs(%o : tensor<2xFxOHxOWxf32>) -> tensor<2xFxOHxOWxf32>
  return %r : tensor<2xFxOHxOWxf32>
}
"""

CONV1D = """func.func @main(%i: tensor<2x32x40xbf16>, %w: tensor<16x32x5xbf16>) -> tensor<2x16x36xf32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2x16x36xf32>
  %o = linalg.fill ins(%z : f32) outs(%e : tensor<2x16x36xf32>) -> tensor<2x16x36xf32>
  %r = linalg.conv_1d_ncw_fcw {dilations = dense<1> : vector<1xi64>, strides = dense<1> : vector<1xi64>}
       ins(%i, %w : tensor<2x32x40xbf16>, tensor<16x32x5xbf16>) outs(%o : tensor<2x16x36xf32>) -> tensor<2x16x36xf32>
  return %r : tensor<2x16x36xf32>
}
"""


def _conv(channels: int = 32, filters: int = 32, height: int = 6, width: int = 34, window: tuple = (3, 3),
          stride_h: int = 1, dilation_w: int = 1) -> str:
    kh, kw = window
    oh = (height - kh) // stride_h + 1
    ow = width - (kw - 1) * dilation_w
    text = CONV
    for key, value in (("xKHxKW", f"x{kh}x{kw}"), ("xCx", f"x{channels}x"), ("HxW", f"{height}x{width}"),
                       ("xFx", f"x{filters}x"), ("<Fx", f"<{filters}x"), ("xOHxOW", f"x{oh}x{ow}"),
                       ("DIL", str(dilation_w)), ("SH", str(stride_h))):
        text = text.replace(key, value)
    return text


def _host_has_amx() -> bool:
    from workbench.targets.cpu_host import host_machine

    return host_machine().amx


def _rewrite(text: str, amx: bool = True) -> tuple[int, str]:
    from mlir import ir

    from workbench.worker.cpu.vnni_convs import vnni_convs

    with ir.Context(), ir.Location.unknown():
        module = ir.Module.parse(text)
        n = vnni_convs(module, amx=amx)
        assert module.operation.verify()
        return n, str(module)


def test_amx_layout_packs_the_filter_pairs_after_the_window_and_pads_rows_to_tiles():
    n, text = _rewrite(_conv(channels=6, filters=16, width=52))    # rows of 50 outputs
    assert n == 1 and "lh.amx_conv" in text and "lh.vnni_conv" not in text
    assert "tensor<16x6x3x3xbf16> -> tensor<16x3x3x3x2xbf16>" in text   # F x KH x KW x C/2 x 2
    assert "outer_dims_perm = [0, 2, 3, 1]" in text
    assert "tensor<2x16x4x50xf32> to tensor<2x16x4x64xf32>" in text        # rows padded to four 16-column tiles
    assert "tensor<2x16x4x64xf32> to tensor<2x16x4x50xf32>" in text        # and sliced back
    # rows of 14: one 14-column tile fills as much of a tile as padding to 16 would: left as they are
    n, text = _rewrite(_conv(channels=6, filters=16, width=16))
    assert n == 1 and "lh.amx_conv" in text and "tensor.pad" not in text and "x16xf32>" not in text
    # output channels that are no whole tile keep the VNNI layout; without amx nothing changes
    n, text = _rewrite(_conv(channels=6, filters=8))
    assert n == 1 and "lh.vnni_conv" in text and "lh.amx_conv" not in text
    n, text = _rewrite(_conv(channels=6, filters=16), amx=False)
    assert n == 1 and "lh.vnni_conv" in text and "lh.amx_conv" not in text


def test_amx_machines_get_amx_convolution_tiles_with_carried_results(ctx, tmp_path):
    payload = tmp_path / "conv.mlir"
    payload.write_text(_conv())     # 32 -> 32 channels, 3x3, rows of 32: 2 x 2 result tiles per row step
    ok(ctx, f"load {payload}")
    try:
        ok(ctx, "target cpu --cpu sapphirerapids --threads 1")
        ok(ctx, "select --apply")
        labels = [a.step.label() for a in ctx.session.active_steps]
        assert any("lh-vnni-convs{amx=1}" in label for label in labels), labels
        assert any("conv_amx.py[gen=conv_amx_tiling]" in label for label in labels), labels
        assert any("amx-accumulators.yaml" in label for label in labels), labels
        ir = ctx.session.current_ir
        # 9 window positions x 2 x 2 result tiles of one K step (16 pairs), unrolled; the 4 result tiles
        # loaded and stored once per row step (lh-amx-tile-accumulators forwards each product's store to the
        # next product's load: without it, a load and a store per product)
        assert ir.count("amx.tile_mulf") == 36, ir.count("amx.tile_mulf")
        assert ir.count("amx.tile_store") == 4, ir.count("amx.tile_store")
        ok(ctx, "bench warmup=1 iterations=2")
        ok(ctx, "apply cpu-lower")
        assert ctx.session.current_ir.count("llvm.x86.tdpbf16ps.internal") == 36
    finally:
        ok(ctx, "target cpu --cpu host")


def test_machines_without_amx_keep_the_vdpbf16ps_convolution(ctx, tmp_path):
    payload = tmp_path / "conv.mlir"
    payload.write_text(_conv())
    ok(ctx, f"load {payload}")
    try:
        ok(ctx, "target cpu --cpu zen4 --threads 1")    # AVX512-BF16 without AMX
        ok(ctx, "select --apply")
        labels = " ".join(a.step.label() for a in ctx.session.active_steps)
        assert "lh-vnni-convs" in labels and "amx=1" not in labels and "conv_vnni.py" in labels, labels
    finally:
        ok(ctx, "target cpu --cpu host")


def test_amx_convolutions_split_images_then_rows_over_the_cores(ctx, tmp_path):
    payload = tmp_path / "conv.mlir"
    payload.write_text(_conv(height=30))    # 2 images of 28 output rows
    ok(ctx, f"load {payload}")
    try:
        ok(ctx, "target cpu --cpu sapphirerapids --threads 16")
        ok(ctx, "select --apply")
        (params,) = [a.step.params for a in ctx.session.active_steps if "conv_amx.py" in a.step.label()]
        # both images, each in 8 blocks of rows: 16 tasks (the output channels split would leave no whole tile)
        assert (params["batch_threads"], params["split"], params["threads"]) == (2, 2, 8), params
        assert "scf.forall" in ctx.session.current_ir or "omp.parallel" in ctx.session.current_ir
    finally:
        ok(ctx, "target cpu --cpu host --threads 1")


def _library():
    spec = importlib.util.spec_from_file_location("conv_amx_test", REPO / "pipelines" / "cpu" / "conv_amx.py")
    import sys

    sys.path.insert(0, str(REPO / "pipelines" / "cpu"))
    try:
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(REPO / "pipelines" / "cpu"))
    return module


def test_amx_rows_are_padded_only_where_whole_tiles_fill_better_than_a_divisor():
    from workbench.worker.cpu.vnni_convs import amx_row_padding

    assert [amx_row_padding(w) for w in (16, 32, 56, 28, 14, 7, 13, 112)] == [16, 32, 56, 28, 14, 7, 13, 112]
    assert [amx_row_padding(w) for w in (50, 34, 17, 100)] == [64, 48, 32, 112]


def test_conv_amx_params_fit_the_tiles_and_bad_ones_are_refused():
    amx = _library()
    params = amx.default_params(64, 64, 32, [3, 3])
    assert params == dict(tile_f=16, tile_w=16, tile_k=16, tiles_f=2, tiles_w=2, window=[3, 3], threads=1, split=0,
                          batch_threads=1)
    params = amx.default_params(64, 56, 32, [3, 3])      # rows of 56: 2 x 14-column tiles
    assert (params["tile_w"], params["tiles_w"]) == (14, 2)
    params = amx.default_params(16, 16, 3, [1, 5])       # one tile of each; 3 pairs in one product
    assert (params["tiles_f"], params["tiles_w"], params["tile_k"]) == (1, 1, 3)
    for bad in (dict(tile_f=32), dict(tile_k=17), dict(tiles_w=3), dict(window=[3]), dict(split=4), dict(op="")):
        with pytest.raises(ValueError):
            amx.conv_amx_tiling(**{"op": "generic_0", **bad})


@pytest.mark.skipif(not _host_has_amx(), reason="needs an AMX host (amx_tile in /proc/cpuinfo)")
@pytest.mark.parametrize("text", [_conv(), _conv(channels=6, filters=16, width=16),
                                  _conv(channels=32, filters=48, height=9, width=40, stride_h=2, dilation_w=2),
                                  _conv(channels=8, filters=32, height=5, width=52),
                                  _conv(channels=64, filters=16, window=(1, 3), width=20), CONV1D],
                         ids=["3x3", "odd_pairs_short_rows", "strided_dilated", "padded_rows", "window_1x3", "conv1d"])
@pytest.mark.parametrize("threads", [1, 4])
def test_amx_convolutions_run_and_match(ctx, tmp_path, text, threads):
    payload = tmp_path / "conv.mlir"
    payload.write_text(text)
    ok(ctx, f"load {payload}")
    ok(ctx, f"target cpu --threads {threads}")
    ok(ctx, "select --apply")
    assert any("conv_amx.py" in a.step.label() for a in ctx.session.active_steps)
    ok(ctx, "bench warmup=1 iterations=2")
    ok(ctx, "apply cpu-lower")
    run = ok(ctx, "run --check --iterations 1 --warmup 0").data["run"]
    assert run["check"]["passed"], run
