"""Upstream MLIR test files that carry their own transform script (`module attributes
{transform.with_named_sequence}` next to the code, tests/payloads/upstream_*.mlir, from llvm-project).

Before: `run`, `run --check` and `select --apply` failed on them (the script's transform ops were left
for the LLVM lowering: "ops remain outside the LLVM dialect: transform.named_sequence, ..."; the
selector's finish step found two modules), and `pass transform-interpreter` left the script in the
module. Now every lowering, the check's reference and `select` erase the script first
(lh-frontend-to-linalg), and `pass lh-apply-payload-schedule` runs it as one step and erases it."""
from __future__ import annotations

from pathlib import Path

import pytest

from conftest import do, ok

PAYLOADS = Path(__file__).parent / "payloads"
CONV = PAYLOADS / "upstream_conv_1d_call.mlir"
SUBF = PAYLOADS / "upstream_tile_reduction_subf.mlir"
EXPECTED = "[12,  28,  28,  28,  12,  12]"


def test_program_with_its_own_script_runs_and_is_checked_unscheduled(ctx):
    ok(ctx, f"load {CONV}")
    assert "carries a transform script: `pass lh-apply-payload-schedule`" in ok(ctx, "inspect").summary
    run = ok(ctx, "run --check --iterations 2").data["run"]
    assert EXPECTED in run["stdout"] and run["check"]["passed"], run["stdout"]


def test_payload_script_applies_as_one_step_and_leaves_no_transform_ops(ctx):
    ok(ctx, f"load {CONV}")
    res = ok(ctx, "pass lh-apply-payload-schedule")
    ir_text = ctx.session.current_ir
    conv = ir_text[ir_text.index("@conv_1d("):ir_text.index("@main(")]
    assert "scf.for" in conv and "linalg.conv_1d" in conv, conv          # tiled by 4, as the script says
    assert "transform." not in ir_text and "with_named_sequence" not in ir_text
    assert res.ok
    run = ok(ctx, "run --check --iterations 2").data["run"]
    assert EXPECTED in run["stdout"] and run["check"]["passed"]


def test_select_on_a_payload_with_a_script_schedules_the_program(ctx):
    ok(ctx, f"load {CONV}")
    ok(ctx, "target cpu")
    ok(ctx, "select --apply")
    assert "transform.named_sequence" not in ctx.session.current_ir
    ok(ctx, "bench")
    ok(ctx, "apply cpu-lower")
    run = ok(ctx, "run --check --iterations 2").data["run"]
    assert EXPECTED in run["stdout"] and run["check"]["passed"]


def test_failing_or_missing_script_is_one_line_and_changes_nothing(ctx):
    ok(ctx, f"load {SUBF}")
    s = ctx.session
    before = (s.cursor, s.current_sha)
    res = do(ctx, "pass lh-apply-payload-schedule")
    assert not res.ok and "\n" not in res.error and "Traceback" not in (res.detail or ""), res.detail
    assert "upstream_tile_reduction_subf.mlir:11:10" in res.error and "identity value" in res.error, res.error
    assert (s.cursor, s.current_sha) == before
    # the script is erased, not run, by the lowering: the payload itself runs and checks
    assert ok(ctx, "run --check --iterations 2").data["run"]["check"]["passed"]
    ok(ctx, f"load {PAYLOADS / 'program_tensor.mlir'}")
    res = do(ctx, "pass lh-apply-payload-schedule")
    assert not res.ok and "holds no transform script" in res.error and "\n" not in res.error


def test_interpreter_without_an_entry_says_so_without_dumping_the_module(ctx):
    ok(ctx, f"load {PAYLOADS / 'program_tensor.mlir'}")
    res = do(ctx, "pass transform-interpreter")
    assert not res.ok and "carries no transform script" in res.error and "\n" not in res.error, res.error
    assert "func.func" not in (res.detail or "")    # MLIR's note printed the whole module


NAMED = PAYLOADS / "upstream_named_ops.mlir"


def test_selector_schedules_a_matmul_on_memrefs(ctx):
    """The packed matmul schedule (pads, packs) failed on a memref matmul: "failed to pad op"."""
    ok(ctx, f"load --chunk 1 {NAMED}")
    ok(ctx, "target cpu")
    res = ok(ctx, "select --apply")
    assert not any("matmul.py" in e["schedule"] for e in res.data["selections"]), res.data["selections"]
    ok(ctx, "bench")
    ok(ctx, "apply cpu-lower")
    assert ok(ctx, "run --check --iterations 2").data["run"]["check"]["passed"]


def test_complex_matmul_stays_scalar_and_runs_checked(ctx):
    """Vectors cannot hold complex numbers: the generic schedule's vectorization failed. The run refused
    complex inputs once ("complex<f32> has no numpy equivalent"); they are numpy complex64 now."""
    ok(ctx, f"load --chunk 2 {NAMED}")
    ok(ctx, "target cpu")
    res = ok(ctx, "select --apply")
    per_op = [e["params"] for e in res.data["selections"] if "op" in e["params"]]
    assert per_op and all(p.get("vector") == 0 for p in per_op), res.data["selections"]
    ok(ctx, "bench")
    ok(ctx, "apply cpu-lower")
    assert ok(ctx, "run --check --iterations 2").data["run"]["check"]["passed"]


def test_dynamic_memref_arguments_are_specialized_as_the_run_error_says(ctx):
    ok(ctx, f"load --chunk 3 {NAMED}")
    res = do(ctx, "run")
    assert not res.ok and "lh-specialize-shapes" in res.error     # the way out it names must work
    ok(ctx, "pass lh-specialize-shapes{shapes=0:2x16x4,1:3x4x8,2:2x14x8}")
    assert "memref<2x16x4xf32>" in ctx.session.current_ir and "memref<?x?x?xf32>" not in ctx.session.current_ir
    assert ok(ctx, "run --check --iterations 2").data["run"]["check"]["passed"]
    res = do(ctx, "pass lh-specialize-shapes{shapes=0:2x16}")
    assert not res.ok and "does not fit" in res.error


def test_element_type_of_shaped_types():
    from workbench.common.dtypes import element_type_of

    assert element_type_of("tensor<16x8xcomplex<f32>>") == "complex<f32>"      # was "<f32"
    assert element_type_of("memref<?x4xf32, strided<[?, 1], offset: ?>>") == "f32"
    assert element_type_of("tensor<*xbf16>") == "bf16" and element_type_of("tensor<i1>") == "i1"
    assert element_type_of("vector<[4]x8xi8>") == "i8" and element_type_of("f16") == "f16"


PACKS = PAYLOADS / "upstream_pack_unpack_fuse.mlir"


@pytest.mark.parametrize("chunk", [1, 2])
def test_payload_packs_and_unpacks_lower_scheduled_or_not(ctx, chunk):
    """A linalg.unpack / linalg.pack the payload holds has no bufferization ("op was not bufferized" in
    run, run --check and select): cpu-lower, the reference and select's finish step lower them."""
    for script in (["run --check --iterations 2"],
                   ["pass lh-apply-payload-schedule", "run --check --iterations 2"],
                   ["target cpu", "select --apply", "bench", "apply cpu-lower", "run --check --iterations 2"]):
        ok(ctx, f"load --chunk {chunk} {PACKS}")
        for line in script:
            res = ok(ctx, line)
        assert res.data["run"]["check"]["passed"], script


VECTOR_PROGRAM = """\
// DEFINE: %{lower} = -test-lower-to-llvm
// RUN: mlir-opt %s %{lower} | mlir-runner -e entry -entry-point-result=void | FileCheck %s
// RUN: mlir-opt %s -convert-vector-to-scf -convert-scf-to-cf -convert-vector-to-llvm \\
// RUN:   -convert-func-to-llvm -reconcile-unrealized-casts | FileCheck %s
func.func @entry() {
  %a = arith.constant dense<[1.5, 2.0, 4.0]> : vector<3xf32>
  %b = arith.addf %a, %a : vector<3xf32>
  vector.print %b : vector<3xf32>
  return
}
// CHECK: ( 3, 4, 8 )
"""


@pytest.mark.parametrize("run_line", [1, 2])
def test_a_program_lowered_by_its_run_line_runs_and_is_checked(ctx, tmp_path, run_line):
    """`run-line` then `run`: the RUN line lowers the program to LLVM (1: all of it, through mlir-opt's test
    pipeline's equivalent; 2: in part, arith left), which `run` refused ("already in the LLVM dialect and
    has no benchmark wrapper"); now a wrapper calls the lowered @entry."""
    path = tmp_path / "vector_program.mlir"
    path.write_text(VECTOR_PROGRAM)
    ok(ctx, f"load {path}")
    ok(ctx, f"run-line {run_line}")
    assert "llvm.func @entry" in ctx.session.current_ir
    run = ok(ctx, "run --check --iterations 2").data["run"]
    assert "( 3, 4, 8 )" in run["stdout"] and run["check"]["passed"], run["stdout"]
    assert run["stdout"].count("( 3, 4, 8 )") == 1         # the plain call's print only


def test_run_line_of_a_file_with_its_own_script(ctx):
    """RUN: -transform-interpreter -test-transform-dialect-erase-schedule ...: the test pass (not in the
    wheels) is lh-erase-transform-schedules, a step of its own."""
    ok(ctx, f"load {CONV}")
    ok(ctx, "run-line")
    assert [a.step.spec for a in ctx.session.active_steps] == [
        "transform-interpreter", "lh-erase-transform-schedules", "convert-linalg-to-loops"]
    run = ok(ctx, "run --check --iterations 2").data["run"]
    assert EXPECTED in run["stdout"] and run["check"]["passed"]


def test_defines_expand_in_run_lines_as_they_stand():
    from workbench.common.split_input import find_run_lines

    text = ("// DEFINE: %{opts} = -canonicalize \\\n// DEFINE:   -cse\n// DEFINE: %{compile} = mlir-opt %s %{opts}\n"
            "// RUN: %{compile} | FileCheck %s\n// REDEFINE: %{opts} = -cse\n// RUN: %{compile}\n"
            "// RUN: mlir-opt %s %{undefined}\n")
    runs = find_run_lines(text)
    assert [" ".join(r.command.split()) for r in runs] == ["mlir-opt %s -canonicalize -cse | FileCheck %s", "mlir-opt %s -cse",
                                         "mlir-opt %s %{undefined}"]
    assert [r.number for r in runs] == [4, 6, 7]
    assert runs[0].mlir_opt_pipelines() == ["canonicalize,cse"]
    cyclic = find_run_lines("// DEFINE: %{a} = %{a} x\n// RUN: %{a}\n")   # stops, does not hang
    assert cyclic[0].command.endswith("x")


def test_tosa_dynamic_batch_is_specialized_through_the_tosa_ops(ctx):
    """tensor.cast does not fold into TOSA ops: the specialized arguments reached tosa.matmul through a cast
    back to `?`, the result stayed tensor<?x5x6xf32> and the wrapper refused it."""
    ok(ctx, f"load {PAYLOADS / 'upstream_tosa_matmul_dyn_batch.mlir'}")
    ok(ctx, "pass lh-specialize-shapes{shapes=0:2x5x3,1:2x3x6}")
    assert "-> tensor<2x5x6xf32>" in ctx.session.current_ir and "tensor.cast" not in ctx.session.current_ir
    assert ok(ctx, "run --check --iterations 2").data["run"]["check"]["passed"]
    ok(ctx, "target cpu")
    ok(ctx, "select --apply")
    ok(ctx, "bench")
    ok(ctx, "apply cpu-lower")
    assert ok(ctx, "run --check --iterations 2").data["run"]["check"]["passed"]


def test_test_passes_and_removed_passes_in_run_lines():
    from workbench.common.split_input import find_run_lines

    run = find_run_lines("// RUN: mlir-opt %s -convert-linalg-to-loops -convert-linalg-to-llvm "
                         "-test-transform-dialect-erase-schedule -cse | FileCheck %s\n")[0]
    assert run.mlir_opt_pipelines() == ["convert-linalg-to-loops", "lh-erase-transform-schedules", "cse"]
    old = find_run_lines("// RUN: mlir-opt %s -linalg-bufferize -arith-bufferize -tensor-bufferize -func-bufferize "
                         "-finalizing-bufferize -buffer-deallocation -convert-linalg-to-loops\n")[0]
    assert old.mlir_opt_pipelines() == ["one-shot-bufferize{bufferize-function-boundaries},"
                                        "buffer-deallocation-pipeline,convert-linalg-to-loops"]
    lower = find_run_lines("// RUN: mlir-opt %s -test-lower-to-llvm\n")[0].mlir_opt_pipelines()
    # (bool buffers widened first: the memref lowering in it aborts on memref<...xi1>)
    assert lower[0] == "lh-widen-i1-memrefs" and len(lower) == 2
    assert lower[1].endswith("convert-func-to-llvm,convert-cf-to-llvm,reconcile-unrealized-casts")


def test_bench_step_on_a_lowered_program(ctx, tmp_path):
    path = tmp_path / "vector_program.mlir"
    path.write_text(VECTOR_PROGRAM)
    ok(ctx, f"load {path}")
    ok(ctx, "run-line 2")                  # arith / cf left in the llvm.func
    ok(ctx, "bench iterations=3")          # "cannot pick the entry function" before: it looked for func.func
    ok(ctx, "apply cpu-lower")
    run = ok(ctx, "run --check").data["run"]
    assert "( 3, 4, 8 )" in run["stdout"] and run["check"]["passed"] and run["iterations"] == 3


def test_whole_split_file_without_an_entry_names_the_chunks(ctx):
    ok(ctx, f"load {NAMED}")
    res = do(ctx, "run")
    assert not res.ok and "cannot pick the entry function" in res.error
    assert "load --chunk K upstream_named_ops.mlir" in res.error and "3 `// -----` chunks" in res.error, res.error


def test_function_without_results_checks_what_it_prints_after_bufferization(ctx, tmp_path):
    """A tensor function that returns nothing (upstream's `-> ()` pooling tests): once bufferized its memref
    argument was taken for an output and compared with a reference that has none ("max abs err inf")."""
    path = tmp_path / "dead.mlir"
    path.write_text("func.func @dead(%a: tensor<8x16xf32>) {\n  %e = tensor.empty() : tensor<8x16xf32>\n"
                    "  %0 = linalg.exp ins(%a : tensor<8x16xf32>) outs(%e : tensor<8x16xf32>) -> tensor<8x16xf32>\n"
                    "  return\n}\n")
    ok(ctx, f"load {path}")
    for line in ("target cpu", "select --apply", "bench", "apply cpu-lower"):
        ok(ctx, line)
    check = ok(ctx, "run --check --iterations 2").data["run"]["check"]
    assert check["passed"] and check["compared"] == "stdout", check
