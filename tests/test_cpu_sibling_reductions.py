"""`lh-merge-sibling-reductions` (workbench/worker/cpu/sibling_reductions.py): reductions of the same input
with the same maps and iterators (a group norm's f64 and f32 sums) become one multi-result generic, which
the selector schedules as one vectorized inner reduction (generic.py partial_outputs: a fill and a
combining op per result, one read of the input). Every path is lowered, run and checked against the
unscheduled payload (the check's reference)."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from conftest import ok

FIXTURES = Path(__file__).parent / "fixtures" / "torch"
WIDE_GROUP_NORM = Path(__file__).parent / "payloads" / "norm_statistics" / "group_norm_2x16x56x56.mlir"

TWO_SUMS = """#x = affine_map<(d0, d1) -> (d0, d1)>
#r = affine_map<(d0, d1) -> (d0)>
func.func @main(%x: tensor<8x256xf32>) -> (tensor<8xf64>, tensor<8xf32>) {
  %z64 = arith.constant 0.0 : f64
  %e64 = tensor.empty() : tensor<8xf64>
  %i64 = linalg.fill ins(%z64 : f64) outs(%e64 : tensor<8xf64>) -> tensor<8xf64>
  %a = linalg.generic {indexing_maps = [#x, #r], iterator_types = ["parallel", "reduction"]} ins(%x : tensor<8x256xf32>) outs(%i64 : tensor<8xf64>) {
  ^bb0(%in: f32, %acc: f64):
    %w = arith.extf %in : f32 to f64
    %s = arith.addf %w, %acc : f64
    linalg.yield %s : f64
  } -> tensor<8xf64>
  %z32 = arith.constant 0.0 : f32
  %e32 = tensor.empty() : tensor<8xf32>
  %i32 = linalg.fill ins(%z32 : f32) outs(%e32 : tensor<8xf32>) -> tensor<8xf32>
  %b = linalg.generic {indexing_maps = [#x, #r], iterator_types = ["parallel", "reduction"]} ins(BINPUT : tensor<8x256xf32>) outs(%i32 : tensor<8xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %s = arith.addf %in, %acc : f32
    linalg.yield %s : f32
  } -> tensor<8xf32>
  return %a, %b : tensor<8xf64>, tensor<8xf32>
}
"""


def _reductions(text: str) -> list[str]:
    return re.findall(r"linalg\.generic \{[^\n]*\"reduction\"[^\n]*", text)


def test_two_sums_of_one_input_become_one_two_result_reduction(ctx, tmp_path):
    """An f64 and an f32 sum of the same 8 x 256 input (the second's init filled after the first): one
    generic with both inits, yielding both sums; lowered as one vectorized inner reduction (partial_outputs
    2) and checked against the payload."""
    payload = tmp_path / "two_sums.mlir"
    payload.write_text(TWO_SUMS.replace("BINPUT", "%x"))
    ok(ctx, f"load {payload}")
    assert len(_reductions(ctx.session.current_ir)) == 2
    ok(ctx, "apply pass lh-merge-sibling-reductions")
    merged = _reductions(ctx.session.current_ir)
    assert len(merged) == 1, merged
    assert "outs(%" in merged[0] and "tensor<8xf64>, tensor<8xf32>)" in merged[0], merged
    ok(ctx, "target cpu --threads 1")
    res = ok(ctx, "select --apply")
    params = [e["params"] for e in res.data["selections"] if e["params"].get("partial_reduction") is not None]
    assert [p.get("partial_outputs") for p in params] == [2], res.data["selections"]
    ok(ctx, "bench warmup=1 iterations=2")
    ok(ctx, "apply cpu-lower")
    run = ok(ctx, "run --check --threads 1").data["run"]
    assert run["check"]["passed"], run["check"]


def test_sums_of_different_inputs_are_left_apart(ctx, tmp_path):
    """The second sum reads another value than the first: no siblings, both reductions stay."""
    text = TWO_SUMS.replace("BINPUT", "%y").replace(
        "  %z32 = arith.constant 0.0 : f32\n",
        "  %z32 = arith.constant 0.0 : f32\n  %y = tensor.empty() : tensor<8x256xf32>\n")
    payload = tmp_path / "two_inputs.mlir"
    payload.write_text(text)
    ok(ctx, f"load {payload}")
    ok(ctx, "apply pass lh-merge-sibling-reductions")
    assert len(_reductions(ctx.session.current_ir)) == 2


@pytest.mark.parametrize("threads", [1, 2])
def test_group_norm_reads_its_input_twice_not_three_times(ctx, threads):
    """The wide group norm through `select --apply`: the merge is prepared, the forall's chunk holds two
    reductions of the input (the f64 + f32 sums in one, the variance) instead of three, the two-result one
    scheduled with partial_outputs 2; lowered, run and checked on 1 and 2 threads."""
    ok(ctx, f"load {WIDE_GROUP_NORM}")
    ok(ctx, f"target cpu --threads {threads}")
    res = ok(ctx, "select --apply")
    assert "lh-merge-sibling-reductions" in " ".join(res.data["prepared"])
    assert [e["params"].get("partial_outputs") for e in res.data["selections"]
            if e["params"].get("partial_outputs")] == [2], res.data["selections"]
    ok(ctx, "bench warmup=1 iterations=2")
    ok(ctx, "apply cpu-lower")
    run = ok(ctx, f"run --check --threads {threads}").data["run"]
    assert run["check"]["passed"], run["check"]


def test_group_norm_passes_over_the_input(ctx):
    """After the preparation's steps, the chunk's reductions of the input: two (one of them two-result)."""
    ok(ctx, f"load {WIDE_GROUP_NORM}")
    for p in ("lh-reshape-gathers", "lh-fuse-elementwise", "lh-row-networks{threads=1}"):
        ok(ctx, f"apply pass {p}")
    assert len(_reductions(ctx.session.current_ir)) == 3
    ok(ctx, "apply pass lh-merge-sibling-reductions")
    reductions = _reductions(ctx.session.current_ir)
    assert len(reductions) == 2, reductions
    assert sum(", tensor<" in r.split("outs(")[1] for r in reductions) == 1, reductions


def test_short_rows_are_left_apart_by_the_selector(ctx):
    """The test-shape group norm (rows of 25 elements, under the selector's MERGE_SIBLING_MIN_ROW: short rows
    ran slower merged): the pass is in the preparation but merges nothing; still checked."""
    ok(ctx, f"load {FIXTURES / 'group_norm.mlir'}")
    ok(ctx, "target cpu --threads 1")
    res = ok(ctx, "select --apply")
    assert not any(e["params"].get("partial_outputs") for e in res.data["selections"]), res.data["selections"]
    ok(ctx, "bench warmup=1 iterations=2")
    ok(ctx, "apply cpu-lower")
    run = ok(ctx, "run --check --threads 1").data["run"]
    assert run["check"]["passed"], run["check"]


@pytest.mark.parametrize("min_row, merged", [(256, True), (257, False)])
def test_min_row_bounds_the_innermost_reduced_extent(ctx, tmp_path, min_row, merged):
    """{min-row=N}: sums over rows of 256 merge for N = 256, not for 257."""
    payload = tmp_path / "two_sums.mlir"
    payload.write_text(TWO_SUMS.replace("BINPUT", "%x"))
    ok(ctx, f"load {payload}")
    ok(ctx, f"apply pass lh-merge-sibling-reductions{{min-row={min_row}}}")
    assert len(_reductions(ctx.session.current_ir)) == (1 if merged else 2)


@pytest.mark.parametrize("scale_after_first, merged", [(True, False), (False, True)])
def test_a_value_the_second_body_reads_must_be_defined_before_the_first(ctx, tmp_path, scale_after_first, merged):
    """The second sum's body reads a scalar from outside it (x * 2): defined after the first sum, merging would
    move its use above its definition (the step failed the verifier: `operand #1 does not dominate this use`);
    such a pair stays apart. Defined before the first sum, the pair merges. Either way the run checks."""
    scale = "  %two = arith.constant 2.0 : f32\n"
    text = TWO_SUMS.replace("BINPUT", "%x").replace(
        "    %s = arith.addf %in, %acc : f32\n", "    %m = arith.mulf %in, %two : f32\n    %s = arith.addf %m, %acc : f32\n")
    anchor = "  %z32 = arith.constant 0.0 : f32\n" if scale_after_first else "  %z64 = arith.constant 0.0 : f64\n"
    text = text.replace(anchor, anchor + scale)
    payload = tmp_path / "captured.mlir"
    payload.write_text(text)
    ok(ctx, f"load {payload}")
    ok(ctx, "apply pass lh-merge-sibling-reductions")
    assert len(_reductions(ctx.session.current_ir)) == (1 if merged else 2)
    run = ok(ctx, "run --check").data["run"]
    assert run["check"]["passed"], run["check"]
