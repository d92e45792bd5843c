"""lh-pointwise-convs: 1x1 (x1) unit-stride channels-first convolutions as 1-D convolutions over the collapsed
plane (vectors along all of it); others left as they are; the selector path runs them and matches torch."""
from __future__ import annotations

import pytest

from conftest import FIXTURES, fixture_io_flags, ok

TORCH = FIXTURES / "torch"

CONV2D = """func.func @main(%i: tensor<2x16x6x10xf32>, %w: tensor<8x16xKx1xf32>) -> tensor<2x8xOHx10xf32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2x8xOHx10xf32>
  %o = linalg.fill ins(%z : f32) outs(%e : tensor<2x8xOHx10xf32>) -> tensor<2x8xOHx10xf32>
  %r = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<[1, S]> : vector<2xi64>}
       ins(%i, %w : tensor<2x16x6x10xf32>, tensor<8x16xKx1xf32>) outs(%o : tensor<2x8xOHx10xf32>) -> tensor<2x8xOHx10xf32>
  return %r : tensor<2x8xOHx10xf32>
}
"""

CONV3D = """func.func @main(%i: tensor<1x4x3x5x6xf32>, %w: tensor<8x4x1x1x1xf32>) -> tensor<1x8x3x5x6xf32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x8x3x5x6xf32>
  %o = linalg.fill ins(%z : f32) outs(%e : tensor<1x8x3x5x6xf32>) -> tensor<1x8x3x5x6xf32>
  %r = linalg.conv_3d_ncdhw_fcdhw {dilations = dense<1> : vector<3xi64>, strides = dense<1> : vector<3xi64>}
       ins(%i, %w : tensor<1x4x3x5x6xf32>, tensor<8x4x1x1x1xf32>) outs(%o : tensor<1x8x3x5x6xf32>) -> tensor<1x8x3x5x6xf32>
  return %r : tensor<1x8x3x5x6xf32>
}
"""


def _conv2d(kh: int = 1) -> str:
    return CONV2D.replace("xKx", f"x{kh}x").replace("xOHx", f"x{6 - kh + 1}x").replace("S]", "1]")


def _rewrite(text: str) -> tuple[int, str]:
    from mlir import ir

    from workbench.worker.cpu.pointwise_convs import pointwise_convs

    with ir.Context(), ir.Location.unknown():
        module = ir.Module.parse(text)
        n = pointwise_convs(module)
        assert module.operation.verify()
        return n, str(module)


def test_pointwise_convs_become_1d_over_the_plane():
    n, text = _rewrite(_conv2d())
    assert n == 1 and "linalg.conv_2d_nchw_fchw" not in text and "linalg.conv_1d_ncw_fcw" in text
    assert "tensor<2x16x6x10xf32> into tensor<2x16x60xf32>" in text and "tensor<8x16x1xf32>" in text
    assert "tensor.expand_shape" in text and "tensor<2x8x6x10xf32>" in text
    # one f32 image: the matmul W x I over the collapsed plane (tests/test_models_round13.py)
    n, text = _rewrite(CONV3D)
    assert n == 1 and "linalg.conv_1d_ncw_fcw" not in text
    assert "linalg.matmul ins(%collapsed_0, %collapsed : tensor<8x4xf32>, tensor<4x90xf32>)" in text
    assert "tensor<90x1xf32>" not in text and "tensor<8x90xf32> into tensor<1x8x3x5x6xf32>" in text
    # bf16 (the VNNI convolution path takes the 1-D form) stays a 1-D convolution
    n, text = _rewrite(CONV3D.replace("f32", "bf16").replace("0.0 : bf16", "0.0 : bf16"))
    assert n == 1 and "linalg.conv_1d_ncw_fcw" in text and "tensor<1x4x90xbf16>" in text


def test_windows_and_strides_are_left():
    for text in (_conv2d(kh=3), CONV2D.replace("xKx", "x1x").replace("xOHx", "x6x").replace("S]", "2]")
                 .replace("2x8x6x10xf32", "2x8x6x5xf32")):
        n, out = _rewrite(text)
        assert n == 0 and "linalg.conv_2d_nchw_fchw" in out


@pytest.mark.parametrize("payload", ["conv2d", "conv3d"])
def test_pointwise_conv_selector_path_matches(ctx, tmp_path, payload):
    path = tmp_path / f"{payload}.mlir"
    path.write_text(_conv2d() if payload == "conv2d" else CONV3D)
    ok(ctx, f"load {path}")
    ok(ctx, "select --apply")
    labels = " ".join(a.step.label() for a in ctx.session.active_steps)
    assert "lh-pointwise-convs" in labels, labels
    ok(ctx, "bench warmup=1 iterations=2")
    ok(ctx, "apply cpu-lower")
    assert ok(ctx, "run --check --iterations 1 --warmup 0").data["run"]["check"]["passed"]


@pytest.mark.parametrize("cpu", ["host", "avx2"])
def test_conv2d_1x1_fixture_matches_torch(ctx, cpu):
    fixture = TORCH / "conv2d_1x1.mlir"
    ok(ctx, f"load {fixture}")
    try:
        ok(ctx, f"target cpu --cpu {cpu}")
        ok(ctx, "select --apply")
        assert "lh-pointwise-convs" in " ".join(a.step.label() for a in ctx.session.active_steps)
        ok(ctx, "bench warmup=1 iterations=2")
        ok(ctx, "apply cpu-lower")
        if cpu == "host":
            run = ok(ctx, f"run --check --iterations 1 --warmup 0 {fixture_io_flags(fixture)}").data["run"]
            assert run["check"]["passed"] and run["expected_check"]["passed"], run
    finally:
        ok(ctx, "target cpu --cpu host")
