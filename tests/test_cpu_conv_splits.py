"""Thread splits of convolutions whose batch is smaller than the cores: batch x output channels (a 2-D
forall, `split_also`), so that each task reads its batch's share of the input and keeps a whole channel
block for its register tile; checked on more tasks than this host has cores."""
from __future__ import annotations

import pytest

from conftest import ok

CONV = """func.func @main(%i: tensor<2x8x18x18xf32>, %w: tensor<32x8x3x3xf32>, %b: tensor<2x32xOxOxf32>) -> tensor<2x32xOxOxf32> {
  %r = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<S> : vector<2xi64>}
       ins(%i, %w : tensor<2x8x18x18xf32>, tensor<32x8x3x3xf32>) outs(%b : tensor<2x32xOxOxf32>) -> tensor<2x32xOxOxf32>
  return %r : tensor<2x32xOxOxf32>
}
"""


def _conv(stride: int) -> str:
    out = (18 - 3) // stride + 1
    return CONV.replace("xOxOx", f"x{out}x{out}x").replace("dense<S>", f"dense<{stride}>")


def test_batch_and_channels_split_when_the_batch_is_short_of_the_cores(ctx, tmp_path):
    from workbench.targets.cpu_selector import generic_params

    payload = tmp_path / "conv.mlir"
    payload.write_text(_conv(1))
    ok(ctx, f"load {payload}")
    op = next(o for o in ok(ctx, "inspect").data["inspect"]["ops"] if o["op"] == "linalg.conv_2d_nchw_fchw")
    op = {**op, "id": "conv_0"}
    p = generic_params(op, 512, 8)
    assert p["split_also"] == [0, 2] and p["split"] == 1 and p["threads"] == 4, p   # 2 x 4 tasks
    assert p["tile"][1] == 8            # a whole 8-channel block per task (32 / 4; 32 / 8 would leave 4)
    one = generic_params(op, 512, 2)    # the batch alone covers 2 cores: no second split
    assert "split_also" not in one and one["split"] == 0 and one["threads"] == 2, one


@pytest.mark.parametrize("stride", [1, 2])
def test_split_convolutions_run_and_match(ctx, tmp_path, monkeypatch, stride):
    from workbench.targets.cpu import CpuTarget

    # (the strided one as a named convolution: the decomposed path, which the strided convolutions that
    # lh-strided-conv-planes leaves take; its phases split as unit-stride convolutions do)
    monkeypatch.setattr(CpuTarget, "strided_conv_planes", False)
    payload = tmp_path / "conv.mlir"
    payload.write_text(_conv(stride))
    ok(ctx, f"load {payload}")
    try:
        ok(ctx, "target cpu --threads 8")
        selections = ok(ctx, "select --apply").data["selections"]
        conv = next(e["params"] for e in selections if "conv_" in str(e["params"].get("op", "")))
        assert conv.get("split_also") == [0, 2], conv
        ok(ctx, "bench warmup=1 iterations=2")
        ok(ctx, "apply cpu-lower")
        assert ok(ctx, "run --check --iterations 1 --warmup 0").data["run"]["check"]["passed"]
    finally:
        ok(ctx, "target cpu --threads 0")


def test_a_batch_of_one_keeps_the_single_split(ctx, monkeypatch, tmp_path):
    """ResNet's 7x7 stride-2 stem at batch 1 on 16 cores: the outer parallel loop is then the output
    channels, which the window tile blocks; splitting them too broke the vectorization ("Attempted to
    vectorize, but failed" on the 16-core host). Only a loop the tile leaves at 1 (the batch) is split too.
    (32 output channels: a stem's output larger than its input keeps lh-strided-conv-planes' named convolutions.)"""
    import dataclasses

    import workbench.targets.cpu as cpu
    from workbench.targets import cpu_selector

    machine = dataclasses.replace(cpu.host_machine(), usable_cpus=16)
    monkeypatch.setattr(cpu, "host_machine", lambda: machine)
    monkeypatch.setattr(cpu_selector, "MIN_PARALLEL_WORK", 0)
    payload = tmp_path / "stem.mlir"
    payload.write_text("""func.func @main(%i: tensor<1x3x38x38xf32>, %w: tensor<32x3x7x7xf32>, %b: tensor<1x32x16x16xf32>) -> tensor<1x32x16x16xf32> {
  %r = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<2> : vector<2xi64>}
       ins(%i, %w : tensor<1x3x38x38xf32>, tensor<32x3x7x7xf32>) outs(%b : tensor<1x32x16x16xf32>) -> tensor<1x32x16x16xf32>
  return %r : tensor<1x32x16x16xf32>
}
""")
    ok(ctx, f"load {payload}")
    selections = ok(ctx, "select --apply").data["selections"]
    conv = next(e["params"] for e in selections if "conv_" in str(e["params"].get("op", "")))
    assert conv.get("split_also", [0])[0] == 0 or "split_also" not in conv, conv
    ok(ctx, "bench warmup=1 iterations=2")
    ok(ctx, "apply cpu-lower")
    assert ok(ctx, "run --check --iterations 1 --warmup 0").data["run"]["check"]["passed"]
