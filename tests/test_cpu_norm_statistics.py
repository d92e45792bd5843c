"""A norm's statistics and its normalization in one pass over chunks of rows, and elementwise ops over
flattened image planes:

- `lh-reshape-gathers` (workbench/worker/cpu/reshape_gathers.py): torch-mlir's broadcast of a group norm's
  per-group values to its channels (a gather over constant i64 index tables) becomes a reshape;
- `lh-row-networks` (workbench/worker/cpu/row_networks.py) takes several reductions of the same wide rows
  (a group norm's f64 sum, its variance and its f32 sum, each a pass over the input) with the
  normalization after them into one forall over chunks of rows, the normalization written in place into
  the output's rows;
- `lh-collapse-planes` (workbench/worker/cpu/collapsed_planes.py): an elementwise op over N x C x H x W whose
  rows are no whole vectors runs over N x C x (H * W).
Every path is lowered, run and checked against the unscheduled payload (the check's reference)."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from conftest import fixture_io_flags, ok

FIXTURES = Path(__file__).parent / "fixtures" / "torch"
WIDE_GROUP_NORM = Path(__file__).parent / "payloads" / "norm_statistics" / "group_norm_2x16x56x56.mlir"


def _passes(ctx, payload: Path, *passes: str) -> str:
    ok(ctx, f"load {payload}")
    for p in passes:
        ok(ctx, f"apply pass {p}")
    return ctx.session.current_ir


def _check(ctx, threads: int, extra: str = "") -> dict:
    ok(ctx, "bench warmup=1 iterations=2")
    ok(ctx, "apply cpu-lower")
    run = ok(ctx, f"run --check --threads {threads} {extra}").data["run"]
    assert run["check"]["passed"], run["check"]
    return run


def test_group_norm_broadcast_gathers_become_reshapes(ctx):
    """The test-shape group norm (2 x 8 x 5 x 5, 2 groups): both gathers of the per-group scale / shift
    through four index tables become reshapes (no tensor.extract left), lowered and run: the reference's
    values and torch's."""
    fixture = FIXTURES / "group_norm.mlir"
    before = _passes(ctx, fixture)
    assert before.count("tensor.extract %") == 2
    text = _passes(ctx, fixture, "lh-reshape-gathers")
    assert "tensor.extract %" not in text
    assert re.search(r"tensor\.collapse_shape %\w+ \[\[0\], \[1, 2(, 3)?\]\] : tensor<2x2x4(x1)?xf32> into tensor<2x8xf32>",
                     text), text
    _check(ctx, 1, fixture_io_flags(fixture))


GATHER = """#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @main(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
  %rows = arith.constant dense<[[0, 0, 0, 0, 0, 0, 0, 0], [1, 1, 1, 1, 1, 1, 1, 1]]> : tensor<2x8xi64>
  %cols = arith.constant dense<[[COLS], [COLS]]> : tensor<2x8xi64>
  %e = tensor.empty() : tensor<2x8xf32>
  %g = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]} ins(%rows, %cols : tensor<2x8xi64>, tensor<2x8xi64>) outs(%e : tensor<2x8xf32>) {
  ^bb0(%r: i64, %c: i64, %out: f32):
    %ri = arith.index_cast %r : i64 to index
    %ci = arith.index_cast %c : i64 to index
    %v = tensor.extract %x[%ri, %ci] : tensor<2x8xf32>
    linalg.yield %v : f32
  } -> tensor<2x8xf32>
  return %g : tensor<2x8xf32>
}
"""


@pytest.mark.parametrize("cols, taken", [("0, 1, 2, 3, 4, 5, 6, 7", True), ("7, 6, 5, 4, 3, 2, 1, 0", False),
                                         ("0, 1, 2, 3, 4, 5, 7, 6", False)])
def test_only_gathers_in_order_are_reshapes(ctx, tmp_path, cols, taken):
    """A gather through constant tables is a reshape only where it reads its source in order: the identity
    tables become the source itself, a flip or a swap of two columns stays a gather. Run either way: the
    reference's values."""
    payload = tmp_path / "gather.mlir"
    payload.write_text(GATHER.replace("COLS", cols))
    text = _passes(ctx, payload, "lh-reshape-gathers")
    assert ("tensor.extract %" not in text) == taken, text
    _check(ctx, 1)


def _forall_body(text: str) -> str:
    start = text.index("scf.forall (")
    return text[start:text.index("scf.forall.in_parallel", start)]


@pytest.mark.parametrize("threads", [1, 2])
def test_group_norm_statistics_and_normalization_in_one_forall(ctx, threads):
    """2 x 16 x 56 x 56, 4 groups (rows of 50176 elements, wider than a network's): after the reshape and the
    fusion, lh-row-networks makes one forall over the batch rows holding the three reductions over the
    input (the f64 mean, the f64 variance, the f32 mean) and the normalization, none of them outside."""
    text = _passes(ctx, WIDE_GROUP_NORM, "lh-reshape-gathers", "lh-fuse-elementwise",
                   f"lh-row-networks{{threads={threads}}}")
    assert text.count("scf.forall (") == 1
    body = _forall_body(text)
    assert body.count('"reduction"') >= 3 and "tensor<1x16x56x56xf32>" in body
    rest = text.replace(body, "")
    assert '"reduction"' not in rest and "tensor<2x16x56x56xf32>) outs" not in rest
    _check(ctx, threads)


def test_statistics_of_a_batch_short_of_the_cores_are_left_alone(ctx):
    """The wide group norm's 2 batch rows on 4 cores: no forall (its chunks' ops run on one core each, so
    two chunks would leave two cores idle); the ops are split inside as before."""
    text = _passes(ctx, WIDE_GROUP_NORM, "lh-reshape-gathers", "lh-fuse-elementwise", "lh-row-networks{threads=4}")
    assert "scf.forall" not in text


def test_statistics_of_narrow_rows_are_left_alone(ctx):
    """The test-shape group norm (rows of 200 elements: the rows schedule's chain, L1-sized) gets no forall."""
    text = _passes(ctx, FIXTURES / "group_norm.mlir", "lh-reshape-gathers", "lh-fuse-elementwise",
                   "lh-row-networks{threads=2}")
    assert "scf.forall" not in text


@pytest.mark.parametrize("threads", [1, 2])
def test_selector_path_writes_the_normalization_in_place(ctx, threads):
    """`select --apply` on the wide group norm: prepared with the three steps, the normalization computed
    into the forall's output rows (no copy of a chunk into the result after it), planes of 3136 = 196
    vectors on AVX-512 (on AVX2 rows of 56 are whole vectors: no collapse); lowered and run on 1 and 2 threads
    against the reference."""
    ok(ctx, f"load {WIDE_GROUP_NORM}")
    ok(ctx, f"target cpu --threads {threads}")
    res = ok(ctx, "select --apply")
    prepared = " ".join(res.data["prepared"])
    # rows of 56 are no whole number of AVX-512's 16 lanes (the planes of 3136 are): collapsed; on AVX2 (8 lanes)
    # they are 7 whole vectors, and the pass is left out
    lanes = ctx.session.target.machine.vector_bits // 32
    collapsed = 56 % lanes != 0
    for step in ("lh-reshape-gathers", "lh-row-networks"):
        assert step in prepared, prepared
    assert ("lh-collapse-planes" in prepared) == collapsed, prepared
    text = ctx.session.current_ir
    assert "scf.forall" in text
    # the ops in the forall's chunks are planned for one core (the forall is split over the cores)
    for entry in res.data["selections"]:
        if "tile" in entry["params"]:
            assert entry["params"]["threads"] == 1, entry
    assert "linalg.copy" not in text and "memref.copy" not in text, text
    if collapsed:
        assert re.search(r"memref<1x16x3136xf32", text), "the normalization over its planes"
    _check(ctx, threads)


SCALE = """#x = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#c = affine_map<(d0, d1, d2, d3) -> (d1)>
func.func @main(%x: tensor<2x8xWxWxf32>, %s: tensor<8xf32>, %b: tensor<8xf32>) -> tensor<2x8xWxWxf32> {
  %e = tensor.empty() : tensor<2x8xWxWxf32>
  %y = linalg.generic {indexing_maps = [#x, #c, #c, #x], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%x, %s, %b : tensor<2x8xWxWxf32>, tensor<8xf32>, tensor<8xf32>) outs(%e : tensor<2x8xWxWxf32>) {
  ^bb0(%a: f32, %m: f32, %t: f32, %o: f32):
    %p = arith.mulf %a, %m : f32
    %q = arith.addf %p, %t : f32
    linalg.yield %q : f32
  } -> tensor<2x8xWxWxf32>
  return %y : tensor<2x8xWxWxf32>
}
"""


@pytest.mark.parametrize("width, collapsed", [(24, True), (12, True), (32, False), (7, False)])
def test_per_channel_scale_runs_over_the_plane(ctx, tmp_path, width, collapsed):
    """A batch norm's scale and shift over 2 x 8 x W x W: rows of 24 or 12 (no whole vectors, 576 and 144
    are) run over 2 x 8 x W*W; rows of 32 (whole vectors already) and of 7 (49 is no whole vectors either)
    stay. Lowered and run on 2 threads against the reference either way."""
    payload = tmp_path / f"scale{width}.mlir"
    payload.write_text(SCALE.replace("W", str(width)))
    text = _passes(ctx, payload, "lh-collapse-planes{lanes=16}")
    flat = f"tensor<2x8x{width * width}xf32>"
    assert (flat in text and "tensor.expand_shape" in text) == collapsed, text
    _check(ctx, 2)


INSTANCE_NORM = Path(__file__).parent / "payloads" / "norm_statistics" / "instance_norm_2x40x45x45.mlir"


@pytest.mark.parametrize("threads", [1, 2])
def test_instance_norm_statistics_and_normalization_in_one_forall(ctx, threads):
    """nn.InstanceNorm2d(40) over 2 x 40 x 45 x 45 (torch-mlir's export: 80 rows of 2025 elements, narrower
    than the group norm's but each statistic reducing H x W, and 648 KB in all, more than L2 keeps for the
    passes): one forall over the rows holding the three reductions (the f64 mean, the f64 variance, the f32
    mean) and the normalization, nothing of them outside: the input read from memory once instead of four
    times. Through the selector path (rows of 2025: no whole vectors, no tile multiple), lowered and run on
    1 and 2 threads against the unscheduled payload."""
    text = _passes(ctx, INSTANCE_NORM, "lh-fuse-elementwise", f"lh-row-networks{{threads={threads}}}")
    assert text.count("scf.forall (") == 1
    body = _forall_body(text)
    assert body.count('"reduction"') >= 3 and "x45x45xf32>) outs" in body
    rest = text.replace(body, "")
    assert '"reduction"' not in rest and "tensor<80x45x45xf32>) outs" not in rest
    ok(ctx, f"load {INSTANCE_NORM}")
    ok(ctx, f"target cpu --threads {threads}")
    prepared = " ".join(ok(ctx, "select --apply").data["prepared"])
    assert "lh-row-networks" in prepared, prepared
    assert "scf.forall" in ctx.session.current_ir
    _check(ctx, threads)


def test_small_instance_norm_statistics_are_left_alone(ctx):
    """The test-shape instance norm (2 x 3 x 5 x 5: 600 bytes, in L1 for every pass) gets no forall."""
    text = _passes(ctx, FIXTURES / "instance_norm.mlir", "lh-fuse-elementwise", "lh-row-networks{threads=2}")
    assert "scf.forall" not in text
