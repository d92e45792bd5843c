"""Upstream MLIR test files, second round (llvm-project mlir/test/Integration/Dialect/Linalg/CPU/...).

Before: a RUN line written as upstream's newer integration tests write it,
`// RUN: rm -f %t && %{compile} && %{run} | FileCheck %s` (pack-dynamic-inner-tile.mlir), failed
`run-line` with "RUN line 9 runs no mlir-opt": its `|` chain was read as one command list starting with
`rm`, so neither the mlir-opt chain nor the runner after `&&` were found."""
from __future__ import annotations

from pathlib import Path

from conftest import do, ok

PROGRAM = """\
// DEFINE: %{compile} =  mlir-opt %s \\
// DEFINE:  -canonicalize |\\
// DEFINE: mlir-opt \\
// DEFINE:  -test-lower-to-llvm -o %t
// DEFINE: %{entry_point} = entry
// DEFINE: %{run} = mlir-runner %t -e %{entry_point} -entry-point-result=void \\
// DEFINE:    -shared-libs=%mlir_runner_utils,%mlir_c_runner_utils

// RUN: rm -f %t && %{compile} && %{run} | FileCheck %s --check-prefix=SUM

func.func @entry() {
  %a = arith.constant dense<[1.5, 2.0, 4.0]> : vector<3xf32>
  %b = arith.addf %a, %a : vector<3xf32>
  vector.print %b : vector<3xf32>
  return
}
// SUM: ( 3, 4, 8 )
"""


def test_run_line_chains_after_and_and_are_read_as_the_shell_runs_them():
    from workbench.common.split_input import find_run_lines

    run = find_run_lines(PROGRAM)[0]
    assert [chain[0].split()[0] for chain in run.chains()] == ["rm", "mlir-opt", "mlir-runner"]
    pipelines = run.mlir_opt_pipelines()
    assert pipelines[0] == "canonicalize" and pipelines[-1].endswith("reconcile-unrealized-casts"), pipelines
    assert run.runner().entry == "entry" and run.filecheck().prefixes == ("SUM",)
    two = find_run_lines("// RUN: mlir-opt %s -cse; mlir-opt %s -canonicalize | FileCheck %s\n")[0]
    assert two.mlir_opt_pipelines() == ["cse", "canonicalize"]


def test_a_program_whose_run_line_removes_its_output_first_runs_and_filechecks(ctx, tmp_path):
    path = tmp_path / "and_chain.mlir"
    path.write_text(PROGRAM)
    ok(ctx, f"load {path}")
    ok(ctx, "run-line")
    assert "llvm.func @entry" in ctx.session.current_ir
    run = ok(ctx, "run --filecheck --iterations 2").data["run"]
    assert run["filecheck"]["passed"] and run["filecheck"]["total"] == 1, run["filecheck"]


NAMED_SOFTMAX = """\
func.func @softmax(%arg0: tensor<2x16x32xf32>, %dst: tensor<2x16x32xf32>) -> tensor<2x16x32xf32> {
  %1 = linalg.softmax dimension(2) ins(%arg0 : tensor<2x16x32xf32>) outs(%dst: tensor<2x16x32xf32>) -> tensor<2x16x32xf32>
  return %1 : tensor<2x16x32xf32>
}
"""


def test_a_named_softmax_no_schedule_takes_is_decomposed_before_the_selection_bufferizes(ctx, tmp_path):
    """transform-op-decompose.mlir's @softmax: `select --apply` left the linalg.softmax to its finish step,
    which bufferized it whole; `run` then aborted the compile worker (the lowering's decomposition casts a
    softmax's operands to tensors: "cast<RankedTensorType>() argument of incompatible type")."""
    path = tmp_path / "named_softmax.mlir"
    path.write_text(NAMED_SOFTMAX)
    ok(ctx, f"load {path}")
    ok(ctx, "target cpu")
    ok(ctx, "select --apply")
    assert "linalg.softmax" not in ctx.session.current_ir and "math.exp" in ctx.session.current_ir
    run = ok(ctx, "run --check --iterations 2").data["run"]
    assert run["check"]["passed"], run["check"]


CHUNKED_SCRIPT = """\
// RUN: mlir-opt %s --split-input-file --transform-interpreter | FileCheck %s

func.func @first(%a: tensor<4xf32>) -> tensor<4xf32> {
  return %a : tensor<4xf32>
}

// -----

func.func @second(%input : tensor<4x128xf32>) -> tensor<4x4x32xf32> {
  %expanded = tensor.expand_shape %input [[0], [1, 2]] output_shape [4, 4, 32]
      : tensor<4x128xf32> into tensor<4x4x32xf32>
  return %expanded : tensor<4x4x32xf32>
}

module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%arg1: !transform.any_op {transform.readonly}) {
    %f = transform.structured.match ops{["func.func"]} in %arg1 : (!transform.any_op) -> !transform.any_op
    %tiled, %loop = transform.structured.tile_using_for %f tile_sizes [0, 1] : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
    transform.yield
  }
}
"""


def test_a_chunks_failing_script_names_the_file_and_its_line_not_the_step_input(ctx, tmp_path):
    """tile-expand-shape.mlir --chunk 1: the chunk is parsed from text, so its locations were "-" and a
    step's failure named `<step 1 input>:14:21`; now the file (its own line numbers, as the parse errors)."""
    path = tmp_path / "chunked.mlir"
    path.write_text(CHUNKED_SCRIPT)
    ok(ctx, f"load --chunk 2 {path}")
    before = ctx.session.current_sha
    res = do(ctx, "pass lh-apply-payload-schedule")
    assert not res.ok and f"{path}:18:21:" in res.error and "<step" not in res.error, res.error
    assert ctx.session.current_sha == before and ctx.session.cursor == 0


LEGACY_SCRIPT = """\
// RUN: mlir-opt %s -test-transform-dialect-interpreter -test-transform-dialect-erase-schedule | FileCheck %s

func.func @add(%a: tensor<8x16xf32>, %b: tensor<8x16xf32>) -> tensor<8x16xf32> {
  %0 = linalg.add ins(%a, %b : tensor<8x16xf32>, tensor<8x16xf32>) outs(%a : tensor<8x16xf32>) -> tensor<8x16xf32>
  return %0 : tensor<8x16xf32>
}

transform.sequence failures(propagate) {
^bb0(%arg0: !transform.any_op):
  %0 = transform.structured.match ops{["linalg.add"]} in %arg0 : (!transform.any_op) -> !transform.any_op
  %1, %loop = transform.structured.tile_using_for %0 tile_sizes [4, 0] : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
}

// -----

func.func @two(%a: tensor<8x16xf32>) -> tensor<8x16xf32> {
  %0 = linalg.copy ins(%a : tensor<8x16xf32>) outs(%a : tensor<8x16xf32>) -> tensor<8x16xf32>
  return %0 : tensor<8x16xf32>
}

transform.sequence failures(propagate) {
^bb0(%arg0: !transform.any_op):
  %0 = transform.structured.match ops{["func.func"]} in %arg0 : (!transform.any_op) -> !transform.any_op
  transform.loop.forall_to_for %0 : (!transform.any_op) -> !transform.any_op
}
"""


def test_an_older_files_top_level_transform_sequence_runs_as_its_run_line_says(ctx, tmp_path):
    """transform-op-forall-to-for.mlir (older upstream files): a top-level `transform.sequence` run by the removed
    -test-transform-dialect-interpreter. Before: run-line refused the test pass, `pass lh-apply-payload-schedule`
    said "unknown: could not find a nested named sequence with name: __transform_main"."""
    path = tmp_path / "legacy.mlir"
    path.write_text(LEGACY_SCRIPT)
    ok(ctx, f"load --chunk 1 {path}")
    ok(ctx, "run-line")
    ir_text = ctx.session.current_ir
    assert "scf.for" in ir_text and "transform." not in ir_text, ir_text
    assert ok(ctx, "run --check --iterations 2").data["run"]["check"]["passed"]
    ok(ctx, f"load --chunk 2 {path}")
    res = do(ctx, "pass lh-apply-payload-schedule")
    assert not res.ok and f"{path}:24:3: expected the payload to be scf.forall" in res.error, res.error
    assert ctx.session.cursor == 0
    # a named script without the entry asked for names those it has
    ok(ctx, f"load {Path(__file__).parent / 'payloads' / 'upstream_conv_1d_call.mlir'}")
    res = do(ctx, "pass lh-apply-payload-schedule{entry=main}")
    assert not res.ok and "has no `transform.named_sequence @main` (it has @__transform_main" in res.error, res.error


def test_pass_options_mlir_removed_are_dropped_from_older_run_lines():
    """one-shot-module-bufferize-out-params.mlir (older): `-one-shot-bufferize="bufferize-function-boundaries
    allow-return-allocs ..."` failed run-line with "no such option allow-return-allocs" (removed in LLVM 18:
    returning allocations is what the pass does now)."""
    from workbench.common.split_input import find_run_lines

    run = find_run_lines('// RUN: mlir-opt %s -one-shot-bufferize="bufferize-function-boundaries allow-return-allocs '
                         'create-deallocs=0 function-boundary-type-conversion=identity-layout-map" -cse\n')[0]
    assert run.mlir_opt_pipelines() == [
        "one-shot-bufferize{bufferize-function-boundaries function-boundary-type-conversion=identity-layout-map},cse"]
    only_removed = find_run_lines('// RUN: mlir-opt %s -one-shot-bufferize="allow-return-allocs"\n')[0]
    assert only_removed.mlir_opt_pipelines() == ["one-shot-bufferize"]
    kept = find_run_lines('// RUN: mlir-opt %s -canonicalize="create-deallocs"\n')[0]   # only that pass's options
    assert kept.mlir_opt_pipelines() == ["canonicalize{create-deallocs}"]
