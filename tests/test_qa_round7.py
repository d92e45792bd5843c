"""Seventh QA round: round 6's leftovers (did-you-mean for options MLIR does not print, progress of a long
`select`), then new ground (REPL, --cpu overrides, hostile session files, upstream test files); each test
failed before its fix (docs/qa-round7.md)."""
from __future__ import annotations

import os

import pytest

from conftest import MATMUL, MLP, failed, ok


@pytest.mark.parametrize("line, says", [
    # a list option without a default is not printed by MLIR: it was no candidate
    ("pass canonicalize{disable-pattern=x}", "canonicalize: no such option disable-pattern (did you mean disable-patterns?)"),
    ("pass one-shot-bufferize{dialect-filters=x}", "no such option dialect-filters (did you mean dialect-filter?)"),
    # a pipeline prints as its passes, and its option parser writes why it refused to stderr: the error said
    # only "failed to add `sparsifier` with options `...`"
    ("pass sparsifier{enable-runtime-libary=1}", "sparsifier: no such option enable-runtime-libary (did you mean enable-runtime-library?)"),
    ("pass sparsifier{parallelization_strategy=none}", "(did you mean parallelization-strategy?)"),
    ("pass buffer-deallocation-pipeline{private-function-dynamic-ownershp=1}",
     "(did you mean private-function-dynamic-ownership?)"),
    # a value the option parser refuses: the reason was on the worker's stderr, not in the error
    ("pass canonicalize{max-iterations=x}", "canonicalize: option max-iterations: 'x' value invalid for long argument"),
    ("pass sparsifier{vl=x}", "sparsifier: option vl: 'x' value invalid for integer argument"),
    ("pass canonicalize{region-simplify=1}", "canonicalize: option region-simplify: Cannot find option named '1'"),
])
def test_an_option_mlir_does_not_print_gets_a_did_you_mean_and_a_refused_value_says_why(ctx, line, says):
    ok(ctx, f"load {MATMUL}")
    error = failed(ctx, line)
    assert says in error, error
    assert ctx.session.cursor == 0


def test_select_says_which_step_it_is_on(ctx):
    """`select` on a 100k-op module takes seconds per preparation step (16 s here in all) and said nothing until
    it ended; it now reports each step, as `run` and `tune` report theirs."""
    ok(ctx, f"load {MLP}")
    said = []
    ctx.progress = said.append
    try:
        ok(ctx, "select --apply")
    finally:
        ctx.progress = lambda message: None
    preparation = [m for m in said if m.startswith("select: preparation step ")]
    assert preparation and preparation[0].startswith("select: preparation step 1/"), said
    applied = [m for m in said if m.startswith("select --apply: step ")]
    assert len(applied) == ctx.session.cursor - 1, (said, ctx.session.cursor)   # lh-fuse-elementwise was prepared
    assert applied[-1].startswith(f"select --apply: step {len(applied)}/{len(applied)}: "), applied


@pytest.mark.parametrize("calls", [14, 15])
def test_ctrl_c_in_the_repl_during_select_leaves_the_session_as_it_was(ctx, monkeypatch, calls):
    """Ctrl-C in the REPL raised KeyboardInterrupt past `select`'s own restore: the steps it had applied so far
    (its preparation, some of its schedules) stayed, and the REPL said `cancelled`."""
    from rich.console import Console

    from workbench.repl import _dispatch

    ok(ctx, f"load {MLP}")
    ok(ctx, "pass canonicalize")
    s, applied = ctx.session, []
    apply = s.apply

    def interrupted(*args, **kwargs):   # Ctrl-C while the worker applies select's `calls`-th step
        applied.append(1)
        if len(applied) == calls:
            raise KeyboardInterrupt
        return apply(*args, **kwargs)

    monkeypatch.setattr(s, "apply", interrupted)
    res = _dispatch(ctx, "select --apply", Console(file=open(os.devnull, "w")))
    monkeypatch.undo()
    assert len(applied) == calls
    assert not res.ok and res.error.startswith("cancelled"), res.error
    assert s.cursor == 1 and len(s.steps) == 1, [a.step.label() for a in s.steps]
    ok(ctx, "undo")      # the session works on: its one step is still there to undo
    assert s.cursor == 0


def test_commands_piped_into_the_repl_read_as_a_transcript(tmp_path):
    """`printf 'inspect\\n...' | lh-workbench m.mlir --repl`: prompt-toolkit warned "Input is not a terminal",
    drew its prompt for a screen (carriage returns, six blank lines before each command, each command twice:
    `wb> inspect      wb> inspect`), and rich wrapped a one-line error at 80 columns."""
    import subprocess

    from conftest import CLI, REPO

    env = dict(os.environ, PYTHONPATH=str(REPO), LH_WORKBENCH_STATE_DIR=str(tmp_path / "state"))
    out = subprocess.run(CLI + [str(MATMUL), "--repl"], input="inspect\npass sparsifier{vl=x}\nhistory\n",
                         cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
    text = out.stdout + out.stderr
    assert out.returncode == 1, text
    assert "not a terminal" not in text and "\r" not in text, text
    lines = text.splitlines()
    assert [line for line in lines if line.startswith("wb>")] == [
        "wb> inspect", "wb> pass sparsifier{vl=x}", "wb> history"], lines
    assert "" not in lines, lines
    error = next(line for line in lines if line.startswith("error:"))
    assert error.endswith("sparsifier: option vl: 'x' value invalid for integer argument"), lines


@pytest.mark.parametrize("name, family", [("neoverse_v1", "aarch64"), ("cortex-a72", "aarch64"), ("a64fx", "aarch64"),
                                          ("power9le", "ppc64le")])
def test_a_cpu_of_another_architecture_is_refused_in_one_line(tmp_path, name, family):
    """`targets --cpu neoverse_v1` said `cpu neoverse_v1 on the host CPU`, can_run true, its llvm_cpu an -march
    string (`armv8.4-a+sve+...`), and `target cpu --cpu neoverse_v1` took it; `cortex-a72` said "archspec knows
    no LLVM name for it". The cpu target generates x86-64 code: another family is refused, named."""
    import json

    from conftest import run_cli

    out = run_cli(["targets", "--cpu", name, "--json"])
    assert out.returncode == 2, out.stdout + out.stderr
    doc = json.loads(out.stdout)
    assert doc["ok"] is False and f" {family} CPU: the cpu target generates x86-64 code" in doc["error"], doc
    assert out.stderr.count("\n") == 1, out.stderr


def test_target_cpu_with_an_aarch64_name_leaves_the_target_as_it_was(ctx):
    ok(ctx, f"load {MATMUL}")
    ok(ctx, "target cpu --cpu znver3")
    error = failed(ctx, "target cpu --cpu neoverse_v1")
    assert "is an aarch64 CPU" in error, error
    assert ctx.session.target.machine.name == "zen3", ctx.session.target.machine
    ok(ctx, "target cpu --cpu host")


@pytest.mark.parametrize("key", ["true", "1.5", "null", "2001-12-14"])
def test_a_session_entry_with_a_key_that_is_not_a_string_fails_in_one_line(tmp_path, key):
    """`- pass: canonicalize` + `true: 1` (YAML reads the key as a bool; numbers, null and dates likewise):
    `replay` died with a traceback in the did-you-mean (`'bool' object has no attribute 'lower'`), and
    --json was not written."""
    import json

    from conftest import run_cli

    session = tmp_path / "s.yaml"
    session.write_text(f"Pipeline:\n- pass: canonicalize\n  {key}: 1\nWorkbench:\n  payload: {{path: {MATMUL}}}\n")
    out = run_cli(["replay", session, "--json", tmp_path / "out.json"])
    assert out.returncode == 1 and "Traceback" not in out.stderr, out.stderr
    assert out.stderr.strip().count("\n") == 0 and "entry 1: unknown key" in out.stderr, out.stderr
    doc = json.loads((tmp_path / "out.json").read_text())
    assert doc["ok"] is False and "unknown key" in doc["error"], doc


def test_close_matches_takes_a_word_that_is_not_a_string():
    from workbench.common.suggest import close_matches, did_you_mean

    assert close_matches(True, ["true", "params"]) == ["true"]
    assert did_you_mean(None, ["params"]) == ""
    assert close_matches("par", [1, "params"]) == ["params"]


def test_the_repl_off_a_terminal_prints_diffs_and_ir_whole(ctx):
    """The REPL piped into a file or `less`: rich's code views padded each diff line to 80 columns and cut what
    was longer (`tensor<256x512xf32>, %ar`), so a diff of real IR lost most of every changed line."""
    import io

    from rich.console import Console

    from workbench.repl import render

    ok(ctx, f"load {MATMUL}")
    ok(ctx, "apply pipelines/lib/tile.mlir")
    for line in ("diff", "show", "diff 0 1"):
        res = ok(ctx, line)
        out = io.StringIO()
        render(res, Console(file=out, width=80, force_terminal=False, soft_wrap=True))
        text = out.getvalue()
        longest = max(res.body.splitlines(), key=len)
        assert len(longest) > 80 and longest in text.splitlines(), (line, longest, text[:2000])
        assert not any(l.endswith(" ") for l in text.splitlines() if l.strip()), text[:2000]


@pytest.mark.parametrize("line", ["show", "diff"])
def test_the_repl_on_a_terminal_wraps_long_ir_lines_instead_of_cutting_them(ctx, line):
    """On a 100-column terminal `show` ended `func.func @matmul(... %arg2: tensor<256x128xf3` and the matmul's
    line `outs(%arg2 : ten`: the types past the width were cut (rich's code view crops). They wrap now."""
    import io
    import re

    from rich.console import Console

    from workbench.repl import render

    ok(ctx, f"load {MATMUL}")
    ok(ctx, "apply pipelines/lib/tile.mlir")
    res = ok(ctx, line)
    out = io.StringIO()
    render(res, Console(file=out, width=80, force_terminal=True, color_system=None))
    shown = re.sub(r"\s+", "", out.getvalue())
    for body_line in res.body.splitlines():
        assert re.sub(r"\s+", "", body_line) in shown, body_line


@pytest.mark.parametrize("text, offered, not_offered", [
    ("pass canonicalize{max-", ["max-iterations=", "max-num-rewrites="], []),
    ("pass canonicalize{max-iterations=3 ", ["top-down=", "region-simplify="], ["max-iterations="]),
    ("pass func.func(affine-loop-tile{tile-s", ["tile-size="], []),
    ("pass sparsifier{paral", ["parallelization-strategy="], []),        # a pipeline: its options probed
    ("pass lh-specialize-shapes{", ["shapes=", "function="], []),          # a workbench pass
    ("pass canonicalize,one-shot-bufferize{bufferize-f", ["bufferize-function-boundaries="], []),
])
def test_completion_offers_the_options_of_the_pass_being_typed(ctx, text, offered, not_offered):
    """`pass canonicalize{max-` + Tab completed nothing (round 6 left it open): the options come from the
    compile worker, which asks MLIR."""
    import re

    from workbench.completion import Completer

    ok(ctx, f"load {MATMUL}")
    got = [c.text for c in Completer(ctx.registry, ctx.session).complete(text)]
    assert all(o in got for o in offered) and not any(o in got for o in not_offered), got
    word = re.split(r"[\s{]", text)[-1]
    assert all(c.start == len(text) - len(word) for c in Completer(ctx.registry, ctx.session).complete(text))


@pytest.mark.parametrize("op, says", [
    ("arith.adf", "custom op 'arith.adf' is unknown (did you mean arith.addf?)"),
    ("linalg.matmull", "(did you mean linalg.matmul?)"),
    # upstream files newer than the wheels (test-matmul-masked-vec.mlir's reorder_multi_reduction_dims)
    ("arith.addf_newer_than_this_mlir", "(MLIR 22.1.8's arith dialect has no such op: a file written for another "
                                        "MLIR version?)"),
])
def test_an_unknown_op_of_a_known_dialect_says_what_was_meant(ctx, tmp_path, op, says):
    """`custom op 'transform.structured.vectorise' is unknown` said nothing more: the parser knows the dialect,
    so a typo gets the registered ops one edit away, else the hint that the file is for another MLIR."""
    from workbench.common.mlir_libs import mlir_version

    path = tmp_path / "typo.mlir"
    path.write_text(f"func.func @f(%a: f32) -> f32 {{\n  %0 = {op} %a, %a : f32\n  return %0 : f32\n}}\n")
    ok(ctx, f"load {MATMUL}")
    error = failed(ctx, f"load {path}")
    assert f"{path}:2:8: " in error and says.replace("22.1.8", mlir_version()) in error, error
    assert ctx.session.payload_path == MATMUL


def test_a_transform_file_with_a_mistyped_op_gets_a_did_you_mean(ctx, tmp_path):
    path = tmp_path / "t.mlir"
    path.write_text('module attributes {transform.with_named_sequence} {\n'
                    '  transform.named_sequence @__transform_main(%r: !transform.any_op {transform.readonly}) {\n'
                    '    %0 = transform.structured.match ops{["linalg.matmul"]} in %r : (!transform.any_op) -> !transform.any_op\n'
                    '    transform.structured.vectorise %0 : !transform.any_op\n'
                    '    transform.yield\n  }\n}\n')
    ok(ctx, f"load {MATMUL}")
    error = failed(ctx, f"apply {path}")
    assert f"{path}:4:5: custom op 'transform.structured.vectorise' is unknown (did you mean " \
           "transform.structured.vectorize?)" in error, error
    assert ctx.session.cursor == 0


def test_a_session_s_input_range_for_an_argument_the_entry_lacks_is_dropped_with_a_warning(tmp_path):
    """`Workbench: input_ranges: {7: [0, 1]}` (the payload's entry has 3 inputs) made every `run` fail with
    `--ranges: @matmul has no argument 7` (a flag the user never typed), and nothing could take the range back."""
    import json

    from conftest import run_cli

    session = tmp_path / "s.yaml"
    session.write_text(f"Pipeline:\n- pass: canonicalize\nWorkbench:\n  payload: {{path: {MATMUL}}}\n"
                       "  input_ranges: {7: [0, 1], 1: [0, 2]}\n")
    out = run_cli(["replay", session, "--check", "--allow-run", "--json", tmp_path / "out.json"], timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr
    run = json.loads((tmp_path / "out.json").read_text())["run"]
    assert run["input_ranges"] == {"1": [0, 2]}, run
    assert "the session's input_ranges name argument 7 of @matmul, which has 3 inputs: dropped" in run["warning"]


def test_run_ranges_typed_for_an_argument_the_entry_lacks_still_fails(ctx):
    ok(ctx, f"load {MATMUL}")
    error = failed(ctx, "run --ranges 9=0:1 --iterations 1")
    assert error == "--ranges: @matmul has no argument 9 (its arguments are 0..2)", error
    assert ctx.session.input_ranges == {}
