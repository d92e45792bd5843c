"""Third QA round (fresh eyes): a new user's commands, upstream files, torch models and session files
that the first two rounds did not try; each test failed before its fix."""
from __future__ import annotations

import re

import pytest

from conftest import REPO, failed
from workbench.commands import CommandContext, default_registry


@pytest.fixture
def ctx(matmul_session, monkeypatch):
    monkeypatch.chdir(REPO)
    return CommandContext(matmul_session, default_registry())


def test_run_options_a_bench_step_already_compiled_in_are_not_silently_ignored(ctx):
    """`bench iterations=3` then `run --iterations 30` ran 3 timed calls without a word, and `run --entry
    nosuch` ran @matmul: the wrapper's counts and entry are compiled into the module. Another entry is
    an error; other counts run with the wrapper's and a warning that says where to change them."""
    assert ctx.registry.dispatch("bench iterations=3", ctx).ok
    res = ctx.registry.dispatch("run --iterations 30 --warmup 0", ctx)
    assert res.ok and len(res.data["run"]["times_s"]) == 3
    warning = res.data["warnings"][0]
    assert warning.startswith("--warmup 0, --iterations 30: the module already has its benchmark wrapper")
    assert "warmup=1 iterations=3" in warning and "`params 1 warmup=0 iterations=30`" in warning
    err = failed(ctx, "run --entry nosuch")
    assert err.startswith("--entry nosuch: the module already has its benchmark wrapper, which calls @matmul")
    res = ctx.registry.dispatch("run --iterations 3 --entry matmul", ctx)   # what the wrapper does: no word
    assert res.ok and not any("benchmark wrapper" in w for w in res.data.get("warnings") or [])
    assert ctx.registry.dispatch("undo", ctx).ok   # no wrapper yet: run inserts one with what was asked
    res = ctx.registry.dispatch("run --iterations 4", ctx)
    assert res.ok and len(res.data["run"]["times_s"]) == 4


def test_export_after_a_last_step_without_an_mlir_opt_spelling_says_so(ctx, tmp_path):
    """`bench` (no mlir-opt spelling) as the last step: `export cmdline` answered `mlir-opt command line for
    steps 2..1` with a bare `mlir-opt FILE`."""
    assert ctx.registry.dispatch("bench", ctx).ok
    for line in ("export cmdline", f"export reproducer {tmp_path / 'r.mlir'}"):
        err = failed(ctx, line)
        assert err.startswith("step 1 (bench") and "has no mlir-opt spelling" in err, err
    assert not (tmp_path / "r.mlir").exists()
    assert ctx.registry.dispatch("pass canonicalize", ctx).ok   # a pass after it: steps 2..2 from step 1's IR
    res = ctx.registry.dispatch("export cmdline", ctx)
    assert res.ok and res.summary.startswith("mlir-opt command line for steps 2..2 (input: IR after step 1)")
    assert "canonicalize" in res.data["cmdline"]


def test_options_after_the_key_value_list_are_options(ctx, tmp_path):
    """`params 1 tile_m=32 --export f` / `tune 1 tile=[16,32] --trials 8`: options typed after the values
    were read as values (`expected key=value, got '--trials'`)."""
    assert ctx.registry.dispatch("apply pipelines/lib/tile.py[gen=tile_matmul]{tile_m=64 tile_n=64}", ctx).ok
    cmd, args = ctx.registry.parse('tune 1 tile_m=[32,64] tile_n=[32] --trials 2 --csv "a b.csv"')
    assert args["step"] == 1 and args["space"] == ["tile_m=[32,64]", "tile_n=[32]"]
    assert args["trials"] == 2 and args["csv"] == "a b.csv"
    assert "unknown option --trails (did you mean --trials" in failed(ctx, "tune 1 tile_m=[32,64] --trails 2")
    # values and --export / --import together: one of them was dropped without a word
    err = failed(ctx, f"params 1 tile_m=32 --export {tmp_path / 'p.json'}")
    assert "--export and KEY=VALUE do different things" in err and not (tmp_path / "p.json").exists()
    assert "--export and --import" in failed(ctx, f"params 1 --export {tmp_path / 'p.json'} --import x.json")
    assert ctx.session.steps[0].step.params["tile_m"] == 64


def test_a_tune_candidate_list_of_one_value_pins_it(ctx):
    """`tune 1 tile_m=[16] tile_n=[32,64]` searched tile_n with tile_m at its current 64, and `tune 1
    tile_m=[32]` answered `give candidates, e.g. tile=[16,32,64]`, as if none were given."""
    from workbench.tune import TuneError, TuneOptions, search_space

    assert ctx.registry.dispatch("apply pipelines/lib/tile.py[gen=tile_matmul]{tile_m=64 tile_n=64}", ctx).ok
    space, fixed, _ = search_space(ctx.session, 1, TuneOptions(space={"tile_m": [16], "tile_n": [32, 64]}))
    assert space == {"tile_n": [32, 64]} and fixed["tile_m"] == 16
    with pytest.raises(TuneError, match=r"tile_m=\[32\] is one candidate: nothing to search \(`params 1 "
                                        r"tile_m=32` sets it\)"):
        search_space(ctx.session, 1, TuneOptions(space={"tile_m": [32]}))
    with pytest.raises(TuneError, match=r"tile_m=\[\] gives no candidates"):
        search_space(ctx.session, 1, TuneOptions(space={"tile_m": [], "tile_n": [32, 64]}))


def test_negative_seeds_line_numbers_and_trusting_a_folder_say_what_is_wrong(ctx):
    """`run --seed -1` failed after lowering with numpy's `run: expected non-negative integer` (no option
    named), `--run-line 0` as `has 0 RUN line(s)`, and `trust /tmp` said `/tmp: no such file`."""
    assert failed(ctx, "run --seed -1") == "run: --seed must be >= 0, got -1"
    assert failed(ctx, "run --filecheck --run-line 0") == "run: --run-line must be >= 1, got 0"
    assert failed(ctx, "tune --seed -3") == "tune: --seed must be >= 0, got -3"
    assert failed(ctx, "trust /tmp") == "/tmp: a directory, not a file"
    assert failed(ctx, "trust /dev/null") == "/dev/null: not a regular file"


def test_usage_errors_write_the_json_failure_document_not_nothing(tmp_path, state_dir):
    """`--json out.json` with a missing script, a bad --target / --cpu or an unknown option exited 2 and
    wrote nothing: a CI job then read the out.json of the previous, successful run."""
    import json

    from conftest import MATMUL, run_cli

    out = tmp_path / "out.json"
    script = tmp_path / "s.lhw"
    script.write_text("inspect\n")
    cases = [([MATMUL, "--script", tmp_path / "missing.lhw"], "missing.lhw: no such script file"),
             ([MATMUL, "--script", script, "--target", "nosuch"], "unknown target 'nosuch'"),
             ([MATMUL, "--script", script, "--cpu", "nosuch"], "unknown cpu 'nosuch'"),
             ([MATMUL, "--script", script, "--scrpit"], "unrecognized arguments: --scrpit"),
             (["--script", script], "--script needs a payload")]
    for args, error in cases:
        out.write_text('{"ok": true, "error": null}\n')   # the last run's
        p = run_cli([*args, "--json", out])
        assert p.returncode == 2, (args, p.stderr)
        doc = json.loads(out.read_text())
        assert doc["ok"] is False and error in doc["error"], (args, doc)
        assert {"ok", "ir_sha256", "steps", "run", "error"} <= set(doc)
    p = run_cli([MATMUL, "--script", tmp_path / "missing.lhw", "--json", "-"])
    assert p.returncode == 2 and json.loads(p.stdout)["error"].endswith("no such script file")


def test_a_run_killed_at_its_time_limit_says_how_to_allow_longer(ctx):
    """An upstream file's 2048^3 matmuls (fold-add-into-dest.mlir) ended in `run worker timed out after
    120 s and was killed`, without the option that sets the limit."""
    assert ctx.registry.dispatch(f"load {REPO / 'tests' / 'payloads' / 'spin.mlir'}", ctx).ok
    err = failed(ctx, "run --iterations 1 --warmup 0 --timeout 3")
    assert "timed out after 3 s" in err and re.search(r"\(`run --timeout 600` allows longer; it covers the 0 \+ 1 "
                                                     r"calls of the compiled code, not its compile\)$", err), err


#: a ConvLSTM's gate conv (3 input + 8 hidden channels: 11, a prime) and its head, a 1x1 conv to one channel
CONVLSTM_LIKE = """func.func @main(%x: tensor<2x11x12x12xf32>, %w: tensor<32x11x3x3xf32>, %hw: tensor<1x32x1x1xf32>) -> tensor<2x1x12x12xf32> {
  %zero = arith.constant 0.0 : f32
  %p = tensor.pad %x low[0, 0, 1, 1] high[0, 0, 1, 1] {
  ^bb0(%a: index, %b: index, %c: index, %d: index):
    tensor.yield %zero : f32
  } : tensor<2x11x12x12xf32> to tensor<2x11x14x14xf32>
  %e = tensor.empty() : tensor<2x32x12x12xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e : tensor<2x32x12x12xf32>) -> tensor<2x32x12x12xf32>
  %g = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>}
       ins(%p, %w : tensor<2x11x14x14xf32>, tensor<32x11x3x3xf32>) outs(%init : tensor<2x32x12x12xf32>) -> tensor<2x32x12x12xf32>
  %e1 = tensor.empty() : tensor<2x1x12x12xf32>
  %init1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<2x1x12x12xf32>) -> tensor<2x1x12x12xf32>
  %h = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>}
       ins(%g, %hw : tensor<2x32x12x12xf32>, tensor<1x32x1x1xf32>) outs(%init1 : tensor<2x1x12x12xf32>) -> tensor<2x1x12x12xf32>
  return %h : tensor<2x1x12x12xf32>
}
"""


def test_window_tiles_without_a_reduction_or_an_output_channel_are_not_specialized():
    """A ConvLSTM (torch: gates = conv(cat([x_t, h]))) failed `select --apply` with `transform.structured.specialize
    failed to apply`: its 11 channels were tiled one by one, and the folded tile of one channel and one tap is
    an outer product; its head, a 1x1 conv to one channel, blocked the batch, out[n, w] += in[n, c, w] W[c]."""
    from workbench.targets.cpu_selector import window_params

    mulf = ["arith.mulf", "arith.addf", "linalg.yield"]
    plane = {"domain": [2, 32, 168, 11, 3, 3], "iterators": ["parallel"] * 3 + ["reduction"] * 3,
             "operand_dims": [[0, 3, -1], [1, 3, 4, 5], [0, 1, 2]],
             "operand_terms": [[[[0, 1]], [[3, 1]], [[2, 1], [4, 14], [5, 1]]], [[[1, 1]], [[3, 1]], [[4, 1]], [[5, 1]]],
                               [[[0, 1]], [[1, 1]], [[2, 1]]]],
             "num_inputs": 2, "body": mulf, "projected": False}
    p = window_params(plane, 16)
    assert p["tile"][3] == 1 and p["contraction"] == 0, p            # 11 channels one by one: no matmul left
    p = window_params({**plane, "domain": [2, 32, 168, 16, 3, 3]}, 16)
    assert p["tile"][3] == 8 and p["contraction"] == 1, p            # 16: blocks of 8, a matmul as before
    head = {"domain": [2, 1, 144, 8, 1], "iterators": ["parallel"] * 3 + ["reduction"] * 2,
            "operand_dims": [[0, 3, -1], [1, 3, 4], [0, 1, 2]],
            "operand_terms": [[[[0, 1]], [[3, 1]], [[2, 1], [4, 1]]], [[[1, 1]], [[3, 1]], [[4, 1]]],
                              [[[0, 1]], [[1, 1]], [[2, 1]]]],
            "num_inputs": 2, "body": mulf, "projected": False}
    p = window_params(head, 16)
    assert p["tile"][0] == 2 and p["contraction"] == 0, p
    p = window_params({**head, "domain": [1, 1, 1221, 10, 1]}, 16)   # batch 1: no block, out[w] += in[c, w] W[c]
    assert p["contraction"] == 0, p


@pytest.mark.parametrize("batch", [2, 1])
def test_a_convlstm_like_pair_of_convolutions_selects_runs_and_matches(ctx, tmp_path, batch):
    payload = tmp_path / "convlstm_like.mlir"
    payload.write_text(CONVLSTM_LIKE.replace("tensor<2x", f"tensor<{batch}x"))
    assert ctx.registry.dispatch(f"load {payload}", ctx).ok
    for line in ("target cpu --threads 1", "select --apply", "bench warmup=1 iterations=2", "apply cpu-lower"):
        res = ctx.registry.dispatch(line, ctx)
        assert res.ok, (line, res.error)
    res = ctx.registry.dispatch("run --check --iterations 2 --warmup 1", ctx)
    assert res.ok and res.data["run"]["check"]["passed"], res.error


def test_a_byte_order_mark_is_not_part_of_a_payload_script_or_transform(ctx, tmp_path):
    """Files a Windows editor saved (UTF-8 with a BOM, CRLF): the payload failed at 1:1 `unexpected character`
    and a script's first command was `unknown command 'inspect' (did you mean inspect?)`."""
    from workbench.commands.script import run_script_text

    bom = "\ufeff"
    payload = tmp_path / "bom.mlir"
    payload.write_bytes((bom + "func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {\r\n"
                         "  return %a : tensor<4xf32>\r\n}\r\n").encode())
    res = ctx.registry.dispatch(f"load {payload}", ctx)
    assert res.ok, res.error
    assert ctx.registry.dispatch(f"load --chunk 1 {payload}", ctx).ok
    bad = tmp_path / "bad.mlir"
    bad.write_bytes((bom + "func.func @f(%a: f32) -> f32 {\n  return %b : f32\n}\n").encode())
    assert failed(ctx, f"load {bad}").startswith(f"{bad}:2:10: use of undeclared SSA value")   # columns as written
    transform = tmp_path / "t.mlir"
    transform.write_bytes((bom + (REPO / "pipelines" / "lib" / "tile.mlir").read_text()).encode())
    outcome = run_script_text(bom + f"load {REPO / 'examples' / 'matmul.mlir'}\r\napply {transform}\r\n", ctx)
    assert outcome.ok, outcome.error
    assert [r.data.get("command") for _, _, r in outcome.results] == ["load", "apply"]


def test_keys_given_twice_are_refused_not_the_last_one_kept(ctx, tmp_path):
    """A session with two `Pipeline:` lists replayed the second and dropped the first; `params 2 tile_m=64
    tile_m=32` took 32. A merge key's values may still be overridden."""
    from workbench.common import safe_yaml

    session = tmp_path / "s.yaml"
    session.write_text(f"Pipeline:\n- pass: canonicalize\nPipeline:\n- pass: cse\n"
                       f"Workbench: {{payload: {{path: {REPO / 'examples' / 'matmul.mlir'}}}}}\n")
    err = failed(ctx, f"replay {session}")
    assert "key 'Pipeline' given twice (first on line 1)" in err and f"{session}:3:1" in err
    assert ctx.session.cursor == 0
    assert safe_yaml.load("a: &d {x: 1, y: 2}\nb: {<<: *d, y: 3}\n")["b"] == {"x": 1, "y": 3}
    assert ctx.registry.dispatch("apply pipelines/lib/tile.py[gen=tile_matmul]{tile_m=64}", ctx).ok
    assert failed(ctx, "params 1 tile_n=64 tile_n=32") == "tile_n given twice (tile_n=64 and tile_n=32)"
    assert ctx.session.steps[0].step.params["tile_n"] == 32   # the default: nothing was applied


def test_a_session_moved_without_its_payload_says_how_to_name_it(ctx, tmp_path):
    """A saved session copied to another folder answered `/elsewhere/matmul.mlir: no such file`: the payload
    path is relative to the session file, and `replay --payload` names another."""
    import shutil

    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    shutil.copy(REPO / "examples" / "matmul.mlir", tmp_path / "a" / "matmul.mlir")
    assert ctx.registry.dispatch(f"load {tmp_path / 'a' / 'matmul.mlir'}", ctx).ok
    assert ctx.registry.dispatch("pass canonicalize", ctx).ok
    assert ctx.registry.dispatch(f"save {tmp_path / 'a' / 's.yaml'}", ctx).ok
    shutil.copy(tmp_path / "a" / "s.yaml", tmp_path / "b" / "s.yaml")
    err = failed(ctx, f"replay {tmp_path / 'b' / 's.yaml'}")
    assert err.startswith(f"{tmp_path / 'b' / 'matmul.mlir'}: no such file (the session's payload 'matmul.mlir'")
    assert f"`replay --payload FILE.mlir {tmp_path / 'b' / 's.yaml'}`" in err
    res = ctx.registry.dispatch(f"replay --payload {tmp_path / 'a' / 'matmul.mlir'} {tmp_path / 'b' / 's.yaml'}", ctx)
    assert res.ok, res.error


def test_a_remapped_key_that_another_binding_keeps_is_warned_about():
    """`"app.undo" = "ctrl+q"` took Ctrl+Q from quit silently: the footer lost `^q Quit` and nothing said why."""
    from workbench.tui.app import WorkbenchApp
    from workbench.tui.keymap import key_clashes

    sections = WorkbenchApp.binding_sections()
    (warning,) = key_clashes(sections, {"app.undo": "ctrl+q"})
    assert warning.startswith("keymap: app.undo takes ctrl+q, the key of app.quit (Everywhere)")
    assert key_clashes(sections, {"app.undo": "ctrl+u"}) == []
    assert key_clashes(sections, {"app.undo": "ctrl+q", "app.quit": "ctrl+x"}) == []   # quit moved too


def test_a_control_character_in_a_session_is_one_line_with_its_line_and_column(ctx, tmp_path):
    """A BEL or NUL in a session (or a corrupted journal) gave PyYAML's two-line ReaderError
    (`in "<unicode string>", position 25`)."""
    session = tmp_path / "ctrl.yaml"
    session.write_text(f'Pipeline:\n- {{pass: "canon\x07icalize"}}\nWorkbench: {{payload: {{path: {REPO / "examples" / "matmul.mlir"}}}}}\n')
    err = failed(ctx, f"replay {session}")
    assert err.startswith(f"{session}:2:16: invalid YAML: unacceptable character #x0007"), err
    assert "position" not in err
    err = failed(ctx, f"apply {session}")
    assert f"{session}:2:16: invalid YAML" in err


def test_unusable_input_ranges_and_npy_indices_are_usage_errors(ctx, tmp_path):
    """`run --ranges 0=-inf:inf` (or nan, or -1e308:1e308) was `run: internal error: OverflowError: high - low
    range exceeds valid bounds`; `run --npy 5=x.npy` on an entry of 3 inputs ran with random inputs."""
    import numpy as np

    for bad in ("0=-inf:inf", "0=nan:1", "0=-1e308:1e308"):
        err = failed(ctx, f"run --ranges {bad}")
        assert f"--ranges expects finite LO < HI whose difference is finite too, got '{bad}'" in err, err
    np.save(tmp_path / "x.npy", np.zeros((256, 512), np.float32))
    assert failed(ctx, f"run --npy 5={tmp_path / 'x.npy'}") == "--npy: @matmul has no input 5 (its inputs are 0..2)"
    assert ctx.session.last_run is None or ctx.session.last_run.get("error")
    session = tmp_path / "s.yaml"
    session.write_text(f"Pipeline: []\nWorkbench: {{payload: {{path: {REPO / 'examples' / 'matmul.mlir'}}}, "
                       f"input_ranges: {{0: [-1.0e+308, 1.0e+308]}}}}\n")
    assert "Workbench.input_ranges must be" in failed(ctx, f"replay {session}")


def test_schedules_in_a_folder_with_spaces_apply_save_and_replay(ctx, tmp_path):
    """`apply "/Users/me/My Schedules/tile.mlir"` was `cannot read stage reference`, and a pipeline YAML
    could not name such a file at all: a quoted path is one now, and `save` quotes what needs it."""
    import shutil

    from workbench.steps import spec as S

    assert S.split_ref('"a b/t.mlir"[seq=x]{k=1}') == ("a b/t.mlir", {"seq": "x"}, "k=1")
    assert S.split_ref("'it is/t.py'[gen=f]") == ("it is/t.py", {"gen": "f"}, None)
    assert S.split_ref(S.format_ref("a b/[x].mlir", {}, {})) == ("a b/[x].mlir", {}, None)
    assert S.format_ref("plain/t.mlir", {"seq": "s"}, {}) == "plain/t.mlir[seq=s]"
    folder = tmp_path / "My Schedules"
    folder.mkdir()
    shutil.copy(REPO / "pipelines" / "lib" / "tile.mlir", folder / "tile it.mlir")
    err = failed(ctx, f"apply {folder / 'tile it.mlir'}")
    assert err.endswith(f'(a path with spaces goes in quotes: "{folder / "tile it.mlir"}")')
    res = ctx.registry.dispatch(f'apply "{folder / "tile it.mlir"}"[seq=tile_parallel]', ctx)
    assert res.ok, res.error
    assert ctx.registry.dispatch(f'save "{folder / "s.yaml"}"', ctx).ok
    sha = ctx.session.current_sha
    res = ctx.registry.dispatch(f'replay "{folder / "s.yaml"}"', ctx)
    assert res.ok and res.data.get("reproduced") is not False, res.error
    assert ctx.session.current_sha == sha and ctx.session.cursor == 1


def test_version_and_a_nonsense_compile_timeout_on_the_command_line(tmp_path, state_dir):
    """`lh-workbench --version` was a usage error; `--compile-timeout -5` was taken, and every step then
    failed with `compile worker timed out after -5 s and was killed`."""
    from conftest import MATMUL, run_cli

    p = run_cli(["--version"])
    assert p.returncode == 0 and p.stdout.startswith("lh-workbench 0.") and "MLIR" in p.stdout
    for bad, why in (("-5", "must be a positive number of seconds, got -5"), ("abc", "expected a number of seconds")):
        p = run_cli([MATMUL, "--script", "-", "--compile-timeout", bad])
        assert p.returncode == 2 and why in p.stderr and "timed out" not in p.stderr, p.stderr
