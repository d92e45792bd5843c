"""Upstream MLIR test files, second round (llvm-project mlir/test/Integration/Dialect/Linalg/CPU/...).

Before: a RUN line written as upstream's newer integration tests write it,
`// RUN: rm -f %t && %{compile} && %{run} | FileCheck %s` (pack-dynamic-inner-tile.mlir), failed
`run-line` with "RUN line 9 runs no mlir-opt": its `|` chain was read as one command list starting with
`rm`, so neither the mlir-opt chain nor the runner after `&&` were found."""
from __future__ import annotations

from conftest import ok

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
