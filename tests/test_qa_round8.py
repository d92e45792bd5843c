"""Eighth QA round: upstream MLIR integration tests run for real, hostile sessions and pipeline files, round 7's
leftovers; each test failed before its fix (docs/qa-round8.md)."""
from __future__ import annotations

import pytest

from conftest import MATMUL, failed, ok

# a transform module whose first sequence fails the verifier (an op with a result more than MLIR 22 gives it,
# as upstream's newer pack-unpack-mmt4d.mlir has), a second sequence and a function after it: MLIR verifies
# the isolated ops in parallel, and the error reported from a pool thread aborted the compile worker
BAD_TRANSFORM_MODULE = """\
module @transforms attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%m: !transform.any_op {transform.readonly}) {
    %u = transform.structured.match ops{["linalg.unpack"]} in %m : (!transform.any_op) -> !transform.op<"linalg.unpack">
    transform.structured.lower_unpack %u : (!transform.op<"linalg.unpack">) -> (!transform.op<"tensor.empty">, !transform.op<"linalg.copy">)
    transform.yield
  }
  transform.named_sequence @other(%e: !transform.any_op {transform.readonly}) -> !transform.any_op {
    transform.yield %e : !transform.any_op
  }
}
func.func @main() {
  return
}
"""


def test_a_verifier_error_inside_an_isolated_op_fails_at_its_line_every_time(ctx, tmp_path):
    """The bindings collect verifier errors in a handler that makes Python objects without the GIL; reported
    from one of MLIR's pool threads, nanobind aborted the worker ("incref_check(): ... GIL was not held") on
    about one load in three, and the load failed with that instead of the file's line."""
    path = tmp_path / "lower_unpack_results.mlir"
    path.write_text(BAD_TRANSFORM_MODULE)
    for _ in range(12):
        error = failed(ctx, f"load {path}")
        assert "SIGABRT" not in error and "nanobind" not in error, error
        assert error.startswith(f"{path}:4:5: 'transform.structured.lower_unpack' op expected 4 results"), error
    ok(ctx, f"load {MATMUL}")     # the same worker goes on


OWNERSHIP_BUFFERS_THEN_CONVERT_TO_LLVM = """\
// RUN: mlir-opt %s -one-shot-bufferize="bufferize-function-boundaries" \\
// RUN:   -buffer-deallocation-pipeline=private-function-dynamic-ownership -convert-scf-to-cf -convert-to-llvm | \\
// RUN: mlir-runner -e main -entry-point-result=void -shared-libs=%mlir_runner_utils | FileCheck %s
func.func private @either(%a: tensor<?xf32>, %b: tensor<?xf32>, %c: i1) -> tensor<?xf32> {
  %r = scf.if %c -> tensor<?xf32> {
    scf.yield %a : tensor<?xf32>
  } else {
    scf.yield %b : tensor<?xf32>
  }
  return %r : tensor<?xf32>
}
func.func @main() {
  %a = arith.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %b = arith.constant dense<[3.0, 4.0]> : tensor<2xf32>
  %t = arith.constant true
  %da = tensor.cast %a : tensor<2xf32> to tensor<?xf32>
  %db = tensor.cast %b : tensor<2xf32> to tensor<?xf32>
  %r = func.call @either(%da, %db, %t) : (tensor<?xf32>, tensor<?xf32>, i1) -> tensor<?xf32>
  %u = tensor.cast %r : tensor<?xf32> to tensor<*xf32>
  func.call @printMemrefF32(%u) : (tensor<*xf32>) -> ()
  return
}
func.func private @printMemrefF32(tensor<*xf32>)
// CHECK: [1,  2]
"""


def test_run_line_lowering_with_convert_to_llvm_widens_bool_buffers_first(ctx, tmp_path):
    """`-convert-to-llvm` lowers memrefs as finalize-memref-to-llvm does, and aborts on the memref<?xi1>
    ownership buffers of buffer-deallocation-pipeline (upstream Tensor/cast-runtime-verification.mlir:
    `run-line` failed with the compile worker's SIGABRT, `integralElementType.getWidth() >= 8`)."""
    path = tmp_path / "ownership_convert_to_llvm.mlir"
    path.write_text(OWNERSHIP_BUFFERS_THEN_CONVERT_TO_LLVM)
    ok(ctx, f"load {path}")
    ok(ctx, "run-line")
    specs = [a.step.spec for a in ctx.session.active_steps]
    assert specs.index("lh-widen-i1-memrefs") == specs.index("convert-to-llvm") - 1, specs
    fc = ok(ctx, "run --filecheck --iterations 1").data["run"]["filecheck"]
    assert fc["passed"] and fc["total"] == 1, fc


@pytest.mark.parametrize("flags, expected", [
    ('-convert-to-llvm="allow-pattern-rollback=0" -reconcile-unrealized-casts',
     ["buffer-deallocation-pipeline", "lh-widen-i1-memrefs",
      "convert-to-llvm{allow-pattern-rollback=0},reconcile-unrealized-casts"]),
    # a --pass-pipeline is split where its memref lowering starts
    ('--pass-pipeline="builtin.module(func.func(canonicalize),finalize-memref-to-llvm{index-bitwidth=32},'
     'convert-func-to-llvm)"',
     ["buffer-deallocation-pipeline", "func.func(canonicalize)", "lh-widen-i1-memrefs",
      "finalize-memref-to-llvm{index-bitwidth=32},convert-func-to-llvm"]),
    ('--pass-pipeline="builtin.module(convert-to-llvm)"',
     ["buffer-deallocation-pipeline", "lh-widen-i1-memrefs", "convert-to-llvm"]),
])
def test_every_memref_lowering_of_a_run_line_is_preceded_by_the_bool_widening(flags, expected):
    from workbench.common.split_input import find_run_lines

    line = f"// RUN: mlir-opt %s -buffer-deallocation-pipeline | mlir-opt {flags}\n"
    assert find_run_lines(line)[0].mlir_opt_pipelines() == expected


def test_run_filecheck_on_a_file_without_check_lines_says_so_before_running(ctx, tmp_path, monkeypatch):
    """Upstream MemRef/alloc-runtime-verification.mlir pipes its program into FileCheck and has no CHECK line:
    `run --filecheck` compiled and ran the program first, then blamed the workbench's own lowering (`the
    workbench's own lowering ran, not the RUN line's passes: run-line 1 applies them`), which changes nothing."""
    path = tmp_path / "no_checks.mlir"
    path.write_text("// RUN: mlir-opt %s -convert-to-llvm | mlir-runner -e main -entry-point-result=void | FileCheck %s\n"
                    "func.func @main() {\n  return\n}\n")
    ok(ctx, f"load {path}")
    from workbench.commands import run_commands

    ran = []
    run_current = run_commands.run_current
    monkeypatch.setattr(run_commands, "run_current", lambda *a, **k: ran.append(1) or run_current(*a, **k))
    error = failed(ctx, "run --filecheck --iterations 1")
    assert error == "filecheck FAILED: no_checks.mlir has no CHECK lines to match"
    assert not ran


def test_ops_a_lowering_leaves_behind_are_named_with_where_the_first_one_is(ctx, tmp_path):
    """Upstream Arith/test-lut-extf-f8.mlir on the workbench's lowering: `after lowering, ops remain outside the
    LLVM dialect: arith.extf, builtin.unrealized_conversion_cast`, without the line of the op (an f8 extf)."""
    path = tmp_path / "f8_extf.mlir"
    path.write_text("func.func @widen(%b: tensor<4xi8>) -> tensor<4xf32> {\n"
                    "  %f8 = arith.bitcast %b : tensor<4xi8> to tensor<4xf8E4M3FN>\n"
                    "  %f = arith.extf %f8 : tensor<4xf8E4M3FN> to tensor<4xf32>\n  return %f : tensor<4xf32>\n}\n")
    ok(ctx, f"load {path}")
    error = failed(ctx, "run --iterations 1")
    assert error.startswith("after lowering, ops remain outside the LLVM dialect: arith.extf"), error
    assert error.endswith(f"(the first at {path}:3:8)"), error


@pytest.mark.parametrize("indices", [[2, 1, 3], [1, 2, 10**23], [1, 1, 3]])
def test_a_step_record_out_of_place_fails_the_session_in_one_line(tmp_path, indices):
    """Round 7 left open: `Workbench.steps[].index` was not checked against the record's position (10^23 was
    taken); replay reads the records by index, so records out of order compared a step with another's IR."""
    import json

    from conftest import REPO, run_cli

    text = (REPO / "sessions" / "matmul-cpu.yaml").read_text().replace("../examples/matmul.mlir",
                                                                      str(REPO / "examples" / "matmul.mlir"))
    for position, index in enumerate(indices, start=1):
        text = text.replace(f"- {{index: {position}, ", f"- {{index: @{index}, ", 1)
    text = text.replace("@", "")
    path = tmp_path / "shuffled.yaml"
    path.write_text(text)
    out = run_cli(["replay", path, "--json", tmp_path / "out.json"])
    assert out.returncode == 1, out.stdout + out.stderr
    bad = next(p for p, i in enumerate(indices, start=1) if i != p)
    assert f"Workbench.steps record {bad} has index {indices[bad - 1]}: the records are numbered 1, 2, ..." \
        in out.stderr, out.stderr
    assert out.stderr.count("\n") == 1 and json.loads((tmp_path / "out.json").read_text())["ok"] is False


GENERATORS_THAT_MISBEHAVE = '''\
import sys
GENERATORS = ["exits", "surrogate", "raises"]
def exits():
    sys.exit(3)
def surrogate():
    return "module {}\\udcff"
def raises():
    raise ValueError("no schedule for you")
'''


@pytest.mark.parametrize("gen, says, detail", [
    # SystemExit passed `except Exception`: the compile worker ended (`compile worker process exited with status 3`)
    ("exits", "schedule generator misbehave.py:exits called sys.exit(3)", "SystemExit: 3"),
    # the text went on to a file write: `UnicodeEncodeError: 'utf-8' codec can't encode ...` and the worker's traceback
    ("surrogate", "schedule generator misbehave.py:surrogate returned text that is not UTF-8 "
                  "(a lone surrogate '\\udcff' at character 9)", None),
    # the traceback began with the worker's own frame (compile_worker.py, `out = fn(**kwargs)`)
    ("raises", "schedule generator misbehave.py:raises raised ValueError: no schedule for you", "misbehave.py"),
])
def test_a_generator_that_misbehaves_fails_its_step_in_words(ctx, tmp_path, gen, says, detail):
    path = tmp_path / "misbehave.py"
    path.write_text(GENERATORS_THAT_MISBEHAVE)
    ok(ctx, f"load {MATMUL}")
    ok(ctx, f"trust {path}")
    proc = ctx.session.client.proc
    res = ctx.registry.dispatch(f"apply {path}[gen={gen}]", ctx)
    assert not res.ok and res.error.endswith(says), res.error
    assert ctx.session.cursor == 0
    if detail is not None:
        assert detail in (res.detail or "") and "compile_worker.py" not in res.detail, res.detail
    assert ctx.session.client.proc is proc and proc.poll() is None    # the same compile worker goes on


def _pipeline_files(tmp_path, files: dict) -> None:
    for name, text in files.items():
        (tmp_path / name).write_text(text)


@pytest.mark.parametrize("files, applied, says", [
    ({"a.yaml": "Pipeline:\n- pass: canonicalize\n- include: b.yaml\n", "b.yaml": "Pipeline:\n- include: a.yaml\n"},
     "a.yaml", "a cycle of includes: a.yaml -> b.yaml -> a.yaml"),
    ({"self.yaml": "Pipeline:\n- include: self.yaml\n"}, "self.yaml", "a cycle of includes: self.yaml -> self.yaml"),
    # the same files through a symbolic link to the folder above: still the same cycle
    ({"a.yaml": "Pipeline:\n- include: d/up/b.yaml\n", "b.yaml": "Pipeline:\n- include: a.yaml\n"},
     "a.yaml", "a cycle of includes: a.yaml -> b.yaml -> a.yaml"),
])
def test_an_include_cycle_is_named_by_its_files(ctx, tmp_path, files, applied, says):
    """A cycle said `include nesting deeper than 16 at b.yaml (a cycle?)`, after building 16 levels of it."""
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "up").symlink_to("..")
    _pipeline_files(tmp_path, files)
    ok(ctx, f"load {MATMUL}")
    assert failed(ctx, f"apply {tmp_path / applied}") == says
    assert ctx.session.cursor == 0


def test_a_long_include_chain_is_not_called_a_cycle(ctx, tmp_path):
    _pipeline_files(tmp_path, {f"c{i}.yaml": f"Pipeline:\n- include: c{i + 1}.yaml\n" for i in range(20)})
    ok(ctx, f"load {MATMUL}")
    assert failed(ctx, f"apply {tmp_path / 'c0.yaml'}") == "include nesting deeper than 16 at c17.yaml"


@pytest.mark.parametrize("variables, says", [
    ("  a: $b\n  b: $a\n", "variable $a is '$b', which names $b"),
    ("  a: $a\n", "variable $a is '$a', which names $a"),
])
def test_a_variable_whose_value_names_a_variable_fails_at_the_entry(ctx, tmp_path, variables, says):
    """`Variables: {a: $b, b: $a}` went on as the text `$b` into the pass: `canonicalize: option max-iterations:
    '$b' value invalid for long argument`, an MLIR error about a name the user never wrote there."""
    path = tmp_path / "recursive.yaml"
    path.write_text(f"Variables:\n{variables}Pipeline:\n- pass: \"canonicalize{{max-iterations=$a}}\"\n")
    ok(ctx, f"load {MATMUL}")
    error = failed(ctx, f"apply {path}")
    assert error.startswith(says) and "not substituted again" in error and f"{path}: entry 1" in error, error


def test_a_generator_argument_without_a_default_is_asked_for_before_the_call(ctx, tmp_path):
    """A session saved before the generator grew an argument without a default replayed into the worker's
    `raised TypeError: tile() missing 1 required positional argument: 'order'` and the worker's traceback."""
    path = tmp_path / "grown.py"
    path.write_text('GENERATORS = ["tile"]\ndef tile(order: str, tile_m: int = 32):\n    return ""\n')
    ok(ctx, f"load {MATMUL}")
    ok(ctx, f"trust {path}")
    error = failed(ctx, f"apply {path}[gen=tile]{{tile_m=16}}")
    assert error.endswith("grown.py:tile needs order= (str; it has no default)"), error
    assert ctx.session.cursor == 0


PROBE_DIFF_HELPER_AFTER_SIGINT = """\
import os, signal, time
from workbench.common import textdiff
helper = textdiff._Helper()
proc = helper._ensure()
signal.signal(signal.SIGINT, signal.SIG_IGN)
os.killpg(os.getpgid(0), signal.SIGINT)       # what the terminal does on Ctrl-C: SIGINT to the foreground group
time.sleep(0.5)
alive = proc.poll() is None
diff = helper.run("unified", "a\\nb\\n", "a\\nc\\n", "x", "y", 0)
helper.close()
print("alive" if alive else "killed", diff.count("\\n"))
"""


def test_the_diff_helper_is_out_of_reach_of_ctrl_c_at_the_terminal():
    """Ctrl-C at the REPL (SIGINT to the terminal's foreground process group) killed the big-diff helper, which
    shared the front end's group: a zombie until the next big diff forked a new one (tmux, upstream resnet18).
    Probed in a process group of its own (the SIGINT reaches nothing else)."""
    import subprocess
    import sys

    from conftest import REPO

    out = subprocess.run([sys.executable, "-c", PROBE_DIFF_HELPER_AFTER_SIGINT], cwd=REPO, capture_output=True,
                         text=True, timeout=60, start_new_session=True, env={**__import__("os").environ,
                                                                            "PYTHONPATH": str(REPO)})
    assert out.stdout.split() == ["alive", "5"], out.stdout + out.stderr   # ---, +++, @@, -b, +c


@pytest.mark.parametrize("op, hint", [
    # upstream's X86 tests after the x86vector dialect became `x86`: MLIR's message alone
    ("x86.avx.rsqrt %v : vector<8xf32>", "(did you mean x86vector.avx.rsqrt?)"),
    ("aritt.addf %v, %v : vector<8xf32>", "(did you mean arith.addf?)"),
    ("zzz.foo %v : vector<8xf32>", "(MLIR 22.1.8 has no zzz dialect: a file written for another MLIR version? "
                                   "`load --allow-unregistered FILE` takes ops of dialects MLIR does not know)"),
])
def test_an_op_of_a_dialect_mlir_does_not_know_says_what_was_meant(ctx, tmp_path, op, hint):
    path = tmp_path / "dialect.mlir"
    path.write_text(f"func.func @f(%v: vector<8xf32>) -> vector<8xf32> {{\n  %r = {op}\n  return %r : vector<8xf32>\n}}\n")
    error = failed(ctx, f"load {path}")
    name = op.split()[0]
    assert error == f"{path}:2:8: Dialect `{name.split('.')[0]}' not found for custom op '{name}' {hint}", error


IR_AND_PROGRAM_CHECKS = """\
// RUN: mlir-opt %s -test-lower-to-llvm | mlir-runner -e main -entry-point-result=void \\
// RUN:   -shared-libs=%mlir_c_runner_utils | FileCheck %s
// RUN: mlir-opt %s -canonicalize | FileCheck %s --check-prefix=CHECK-IR
func.func @main() {
  %v = arith.constant dense<[1.0, 2.0]> : vector<2xf32>
  // CHECK-IR-COUNT-2: arith.constant
  %w = arith.constant dense<[3.0, 4.0]> : vector<2xf32>
  %s = arith.addf %v, %w : vector<2xf32>
  // CHECK: ( 4, 6 )
  // CHECK-COUNT-2: ( 4, 6 )
  vector.print %s : vector<2xf32>
  vector.print %s : vector<2xf32>
  vector.print %s : vector<2xf32>
  return
}
"""


def test_filecheck_of_a_run_line_that_checks_the_ir_is_refused_before_the_run(ctx, tmp_path):
    """Upstream Vector/CPU/gather.mlir's RUN line 3 (`mlir-opt ... | FileCheck --check-prefix CHECK-IR`) checks the
    IR: `run --filecheck --run-line 3` ran the program and matched what it printed against CHECK-IR lines
    (`'vector.load' not found in the output; nearest output line 1: 'Unranked Memref ...'`)."""
    path = tmp_path / "ir_and_program.mlir"
    path.write_text(IR_AND_PROGRAM_CHECKS)
    ok(ctx, f"load {path}")
    error = failed(ctx, "run --filecheck --run-line 2 --iterations 1")
    assert error == ("run --filecheck: RUN line 2 pipes mlir-opt into FileCheck: its CHECK lines are about the IR, "
                     "not about what a program prints (`run-line 2` applies its passes, `show` prints the IR)")
    fc = ok(ctx, "run --filecheck --iterations 1").data["run"]["filecheck"]    # RUN line 1 runs the program
    assert fc["passed"] and fc["total"] == 2, fc


def test_a_count_directive_is_named_as_the_file_writes_it(ctx, tmp_path):
    """The filecheck package names `CHECK-COUNT-2` `CHECK-COUNT2`: failures quoted a directive the file lacks."""
    path = tmp_path / "count.mlir"
    path.write_text(IR_AND_PROGRAM_CHECKS.replace("// CHECK-COUNT-2: ( 4, 6 )", "// CHECK-COUNT-2: ( 4, 7 )"))
    ok(ctx, f"load {path}")
    error = failed(ctx, "run --filecheck --iterations 1")
    assert "count.mlir:10: CHECK-COUNT-2: '( 4, 7 )'" in error, error


@pytest.mark.parametrize("flags, expected", [
    ('-naive-convert-vector-to-llvm="enable-x86vector" -convert-func-to-llvm',
     ["convert-vector-to-llvm{enable-x86vector},convert-func-to-llvm"]),
    ('--pass-pipeline="builtin.module(func.func(canonicalize),naive-convert-vector-to-llvm,convert-func-to-llvm)"',
     ["func.func(canonicalize),convert-vector-to-llvm,convert-func-to-llvm"]),
])
def test_the_vector_conversion_under_its_other_upstream_name_runs_as_the_wheels_name_it(flags, expected):
    """Upstream RUN lines of late 2025 (test-arith-expand-ceildivsi.mlir, test-one-shot-bufferize.mlir, X86Vector/*)
    say `-naive-convert-vector-to-llvm`; earlier and later versions of the same files `-convert-vector-to-llvm`
    with the same options. `run-line` failed: `'naive-convert-vector-to-llvm' does not refer to a registered pass`."""
    from workbench.common.split_input import find_run_lines

    assert find_run_lines(f"// RUN: mlir-opt %s {flags}\n")[0].mlir_opt_pipelines() == expected


def test_what_a_generator_prints_comes_back_with_its_step(ctx, tmp_path):
    """A generator's print() went to the compile worker's stdout and was never shown (applied, or failed)."""
    path = tmp_path / "talks.py"
    path.write_text('GENERATORS = ["tile", "fails"]\n'
                    'def tile():\n    print("tile 64x64: fits L2")\n'
                    '    return "module attributes {transform.with_named_sequence} {\\n'
                    '  transform.named_sequence @__transform_main(%r: !transform.any_op {transform.readonly}) {\\n'
                    '    transform.yield\\n  }\\n}\\n"\n'
                    'def fails():\n    print("no tile fits")\n    raise ValueError("nothing to do")\n')
    ok(ctx, f"load {MATMUL}")
    ok(ctx, f"trust {path}")
    res = ok(ctx, f"apply {path}[gen=tile]")
    assert res.body == "schedule generator talks.py:tile printed:\ntile 64x64: fits L2", res.body
    assert res.data["printed"].endswith("tile 64x64: fits L2\n")
    res = ctx.registry.dispatch(f"apply {path}[gen=fails]", ctx)
    assert not res.ok and res.detail.startswith("schedule generator talks.py:fails printed:\nno tile fits\n"), res.detail
