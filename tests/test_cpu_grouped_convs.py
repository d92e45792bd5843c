"""A convolution whose innermost output loop has one position (torch-mlir's grouped Conv1d: a 2-D
`conv_2d_ngchw_gfchw` over a trailing width of 1, Wav2Vec2's / Hubert's positional convolution) is
vectorized along its innermost longer spatial loop, as a 1-D convolution is: its tile folds to an outer-product
contraction over the output channels x a run of positions. (Vectors along the output channels, as before,
ran it at 2.8-7 GFLOP/s: 0.72 ms where torch takes 0.15; now 0.05 ms, one Zen 4 thread.)"""
from __future__ import annotations

from pathlib import Path

import pytest

from conftest import ok

POS_CONV = Path(__file__).parent / "payloads" / "grouped_conv1d" / "pos_conv.mlir"


def _conv_entry(res) -> dict:
    (entry,) = [e["params"] for e in res.data["selections"] if "conv_2d_ngchw_gfchw" in str(e["params"].get("op"))]
    return entry


@pytest.mark.parametrize("threads", [1, 2])
def test_grouped_conv1d_vectorizes_along_its_positions_and_matches(ctx, threads):
    """n, g, f, h, w(=1), c, kh, kw: the tile takes a run of h (whole vectors) by a block of output channels
    and folds to a contraction; the unit w is not the vector loop. Lowered, 1 and 2 threads match the
    unscheduled payload."""
    ok(ctx, f"load {POS_CONV}")
    ok(ctx, f"target cpu --threads {threads}")
    res = ok(ctx, "select --apply")
    params = _conv_entry(res)
    tile = params["tile"]
    assert tile[3] >= 8 and tile[3] % 8 == 0, params   # positions: whole vectors (8 or 16 lanes, 1 or 2)
    assert tile[4] == 1 and tile[2] > 1, params         # the unit width, an output-channel block
    assert params["contraction"] == 1, params
    ok(ctx, "bench warmup=1 iterations=2")
    ok(ctx, "apply cpu-lower")
    run = ok(ctx, f"run --check --threads {threads}").data["run"]
    assert run["check"]["passed"], run["check"]


def test_window_roles_skip_a_unit_innermost_output_loop():
    """The roles of the grouped Conv1d's loops: w is h (dim 3), not the unit dim 4; an op whose only
    spatial loops are units keeps its innermost one."""
    from workbench.targets.cpu_selector import _window_roles

    # out[n, g, f, h, w] += in[n, g, c, h + kh, w + kw] * W[g, f, c, kh, kw]
    terms = [[[(0, 1)], [(1, 1)], [(5, 1)], [(3, 1), (6, 1)], [(4, 1), (7, 1)]],
             [[(1, 1)], [(2, 1)], [(5, 1)], [(6, 1)], [(7, 1)]],
             [[(0, 1)], [(1, 1)], [(2, 1)], [(3, 1)], [(4, 1)]]]
    iterators = ["parallel"] * 5 + ["reduction"] * 3
    loops = {"operand_terms": terms, "num_inputs": 2, "iterators": iterators,
             "operand_dims": [[0, 1, 5, -1, -1], [1, 2, 5, 6, 7], [0, 1, 2, 3, 4]],
             "domain": [1, 4, 16, 160, 1, 16, 16, 1]}
    roles = _window_roles(loops)
    assert roles["w"] == 3 and roles["window"] == [6, 7] and roles["channels"] == [5]
    loops["domain"] = [1, 4, 16, 1, 1, 16, 1, 1]
    assert _window_roles(loops)["w"] == 4
    loops["domain"] = [1, 4, 16, 160, 8, 16, 16, 1]
    assert _window_roles(loops)["w"] == 4
