"""Gathers with contiguous loads (`lh-gather-indices`, workbench/worker/cpu/gathers.py): reflect pads,
index_select and embeddings are vectorized with contiguous vector loads (no vector.gather, no scalar
loop) where their indices allow it, and still match the unscheduled reference and torch."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from conftest import fixture_io_flags, ok

TORCHLIKE = Path(__file__).parent / "payloads" / "torchlike"
FIXTURES = Path(__file__).parent / "fixtures" / "torch"


@pytest.fixture
def gather_pads(monkeypatch):
    """The selector without lh-pad-copies, which takes these pads whole (tests/test_cpu_pad_copies.py): the
    split checked here is the path of the pads it leaves (a row reflected over most of its length, more
    border elements than pad_copies.MAX_SINGLES)."""
    from workbench.targets.cpu import CpuTarget

    monkeypatch.setattr(CpuTarget, "pad_copies", False)


def _generic_params(ctx) -> list[dict]:
    selections = ok(ctx, "select --apply").data["selections"]
    return [e["params"] for e in selections if "generic.py" in e["schedule"]]


def _contiguous_reads(ir_text: str, source_type: str) -> list[str]:
    """The vector.transfer_read ops of the scheduled IR that read a whole vector from `source_type`."""
    return re.findall(rf"vector\.transfer_read [^\n]*: {re.escape(source_type)}, vector<(?:1x)*(\d+)xf32>", ir_text)


def test_reflect_pad_splits_into_a_contiguous_interior_and_gathered_edges(ctx):
    """A reflect pad along the vector loop: the interior (columns 1..100, x[i, j - 1]) is an op of its own
    whose loads are contiguous, the two edge columns stay gathers; the three write the output in place."""
    ok(ctx, f"load {TORCHLIKE / 'reflect_pad.mlir'}")
    ok(ctx, "apply pass lh-gather-indices")
    text = ctx.session.current_ir
    assert text.count("linalg.generic") == 3 and text.count("tensor.insert_slice") == 3
    # the interior piece's load: the loop index plus a constant, which the vectorizer reads contiguously
    assert re.search(r"tensor\.extract %\w+\[%\w+, %\w+\] : tensor<64x100xf32>", text)
    info = ok(ctx, "inspect").data["inspect"]
    widths = {tuple(op["loops"]["domain"]): op["loops"].get("contiguous_loads") for op in info["ops"] if op.get("loops")}
    assert widths[(64, 100)] is True and widths[(64, 1)] is True


def test_reflect_pad_runs_with_contiguous_loads(ctx, gather_pads):
    """Selected (the interior: vectorized gather along the row), lowered, run on 1 and 2 threads and checked
    against the unscheduled payload. The old selection read every element through a vector.gather."""
    ok(ctx, f"load {TORCHLIKE / 'reflect_pad.mlir'}")
    generic = _generic_params(ctx)
    assert any(g.get("gather") == 1 and g["tile"][-1] >= 16 for g in generic), generic
    assert _contiguous_reads(ctx.session.current_ir, "memref<64x100xf32>"), "no contiguous read of the input"
    ok(ctx, "bench warmup=1 iterations=2")
    ok(ctx, "apply cpu-lower")
    for threads in (1, 2):
        assert ok(ctx, f"run --check --threads {threads}").data["run"]["check"]["passed"]


@pytest.mark.parametrize("name, table", [
    ("index_select", "memref<8x4xf32>"),     # rows picked by an id tensor
    ("embedding", "memref<50x16xf32>"),      # torch-mlir's embedding: ids with bounds asserts
    ("pad_reflect", "memref<1x2x5x5xf32>"),  # a 4-D reflect pad: H and W, index tables computed apart
])
def test_gathers_are_vectorized_and_match_torch(ctx, gather_pads, name, table):
    """Ids read outside the vector loop (index_select, embedding) are loaded once per row and the row
    copied with vector loads; the old selection kept these ops scalar loops (vector=0) or gathers. The
    fixtures then equal torch's outputs."""
    fixture = FIXTURES / f"{name}.mlir"
    ok(ctx, f"load {fixture}")
    generic = _generic_params(ctx)
    assert all(g["vector"] == 1 for g in generic), generic
    assert any(g.get("gather") == 1 for g in generic), generic
    assert _contiguous_reads(ctx.session.current_ir, table), f"no contiguous read of {table}"
    ok(ctx, "bench warmup=1 iterations=2")
    ok(ctx, "apply cpu-lower")
    run = ok(ctx, f"run --check {fixture_io_flags(fixture)}").data["run"]
    assert run["check"]["passed"] and run["expected_check"]["passed"], run


def test_index_evaluation_recognises_wraps_and_reflections():
    """The evaluation behind step 3 and 4: torch-mlir's wrap of negative indices is the identity over a
    loop's range, a reflection is not affine but has a unit-stride interior run."""
    from mlir import ir

    from workbench.worker.cpu import gathers

    text = """
    func.func @f(%x: tensor<10xf32>) -> tensor<12xf32> {
      %e = tensor.empty() : tensor<12xf32>
      %r = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} outs(%e : tensor<12xf32>) {
      ^bb0(%out: f32):
        %c0 = arith.constant 0 : i64
        %c1 = arith.constant 1 : i64
        %c9 = arith.constant 9 : i64
        %c12 = arith.constant 12 : i64
        %j = linalg.index 0 : index
        %ji = arith.index_cast %j : index to i64
        %neg = arith.cmpi slt, %ji, %c0 : i64
        %up = arith.addi %ji, %c12 : i64
        %wrapped = arith.select %neg, %up, %ji : i64
        %s = arith.subi %wrapped, %c1 : i64
        %a = math.absi %s : i64
        %b = arith.subi %c9, %a : i64
        %ab = math.absi %b : i64
        %k = arith.subi %c9, %ab : i64
        %kx = arith.index_cast %k : i64 to index
        %v = tensor.extract %x[%kx] : tensor<10xf32>
        linalg.yield %v : f32
      } -> tensor<12xf32>
      return %r : tensor<12xf32>
    }"""
    with ir.Context(), ir.Location.unknown():
        module = ir.Module.parse(text)
        op = module.body.operations[0].regions[0].blocks[0].operations[1]
        body = list(op.regions[0].blocks[0].operations)
        wrapped = next(o for o in body if o.operation.name == "arith.select").result
        assert list(gathers.evaluate(wrapped, op, 0, 12)) == list(range(12))
        index = next(o for o in body if o.operation.name == "tensor.extract").operands[1]
        values = gathers.evaluate(index, op, 0, 12)
        assert list(values) == [1, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 8]
        assert gathers._unit_stride_run(values) == (1, 11)
        assert gathers.gather_indices(module) == 1
        assert str(module).count("linalg.generic") == 3


def test_border_columns_vectorize_along_their_rows(ctx, gather_pads):
    """A reflect pad's border pieces (one or two columns: an output whose innermost dim is 1 or 2) take their
    vectors along the longer dim before it, not one or two elements per step (one-element steps were two
    thirds of pad_reflect's time on the 16-core Xeon); the interior keeps its row vectors. Checked."""
    ok(ctx, f"load {TORCHLIKE / 'reflect_pad.mlir'}")
    ok(ctx, "target cpu --threads 1")
    generic = _generic_params(ctx)
    borders = [g for g in generic if g["tile"][-1] <= 2]
    interior = [g for g in generic if g["tile"][-1] > 2]
    assert interior and all(g["tile"][-1] >= 16 for g in interior), generic
    assert borders and all(g["tile"][-2] >= 8 for g in borders), generic   # vectors down the column
    ok(ctx, "bench warmup=1 iterations=2")
    ok(ctx, "apply cpu-lower")
    assert ok(ctx, "run --check").data["run"]["check"]["passed"]


def test_border_gathers_split_over_the_cores(ctx, gather_pads, tmp_path):
    """A gathered element counts GATHER_WORK iterations (it may read a cache line of its own): a reflect pad's
    4096-row border column, below MIN_PARALLEL_WORK as plain iterations, is split over the cores like the
    interior; checked on more tasks than this host has cores."""
    from workbench.targets.cpu_selector import GATHER_WORK, MIN_PARALLEL_WORK

    rows = 4096
    assert rows < MIN_PARALLEL_WORK <= rows * GATHER_WORK
    payload = tmp_path / "reflect_rows.mlir"
    payload.write_text((TORCHLIKE / "reflect_pad.mlir").read_text().replace("64x", f"{rows}x"))
    ok(ctx, f"load {payload}")
    try:
        ok(ctx, "target cpu --threads 4")
        generic = _generic_params(ctx)
        borders = [g for g in generic if g["tile"][-1] <= 2]
        assert borders and all(g["threads"] > 1 for g in borders), generic
        ok(ctx, "bench warmup=1 iterations=2")
        ok(ctx, "apply cpu-lower")
        assert ok(ctx, "run --check").data["run"]["check"]["passed"]
    finally:
        ok(ctx, "target cpu --threads 0")


def test_a_zero_fill_the_gather_never_reads_is_dropped(ctx):
    """torch.gather's output is zero-filled, then the gather writes every element without reading it (a
    lone generic: no fusion step, whose RemoveOutsDependency would drop it): lh-drop-dead-results makes the
    fill's tensor.empty the gather's init, the fill goes (a pass over the output for nothing: a quarter of
    gather's time on one core). Checked against torch."""
    fixture = FIXTURES / "gather.mlir"
    ok(ctx, f"load {fixture}")
    assert "linalg.fill" in ctx.session.current_ir
    prepared = ok(ctx, "select --apply").data["prepared"]
    assert "pass lh-drop-dead-results" in prepared
    assert "linalg.fill" not in ctx.session.ir_at(len(prepared))
    ok(ctx, "bench warmup=1 iterations=2")
    ok(ctx, "apply cpu-lower")
    for threads in (1, 2):
        run = ok(ctx, f"run --check --threads {threads} {fixture_io_flags(fixture)}").data["run"]
        assert run["check"]["passed"] and run["expected_check"]["passed"], run
