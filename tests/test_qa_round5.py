"""Fifth QA round (fresh eyes): upstream-style payloads with `dense_resource` blobs and generic op syntax,
hostile session files, hostile command lines; each test failed before its fix (docs/qa-round5.md)."""
from __future__ import annotations

import pytest

from conftest import MATMUL, REPO, do, failed, ok, run_cli

# generic op syntax, properties, location aliases and a `dense_resource` weight with its blob, as upstream
# files and torch-mlir exports write them
BLOB = "04000000" + "".join(f"{v:08X}" for v in [0, 0x3F800000, 0x40000000, 0x40400000] * 8)
RESOURCE_PAYLOAD = """\
#loc = loc("model.py":3:1)
#loc1 = loc("model.py":4:2)
#map = affine_map<(d0, d1) -> (d0, d1)>
"builtin.module"() ({
  "func.func"() <{function_type = (tensor<4x8xf32>) -> tensor<4x8xf32>, sym_name = "add"}> ({
  ^bb0(%arg0: tensor<4x8xf32> loc(#loc)):
    %w = "arith.constant"() <{value = dense_resource<blob1> : tensor<4x8xf32>}> : () -> tensor<4x8xf32> loc(#loc1)
    %0 = "tensor.empty"() : () -> tensor<4x8xf32> loc(#loc1)
    %1 = "linalg.generic"(%arg0, %w, %0) <{indexing_maps = [#map, #map, #map], iterator_types =
        [#linalg.iterator_type<parallel>, #linalg.iterator_type<parallel>], operandSegmentSizes = array<i32: 2, 1>}> ({
    ^bb0(%a: f32, %b: f32, %c: f32):
      %2 = "arith.addf"(%a, %b) <{fastmath = #arith.fastmath<none>}> : (f32, f32) -> f32
      "linalg.yield"(%2) : (f32) -> ()
    }) : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32> loc(fused[#loc, #loc1])
    "func.return"(%1) : (tensor<4x8xf32>) -> () loc(#loc1)
  }) : () -> () loc(#loc)
}) : () -> () loc(#loc)
"""


def _resources(blob: str) -> str:
    return "{-#\n  dialect_resources: {\n    builtin: {\n      blob1: \"0x" + blob + "\"\n    }\n  }\n#-}\n"


@pytest.mark.parametrize("blob, says", [
    (None, "dense_resource<blob1> has no data"),                     # an elided weight: no blob at all
    (BLOB[:24], "dense_resource<blob1>: its blob's raw data size does not match element type size"),
])
def test_a_dense_resource_without_its_data_fails_its_run_in_one_line_that_says_why(ctx, tmp_path, blob, says):
    """The translation to LLVM IR refuses such a constant; the run said only "JIT compilation failed: Failure
    while creating the ExecutionEngine." with a Python traceback as its detail (MLIR's reason went to the run
    worker's stderr)."""
    path = tmp_path / "w.mlir"
    path.write_text(RESOURCE_PAYLOAD + (_resources(blob) if blob else ""))
    ok(ctx, f"load {path}")
    error = failed(ctx, "run")
    assert says in error and "@__constant_4x8xf32" in error, error
    assert "Failure while creating the ExecutionEngine" not in error
    res = do(ctx, "run --check")
    assert not res.ok and says in res.error and "Traceback" not in res.detail, res.detail
    assert ctx.session.current_ir.count("dense_resource<blob1>") == 1   # the session is as it was


def test_a_payload_in_generic_syntax_with_its_dense_resource_runs_and_checks(ctx, tmp_path):
    path = tmp_path / "w.mlir"
    path.write_text(RESOURCE_PAYLOAD + _resources(BLOB))
    ok(ctx, f"load {path}")
    res = ok(ctx, "run --check")
    assert res.data["run"]["check"]["passed"]


@pytest.mark.parametrize("line, says", [
    # the wrapper's i64 loop bound: "bench: internal error building the wrapper: Unable to parse module assembly"
    ("run --iterations 99999999999999999999", "--iterations must be an integer that fits in 64 bits"),
    ("run --iterations 2000000000", "run: --iterations must be <= 1000000000"),   # the bench step's own bound
    ("run --warmup 2000000000", "run: --warmup must be <= 1000000000"),
    ("run --calls-per-sample 1000000", "run: --calls-per-sample must be <= 100000"),
    ("tune 1 --iterations 2000000000", "tune: --iterations must be <= 1000000000"),
    ("run --timeout nan", "--timeout must be a finite number"),   # "cannot convert float NaN to integer"
    ("run --timeout inf", "--timeout must be a finite number"),
    ("show 99999999999999999999", "step must be an integer that fits in 64 bits"),
])
def test_numbers_a_command_line_cannot_mean_are_usage_errors(ctx, line, says):
    ok(ctx, f"load {REPO / 'examples' / 'matmul.mlir'}")
    res = do(ctx, line)
    assert not res.ok and says in res.error and "\n" not in res.error, res.error
    assert "internal error" not in res.error


@pytest.mark.parametrize("pipeline, says", [
    ("builtin.module(func.func(canonicalize", "'(' at column 25 is never closed"),
    ("canonicalize)", "unbalanced ')' at column 13"),
    ("func.func(canonicalize{max-iterations=3)", "')' at column 40 closes '{' at column 23"),
])
def test_a_pass_pipeline_with_unbalanced_brackets_says_so(ctx, pipeline, says):
    """MLIR's parser answered "expected pass pipeline to be wrapped with the anchor operation type, e.g.
    'builtin.module(...)'" for a missing `)`, or took `{` for the start of options it then could not read."""
    ok(ctx, f"load {REPO / 'examples' / 'matmul.mlir'}")
    error = failed(ctx, f"pass {pipeline}")
    assert says in error and "anchor operation" not in error, error
    assert len(ctx.session.steps) == 0
    ok(ctx, "pass func.func(canonicalize{max-iterations=3}),cse")   # balanced: applied


@pytest.mark.parametrize("value", ["''", "'   '"])
def test_an_empty_pass_entry_of_a_session_is_refused_as_typing_it_is(tmp_path, value):
    """`pass ""` typed is "pass needs a pass pipeline"; `pass: ''` in a session file replayed as a step that
    ran nothing (and was saved again as one)."""
    (tmp_path / "m.mlir").write_text((REPO / "examples" / "matmul.mlir").read_text())
    session = tmp_path / "s.yaml"
    session.write_text("Pipeline:\n- {pass: canonicalize}\n- {pass: " + value + "}\n"
                       "Workbench: {payload: {path: m.mlir}}\n")
    res = run_cli(["replay", session])
    assert res.returncode == 1, res.stdout + res.stderr
    assert "entry 2: `pass:` needs a pass pipeline" in res.stderr and "Traceback" not in res.stderr, res.stderr


# upstream's Dialect/Affine tests: RUN lines of mlir-opt pass flags for passes restricted to func.func
AFFINE_TEST = """\
// RUN: mlir-opt %s -split-input-file -affine-loop-tile="tile-size=32" | FileCheck %s
func.func @scale(%A: memref<64x64xf32>, %B: memref<64x64xf32>) {
  affine.for %i = 0 to 64 {
    affine.for %j = 0 to 64 {
      %v = affine.load %A[%i, %j] : memref<64x64xf32>
      %w = arith.mulf %v, %v : f32
      affine.store %w, %B[%i, %j] : memref<64x64xf32>
    }
  }
  return
}
"""


def test_run_line_flags_of_function_passes_are_nested_as_mlir_opt_nests_them(ctx, tmp_path):
    """mlir-opt adds a pass flag with implicit nesting; `run-line` (and `pass -affine-loop-tile`) made it
    `builtin.module(affine-loop-tile{tile-size=32})`: "Can't add pass 'AffineLoopTiling' restricted to
    'func.func' on a PassManager intended to run on 'builtin.module', did you intend to nest?"."""
    path = tmp_path / "loop-tiling.mlir"
    path.write_text(AFFINE_TEST)
    ok(ctx, f"load {path}")
    ok(ctx, "run-line")
    assert ctx.session.steps[0].step.spec == "func.func(affine-loop-tile{tile-size=32})"
    assert "affine.min" in ctx.session.current_ir or ctx.session.current_ir.count("affine.for") == 4
    assert ok(ctx, "run --check").data["run"]["check"]["passed"]
    assert "builtin.module(func.func(affine-loop-tile{tile-size=32}))" in ok(ctx, "export cmdline").data["cmdline"]
    ok(ctx, "undo")
    ok(ctx, "pass -affine-loop-tile=tile-size=16 -cse")
    assert ctx.session.steps[0].step.spec == "func.func(affine-loop-tile{tile-size=16}),cse"
    # a pipeline typed as text is MLIR's grammar, where nesting is explicit: the error shows the nested form
    error = failed(ctx, "pass affine-loop-tile{tile-size=8}")
    assert "`pass func.func(affine-loop-tile{tile-size=8})`" in error


def test_workbench_passes_run_inside_a_pipeline_of_mlir_passes(ctx, tmp_path):
    """`canonicalize,lh-erase-transform-schedules` (or the flags `-canonicalize -lh-...`) failed with "'lh-erase-
    transform-schedules' does not refer to a registered pass (did you mean lh-erase-transform-schedules?)"."""
    path = tmp_path / "with_script.mlir"
    path.write_text("module attributes {transform.with_named_sequence} {\n" + MATMUL_FUNC +
                    "  transform.named_sequence @__transform_main(%m: !transform.any_op {transform.readonly}) {\n"
                    "    transform.yield\n  }\n}\n")
    ok(ctx, f"load {path}")
    ok(ctx, "pass canonicalize,lh-erase-transform-schedules,cse")
    assert "transform.named_sequence" not in ctx.session.current_ir and "linalg.matmul" in ctx.session.current_ir
    ok(ctx, "undo")
    ok(ctx, "pass builtin.module(lh-erase-transform-schedules,canonicalize)")
    assert "transform.named_sequence" not in ctx.session.current_ir
    error = failed(ctx, "pass cse,lh-nosuch-pass")
    assert "'lh-nosuch-pass' does not refer to a registered pass" in error


MATMUL_FUNC = """\
  func.func @matmul(%a: tensor<8x16xf32>, %b: tensor<16x4xf32>, %c: tensor<8x4xf32>) -> tensor<8x4xf32> {
    %0 = linalg.matmul ins(%a, %b : tensor<8x16xf32>, tensor<16x4xf32>) outs(%c : tensor<8x4xf32>) -> tensor<8x4xf32>
    return %0 : tensor<8x4xf32>
  }
"""


def test_export_starts_after_a_workbench_pass_which_mlir_opt_does_not_have(ctx, tmp_path):
    """`export cmdline` / `export reproducer` wrote `--pass-pipeline=builtin.module(canonicalize,lh-fuse-elementwise)`,
    which mlir-opt refuses ("'lh-fuse-elementwise' does not refer to a registered pass")."""
    ok(ctx, f"load {REPO / 'examples' / 'matmul.mlir'}")
    ok(ctx, "pass canonicalize")
    ok(ctx, "pass lh-fuse-elementwise")
    error = failed(ctx, "export cmdline")
    assert "step 2 (lh-fuse-elementwise) has no mlir-opt spelling" in error
    ok(ctx, "pass cse")
    res = ok(ctx, "export cmdline")
    line = res.data["cmdline"]
    assert "builtin.module(cse)" in line and "lh-fuse-elementwise" not in line and res.data["start_step"] == 2


def test_every_workbench_pass_is_named_lh_so_that_export_can_tell_them():
    from workbench.worker import py_passes

    assert py_passes.PASSES and all(name.startswith("lh-") for name in py_passes.PASSES)


def test_a_function_interface_pass_on_the_module_says_to_nest_it(ctx, tmp_path):
    """mlir-opt's flags do not nest a pass on FunctionOpInterface either; the message said only "unable to
    schedule pass 'AffineLoopUnroll' on a PassManager intended to run on 'builtin.module'!"."""
    path = tmp_path / "loop-unroll.mlir"
    path.write_text(AFFINE_TEST)
    ok(ctx, f"load {path}")
    error = failed(ctx, "pass -affine-loop-unroll=unroll-factor=4")
    assert "unable to schedule pass 'AffineLoopUnroll'" in error and "`func.func(...)`" in error
    ok(ctx, "pass func.func(affine-loop-unroll{unroll-factor=4})")


def _read_fifo_in_background(fifo):
    import threading

    got = []
    reader = threading.Thread(target=lambda: got.append(open(fifo, "rb").read()), daemon=True)
    reader.start()
    return reader, got


def test_saving_onto_what_is_not_a_regular_file_writes_to_it_and_never_replaces_it(ctx, tmp_path):
    """`save /dev/full` (as root) said "saved 1 steps to /dev/full" and had replaced the device node with a
    regular file (the temporary file renamed over it); a FIFO was replaced the same way. Shown here on a FIFO
    (a test must not touch /dev): it stays a FIFO and its reader gets the session."""
    import os
    import stat

    ok(ctx, f"load {REPO / 'examples' / 'matmul.mlir'}")
    ok(ctx, "pass canonicalize")
    fifo = tmp_path / "out.yaml"
    os.mkfifo(fifo)
    reader, got = _read_fifo_in_background(fifo)
    ok(ctx, f"save {fifo}")
    reader.join(10)
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert got and b"pass: canonicalize" in got[0]


def test_atomic_write_goes_through_a_symbolic_link():
    """It renamed its temporary file over the link: the link became a copy, its file kept the old text."""
    import tempfile
    from pathlib import Path

    from workbench.common.files import atomic_write

    with tempfile.TemporaryDirectory() as d:
        target, link = Path(d) / "real.yaml", Path(d) / "link.yaml"
        target.write_text("old\n")
        link.symlink_to(target)
        atomic_write(link, "new\n")
        assert link.is_symlink() and target.read_text() == "new\n"


@pytest.mark.parametrize("line, says", [
    ('save ""', "save: FILE is empty"),            # was "cannot write : Is a directory"
    ("save '   '", "save: FILE is empty"),         # was a saved file named three spaces
    ('load ""', "load: FILE is empty"),            # was "cannot read .: is a directory"
    ('export reproducer ""', "export: FILE is empty"),
    ('load --chunk " " x.mlir', "option --chunk needs a value"),
])
def test_an_empty_quoted_argument_is_a_usage_error(ctx, tmp_path, monkeypatch, line, says):
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    ok(ctx, f"load {REPO / 'examples' / 'matmul.mlir'}")
    ok(ctx, "pass canonicalize")
    res = do(ctx, line)
    assert not res.ok and says in res.error, res.error
    assert list(cwd.iterdir()) == []        # nothing written
    assert len(ctx.session.steps) == 1


def test_the_excerpt_of_an_error_in_a_long_line_shows_the_column_not_the_line_start(ctx, tmp_path):
    """An error at column 2,000,030 of a weight literal printed the line's first ~1000 characters and a caret
    line of spaces: neither the error's place nor the caret were on screen."""
    path = tmp_path / "long.mlir"
    path.write_text("func.func @f() -> tensor<500000xf32> {\n  %c = arith.constant dense<["
                    + ",".join(["1.0"] * 500000) + ",oops]> : tensor<500000xf32>\n"
                    "  return %c : tensor<500000xf32>\n}\n")
    res = do(ctx, f"load {path}")
    assert not res.ok and ":2:2000030:" in res.error
    excerpt = [line for line in (res.detail or "").splitlines() if line.startswith(("2 |", "  |"))]
    src, caret = excerpt[0], excerpt[1]
    assert len(src) < 200 and "oops" in src
    assert src[caret.index("^"):].startswith("oops")


def test_source_excerpt_windows_long_lines_only():
    from workbench.common import diagnostics

    assert diagnostics.source_excerpt("f.mlir:1:5: x", "abc defgh\n") == "1 | abc defgh\n  |     ^"
    line = "x" * 1000 + "BAD" + "y" * 1000
    src, caret = diagnostics.source_excerpt("f.mlir:1:1001: x", line).splitlines()
    assert src.startswith("1 | ...") and src.endswith("...") and src[caret.index("^"):].startswith("BAD")


@pytest.mark.parametrize("line, command", [
    ("pass canonicalize   # fold what the schedule left", "pass canonicalize"),
    ("# a whole comment line", ""),
    ("save out#1.yaml", "save out#1.yaml"),                                   # inside a word
    ('apply pass:"func.func(canonicalize)" # quoted #s stay', 'apply pass:"func.func(canonicalize)"'),
    ("params 2 note='a # b'", "params 2 note='a # b'"),                      # inside quotes
    ("apply x.py[gen=f]{tag=#map} # c", "apply x.py[gen=f]{tag=#map}"),     # inside brackets
])
def test_a_trailing_comment_is_not_part_of_the_command(line, command):
    from workbench.commands.script import script_lines, without_comment

    assert without_comment(line) == command
    assert script_lines(line + "\n") == ([(1, command)] if command else [])


def test_a_script_line_with_a_trailing_comment_runs_its_command(tmp_path):
    script = tmp_path / "c.lhw"
    script.write_text("pass canonicalize   # the README's tour writes comments like this\ninspect # and this\n")
    res = run_cli([MATMUL, "--script", script])
    assert res.returncode == 0, res.stderr + res.stdout
