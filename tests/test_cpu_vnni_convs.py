"""bf16 convolutions on machines with AVX512-BF16: lh-vnni-convs (input and filter packed in input-channel
pairs), the VNNI convolution schedule (pipelines/cpu/conv_vnni.py: x86vector.avx512.dot, i.e. vdpbf16ps)
chosen from the machine model, and the f32 window path kept for machines without the bf16 dot product."""
from __future__ import annotations

import pytest

from conftest import FIXTURES, fixture_io_flags, ok

TORCH = FIXTURES / "torch"
DPBF16 = "llvm.x86.avx512bf16.dpbf16ps"

CONV = """func.func @main(%i: tensor<2xCx12x20xbf16>, %w: tensor<8xCx3x3xbf16>) -> tensor<2x8xOHxOWxf32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2x8xOHxOWxf32>
  %o = linalg.fill ins(%z : f32) outs(%e : tensor<2x8xOHxOWxf32>) -> tensor<2x8xOHxOWxf32>
  %r = linalg.conv_2d_nchw_fchw {dilations = dense<[1, DIL]> : vector<2xi64>, strides = dense<[SH, 1]> : vector<2xi64>}
       ins(%i, %w : tensor<2xCx12x20xbf16>, tensor<8xCx3x3xbf16>) outs(%o : tensor<2x8xOHxOWxf32>) -> tensor<2x8xOHxOWxf32>
  return %r : tensor<2x8xOHxOWxf32>
}
"""


def _conv(channels: int, stride_h: int = 1, dilation_w: int = 1, width: int = 18) -> str:
    oh = (12 - 3) // stride_h + 1
    ow = width - 2 * dilation_w
    return (CONV.replace("xCx", f"x{channels}x").replace("xOHx", f"x{oh}x").replace("xOW", f"x{ow}")
            .replace("12x20", f"12x{width}")
            .replace("DIL", str(dilation_w)).replace("SH", str(stride_h)))


def _host_has_bf16_dot() -> bool:
    from workbench.targets.cpu_host import host_machine

    return host_machine().bf16_dot_product


def _rewrite(text: str) -> tuple[int, str]:
    from mlir import ir

    from workbench.worker.cpu.vnni_convs import vnni_convs

    with ir.Context(), ir.Location.unknown():
        module = ir.Module.parse(text)
        n = vnni_convs(module)
        assert module.operation.verify()
        return n, str(module)


def test_vnni_conv_rewrite_packs_channel_pairs():
    n, text = _rewrite(_conv(6, stride_h=2, dilation_w=2, width=20))
    assert n == 1 and "linalg.conv_2d_nchw_fchw" not in text and "lh.vnni_conv" in text
    assert "tensor<2x6x12x20xbf16> -> tensor<2x3x12x20x2xbf16>" in text   # N x C/2 x H x W x 2
    assert "tensor<8x6x3x3xbf16> -> tensor<8x3x3x3x2xbf16>" in text       # F x C/2 x KH x KW x 2
    assert "d2 * 2 + d5" in text and "d3 + d6 * 2" in text                # the stride and dilation kept
    # an odd channel count: a zero channel padded on first
    n, text = _rewrite(_conv(3))
    assert n == 1 and "tensor.pad" in text and "tensor<2x4x12x18xbf16> -> tensor<2x2x12x18x2xbf16>" in text


def test_vnni_conv_rewrite_pads_rows_to_whole_tiles():
    # rows of 18 outputs (3x3, width 20): computed as 24 (the input widened to 26 with zeros), sliced back
    n, text = _rewrite(_conv(6, width=20))
    assert n == 1 and "tensor<2x6x12x20xbf16> to tensor<2x6x12x26xbf16>" in text
    assert "tensor<2x8x10x18xf32> to tensor<2x8x10x24xf32>" in text
    assert "tensor<2x8x10x24xf32> to tensor<2x8x10x18xf32>" in text   # the extra outputs sliced off
    n, text = _rewrite(_conv(6))   # rows of 16: as they are
    assert n == 1 and "x24xf32" not in text and "to tensor<2x6x12x" not in text


def test_vnni_conv_rewrite_leaves_f32_and_single_pair_convs():
    f32 = _conv(6).replace("bf16", "f32")
    n, text = _rewrite(f32)
    assert n == 0 and "linalg.conv_2d_nchw_fchw" in text
    n, text = _rewrite(_conv(2))             # one channel pair
    assert n == 0 and "linalg.conv_2d_nchw_fchw" in text
    strided_w = _conv(6).replace("dense<[1, 1]> : vector<2xi64>}", "dense<[1, 2]> : vector<2xi64>}").replace(
        "x16xf32>", "x8xf32>")                 # a stride along w: the input pairs of a run are not contiguous
    n, text = _rewrite(strided_w)
    assert n == 0 and "linalg.conv_2d_nchw_fchw" in text


@pytest.mark.parametrize("case", [dict(channels=6), dict(channels=3, stride_h=2, dilation_w=2, width=20),
                                  dict(channels=4, width=50), dict(channels=5, width=13)])
def test_vnni_conv_schedule_runs_and_matches(ctx, tmp_path, case):
    if not _host_has_bf16_dot():
        pytest.skip("this host has no AVX512-BF16")
    payload = tmp_path / "conv_bf16.mlir"
    payload.write_text(_conv(**case))
    ok(ctx, f"load {payload}")
    ok(ctx, "select --apply")
    labels = " ".join(a.step.label() for a in ctx.session.active_steps)
    assert "lh-vnni-convs" in labels and "conv_vnni.py[gen=conv_vnni_tiling]" in labels, labels
    ok(ctx, "bench warmup=1 iterations=2")
    ok(ctx, "apply cpu-lower")
    assert DPBF16 in ctx.session.current_ir
    run = ok(ctx, "run --check --iterations 1 --warmup 0").data["run"]
    assert run["check"]["passed"], run


def test_vnni_conv_fixture_matches_torch(ctx):
    if not _host_has_bf16_dot():
        pytest.skip("this host has no AVX512-BF16")
    fixture = TORCH / "conv2d_bf16.mlir"
    ok(ctx, f"load {fixture}")
    ok(ctx, "select --apply")
    ok(ctx, "bench warmup=1 iterations=2")
    ok(ctx, "apply cpu-lower")
    assert DPBF16 in ctx.session.current_ir
    run = ok(ctx, f"run --check --iterations 1 --warmup 0 {fixture_io_flags(fixture)}").data["run"]
    assert run["check"]["passed"] and run["expected_check"]["passed"], run


def test_avx2_override_keeps_the_f32_window_path(ctx):
    ok(ctx, f"load {TORCH / 'conv2d_bf16.mlir'}")
    try:
        ok(ctx, "target cpu --cpu avx2")
        ok(ctx, "select --apply")
        labels = " ".join(a.step.label() for a in ctx.session.active_steps)
        assert "lh-vnni-convs" not in labels and "conv_vnni" not in labels
        assert "x86vector" not in ctx.session.current_ir
        ok(ctx, "bench warmup=1 iterations=2")
        ok(ctx, "apply cpu-lower")
        assert DPBF16 not in ctx.session.current_ir
    finally:
        ok(ctx, "target cpu --cpu host")


def test_conv_vnni_default_params_fit_the_shape():
    import importlib.util
    from pathlib import Path

    spec = importlib.util.spec_from_file_location("conv_vnni", Path(__file__).parents[1] / "pipelines/cpu/conv_vnni.py")
    conv_vnni = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(conv_vnni)
    p = conv_vnni.default_params(64, 56, 32)
    assert 56 % p["tile_w"] == 0 and p["tile_w"] in (8, 16) and 64 % p["tile_f"] == 0 and 32 % p["tile_c"] == 0
    assert conv_vnni.default_params(8, 16, 3)["tile_c"] == 3   # (one pair per tile would fold away: no dot)
    assert conv_vnni.default_params(8, 16, 6)["tile_c"] == 2
    with pytest.raises(ValueError):
        conv_vnni.default_params(8, 18, 3)   # no tile of 4, 8 or 16 lanes divides 18
    with pytest.raises(ValueError):
        conv_vnni.conv_vnni_tiling(op="generic_1", tile_w=12)


POINTWISE_BF16 = """func.func @main(%i: tensor<2x6x4x6xbf16>, %w: tensor<8x6x1x1xbf16>) -> tensor<2x8x4x6xf32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2x8x4x6xf32>
  %o = linalg.fill ins(%z : f32) outs(%e : tensor<2x8x4x6xf32>) -> tensor<2x8x4x6xf32>
  %r = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>}
       ins(%i, %w : tensor<2x6x4x6xbf16>, tensor<8x6x1x1xbf16>) outs(%o : tensor<2x8x4x6xf32>) -> tensor<2x8x4x6xf32>
  return %r : tensor<2x8x4x6xf32>
}
"""


def test_pointwise_bf16_conv_takes_the_vnni_path_over_the_plane(ctx, tmp_path):
    """A 1x1 bf16 convolution: rows of 6 (no 4-lane tile) but a plane of 24 once lh-pointwise-convs made it
    1-D, which lh-vnni-convs views with a unit height."""
    if not _host_has_bf16_dot():
        pytest.skip("this host has no AVX512-BF16")
    payload = tmp_path / "pointwise_bf16.mlir"
    payload.write_text(POINTWISE_BF16)
    ok(ctx, f"load {payload}")
    ok(ctx, "select --apply")
    labels = [a.step.label() for a in ctx.session.active_steps]
    vnni = next(i for i, label in enumerate(labels) if label.startswith("lh-vnni-convs"))   # ({amx=1} on AMX hosts)
    assert labels.index("lh-pointwise-convs") < vnni, labels
    assert any("conv_vnni.py[gen=conv_vnni_tiling]" in label for label in labels), labels
    ok(ctx, "bench warmup=1 iterations=2")
    ok(ctx, "apply cpu-lower")
    assert DPBF16 in ctx.session.current_ir
    assert ok(ctx, "run --check --iterations 1 --warmup 0").data["run"]["check"]["passed"]
