"""Upstream MLIR integration tests (`mlir-opt ... | mlir-runner -e entry ... | FileCheck %s`, files under
tests/payloads/integration/, from llvm-project mlir/test/Integration/Dialect/*/CPU): `run --filecheck`
matches what the program prints against the file's CHECK lines, after the RUN line's passes (`run-line`)
or after the workbench's own lowering; and the CHECK matcher itself, directive by directive."""
from __future__ import annotations

from pathlib import Path

import pytest

from conftest import do, ok

INTEGRATION = Path(__file__).parent / "payloads" / "integration"


# -- the matcher ------------------------------------------------------------------------------------
def _fc(checks: str, output: str, **kw):
    from workbench.common.filecheck_output import filecheck_output

    return filecheck_output(checks, output, check_file="t.mlir", **kw)


@pytest.mark.parametrize("checks, output", [
    ("// CHECK: b\n// CHECK: d\n", "a\nb\nc\nd\n"),
    ("// CHECK: a\n// CHECK-NEXT: b\n", "a\nb\n"),
    ("// CHECK: x = \n// CHECK-SAME: 42\n", "x = 42\n"),
    ("// CHECK: a\n// CHECK-NOT: zzz\n// CHECK: c\n", "a\nb\nc\n"),
    ("// CHECK-LABEL: @f\n// CHECK: 1\n// CHECK-LABEL: @g\n// CHECK: 2\n", "@f\n1\n@g\n2\n"),
    ("// CHECK: a\n// CHECK-EMPTY:\n// CHECK-NEXT: b\n", "a\n\nb\n"),
    ("// CHECK: base@ = {{0x[0-9a-f]+}} rank\n", "base@ = 0x5ab3 rank = 1\n"),
    ("// CHECK: v = [[V:[0-9]+]]\n// CHECK: again [[V]]\n", "v = 17\nagain 17\n"),
    ("// CHECK-NEXT{LITERAL}: [[[1, 2]]]\n", "[[[1, 2]]]\n"),
])
def test_each_directive_matches_what_it_should(checks, output):
    report = _fc(checks, output)
    assert report.passed and report.matched == report.total > 0, report.to_json()


@pytest.mark.parametrize("checks, output, line, near", [
    ("// CHECK: b\n// CHECK: e\n", "a\nb\nc\nd\n", 2, None),
    ("// CHECK: a\n// CHECK-NEXT: c\n", "a\nb\nc\n", 2, 2),
    ("// CHECK: x = \n// CHECK-SAME: 43\n", "x = 42\n43\n", 2, None),
    ("// CHECK: a\n// CHECK-NOT: b\n// CHECK: c\n", "a\nb\nc\n", 2, 2),
    ("// CHECK-LABEL: @h\n", "@f\n1\n", 1, None),
    ("// CHECK: a\n// CHECK-EMPTY:\n", "a\nb\n", 2, None),
    ("// CHECK: v = [[V:[0-9]+]]\n// CHECK: again [[V]]\n", "v = 17\nagain 18\n", 2, None),
])
def test_each_directive_fails_where_it_should_and_says_where(checks, output, line, near):
    report = _fc(checks, output)
    f = report.first_failure
    assert not report.passed and f["location"] == f"t.mlir:{line}" and f["line"] == line, report.to_json()
    assert f["expected"] == checks.splitlines()[line - 1].split(":", 1)[1].strip()
    assert report.matched == line - 1
    if near is not None:
        assert f["nearest_output_line"] == near and f["nearest_output"] == output.splitlines()[near - 1]
    assert "\n" not in report.summary() and f"t.mlir:{line}" in report.summary()


def test_prefixes_full_lines_and_nearest_line():
    checks = "// A: one\n// B: two\n// CHECK: three\n"
    assert _fc(checks, "one\ntwo\n", prefixes=["A", "B"]).passed
    assert not _fc(checks, "one\ntwo\n").passed                    # CHECK: three is not there
    assert _fc("// CHECK: 1\n", "10\n").passed
    report = _fc("// CHECK: 1\n", "10\n", match_full_lines=True)
    assert not report.passed and report.first_failure["nearest_output"] == "10"
    report = _fc("// CHECK: [1, 2, 3]\n// CHECK-NEXT: [4, 5, 7]\n", "[1, 2, 3]\n[4, 5, 6]\n")
    assert report.first_failure["nearest_output_line"] == 2, report.to_json()
    assert "[4, 5, 6]" in report.body("[1, 2, 3]\n[4, 5, 6]\n")


def test_check_next_matches_the_first_occurrence_on_the_line():
    """filecheck 1.0.6 compiles CHECK-NEXT greedily (the last `[` of `[[36, ...`): the CHECK-SAME after it
    failed on printMemrefF32's first row (upstream test-conv-2d-call.mlir)."""
    checks = "// CHECK: data =\n// CHECK-NEXT: [\n// CHECK-SAME: [36,   52],\n// CHECK-COUNT-2: [36,   36]\n"
    output = "data =\n[[36,   52], \n [36,   36], \n [36,   36]]\n"
    assert _fc(checks, output).passed, _fc(checks, output).to_json()


# -- RUN lines ----------------------------------------------------------------------------------------
def test_runner_and_filecheck_options_of_run_lines():
    from workbench.common.split_input import find_run_lines

    text = ("// RUN: mlir-opt %s -convert-func-to-llvm | mlir-cpu-runner -e test_zero -entry-point-result=i32 \\\n"
            "// RUN:   -shared-libs=%mlir_lib_dir/libmlir_c_runner_utils%shlibext,%mlir_runner_utils \\\n"
            "// RUN: | FileCheck %s --check-prefix=ZERO --match-full-lines\n"
            "// RUN: mlir-opt %s | FileCheck %s\n")
    runs = find_run_lines(text)
    runner = runs[0].runner()
    assert (runner.entry, runner.result, runner.shared_libs) == ("test_zero", "i32",
                                                                 ("mlir_c_runner_utils", "mlir_runner_utils"))
    fc = runs[0].filecheck()
    assert fc.prefixes == ("ZERO",) and fc.match_full_lines and not fc.strict_whitespace
    assert runs[1].runner() is None and runs[1].filecheck().prefixes == ("CHECK",)


def test_test_library_passes_are_named_and_bool_buffers_are_widened_before_the_memref_lowering():
    from workbench.common.split_input import ChunkError, find_run_lines

    run = find_run_lines("// RUN: mlir-opt %s -test-linalg-transform-patterns=test-patterns -cse\n")[0]
    with pytest.raises(ChunkError, match="-test-linalg-transform-patterns is a pass of mlir-opt's test library"):
        run.mlir_opt_pipelines()
    run = find_run_lines("// RUN: mlir-opt %s -buffer-deallocation-pipeline -convert-arith-to-llvm "
                         "-finalize-memref-to-llvm -convert-func-to-llvm\n")[0]
    assert run.mlir_opt_pipelines() == ["buffer-deallocation-pipeline,convert-arith-to-llvm", "lh-widen-i1-memrefs",
                                        "finalize-memref-to-llvm,convert-func-to-llvm"]
    old = find_run_lines("// RUN: mlir-opt %s -convert-linalg-to-loops --convert-memref-to-llvm -convert-func-to-llvm\n")[0]
    assert old.mlir_opt_pipelines() == ["convert-linalg-to-loops", "lh-widen-i1-memrefs",   # (renamed in LLVM 17)
                                        "finalize-memref-to-llvm,convert-func-to-llvm"]


# -- whole files ------------------------------------------------------------------------------------------
def test_old_run_line_with_bool_ownership_buffers_runs_and_matches(ctx):
    """buffer-deallocation-pipeline leaves memref<?xi1> ownership buffers: the RUN line's
    finalize-memref-to-llvm aborted the compile worker (`integralElementType.getWidth() >= 8`)."""
    ok(ctx, f"load {INTEGRATION / 'linalg-test-collapse-tensor.mlir'}")
    ok(ctx, "run-line")
    assert "lh-widen-i1-memrefs" in [a.step.spec for a in ctx.session.active_steps]
    res = ok(ctx, "run --filecheck --iterations 1")
    fc = res.data["run"]["filecheck"]
    assert fc["passed"] and fc["matched"] == fc["total"] == 14, fc
    assert "filecheck passed (14/14 CHECK lines)" in res.summary and "output line 2" in res.body


@pytest.mark.parametrize("run_line, prefix, printed", [(1, "CHECK_TEST_7i32_TO_29", "29"),
                                                       (3, "CHECK_TEST_7i64_TO_61", "61")])
def test_entry_with_a_scalar_result_prints_it_as_mlir_runner(ctx, run_line, prefix, printed):
    """`-e test_7i32_to_29 -entry-point-result=i32`: the RUN line's entry is run and its result printed, on
    the RUN line's lowering (the lowered program returns i32: `run` refused it) and on the workbench's."""
    path = INTEGRATION / "math-mathtofuncs_ctlz.mlir"
    for script in ([f"run-line {run_line}"], []):
        ok(ctx, f"load {path}")
        for line in script:
            ok(ctx, line)
        run = ok(ctx, f"run --filecheck --run-line {run_line} --iterations 1").data["run"]
        assert run["stdout"].strip().splitlines()[-1] == printed, run["stdout"]
        assert run["filecheck"]["passed"] and run["filecheck"]["prefixes"] == [prefix], (script, run["filecheck"])


def test_filecheck_failure_is_one_line_naming_the_check_and_the_output(ctx, tmp_path):
    text = (INTEGRATION / "arith-index-casts.mlir").read_text().replace("CHECK-NEXT: 334", "CHECK-NEXT: 335")
    path = tmp_path / "index-casts-wrong.mlir"
    path.write_text(text)
    ok(ctx, f"load {path}")
    res = do(ctx, "run --filecheck --iterations 1")
    assert not res.ok and "\n" not in res.error, res.error
    line = next(i for i, t in enumerate(text.splitlines(), 1) if "CHECK-NEXT: 335" in t)
    assert f"index-casts-wrong.mlir:{line}: CHECK-NEXT: '335'" in res.error and "'334'" in res.error, res.error
    assert "own lowering ran, not the RUN line's passes: `run-line 1` applies them" in res.error   # no step applied
    fc = res.data["run"]["filecheck"]
    assert fc["matched"] == 7 and fc["total"] == 8 and fc["first_failure"]["nearest_output"] == "334"
    res = do(ctx, "run --filecheck --check-prefixes NOPE --iterations 1")
    assert not res.ok and "no NOPE lines" in res.error


def test_run_line_with_a_library_the_wheels_lack_says_so(ctx, tmp_path):
    path = tmp_path / "sme.mlir"
    path.write_text("// RUN: mlir-opt %s | mlir-runner -e main -entry-point-result=void "
                    "-shared-libs=%mlir_arm_sme_abi_stubs,%mlir_rocm_runtime | FileCheck %s\n"
                    "func.func @main() {\n  return\n}\n// CHECK: x\n")
    ok(ctx, f"load {path}")
    res = do(ctx, "run --filecheck")
    # (the ROCm runtime is no part of the wheels; %native_mlir_runner_utils, which this test named before, is
    # the Arm tests' name of the host's runner utils, read since QA round 12)
    assert not res.ok and "\n" not in res.error
    assert "-shared-libs" in res.error and "mlir_rocm_runtime" in res.error, res.error


def test_checks_with_count_and_next_on_printed_memrefs(ctx):
    ok(ctx, f"load {INTEGRATION / 'linalg-test-conv-2d-call.mlir'}")
    fc = ok(ctx, "run --filecheck --iterations 1").data["run"]["filecheck"]
    assert fc["passed"] and fc["total"] == 5, fc


def test_runner_on_a_compiled_file_takes_the_run_line_that_wrote_it(ctx, tmp_path):
    """`RUN: %{compile}` (mlir-opt ... -o %t) then `RUN: %{run} | FileCheck %s` (mlir-runner %t -e NAME):
    `run-line 2` failed ("runs no mlir-opt"); it applies line 1's passes, and --filecheck runs @NAME."""
    from workbench.common.split_input import compiling_run_line, find_run_lines

    text = ("// DEFINE: %{compile} = mlir-opt %s -test-lower-to-llvm -o %t\n"
            "// DEFINE: %{run} = mlir-runner %t -e probe -entry-point-result=void -shared-libs=%mlir_c_runner_utils\n"
            "// RUN: %{compile}\n// RUN: %{run} | FileCheck %s\n"
            "func.func @probe() {\n  %c = arith.constant dense<[7, 9]> : vector<2xi32>\n"
            "  vector.print %c : vector<2xi32>\n  return\n}\n// CHECK: ( 7, 9 )\n")
    runs = find_run_lines(text)
    assert compiling_run_line(runs, runs[1]) is runs[0] and compiling_run_line(runs, runs[0]) is runs[0]
    path = tmp_path / "compile_then_run.mlir"
    path.write_text(text)
    ok(ctx, f"load {path}")
    ok(ctx, "run-line 2")
    assert "llvm.func @probe" in ctx.session.current_ir
    run = ok(ctx, "run --filecheck --iterations 1").data["run"]
    assert run["entry"] == "probe" and run["filecheck"]["passed"], run


def test_runtime_verification_reports_every_failed_check_and_goes_on(ctx):
    """-test-cf-assert (mlir-opt's test pass: a failed cf.assert prints its message and the program goes on)
    ran as nothing, so the first failed check aborted the program; `-shared-libs=%tlir_runner_utils` (lit
    expands %t first: a file that does not exist, which mlir-runner skips) was refused."""
    ok(ctx, f"load {INTEGRATION / 'tensor-extract-runtime-verification.mlir'}")
    ok(ctx, "run-line 1")
    assert "lh-report-failed-asserts" in [a.step.spec for a in ctx.session.active_steps]
    run = ok(ctx, "run --filecheck --iterations 1").data["run"]
    assert run["stdout"].count("ERROR: Runtime op verification failed") == 3, run["stdout"]
    assert run["filecheck"]["passed"] and run["filecheck"]["total"] == 15, run["filecheck"]


def test_failed_asserts_are_reported_in_place():
    from mlir import ir

    from workbench.worker.report_asserts import report_failed_asserts

    with ir.Context(), ir.Location.unknown():
        module = ir.Module.parse('func.func @f(%a: i1, %b: i1) {\n  cf.assert %a, "bad \\"a\\"\\n"\n'
                                 '  cf.assert %b, "bad b"\n  cf.assert %a, "bad \\"a\\"\\n"\n  return\n}\n')
        assert report_failed_asserts(module) == 3
        module.operation.verify()
        text = str(module)
    assert "cf.assert" not in text and text.count("llvm.call @_lh_assert_report_0(") == 2
    assert "llvm.call @puts" in text and 'bad \\22a\\22\\0A\\00' in text


F32_RESULT = """\
// RUN: mlir-opt %s -convert-arith-to-llvm -convert-func-to-llvm -reconcile-unrealized-casts | \\
// RUN:   mlir-runner -e half_of_five -entry-point-result=f32 | FileCheck %s
func.func @half_of_five() -> f32 {
  %c = arith.constant 2.5 : f32
  return %c : f32
}
// CHECK: 2.500000e+00
"""


def test_f32_entry_result_is_printed_in_mlir_runners_format(ctx, tmp_path):
    """mlir-runner prints an f32 result with raw_ostream's %e (2.500000e+00), after the RUN line's lowering
    (a lowered program returning f32: `run` refused it) and after the workbench's own."""
    path = tmp_path / "f32_result.mlir"
    path.write_text(F32_RESULT)
    for script in (["run-line"], []):
        ok(ctx, f"load {path}")
        for line in script:
            ok(ctx, line)
        run = ok(ctx, "run --filecheck --iterations 1").data["run"]
        assert run["entry"] == "half_of_five" and run["stdout"].strip() == "2.500000e+00", (script, run["stdout"])
        assert run["filecheck"]["passed"]


def test_missing_runtime_function_is_named(ctx, tmp_path):
    """A program calling a function no runtime library defines failed with "RuntimeError: Unknown function
    _lh_call" (the JIT could not link the wrapper); the function is named now."""
    path = tmp_path / "missing_function.mlir"
    path.write_text("// RUN: mlir-opt %s -convert-func-to-llvm | mlir-runner -e main -entry-point-result=void\n"
                    "func.func private @printNothingKnown(i64)\nfunc.func @main() {\n"
                    "  %c = arith.constant 3 : i64\n  call @printNothingKnown(%c) : (i64) -> ()\n  return\n}\n")
    for script in (["run-line"], []):
        ok(ctx, f"load {path}")
        for line in script:
            ok(ctx, line)
        res = do(ctx, "run --iterations 1")
        assert not res.ok and "\n" not in res.error, res.error
        assert "missing runtime function @printNothingKnown" in res.error and "libmlir_c_runner_utils.so" in res.error


LLI_PROGRAM = """\
// RUN: mlir-opt %s -convert-vector-to-llvm -test-lower-to-llvm | mlir-translate --mlir-to-llvmir | \\
// RUN: %lli --entry-function=entry --dlopen=%mlir_c_runner_utils | FileCheck %s
func.func @entry() -> i32 {
  %i0 = arith.constant 0 : i32
  %v = arith.constant dense<[0.5, 2.0]> : vector<2xf32>
  %r = arith.addf %v, %v : vector<2xf32>
  // CHECK: ( 1, 4 )
  vector.print %r : vector<2xf32>
  return %i0 : i32
}
"""


def test_a_program_that_returns_a_value_prints_for_filecheck_on_the_workbench_lowering(ctx, tmp_path):
    """An entry with a result (upstream's X86Vector tests: `func.func @entry() -> i32`, run by lli, no
    mlir-runner options) has an output, so `run` timed it without the plain call that captures what it
    prints: `run --filecheck` on the workbench's own lowering found no output at all."""
    path = tmp_path / "lli_program.mlir"
    path.write_text(LLI_PROGRAM)
    ok(ctx, f"load {path}")
    run = ok(ctx, "run --filecheck --iterations 1").data["run"]
    assert run["stdout"].strip() == "( 1, 4 )" and run["filecheck"]["passed"], run.get("stdout")
