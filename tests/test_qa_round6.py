"""Sixth QA round: the three defects round 5 left, then new ground (tune, export, --json, hand-edited session
files, large payloads); each test failed before its fix (docs/qa-round6.md)."""
from __future__ import annotations

import ast
import json
import os
from pathlib import Path

import pytest

from conftest import MATMUL, do, failed, ok, run_cli

SECRET = "sekrit_token: hunter2-0123456789\nsecond line\n"


def _session(path: Path, entries: str, payload: Path) -> Path:
    path.write_text(f"Pipeline:\n{entries}Workbench:\n  payload:\n    path: {payload}\n")
    return path


def _assert_not_quoted(text: str) -> None:
    assert "hunter2" not in text and "sekrit" not in text, text


@pytest.mark.parametrize("entry", [None, "- transform: {secret}\n", "- edit: {secret}\n", "- include: {inc}\n"])
def test_a_file_a_session_from_elsewhere_names_is_quoted_in_errors_only_when_it_is_mlir(ctx, tmp_path, entry):
    """`Workbench: payload: path: /etc/shadow` (or a transform / edit / included transform naming it) failed with
    MLIR's "custom op 'root' is unknown" and the file's first line as an excerpt, in the error, the log and
    --json: a session from elsewhere could show any file the user can read. Such a file's text is now quoted
    only where its name says it is MLIR (or the user named it)."""
    secret = tmp_path / "credentials"
    secret.write_text(SECRET)
    inc = tmp_path / "inc.yaml"
    inc.write_text(f"Pipeline:\n- transform: {secret}\n")
    if entry is None:
        session = _session(tmp_path / "s.yaml", "- pass: canonicalize\n", secret)
    else:
        session = _session(tmp_path / "s.yaml", entry.format(secret=secret, inc=inc), MATMUL)
    res = do(ctx, f"replay {session}")
    assert not res.ok and f"{secret}:1:1: not MLIR text (named by {session}" in res.error, res.error
    _assert_not_quoted(res.error + (res.detail or ""))
    out = run_cli(["replay", session, "--json", tmp_path / "out.json"])
    assert out.returncode == 1
    _assert_not_quoted(out.stdout + out.stderr + (tmp_path / "out.json").read_text())
    assert json.loads((tmp_path / "out.json").read_text())["ok"] is False


def test_a_file_the_user_names_or_an_mlir_file_is_still_quoted(ctx, tmp_path):
    secret = tmp_path / "notes.txt"
    secret.write_text(SECRET)
    res = do(ctx, f"load {secret}")      # typed: the user's own choice of file
    assert "custom op 'sekrit_token' is unknown" in res.error and "hunter2" in res.detail, res.detail
    broken = tmp_path / "broken.mlir"
    broken.write_text("func.func @f() {\n  %0 = arith.constant 1 : i32 oops\n}\n")
    session = _session(tmp_path / "s.yaml", "- pass: canonicalize\n", broken)
    res = do(ctx, f"replay {session}")   # a session names an MLIR file: its excerpt helps, and it is no secret
    assert not res.ok and f"{broken}:2:" in res.error and "oops" in res.detail, (res.error, res.detail)


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="no procfs")
@pytest.mark.parametrize("path", ["/proc/self/status", "/proc/cpuinfo"])
def test_a_kernel_pseudo_file_is_refused_in_one_line_not_loaded_empty(ctx, path):
    """procfs says such a file has 0 bytes: MLIR's parser, which reads the path by its size, loaded an empty
    module, silently."""
    ok(ctx, f"load {MATMUL}")
    before = ctx.session.current_sha
    error = failed(ctx, f"load {path}")
    assert f"cannot read {path}: not a file to load (its size says 0 bytes" in error, error
    assert "kernel pseudo-file" in error
    assert ctx.session.current_sha == before


def test_read_regular_file_refuses_a_file_whose_size_is_not_what_it_holds():
    from workbench.common.files import read_regular_file

    if not Path("/proc/self/status").exists():
        pytest.skip("no procfs")
    with pytest.raises(OSError, match="kernel pseudo-file"):
        read_regular_file(Path("/proc/self/status"))
    assert read_regular_file(MATMUL) == MATMUL.read_bytes()


@pytest.mark.parametrize("line, says", [
    ("pass canonicalize{max-iteration=3}", "no such option max-iteration (did you mean max-iterations?)"),
    ("pass -canonicalize=\"max-iteration=3\"", "no such option max-iteration (did you mean max-iterations?)"),
    ("pass one-shot-bufferize{bufferize-function-boundary}",
     "no such option bufferize-function-boundary (did you mean bufferize-function-boundaries?)"),
    ("pass func.func(affine-loop-tile{tile-sise=4})", "no such option tile-sise (did you mean tile-size?)"),
    ("pass canonicalize,cse{foo=1}", "no such option foo (cse has no options)"),
    ("pass canonicalize{zzzzzz=1}", "canonicalize's options: max-iterations, max-num-rewrites"),
    # workbench passes: a mistyped option was applied as if it were not there, or failed on its absence
    ("pass lh-specialize-shapes{shape=0:4x4}", "lh-specialize-shapes: no such option shape (did you mean shapes?)"),
    ("pass lh-fuse-elementwise{foo=1}", "lh-fuse-elementwise: no such option foo (lh-fuse-elementwise has no options)"),
    ("pass canonicalize,lh-pad-copies{lane=8}", "lh-pad-copies: no such option lane (did you mean lanes?)"),
])
def test_a_mistyped_pass_option_gets_a_did_you_mean(ctx, line, says):
    ok(ctx, f"load {MATMUL}")
    error = failed(ctx, line)
    assert says in error, error
    assert ctx.session.cursor == 0


def test_every_option_a_workbench_pass_reads_is_declared():
    """py_passes.OPTIONS against the code: the string keys each pass function (and the helpers it hands its
    options to in the same file) reads with options.get / _int_option / options[...]."""
    from workbench.worker import py_passes

    tree = ast.parse(Path(py_passes.__file__).read_text())
    funcs = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}

    def reads(fn, seen=()):
        keys = set()
        for node in ast.walk(fn):
            if isinstance(node, ast.Call):
                f = node.func
                if isinstance(f, ast.Attribute) and f.attr == "get" and getattr(f.value, "id", "") == "options":
                    keys.add(node.args[0].value)
                elif getattr(f, "id", "") == "_int_option":
                    keys.add(node.args[1].value)
                elif getattr(f, "id", "") in funcs and f.id not in seen and any(
                        getattr(a, "id", "") == "options" for a in node.args):
                    keys |= reads(funcs[f.id], seen + (f.id,))
            elif isinstance(node, ast.Subscript) and getattr(node.value, "id", "") == "options":
                keys.add(node.slice.value)
        return keys

    for name, (fn, _help) in py_passes.PASSES.items():
        found = reads(funcs[fn.__name__])
        declared = set(py_passes.OPTIONS.get(name, ()))
        if name == "lh-xegpu-spirv-binary":   # hands its options to xegpu/spirv_binary.py
            found = {"spirv-ext"}
        assert found == declared, (name, found, declared)
    assert set(py_passes.OPTIONS) <= set(py_passes.PASSES)


TWO_FUNCTIONS = """\
func.func @add(%a: tensor<64x64xf32>, %b: tensor<64x64xf32>) -> tensor<64x64xf32> {
  %e = tensor.empty() : tensor<64x64xf32>
  %0 = linalg.add ins(%a, %b : tensor<64x64xf32>, tensor<64x64xf32>) outs(%e : tensor<64x64xf32>) -> tensor<64x64xf32>
  return %0 : tensor<64x64xf32>
}
func.func @mm(%a: tensor<64x32xf32>, %b: tensor<32x16xf32>, %c: tensor<64x16xf32>) -> tensor<64x16xf32> {
  %0 = linalg.matmul ins(%a, %b : tensor<64x32xf32>, tensor<32x16xf32>) outs(%c : tensor<64x16xf32>) -> tensor<64x16xf32>
  return %0 : tensor<64x16xf32>
}
"""


def test_the_check_of_a_payload_of_several_functions_calls_the_entry_the_bench_step_names(ctx, tmp_path):
    """No `main`, two public functions: `bench entry=mm` then `run --check` failed with "reference lowering
    failed: bench: cannot pick the entry function: candidates @add, @mm" (the reference, the payload without
    the bench step, picked its entry by itself)."""
    path = tmp_path / "two.mlir"
    path.write_text(TWO_FUNCTIONS)
    ok(ctx, f"load {path}")
    assert "`run --entry NAME`" in failed(ctx, "run")
    ok(ctx, "bench entry=mm")
    res = ok(ctx, "run --check")
    assert res.data["run"]["entry"] == "mm" and res.data["run"]["check"]["passed"], res.data["run"]
    ok(ctx, "select --apply")   # a schedule after the wrapper: the same entry for both sides
    res = ok(ctx, "run --check")
    assert res.data["run"]["check"]["passed"]
    ok(ctx, f"load {path}")
    res = ok(ctx, "run --entry add --check")   # `run --entry` on the payload itself
    assert res.data["run"]["entry"] == "add" and res.data["run"]["check"]["passed"]


# y[i] = 2 x[i], but y[0] = -inf (a log of zero, a masked score): the reference holds an inf
SPECIAL = """\
func.func @f(%a: tensor<16xf32>) -> tensor<16xf32> {
  %e = tensor.empty() : tensor<16xf32>
  %0 = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>],
                       iterator_types = ["parallel"]} ins(%a : tensor<16xf32>) outs(%e : tensor<16xf32>) {
  ^bb0(%x: f32, %y: f32):
    %i = linalg.index 0 : index
    %c0 = arith.constant AT : index
    %first = arith.cmpi eq, %i, %c0 : index
    %c = arith.constant SCALE : f32
    %m = arith.mulf %x, %c : f32
    %special = arith.constant VALUE : f32
    %s = arith.select %first, %special, %m : f32
    linalg.yield %s : f32
  } -> tensor<16xf32>
  return %0 : tensor<16xf32>
}
"""


def _special(at=0, scale="2.0", value="0xFF800000"):
    return SPECIAL.replace("AT", str(at)).replace("SCALE", scale).replace("VALUE", value)


@pytest.mark.parametrize("payload, scheduled", [
    (_special(), _special(scale="3.0")),                        # -inf in the reference: every error was 0
    (_special(value="0x7FC00000"), _special(at=5, value="0x7FC00000")),   # NaN at another place: skipped
    (_special(), _special(value="0x7F800000")),                 # +inf where the reference has -inf
], ids=["minus-inf-in-reference", "nan-moved", "inf-sign"])
def test_a_check_catches_wrong_values_next_to_inf_and_nan(ctx, tmp_path, payload, scheduled):
    """`run --check` said "check passed (max abs err 0.995, max rel err 0)" for outputs 1.5x the reference's:
    errors were relative to the reference's largest magnitude, inf; NaNs were compared by existence, not place."""
    (tmp_path / "p.mlir").write_text(payload)
    (tmp_path / "s.mlir").write_text(scheduled)
    ok(ctx, f"load {tmp_path / 'p.mlir'}")
    res = ok(ctx, "run --check")       # the payload against itself, inf / NaN and all
    assert res.data["run"]["check"] == {"passed": True, "max_abs_err": 0.0, "max_rel_err": 0.0,
                                        "tolerance": 1e-4}, res.data["run"]["check"]
    ok(ctx, f"edit-apply {tmp_path / 's.mlir'}")
    res = do(ctx, "run --check")
    assert not res.ok and not res.data["run"]["check"]["passed"], res.data["run"]["check"]


def test_compare_wants_inf_and_nan_where_the_reference_has_them():
    import numpy as np

    from workbench.execution.runner import compare

    ref = np.array([-np.inf, 1.0, 2.0, np.nan], dtype=np.float32)
    assert compare([ref.copy()], [ref], "f32").passed
    assert not compare([ref * 1.5], [ref], "f32").passed
    moved = np.array([-np.inf, 1.0, np.nan, 2.0], dtype=np.float32)
    check = compare([moved], [ref], "f32")
    assert not check.passed and "element [2] is nan where the reference has 2.0" in check.details[0], check.details
    assert compare([np.array([1.0, 2.0], np.float32)], [np.array([1.0, 2.00001], np.float32)], "f32").passed


def test_json_reports_are_strict_json_with_the_same_keys_for_every_command(tmp_path):
    """A failed check against NaNs wrote `"max_abs_err": Infinity` (jq and JSON.parse refuse it), and a command
    entry had `error` only when it failed."""
    (tmp_path / "p.mlir").write_text(_special(value="0x7FC00000"))
    (tmp_path / "s.mlir").write_text(_special(at=5, value="0x7FC00000"))
    script = tmp_path / "c.lhw"
    script.write_text(f"inspect\nparams 7\nedit-apply {tmp_path / 's.mlir'}\nrun --check\nhistory\n")
    out = run_cli([tmp_path / "p.mlir", "--script", script, "--keep-going", "--json", "-"])
    assert out.returncode == 1, out.stderr

    def refuse(constant):
        raise ValueError(f"not JSON: {constant}")

    doc = json.loads(out.stdout, parse_constant=refuse)
    assert doc["run"]["check"]["max_abs_err"] == "inf" and float(doc["run"]["check"]["max_abs_err"]) == float("inf")
    commands = doc["commands"]
    assert [c["command"].split()[0] for c in commands] == ["inspect", "params", "edit-apply", "run", "history"]
    for c in commands:
        assert {"line", "command", "ok", "summary", "kind", "error", "detail"} <= set(c), c
        assert (c["error"] is None) == c["ok"], c


def _tune_report(kept_current: bool) -> dict:
    best_tuned = {"tile_m": 64} if kept_current else {"tile_m": 32}
    return {"space": {"tile_m": [32, 64]}, "trials": [], "new_trials": 3, "workers": 1, "study": "s",
            "storage": "sqlite:///x.db", "baseline_before": {"median_s": 0.012},   # one cold run of the current dict
            "confirm": {"rows": [{"label": "current", "median_s": 0.009 if kept_current else 0.0105},
                                 {"label": "trial 2", "median_s": 0.0095}]},
            "best": {"trial": 0 if kept_current else 2, "tuned": best_tuned, "median_s": 0.009 if kept_current
                     else 0.0095, "kept_current": kept_current}}


def test_a_tune_compares_its_winner_with_the_current_dict_as_the_confirmation_measured_it():
    """"the current parameters stay best {tile_m=64 tile_n=64} median 9.053 ms ..., 1.33x vs baseline": the
    baseline is the current dict, measured once, cold, before the trials."""
    from workbench.commands.tune_commands import tune_summary

    kept = tune_summary(1, _tune_report(True))
    assert "the current parameters stay best {tile_m=64}" in kept and "x vs" not in kept, kept
    won = tune_summary(1, _tune_report(False))
    assert "best trial 2 {tile_m=32} median 9.500 ms" in won and "1.11x vs the current dict" in won, won


def test_the_workbench_pass_list_of_the_front_end_is_the_worker_s():
    from workbench.common.pass_names import WORKBENCH_PASSES
    from workbench.worker import py_passes

    assert list(WORKBENCH_PASSES) == list(py_passes.PASSES)


@pytest.mark.parametrize("line, wanted, unwanted", [
    ("pass lh-spec", ["pass lh-specialize-shapes"], []),                 # the workbench's passes: nothing
    ("pass -canon", ["pass -canonicalize"], []),                         # mlir-opt flags: nothing
    ("pass canonicalize,lh-fuse-el", ["pass canonicalize,lh-fuse-elementwise"], []),
    ("pass --lh-erase", ["pass --lh-erase-transform-schedules"], []),
    ("run --entry ", ["run --entry mm", "run --entry add"], ["run --entry _lh_bench"]),   # nothing
    ("bench entry=", ["bench entry=mm", "bench entry=add"], ['bench entry=""']),         # only `entry=""`
    ("tune 1 tile_", ["tune 1 tile_m=[", "tune 1 tile_n=["], []),        # nothing
    ("tune ti", ["tune tile_m=[", "tune tile_k=["], []),
])
def test_completion_offers_what_the_command_takes(ctx, tmp_path, line, wanted, unwanted):
    from workbench.completion import Completer

    path = tmp_path / "two.mlir"
    path.write_text(TWO_FUNCTIONS)
    ok(ctx, f"load {path}")
    if line.startswith("tune"):
        ok(ctx, "apply pipelines/lib/tile.py[gen=tile_matmul]{tile_m=16 tile_n=16 tile_k=16}")
    got = [c.apply(line) for c in Completer(ctx.registry, ctx.session).complete(line)]
    assert set(wanted) <= set(got) and not set(unwanted) & set(got), got


def test_completion_of_two_step_arguments_offers_each_step_once(ctx):
    from workbench.completion import Completer

    ok(ctx, f"load {MATMUL}")
    ok(ctx, "pass canonicalize")
    got = [c.apply("diff ") for c in Completer(ctx.registry, ctx.session).complete("diff ")]
    assert got.count("diff 0") == 1 and got.count("diff 1") == 1, got


def test_a_session_whose_ir_differs_says_it_was_saved_by_another_mlir(ctx, tmp_path):
    """`mlir_version` was recorded by save and never read: a session of MLIR 19 replayed on 22 said only
    "final IR differs"."""
    ok(ctx, f"load {MATMUL}")
    ok(ctx, "apply pipelines/lib/tile.py[gen=tile_matmul]{tile_m=64 tile_n=64 tile_k=64}")
    ok(ctx, f"save {tmp_path / 's.yaml'}")
    text = (tmp_path / "s.yaml").read_text()
    assert "tile_m: 64" in text and "mlir_version: " in text
    import re
    old = re.sub(r"mlir_version: \S+", "mlir_version: 19.1.0", text.replace("tile_m: 64", "tile_m: 32"))
    (tmp_path / "old.yaml").write_text(old)
    res = ok(ctx, f"replay {tmp_path / 'old.yaml'}")
    assert "final IR differs" in res.summary and "saved with MLIR 19.1.0, this is 22." in res.summary, res.summary
    (tmp_path / "same.yaml").write_text(text.replace("tile_m: 64", "tile_m: 32"))
    res = ok(ctx, f"replay {tmp_path / 'same.yaml'}")
    assert "final IR differs" in res.summary and "saved with" not in res.summary, res.summary


def test_filecheck_of_a_file_without_check_lines_says_so_in_words(ctx):
    """It said "filecheck FAILED (0/0 CHECK lines matched): matmul.mlir: CHECK: '' no CHECK lines in the file"."""
    ok(ctx, f"load {MATMUL}")
    assert failed(ctx, "run --filecheck") == "filecheck FAILED: matmul.mlir has no CHECK lines to match"
    assert failed(ctx, "run --filecheck --check-prefixes NOPE,NADA") == ("filecheck FAILED: matmul.mlir has no NOPE/NADA lines "
                                                                         "to match")


def test_export_cmdline_to_a_file_says_where_it_wrote(ctx, tmp_path):
    ok(ctx, f"load {MATMUL}")
    ok(ctx, "pass canonicalize")
    res = ok(ctx, f"export cmdline {tmp_path / 'replay.sh'}")
    assert res.summary.endswith(f"; wrote {tmp_path / 'replay.sh'}"), res.summary
    assert (tmp_path / "replay.sh").read_text().startswith("#!/bin/sh\nmlir-opt ")


def test_diff_in_json_carries_the_diff_and_its_counts(tmp_path):
    script = tmp_path / "d.lhw"
    script.write_text("pass canonicalize\napply pipelines/lib/tile.py[gen=tile_matmul]{tile_m=64 tile_n=64 tile_k=64}"
                      "\ndiff\ndiff 1\n")
    out = run_cli([MATMUL, "--script", script, "--json", "-"])
    assert out.returncode == 0, out.stderr
    tiled, noop = [c for c in json.loads(out.stdout)["commands"] if c["command"].startswith("diff")]
    assert tiled["added"] > 10 and tiled["removed"] >= 1 and "+          %extracted_slice = tensor.extract_slice" in tiled["diff"], tiled
    assert tiled["summary"] == f"step 1 -> step 2: +{tiled['added']} -{tiled['removed']} lines"
    assert noop["noop"] and noop["diff"] == "" and noop["added"] == noop["removed"] == 0


def test_a_mistyped_llvm_cpu_name_gets_a_did_you_mean():
    out = run_cli(["targets", "--cpu", "znver9"])
    assert out.returncode == 2 and "unknown cpu 'znver9' (did you mean znver" in out.stderr, out.stderr


STRIDED = """\
func.func @scale(%a: memref<4x4xf32, strided<[8, 1], offset: 3>>, %b: memref<4x4xf32>) {
  %c = arith.constant 2.0 : f32
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>],
                  iterator_types = ["parallel", "parallel"]}
      ins(%a : memref<4x4xf32, strided<[8, 1], offset: 3>>) outs(%b : memref<4x4xf32>) {
  ^bb0(%x: f32, %y: f32):
    %m = arith.mulf %x, %c : f32
    linalg.yield %m : f32
  }
  return
}
"""
IN_PLACE = """\
func.func @double(%a: memref<3x2xf32, strided<[5, 2]>>) {
  %c = arith.constant 2.0 : f32
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]}
      outs(%a : memref<3x2xf32, strided<[5, 2]>>) {
  ^bb0(%x: f32):
    %m = arith.mulf %x, %c : f32
    linalg.yield %m : f32
  }
  return
}
"""


@pytest.mark.parametrize("payload, output", [(STRIDED, "input0 * 2"), (IN_PLACE, "input0 * 2")],
                         ids=["strided-input", "strided-in-place"])
def test_a_memref_argument_with_a_static_strided_layout_gets_its_values_where_the_layout_says(
        ctx, tmp_path, payload, output):
    """`memref<4x4xf32, strided<[8, 1]>>`: the entry read rows 8 elements apart from a contiguous 4x4 array (out of
    bounds: `run --check` of the payload against itself failed with max abs err 1.16e+17)."""
    import numpy as np

    (tmp_path / "p.mlir").write_text(payload)
    ok(ctx, f"load {tmp_path / 'p.mlir'}")
    for _ in range(2):   # the payload as it is, then scheduled
        res = ok(ctx, f"run --check --iterations 1 --warmup 0 --save-outputs {tmp_path / 'out'}")
        assert res.data["run"]["check"]["passed"], res.data["run"]["check"]
        input0 = np.load(tmp_path / "out" / "input0.npy")
        got = np.load(tmp_path / "out" / "output0.npy")
        np.testing.assert_array_equal(got, eval(output, {"input0": input0}))
        ok(ctx, "select --apply")


def _saved_session(ctx, tmp_path) -> str:
    ok(ctx, f"load {MATMUL}")
    ok(ctx, "apply pipelines/lib/tile.py[gen=tile_matmul]{tile_m=64 tile_n=64 tile_k=64}")
    ok(ctx, "pass canonicalize,cse")
    ok(ctx, f"save {tmp_path / 'saved.yaml'}")
    return (tmp_path / "saved.yaml").read_text()


def _reordered(text: str) -> str:
    import yaml

    doc = yaml.safe_load(text)
    meta = dict(reversed(list(doc["Workbench"].items())))
    return yaml.safe_dump({"Workbench": meta, "Pipeline": [dict(reversed(list(e.items()))) for e in doc["Pipeline"]]},
                          sort_keys=False)


@pytest.mark.parametrize("edit", [
    lambda t: t.replace("\n", "\r\n"),                                   # CRLF line ends
    lambda t: "\ufeff" + t,                                              # a byte order mark
    lambda t: "# edited by hand\n" + t.replace("Pipeline:", "Pipeline:   # the steps"),   # comments
    _reordered,                                                          # keys in another order
    lambda t: json.dumps(__import__("yaml").safe_load(t)),               # flow style (JSON)
], ids=["crlf", "bom", "comments", "reordered", "json"])
def test_a_session_edited_by_hand_without_changing_it_replays_to_the_same_ir(ctx, tmp_path, edit):
    text = _saved_session(ctx, tmp_path)
    (tmp_path / "edited.yaml").write_bytes(edit(text).encode())
    res = ok(ctx, f"replay {tmp_path / 'edited.yaml'}")
    assert res.data["reproduced"] is True and "warning" not in res.summary, res.summary


def test_a_tab_in_a_session_file_says_to_write_spaces(ctx, tmp_path):
    text = _saved_session(ctx, tmp_path).replace("- {pass: ", "-\t{pass: ")
    (tmp_path / "tab.yaml").write_text(text)
    error = failed(ctx, f"replay {tmp_path / 'tab.yaml'}")
    assert "found character '\\t'" in error and "a tab: write spaces there" in error, error


def test_the_repl_writes_json_and_emit_at_its_end(tmp_path):
    """`lh-workbench m.mlir --repl --json out.json --emit out.mlir` wrote neither (both were ignored without a word
    outside --script)."""
    import subprocess

    from conftest import CLI, REPO

    env = dict(os.environ, PYTHONPATH=str(REPO))
    out = subprocess.run(CLI + [str(MATMUL), "--repl", "--json", str(tmp_path / "out.json"), "--emit",
                                str(tmp_path / "out.mlir")], input="pass canonicalize\npass bogus\n", cwd=REPO,
                         env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 1, out.stdout + out.stderr   # a command failed
    doc = json.loads((tmp_path / "out.json").read_text())
    assert doc["ok"] is False and [s["spec"] for s in doc["steps"]] == ["canonicalize"], doc
    assert (tmp_path / "out.mlir").read_text().startswith("module {")


def test_asm_of_a_payload_of_several_functions_takes_the_function_it_names_as_the_entry(ctx, tmp_path):
    """`asm mm` failed with "cannot pick the entry function: candidates @add, @mm" though it names one."""
    path = tmp_path / "two.mlir"
    path.write_text(TWO_FUNCTIONS)
    ok(ctx, f"load {path}")
    res = ok(ctx, "asm mm")
    assert res.data["lines"] > 0 and "mm" in res.data["text"], res.summary
    assert failed(ctx, "asm").endswith("; here: `asm NAME`")


def test_outlining_repeated_steps_walks_a_long_run_of_identical_ops_once(monkeypatch):
    """`select` on a function of 400k identical scalar ops ran past 10 minutes: lh-outline-repeated-steps
    walked every candidate run again to see whether it computes (each period of a run of identical ops is
    one), quadratic in the ops; now a prefix count, and steps of at most MAX_PERIOD ops."""
    from mlir import ir

    from workbench.worker import repeated_steps

    n = 2000
    body = "".join(f"  %v{i} = arith.addf {'%a' if i == 0 else f'%v{i - 1}'}, %a : f32\n" for i in range(n))
    text = f"func.func @g(%a: f32) -> f32 {{\n{body}  return %v{n - 1} : f32\n}}\n"
    calls = []
    original = repeated_steps._computes
    monkeypatch.setattr(repeated_steps, "_computes", lambda op: calls.append(1) or original(op))
    with ir.Context():
        module = ir.Module.parse(text)
        assert repeated_steps.outline_repeated_steps(module) == []   # scalar ops: nothing worth a call
    assert len(calls) <= 2 * n, len(calls)    # it was ~n * n / 32 (125k here)
