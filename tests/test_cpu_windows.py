"""Window ops (convolutions, pooling) on the CPU selector path (issue 13): classified by their loop
structure (an input indexed by sums of loops), tiled so that every loop but the vector ones is a unit
loop, folded to a matmul or elementwise tile and vectorized; each runs and matches the unscheduled
payload and torch's outputs (the fixtures' sidecars)."""
from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from conftest import FIXTURES, do, ok

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
from _common import conv_payload  # noqa: E402  (bench/_common.py: torch-mlir's conv forms)

TORCH = FIXTURES / "torch"
WINDOW_FIXTURES = ["conv1d", "conv2d_3x3", "conv2d_1x1", "conv2d_strided", "conv2d_depthwise",
                   "conv2d_grouped_dilated", "conv3d", "conv_transpose2d", "max_pool2d_3x3_s2", "avg_pool2d",
                   "max_pool1d"]
VECTOR_MATH = ("vector.fma", "vector.outerproduct", "vector.reduction", "arith.maximumf", "arith.addf")


def _windows(info: dict) -> list[dict]:
    return [o for o in info["ops"] if o.get("loops") and not o["loops"]["projected"]]


@pytest.mark.parametrize("name", WINDOW_FIXTURES)
def test_window_op_is_vectorized_and_matches_torch(ctx, name):
    ok(ctx, f"load {TORCH / (name + '.mlir')}")
    info = ctx.session.inspect()
    windows = _windows(info)
    assert windows, "the fixture has a convolution or pooling op"
    res = ok(ctx, "select --apply")
    selections = res.data["selections"]
    # (the window ops of the prepared IR: a transposed convolution is one convolution per output phase)
    windows = _windows(ctx.session.inspect(len(res.data["prepared"])))
    chosen = {i: e["params"] for e in selections
              for i in (e["params"].get("op") if isinstance(e["params"].get("op"), list) else [e["params"].get("op")])}
    for op in windows:
        p = chosen[op["id"]]
        assert p["vector"] == 1 and (p.get("fold_unit_dims") or p.get("decompose")), (op["id"], p)
        domain = op["loops"]["domain"]
        chunk = [d // p["threads"] if i == p["split"] and p["threads"] > 1 else d for i, d in enumerate(domain)]
        # every tile divides its loop (its thread chunk), or the loop is split into whole tiles and one
        # tile of the rest: the folded tiles have static sizes
        if p.get("remainder"):
            dim, at, size = p["remainder"]
            # (a rest of one column takes the last whole tile with it: no matrix-vector tile)
            assert at % p["tile"][dim] == 0 and at + size == chunk[dim] and 0 < size <= p["tile"][dim] + 1
            chunk[dim] = at
        assert all(t == 0 or c % t == 0 for t, c in zip(p["tile"], chunk)), (p["tile"], chunk)
        # the window loops (reductions that index the input in sums) run outside the spatial ones
        assert sorted(p["interchange"]) == list(range(len(domain)))
        assert any(t > 1 for t in p["tile"]), p["tile"]
        if p.get("decompose"):   # a named 2-D op with a stride along w, made 1-D: one window loop left
            assert op["op"] in ("linalg.conv_2d_nchw_fchw", "linalg.pooling_nchw_max", "linalg.pooling_nchw_sum")
    ir = ctx.session.current_ir
    assert "vector<" in ir and any(v in ir for v in VECTOR_MATH)
    ok(ctx, "bench warmup=1 iterations=2")
    ok(ctx, "apply cpu-lower")
    run = ok(ctx, "run --check").data["run"]
    assert run["check"]["passed"], run["check"]


def test_roles_of_a_strided_convolution():
    """The classification from the maps alone: window loops, spatial loops, the stride along w."""
    from workbench.targets.cpu_selector import _window_roles, classify, window_params

    # conv_2d_nchw_fchw, stride 2: (n, f, oh, ow, c, kh, kw)
    loops = {"domain": [2, 16, 7, 7, 8, 3, 3], "projected": False, "num_inputs": 2,
             "iterators": ["parallel"] * 4 + ["reduction"] * 3,
             "operand_dims": [[0, 4, -1, -1], [1, 4, 5, 6], [0, 1, 2, 3]],
             "operand_terms": [[[[0, 1]], [[4, 1]], [[2, 2], [5, 1]], [[3, 2], [6, 1]]],
                               [[[1, 1]], [[4, 1]], [[5, 1]], [[6, 1]]],
                               [[[0, 1]], [[1, 1]], [[2, 1]], [[3, 1]]]],
             "body": ["arith.mulf", "arith.addf", "linalg.yield"]}
    roles = _window_roles(loops)
    assert roles == {"window": [5, 6], "spatial": [2, 3], "channels": [4], "w": 3, "stride": 2}
    assert classify(loops) == "window"
    p = window_params(loops, 8)
    # a stride along w: w one by one, vectors along the output channels (f: 16 = 2 x 8 lanes)
    assert p["tile"] == [1, 16, 1, 1, 0, 1, 1] and p["contraction"] == 0
    assert p["interchange"] == [0, 1, 5, 6, 4, 2, 3]
    # stride 1: vectors along w (7: the largest divisor of 7 up to 8 lanes), f blocked by 8
    loops["operand_terms"][0][2:] = [[[2, 1], [5, 1]], [[3, 1], [6, 1]]]
    p = window_params(loops, 8)
    assert p["tile"] == [1, 8, 1, 7, 0, 1, 1] and p["contraction"] == 1
    # the named op with a stride along w: tiled to a 1-D convolution (kw untiled), one vector of f
    # (8 lanes) by a run of w (7: no divisor from 2 to 4), the 8 input channels whole (one block)
    p = window_params(dict(loops, operand_terms=[[[[0, 1]], [[4, 1]], [[2, 2], [5, 1]], [[3, 2], [6, 1]]]] +
                                                 loops["operand_terms"][1:]), 8, name="linalg.conv_2d_nchw_fchw")
    assert p == {"tile": [1, 8, 1, 1, 0, 1, 0], "interchange": [0, 1, 5, 4, 2, 3, 6], "decompose": 1}
    # a map with floordiv (not linear) is no window op
    loops["operand_terms"][0][3] = None
    assert _window_roles(loops) is None and classify(loops) == "scalar"


def test_a_tile_that_does_not_divide_fails_and_changes_nothing(ctx):
    """An edited tile that leaves partial tiles (dynamic sizes) fails in one line; the session is as it was."""
    ok(ctx, f"load {TORCH / 'conv2d_3x3.mlir'}")
    ok(ctx, "apply rewrite:tag-ops")
    before = (ctx.session.cursor, ctx.session.current_sha)
    res = do(ctx, "apply pipelines/cpu/generic.py[gen=tile_vectorize]{op=conv_2d_nchw_fchw_0 "
                  "tile=[1,3,1,5,0,1,1] interchange=[0,1,5,6,4,2,3] fold_unit_dims=1 contraction=1}")
    assert not res.ok and "\n" not in res.error and "vectorize" in res.error
    assert (ctx.session.cursor, ctx.session.current_sha) == before


def test_finish_leaves_a_whole_tensor_copy_to_the_loops(ctx, tmp_path):
    """The finishing step vectorizes the packing copies (inside loops) only: a padded input's copy at the
    top of the function, vectorized without sizes, would be one vector of the whole tensor."""
    payload = tmp_path / "pad.mlir"
    payload.write_text("""func.func @pad(%x: tensor<64x64xf32>) -> tensor<66x66xf32> {
  %zero = arith.constant 0.0 : f32
  %p = tensor.pad %x low[1, 1] high[1, 1] {
  ^bb0(%i: index, %j: index):
    tensor.yield %zero : f32
  } : tensor<64x64xf32> to tensor<66x66xf32>
  return %p : tensor<66x66xf32>
}
""")
    ok(ctx, f"load {payload}")
    ok(ctx, "apply pipelines/cpu/finish.py[gen=bufferize_and_lower_vectors]")
    assert "vector<64x64xf32>" not in ctx.session.current_ir and "linalg.copy" in ctx.session.current_ir
    ok(ctx, "bench warmup=0 iterations=1")
    ok(ctx, "apply cpu-lower")
    assert ok(ctx, "run --check").data["run"]["check"]["passed"]


def test_depthwise_tile_is_reordered_to_vectorize_along_w():
    """depthwise_conv_2d_nchw_chw iterates (n, oh, ow, c, kh, kw): its folded tile (ow, c) is reordered
    to (c, ow), the output's order, so that the vectors run along w without transposed reads."""
    from workbench.targets.cpu_selector import classify, window_params

    loops = {"domain": [8, 56, 56, 128, 3, 3], "projected": False, "num_inputs": 2,
             "iterators": ["parallel"] * 4 + ["reduction"] * 2,
             "operand_dims": [[0, 3, -1, -1], [3, 4, 5], [0, 3, 1, 2]],
             "operand_terms": [[[[0, 1]], [[3, 1]], [[1, 1], [4, 1]], [[2, 1], [5, 1]]],
                               [[[3, 1]], [[4, 1]], [[5, 1]]],
                               [[[0, 1]], [[3, 1]], [[1, 1]], [[2, 1]]]],
             "body": ["arith.mulf", "arith.addf", "linalg.yield"]}
    assert classify(loops) == "window"
    p = window_params(loops, 8)
    assert p["tile"] == [1, 1, 8, 4, 1, 1] and p["contraction"] == 0
    assert p["folded_order"] == [1, 0]
    # elementwise tile: the window loops innermost (the output tile stays in registers across them)
    assert p["interchange"][-2:] == [4, 5]


def _conv2d_loops(n, f, oh, ow, c, kh, kw, stride=1):
    """The loop structure `inspect` reports for a conv_2d_nchw_fchw (n, f, oh, ow, c, kh, kw)."""
    return {"domain": [n, f, oh, ow, c, kh, kw], "projected": False, "num_inputs": 2,
            "iterators": ["parallel"] * 4 + ["reduction"] * 3,
            "operand_dims": [[0, 4, -1, -1], [1, 4, 5, 6], [0, 1, 2, 3]],
            "operand_terms": [[[[0, 1]], [[4, 1]], [[2, stride], [5, 1]], [[3, stride], [6, 1]]],
                              [[[1, 1]], [[4, 1]], [[5, 1]], [[6, 1]]],
                              [[[0, 1]], [[1, 1]], [[2, 1]], [[3, 1]]]],
            "body": ["arith.mulf", "arith.addf", "linalg.yield"]}


@pytest.mark.parametrize("channels", [64, 256])
def test_a_convolution_register_tile_keeps_its_filter_block_in_registers(channels):
    """Many channels: the folded matmul tile is (output channels x input channels) of filter scalars,
    hoisted out of the spatial loops; its block stays within the vector registers (a 16 x 64 block spilled
    1024 broadcasts and ran at 2.5x the time), the input channels in blocks of a loop of their own outside
    the spatial loops."""
    from workbench.targets.cpu_selector import (CONV_INPUT_CHANNEL_BLOCK, CONV_OUTPUT_CHANNEL_BLOCK,
                                                window_params)

    p = window_params(_conv2d_loops(8, channels, 56, 60, channels, 3, 3), 16)
    f_block, c_block = p["tile"][1], p["tile"][4]
    # vectors along w: 60 = 3 x 16, then one tile of the remaining 12
    assert p["contraction"] == 1 and p["tile"][3] == 16 and p["remainder"] == [3, 48, 12]
    assert 1 < f_block <= CONV_OUTPUT_CHANNEL_BLOCK and channels % f_block == 0
    assert 1 < c_block <= CONV_INPUT_CHANNEL_BLOCK and channels % c_block == 0
    assert f_block * c_block <= 64
    # whole vectors along w: the register tile accumulates over the window (5, 6) and the channel blocks (4)
    # inside the spatial loops (2, 3)
    order = p["interchange"]
    assert min(order.index(d) for d in (4, 5, 6)) > max(order.index(2), order.index(3))
    # half vectors (w = 56): the filter block is hoisted, the channel-block loop runs outside the spatial loops
    order = window_params(_conv2d_loops(8, channels, 56, 56, channels, 3, 3), 16)["interchange"]
    assert order.index(4) < order.index(2) and order.index(4) < order.index(3)


@pytest.mark.parametrize("registers, f_tile", [(32, 8), (16, 4)])
def test_a_convolution_accumulating_in_registers_takes_two_vectors_where_registers_allow(registers, f_tile):
    """A w of whole vectors (64 = 4 x 16) accumulates inside the spatial loops; where two vectors divide w and
    the register tile (8 output channels x 2 vectors) takes at most half the registers, w goes by two
    vectors (conv3d 25.5 -> 19.6 ms); with 16 registers, two vectors of half the output channels (the same 8
    accumulators, fewer broadcasts per multiply-add)."""
    from workbench.targets.cpu_selector import window_params

    p = window_params(_conv2d_loops(8, 32, 62, 64, 32, 3, 5), 16, vector_registers=registers)
    assert p["contraction"] == 1 and p["tile"][3] == 32 and p["tile"][1] == f_tile and "remainder" not in p
    assert p["interchange"][-3:] == [5, 6, 4]


def test_few_registers_take_two_vectors_of_half_the_channels_and_a_last_vector():
    """AVX2 (8 lanes, 16 registers), w = 56 (7 vectors): 4 output channels x 2 vectors, the last vector a
    tile of its own (was 8 channels x 1 vector: a load and 8 broadcasts per 8 multiply-adds); a w of one
    vector, or a w that is no whole number of vectors, keeps the 8 x 1 tile."""
    from workbench.targets.cpu_selector import window_params

    p = window_params(_conv2d_loops(8, 64, 56, 56, 64, 3, 3), 8, vector_registers=16)
    assert p["tile"][1] == 4 and p["tile"][3] == 16 and p["remainder"] == [3, 48, 8] and p["contraction"] == 1
    p = window_params(_conv2d_loops(8, 64, 56, 64, 64, 3, 3), 8, vector_registers=16)   # 8 vectors: no rest
    assert p["tile"][1] == 4 and p["tile"][3] == 16 and "remainder" not in p
    for w, w_tile in ((8, 8), (60, 4)):   # (60: half vectors, which divide it)
        p = window_params(_conv2d_loops(8, 64, 56, w, 64, 3, 3), 8, vector_registers=16)
        assert p["tile"][1] == 8 and p["tile"][3] == w_tile, (w, p)
    # a 1x1 window (no taps: lh-pointwise-convs' form of a pointwise conv) takes the same tile with its spatial
    # loops outside the output-channel blocks (the tile alone, channel blocks outermost, was slower: 16.6 ->
    # 20.9 ms; with w outermost conv2d_1x1 ran 18.9 -> 12.6 ms on a Zen 3)
    p = window_params(_conv2d_loops(8, 64, 56, 56, 64, 1, 1), 8, vector_registers=16)
    assert p["tile"][1] == 4 and p["tile"][3] == 16 and p["contraction"] == 1, p
    assert p["interchange"] == [0, 2, 3, 1, 5, 6, 4], p
    # (AVX-512's 32 registers: the channel blocks stay outermost)
    p = window_params(_conv2d_loops(8, 64, 56, 64, 64, 1, 1), 8, vector_registers=32)
    assert p["interchange"].index(1) < p["interchange"].index(3), p
    # AVX-512's 32 registers: 8 channels (w = 56 of 8 lanes: two vectors need a rest, kept one vector)
    p = window_params(_conv2d_loops(8, 64, 56, 64, 64, 3, 3), 8, vector_registers=32)
    assert p["tile"][1] == 8 and p["tile"][3] == 16


def test_an_avx2_convolution_of_two_vector_tiles_and_a_last_vector_runs_and_matches(ctx, tmp_path):
    payload = tmp_path / "conv.mlir"
    payload.write_text(conv_payload(2, 16, 10, 24, 16, 3, 3, 1, 1))   # rows of 24 = 3 vectors of 8
    ok(ctx, f"load {payload}")
    try:
        ok(ctx, "target cpu --threads 1 --cpu avx2")
        selections = ok(ctx, "select --apply").data["selections"]
        (conv,) = [e["params"] for e in selections if "conv_" in str(e["params"].get("op", ""))]
        assert conv["tile"][1] == 4 and conv["tile"][3] == 16 and conv["remainder"] == [3, 16, 8], conv
        ok(ctx, "bench warmup=1 iterations=2")
        ok(ctx, "apply cpu-lower")
        assert ok(ctx, "run --check --iterations 1 --warmup 0").data["run"]["check"]["passed"]
    finally:
        ok(ctx, "target cpu --cpu host --threads 0")


def test_an_avx2_pointwise_convolution_walks_w_outside_the_channel_blocks_and_matches(ctx):
    """conv2d_1x1 (lh-pointwise-convs' conv_1d over 784 positions, 256 -> 256 channels) on AVX2: 4 output
    channels x 2 vectors, w outside the output-channel blocks; lowers, runs and matches torch."""
    ok(ctx, f"load {TORCH / 'conv2d_1x1.mlir'}")
    try:
        ok(ctx, "target cpu --threads 1 --cpu avx2")
        selections = ok(ctx, "select --apply").data["selections"]
        (conv,) = [e["params"] for e in selections if "conv_" in str(e["params"].get("op", ""))]
        assert conv["tile"][1] == 4 and conv["tile"][2] == 16 and conv["contraction"] == 1, conv
        order = conv["interchange"]
        assert order.index(2) < order.index(1), conv   # w (2) outside the output channels (1)
        ok(ctx, "bench warmup=1 iterations=2")
        ok(ctx, "apply cpu-lower")
        assert ok(ctx, "run --check --iterations 1 --warmup 0").data["run"]["check"]["passed"]
    finally:
        ok(ctx, "target cpu --cpu host --threads 0")


def test_a_w_of_half_vectors_takes_no_remainder_tile():
    """w = 56 with 16 lanes: half vectors (8) divide it, one tile shape instead of 3 x 16 and a remainder
    of 8 (20 against 25 ms on a 3x3 conv, 64 channels); w = 60 (no multiple of 8) keeps the remainder."""
    from workbench.targets.cpu_selector import window_params

    p = window_params(_conv2d_loops(8, 64, 56, 56, 64, 3, 3), 16)
    assert p["tile"][3] == 8 and "remainder" not in p
    p = window_params(_conv2d_loops(8, 64, 56, 60, 64, 3, 3), 16)
    assert p["tile"][3] == 16 and p["remainder"] == [3, 48, 12]


def test_a_strided_convolution_tile_blocks_its_input_channels():
    """A stride along w (1-D convolution vectorizer, vectors along the output channels): one vector of
    output channels by a run of output positions, the input channels in blocks outside the spatial loops
    (the whole 64 x 64 filter of a window row, hoisted, took 1.6x the time)."""
    from workbench.targets.cpu_selector import CONV_INPUT_CHANNEL_BLOCK, STRIDED_CONV_OUTPUT_RUN, window_params

    p = window_params(_conv2d_loops(8, 64, 56, 56, 64, 3, 3, stride=2), 16, name="linalg.conv_2d_nchw_fchw")
    assert p["decompose"] == 1
    assert p["tile"][1] == 16 and 1 < p["tile"][3] <= STRIDED_CONV_OUTPUT_RUN and 56 % p["tile"][3] == 0
    assert p["tile"][4] == CONV_INPUT_CHANNEL_BLOCK and p["tile"][6] == 0   # kw: the 1-D op's window
    order = p["interchange"]
    assert order.index(4) < order.index(2) and order[-1] == 6


CONV_PAYLOAD = """func.func @conv(%x: tensor<{x}xf32>, %w: tensor<{w}xf32>, %init: tensor<{out}xf32>) -> tensor<{out}xf32> {{
  %0 = linalg.conv_2d_nchw_fchw {{dilations = dense<1> : tensor<2xi64>, strides = dense<{stride}> : tensor<2xi64>}}
    ins(%x, %w : tensor<{x}xf32>, tensor<{w}xf32>) outs(%init : tensor<{out}xf32>) -> tensor<{out}xf32>
  return %0 : tensor<{out}xf32>
}}
"""


@pytest.mark.parametrize("stride, x, out", [(1, "1x24x12x22", "1x16x10x20"), (2, "1x24x13x19", "1x16x6x9")])
def test_a_convolution_with_input_channel_blocks_runs_and_matches(ctx, tmp_path, monkeypatch, stride, x, out):
    """More input channels than one block (24: three blocks of 8), a w that is no vector multiple (20) or
    a stride along w: the selected schedule tiles the input channels, lowers, runs and matches the
    unscheduled payload. (The strided one through the decomposed path, which the strided convolutions that
    lh-strided-conv-planes leaves take: grouped ones, 1x1 stride 2, more than 16 phases.)"""
    from workbench.targets.cpu import CpuTarget
    from workbench.targets.cpu_selector import CONV_INPUT_CHANNEL_BLOCK

    monkeypatch.setattr(CpuTarget, "strided_conv_planes", False)

    payload = tmp_path / "conv.mlir"
    payload.write_text(CONV_PAYLOAD.format(x=x, w="16x24x3x3", out=out, stride=stride))
    ok(ctx, f"load {payload}")
    ok(ctx, "target cpu")
    selections = ok(ctx, "select --apply").data["selections"]
    # (unit strides: lh-conv-planes made it a generic over the plane, loops n, f, p, c, kh, kw)
    conv = next(e["params"] for e in selections if str(e["params"].get("op", "")).startswith(("conv_2d", "generic")))
    channels = 4 if len(conv["tile"]) == 7 else 3
    assert len(conv["tile"]) == (6 if stride == 1 else 7), conv
    assert conv["tile"][channels] == CONV_INPUT_CHANNEL_BLOCK, conv   # 24 channels in blocks
    assert conv.get("decompose", 0) == (stride > 1), conv
    ok(ctx, "bench warmup=0 iterations=1")
    ok(ctx, "apply cpu-lower")
    run = ok(ctx, "run --check").data["run"]
    assert run["check"]["passed"], run["check"]


@pytest.mark.parametrize("name,cores", [("conv3d", 3), ("conv2d_3x3", 8), ("conv1d", 8)])
def test_convolutions_split_one_output_channel_per_core(ctx, monkeypatch, name, cores):
    """As many cores as output channels (conv3d's 16 channels on the 16-core host): each thread's chunk
    is one channel, so the folded tile is no matmul; it is vectorized as it is instead of failing the
    specialization, and runs and matches."""
    import dataclasses

    import workbench.targets.cpu as cpu
    from workbench.targets import cpu_selector

    machine = dataclasses.replace(cpu.host_machine(), usable_cpus=cores)
    monkeypatch.setattr(cpu, "host_machine", lambda: machine)
    monkeypatch.setattr(cpu_selector, "MIN_PARALLEL_WORK", 0)
    ok(ctx, f"load {TORCH / (name + '.mlir')}")
    res = ok(ctx, "select --apply")
    conv = next(e["params"] for e in res.data["selections"] if "conv" in str(e["params"].get("op")))
    # every core a task: the channel chunks, times the batch chunks where the batch is split too
    assert conv["threads"] * (conv.get("split_also") or [0, 1])[1] == cores, conv
    ok(ctx, "bench warmup=1 iterations=2")
    ok(ctx, "apply cpu-lower")
    assert ok(ctx, "run --check").data["run"]["check"]["passed"]


def test_a_convolution_tile_accumulates_in_registers_across_its_input_channel_blocks(ctx, tmp_path):
    """The output tile of a convolution whose input channels come in blocks is read once before the
    channel and window loops and written once after them (loop-invariant subsets hoisted: it was read and
    written back in every block and window position), and the result still matches."""
    payload = tmp_path / "conv.mlir"
    payload.write_text(CONV_PAYLOAD.format(x="1x24x12x22", w="16x24x3x3", out="1x16x10x20", stride=1))
    ok(ctx, f"load {payload}")
    ok(ctx, "target cpu --threads 1")
    ok(ctx, "select --apply")
    ir = ctx.session.current_ir
    assert re.search(r"scf\.for [^\n]*iter_args\([^\n]*\) -> \(vector<", ir), "the tile rides the loops as a vector"
    ok(ctx, "bench warmup=0 iterations=1")
    ok(ctx, "apply cpu-lower")
    assert ok(ctx, "run --check").data["run"]["check"]["passed"]
