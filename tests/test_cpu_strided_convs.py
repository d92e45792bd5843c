"""lh-strided-convs: channels-first convolutions with a stride along w become unit-stride ones (the input's
phases as channels, or one convolution per phase); the selector path after it runs them and matches the
unscheduled payload. (Not among the selector's preparation steps: on conv2d_strided it measured even with
the decomposed path, 4/3 of the multiply-adds and a transpose against exact work at 53 GFLOP/s.)"""
from __future__ import annotations

import re

import pytest

from conftest import ok

CONV2D = """func.func @main(%i: tensor<2x4x9xINxf32>, %w: tensor<8x4x3xKxf32>, %b: tensor<2x8x4xOUTxf32>) -> tensor<2x8x4xOUTxf32> {
  %r = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<[2, S]> : vector<2xi64>}
       ins(%i, %w : tensor<2x4x9xINxf32>, tensor<8x4x3xKxf32>) outs(%b : tensor<2x8x4xOUTxf32>) -> tensor<2x8x4xOUTxf32>
  return %r : tensor<2x8x4xOUTxf32>
}
"""

CONV1D = """func.func @main(%i: tensor<2x6xINxf32>, %w: tensor<16x6xKxf32>, %b: tensor<2x16xOUTxf32>) -> tensor<2x16xOUTxf32> {
  %r = linalg.conv_1d_ncw_fcw {dilations = dense<1> : vector<1xi64>, strides = dense<S> : vector<1xi64>}
       ins(%i, %w : tensor<2x6xINxf32>, tensor<16x6xKxf32>) outs(%b : tensor<2x16xOUTxf32>) -> tensor<2x16xOUTxf32>
  return %r : tensor<2x16xOUTxf32>
}
"""

GROUPED = """func.func @main(%i: tensor<2x2x4x9xINxf32>, %w: tensor<2x8x4x3xKxf32>, %b: tensor<2x2x8x4xOUTxf32>) -> tensor<2x2x8x4xOUTxf32> {
  %r = linalg.conv_2d_ngchw_gfchw {dilations = dense<1> : vector<2xi64>, strides = dense<[2, S]> : vector<2xi64>}
       ins(%i, %w : tensor<2x2x4x9xINxf32>, tensor<2x8x4x3xKxf32>) outs(%b : tensor<2x2x8x4xOUTxf32>) -> tensor<2x2x8x4xOUTxf32>
  return %r : tensor<2x2x8x4xOUTxf32>
}
"""


def _payload(template: str, width: int, taps: int, stride: int) -> str:
    out = (width - taps) // stride + 1
    return (template.replace("xINx", f"x{width}x").replace("xKx", f"x{taps}x").replace("xOUTx", f"x{out}x")
            .replace("S]", f"{stride}]").replace("<S>", f"<{stride}>"))


def _rewrite(text: str, max_rank: int = 3) -> tuple[int, str]:
    from mlir import ir

    from workbench.worker.cpu.strided_convs import strided_convs

    with ir.Context(), ir.Location.unknown():
        module = ir.Module.parse(text)
        n = strided_convs(module, max_rank)
        assert module.operation.verify()
        return n, str(module)


def _convs(text: str) -> list[str]:
    return [line for line in text.splitlines() if re.search(r"linalg\.conv_", line)]


def test_a_stride_along_w_becomes_phases_as_channels():
    """3 taps, stride 2 (4 taps over 2 phases: 4/3 of the work): one unit-stride convolution over twice the
    input channels, each a phase of half the row (+1 zero column for the odd width)."""
    n, text = _rewrite(_payload(CONV2D, 33, 3, 2))   # 16 outputs
    assert n == 1
    (conv,) = _convs(text)
    assert "strides = dense<[2, 1]>" in conv
    assert "tensor<2x8x9x17xf32>, tensor<8x8x3x2xf32>" in conv   # 33 -> 34 = 17 x 2, taps 3 -> 2 x 2
    assert "linalg.transpose" in text


def test_phases_that_would_add_work_are_convolutions_of_their_own():
    """5 taps, stride 2: 6/5 of the work as channels; a 1x1 stride 3 (3x the work as channels) reads its one
    phase only; a grouped convolution (channels not dim 1) one convolution per phase."""
    n, text = _rewrite(_payload(CONV2D, 33, 5, 2))
    assert n == 1 and len(_convs(text)) == 1   # (within MAX_EXTRA_WORK)
    n, text = _rewrite(_payload(CONV2D, 31, 1, 3))
    (conv,) = _convs(text)
    assert n == 1 and "strides = dense<[2, 1]>" in conv and "tensor<8x4x3x1xf32>" in conv
    n, text = _rewrite(_payload(GROUPED, 33, 3, 2))
    convs = _convs(text)
    assert n == 1 and len(convs) == 2 and all("strides = dense<[2, 1]>" in c for c in convs)
    assert "tensor<2x8x4x3x2xf32>" in convs[0] and "tensor<2x8x4x3x1xf32>" in convs[1]   # taps 0, 2 and 1


def test_unit_strides_along_w_are_left():
    n, text = _rewrite(_payload(CONV2D, 33, 3, 1))
    assert n == 0 and "linalg.transpose" not in text


@pytest.mark.parametrize("template,width,taps,stride", [
    (CONV2D, 67, 3, 2), (CONV2D, 70, 7, 2), (CONV2D, 31, 1, 3), (CONV1D, 131, 3, 2), (GROUPED, 65, 3, 2),
])
def test_strided_convs_run_and_match(ctx, tmp_path, template, width, taps, stride):
    payload = tmp_path / "strided.mlir"
    payload.write_text(_payload(template, width, taps, stride))
    ok(ctx, f"load {payload}")
    ok(ctx, "pass lh-strided-convs")
    assert "linalg.transpose" in ctx.session.current_ir
    ok(ctx, "select --apply")
    ok(ctx, "bench warmup=1 iterations=2")
    ok(ctx, "apply cpu-lower")
    assert ok(ctx, "run --check --iterations 1 --warmup 0").data["run"]["check"]["passed"]


def test_the_selector_takes_strided_1d_convs_through_the_phases(ctx, tmp_path):
    # 1-D: no decomposed path, so `select` rewrites it first; 2-D keeps the window schedule's decomposed path
    for template, expected in ((CONV1D, True), (CONV2D, False)):
        payload = tmp_path / "strided.mlir"
        payload.write_text(_payload(template, 67, 3, 2))
        ok(ctx, f"load {payload}")
        ok(ctx, "target cpu --threads 1")
        ok(ctx, "select --apply")
        labels = [a.step.label() for a in ctx.session.active_steps]
        assert any("lh-strided-convs{max-rank=1}" in label for label in labels) == expected, labels
        ok(ctx, "bench warmup=1 iterations=2")
        ok(ctx, "apply cpu-lower")
        assert ok(ctx, "run --check --iterations 1 --warmup 0").data["run"]["check"]["passed"]


def test_max_rank_limits_the_rewrite():
    n1, _ = _rewrite(_payload(CONV2D, 67, 3, 2), max_rank=1)
    n2, _ = _rewrite(_payload(CONV2D, 67, 3, 2), max_rank=2)
    assert (n1, n2) == (0, 1)
