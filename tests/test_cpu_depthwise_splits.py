"""Thread splits of depthwise convolutions (window ops without input channels): along the channels (no halo:
each chunk reads only its own channels' planes) where the batch is short of the cores, not along the output
rows (each chunk then also reads its neighbours' rows, and 56 rows on 16 cores left 14 chunks); checked on more
tasks than this host has cores (cpu_selector._split_without_halo)."""
from __future__ import annotations

import dataclasses

import pytest

from conftest import ok


def _depthwise(n: int, c: int, h: int, pad: int, k: int = 3) -> str:
    hp, out = h + 2 * pad, h + 2 * pad - k + 1
    return f"""func.func @main(%x: tensor<{n}x{c}x{h}x{h}xf32>, %w: tensor<{c}x{k}x{k}xf32>, %b: tensor<{c}xf32>) -> tensor<{n}x{c}x{out}x{out}xf32> {{
  %z = arith.constant 0.0 : f32
  %p = tensor.pad %x low[0, 0, {pad}, {pad}] high[0, 0, {pad}, {pad}] {{
  ^bb0(%i0: index, %i1: index, %i2: index, %i3: index):
    tensor.yield %z : f32
  }} : tensor<{n}x{c}x{h}x{h}xf32> to tensor<{n}x{c}x{hp}x{hp}xf32>
  %e = tensor.empty() : tensor<{n}x{c}x{out}x{out}xf32>
  %bb = linalg.broadcast ins(%b : tensor<{c}xf32>) outs(%e : tensor<{n}x{c}x{out}x{out}xf32>) dimensions = [0, 2, 3]
  %r = linalg.depthwise_conv_2d_nchw_chw {{dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>}}
       ins(%p, %w : tensor<{n}x{c}x{hp}x{hp}xf32>, tensor<{c}x{k}x{k}xf32>) outs(%bb : tensor<{n}x{c}x{out}x{out}xf32>) -> tensor<{n}x{c}x{out}x{out}xf32>
  return %r : tensor<{n}x{c}x{out}x{out}xf32>
}}
"""


def _depthwise_op(ctx, tmp_path, text: str) -> dict:
    payload = tmp_path / "dw.mlir"
    payload.write_text(text)
    ok(ctx, f"load {payload}")
    op = next(o for o in ok(ctx, "inspect").data["inspect"]["ops"] if o["op"] == "linalg.depthwise_conv_2d_nchw_chw")
    return {**op, "id": "depthwise_0"}


def test_a_depthwise_conv_splits_its_channels_not_its_rows(ctx, tmp_path):
    from workbench.targets.cpu_selector import generic_params

    # the bench fixture's shape at a smaller plane: 8 images, 128 channels, 20 output rows (16 cores: the rows
    # gave 10 chunks of 2, each reading 4 input rows)
    op = _depthwise_op(ctx, tmp_path, _depthwise(8, 128, 20, 1))
    p = generic_params(op, 512, 16)
    loops = op["loops"]
    assert loops["iterators"][p["split"]] == "parallel"
    assert loops["domain"][p["split"]] == 128 and p["threads"] == 16, p      # the channels: 16 chunks of 8
    assert p["tile"][p["split"]] == 4                                         # the register tile kept
    # 8 cores: the batch covers them (no halo either): kept
    eight = generic_params(op, 512, 8)
    assert eight["split"] == 0 and eight["threads"] == 8, eight


def test_fewer_channel_chunks_than_row_chunks_keep_the_rows(ctx, tmp_path):
    from workbench.targets.cpu_selector import generic_params

    # 8 channels on 16 cores: 8 chunks, fewer than the rows' 10: the rows stay split
    op = _depthwise_op(ctx, tmp_path, _depthwise(2, 8, 20, 1))
    p = generic_params(op, 512, 16)
    assert op["loops"]["domain"][p["split"]] == 20 and p["threads"] == 10, p


@pytest.mark.parametrize("n,c,h,pad,threads", [(2, 32, 20, 1, 8), (2, 24, 15, 1, 6), (3, 64, 22, 0, 16),
                                               (1, 64, 16, 2, 16)])
def test_channel_split_depthwise_convs_run_and_match(ctx, tmp_path, monkeypatch, n, c, h, pad, threads):
    import workbench.targets.cpu as cpu
    from workbench.targets import cpu_selector

    machine = dataclasses.replace(cpu.host_machine(), usable_cpus=threads)
    monkeypatch.setattr(cpu, "host_machine", lambda: machine)
    monkeypatch.setattr(cpu_selector, "MIN_PARALLEL_WORK", 0)
    payload = tmp_path / "dw.mlir"
    payload.write_text(_depthwise(n, c, h, pad))
    ok(ctx, f"load {payload}")
    selections = ok(ctx, "select --apply").data["selections"]
    conv = next(e["params"] for e in selections if "depthwise" in str(e["params"].get("op", "")))
    assert conv["split"] == 3 and conv["threads"] > 1, conv    # the channel loop (n, oh, ow, c, kh, kw)
    ok(ctx, "bench warmup=1 iterations=2")
    ok(ctx, "apply cpu-lower")
    assert ok(ctx, "run --check --iterations 1 --warmup 0").data["run"]["check"]["passed"]
