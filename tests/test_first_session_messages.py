"""What a new user's mistakes answer: one line that names the mistake and, where one is close, what
was meant (commands, options, parameters, named pipelines, passes, files, session keys), and step
numbers that say what exists."""
from __future__ import annotations

import pytest

from conftest import MATMUL, REPO, failed
from workbench.commands import CommandContext, default_registry
from workbench.common.suggest import close_matches, did_you_mean, did_you_mean_path


@pytest.fixture
def ctx(matmul_session, monkeypatch):
    monkeypatch.chdir(REPO)
    return CommandContext(matmul_session, default_registry())


def test_close_matches_prefers_the_close_and_the_prefix():
    assert close_matches("canonicalise", ["cse", "canonicalize", "inline"]) == ["canonicalize"]
    assert close_matches("ap", ["apply", "asm", "undo"]) == ["apply"]
    assert close_matches("zzz", ["apply", "asm"]) == []
    assert did_you_mean("", ["apply"]) == ""
    assert did_you_mean("aply", ["apply"]) == " (did you mean apply?)"


def test_did_you_mean_path_names_the_folder_as_written(tmp_path):
    (tmp_path / "tile.mlir").write_text("")
    assert did_you_mean_path(tmp_path / "tlie.mlir", "lib/tlie.mlir") == " (did you mean lib/tile.mlir?)"
    assert did_you_mean_path(tmp_path / "nothing-like-it.txt") == ""
    assert did_you_mean_path(tmp_path / "missing-folder" / "x.mlir") == ""


def test_unknown_command_option_and_help_suggest(ctx):
    assert "did you mean apply?" in failed(ctx, "aply x.mlir")
    assert "did you mean help?" in failed(ctx, "help hlep")
    err = failed(ctx, "run --chek")
    assert "unknown option --chek" in err and "did you mean --check" in err and "help run" in err
    err = failed(ctx, "history --bogus")
    assert "unknown option --bogus" in err and "options: none" in err


def test_unknown_named_pipeline_target_and_parameter_suggest(ctx):
    assert "did you mean cpu-lower" in failed(ctx, "apply cpu-lowr")
    assert "did you mean cpu?" in failed(ctx, "target cpuu")
    err = failed(ctx, "apply pipelines/lib/tile.py[gen=tile_matmul]{tile_mm=3}")
    assert "unknown parameter 'tile_mm'" in err and "did you mean tile_m" in err


def test_missing_files_suggest_their_neighbours(ctx):
    err = failed(ctx, "apply pipelines/lib/tlie.mlir")
    assert "did you mean pipelines/lib/tile.mlir?" in err
    err = failed(ctx, "load examples/matmull.mlir")
    assert "did you mean examples/matmul.mlir" in err


def test_unknown_pass_suggests_a_registered_one_without_the_caret(ctx):
    res = ctx.registry.dispatch("pass canonicalise", ctx)
    assert not res.ok and "did you mean canonicalize?" in res.error
    assert "PassPipeline Parser" not in res.error and (res.detail or "").strip() != "^"
    assert ctx.session.cursor == 0


def test_step_numbers_say_when_there_are_no_steps(ctx):
    err = failed(ctx, "params 1")
    assert "no steps applied yet" in err and "1..0" not in err
    ctx.registry.dispatch("apply pipelines/lib/tile.mlir", ctx)
    ctx.registry.dispatch("undo", ctx)
    assert "1 undone (`redo`)" in failed(ctx, "params 1 tile_m=4")


def test_params_of_a_step_without_parameters_point_at_the_step_that_has_them(ctx):
    assert ctx.registry.dispatch("apply pipelines/lib/tile.mlir", ctx).ok
    assert ctx.registry.dispatch("apply pipelines/lib/tile.py[gen=tile_matmul]{tile_m=64}", ctx).ok
    shown = ctx.registry.dispatch("params 1", ctx)
    assert shown.ok and "has no parameters" in shown.summary and "steps with parameters: 2" in shown.summary
    err = failed(ctx, "params 1 tile_m=128")
    assert "this step has no parameters" in err and "params 2 tile_m=" in err
    assert ctx.session.steps[1].step.params["tile_m"] == 64   # nothing changed


def test_session_file_typos_suggest_the_key(ctx, tmp_path):
    bad_entry = tmp_path / "entry.yaml"
    bad_entry.write_text(f"Pipeline:\n  - bnch: {{iterations: 3}}\nWorkbench:\n  payload: {{path: {MATMUL}}}\n")
    res = ctx.registry.dispatch(f"replay {bad_entry}", ctx)
    assert not res.ok and "did you mean bench?" in res.error
    bad_meta = tmp_path / "meta.yaml"
    bad_meta.write_text(f"Pipeline: []\nWorkbench:\n  taget: cpu\n  payload: {{path: {MATMUL}}}\n")
    res = ctx.registry.dispatch(f"replay {bad_meta}", ctx)
    assert not res.ok and "Workbench.taget (did you mean target?)" in res.error


def test_counts_and_times_below_their_minimum_are_usage_errors(ctx):
    for line, expected in [("run --iterations 0", "--iterations must be >= 1, got 0"),
                           ("run --warmup -1", "--warmup must be >= 0"),
                           ("run --timeout -1", "--timeout must be >= 0.1"),
                           ("run --threads -1", "--threads must be >= 0"),
                           ("tune --trials -1 1", "--trials must be >= 0"),
                           ("tune --workers 0 1", "--workers must be >= 1")]:
        assert expected in failed(ctx, line), line
    assert ctx.session.last_run is None   # nothing ran


def test_tune_names_a_mistyped_parameter_once(ctx):
    assert ctx.registry.dispatch("apply pipelines/lib/tile.mlir", ctx).ok
    assert "has no parameters to tune" in failed(ctx, "tune 1 tile_m=[1,2]")
    assert ctx.registry.dispatch("apply pipelines/lib/tile.py[gen=tile_matmul]", ctx).ok
    err = failed(ctx, "tune 2 tile_mm=[1,2]")
    assert err.count("tile_mm") == 1 and "did you mean tile_m" in err


def test_table_cells_keep_their_brackets_on_a_terminal(ctx):
    """`history` and `select` tables on a terminal (REPL, TUI log) showed `tile.py{...}` for
    `tile.py[gen=tile_matmul]{...}`: rich read the brackets as a markup tag."""
    import io

    from rich.console import Console

    assert ctx.registry.dispatch("apply pipelines/lib/tile.py[gen=tile_matmul]{tile_m=64}", ctx).ok
    res = ctx.registry.dispatch("history", ctx)
    out = io.StringIO()
    Console(file=out, width=200, color_system=None).print(res.rich())
    assert "tile.py[gen=tile_matmul]{tile_m=64" in out.getvalue()


def test_missing_library_files_suggest_from_anywhere(ctx, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)   # not the repository: the library's folder is where the close names are
    assert "did you mean pipelines/lib/tile.py?" in failed(ctx, "apply pipelines/lib/tlie.py[gen=tile_matmul]")
    assert "did you mean pipelines/cpu/lower.yaml?" in failed(ctx, "apply pipelines/cpu/lowr.yaml")
    assert "did you mean pipelines/lib/tile.mlir?" in failed(ctx, "apply pipelines/lib/tlie.mlir")
    assert ctx.session.cursor == 0


def test_bare_values_and_missing_names_in_parameters_are_usage_errors(ctx):
    assert "expected key=value, got '5'" in failed(ctx, "bench 5")
    err = failed(ctx, "apply pipelines/lib/tile.py[gen=tile_matmul]{=3}")
    assert "expected key=value, got '=3' (the name is missing)" in err
    assert ctx.session.cursor == 0
    from workbench.steps.spec import parse_params

    assert parse_params("tile_m=4 flag") == {"tile_m": 4, "flag": True}   # a bare name is still a flag


def test_diff_of_the_payload_and_cmdline_without_steps_say_why(ctx):
    assert "no command line to export" in failed(ctx, "export cmdline")
    assert ctx.registry.dispatch("apply pipelines/lib/tile.mlir", ctx).ok
    assert "step 0 is the payload: nothing before it" in failed(ctx, "diff 0")
    assert ctx.registry.dispatch("diff 1", ctx).ok and ctx.registry.dispatch("export cmdline", ctx).ok


def test_parameter_descriptions_read_as_bounds_and_defaults(ctx):
    from workbench.completion import Completer
    from workbench.steps.params import ParamSpec

    assert ParamSpec("t", "int", 32, min=0).describe() == "int >= 0"
    assert ParamSpec("t", "int", 32, max=8).describe() == "int <= 8"
    assert ParamSpec("t", "int", 32, min=1, max=8).describe() == "int in [1, 8]"
    metas = {c.display: c.meta for c in Completer(ctx.registry, ctx.session).complete(
        "apply pipelines/lib/tile.py[gen=tile_matmul]{tile_")}
    assert metas["tile_m"] == "int >= 0; default 32"


def test_a_violated_constraint_names_the_step_without_its_whole_dict(ctx):
    # (AVX-512's register tile, on any host: nothing runs; AVX2's 6 rows first violate `reg_m divides block_m`)
    assert ctx.registry.dispatch("target cpu --threads 1 --cpu skylake-avx512", ctx).ok
    assert ctx.registry.dispatch("select --apply", ctx).ok
    err = failed(ctx, "params 1 block_m=7")
    assert err.startswith("step 1 (pipelines/cpu/matmul.py[gen=matmul_tiling]): block_m=7: violates constraint"), err
    assert "reg_n=" not in err


def test_asm_says_what_it_is_doing_while_it_compiles(ctx):
    """`asm` on a model compiled for half a minute without a word (run says `lowering and running`)."""
    from workbench.common.mlir_libs import find_llvm_tool

    if find_llvm_tool("llvm-objdump") is None:
        pytest.skip("no llvm-objdump")
    said = []
    ctx.progress = said.append
    assert ctx.registry.dispatch("asm --grep ret", ctx).ok
    assert said == ["compiling step 0 for cpu and disassembling ..."]


def test_unknown_command_is_quoted_as_typed(ctx):
    assert "unknown command '/vector\\.'" in failed(ctx, "/vector\\.")   # one backslash, not repr's two


def test_run_without_a_payload_fails_before_announcing_a_run(compile_client):
    from workbench.session import Session

    s = Session(client=compile_client)
    ctx = CommandContext(s, default_registry())
    said = []
    ctx.progress = said.append
    for line in ("run", "run --check", "asm", "select --apply", "params", "tune 1"):
        res = ctx.registry.dispatch(line, ctx)
        assert not res.ok and "no payload loaded" in res.error, line
    assert said == []


def test_import_asks_before_replacing_unsaved_steps(ctx, monkeypatch):
    import workbench.commands.import_commands as imp

    monkeypatch.setattr(imp, "run_import", lambda a, progress: pytest.fail("imported without asking"))
    assert ctx.registry.dispatch("apply pipelines/lib/tile.mlir", ctx).ok
    ctx.interactive = True
    asked = []
    ctx.confirm = lambda question: asked.append(question) or False
    err = failed(ctx, "import examples/torch/models/gpt2_block.py")
    assert "import cancelled" in err and "1 step(s) not saved" in asked[0]
    assert ctx.session.cursor == 1 and ctx.session.payload_path.name == "matmul.mlir"


def test_replay_asks_before_replacing_unsaved_steps(ctx):
    assert ctx.registry.dispatch("apply pipelines/lib/tile.mlir", ctx).ok
    ctx.interactive = True
    asked = []
    ctx.confirm = lambda question: asked.append(question) or False
    assert "replay cancelled" in failed(ctx, "replay sessions/matmul-cpu.yaml")
    assert "1 step(s) not saved" in asked[0] and ctx.session.cursor == 1
    ctx.confirm = lambda question: True
    assert ctx.registry.dispatch("replay sessions/matmul-cpu.yaml", ctx).ok and ctx.session.cursor == 3


def test_a_step_after_undo_says_it_replaces_the_undone_ones(ctx):
    assert ctx.registry.dispatch("apply pipelines/lib/tile.mlir", ctx).ok
    assert ctx.registry.dispatch("pass canonicalize", ctx).ok
    assert ctx.registry.dispatch("undo", ctx).ok
    res = ctx.registry.dispatch("pass cse", ctx)
    assert res.ok and res.summary.endswith("(replaces 1 undone step: canonicalize)")
    assert res.data["dropped_undone"] == ["canonicalize"]
    res = ctx.registry.dispatch("pass canonicalize", ctx)
    assert res.ok and "undone" not in res.summary


def test_run_checks_its_files_and_target_before_anything_runs(ctx, tmp_path):
    (tmp_path / "inputs0.npy").write_bytes(b"")
    assert failed(ctx, "run --npy nowhere.npy") == "run: --npy nowhere.npy: no such file"
    err = failed(ctx, f"run --npy {tmp_path / 'input0.npy'}")
    assert "no such file" in err and "did you mean" in err and "inputs0.npy" in err
    assert failed(ctx, f"run --expect {tmp_path}") == f"run: --expect {tmp_path}: is a directory"
    assert ctx.session.last_run is None
    from workbench.targets import get_target

    if not get_target("cuda").can_run()[0]:
        err = failed(ctx, "run --target cuda")
        assert "cannot run here" in err and "the target stays cpu" in err
        assert ctx.session.target_name == "cpu"


def test_long_usages_point_at_help_instead(ctx):
    err = failed(ctx, "run --ranges 0=abc")
    assert err.endswith("`help run` lists its options") and "[--save-outputs" not in err
    assert "usage: load [--allow-unregistered] [--chunk K] FILE" in failed(ctx, "load")


def test_the_noise_warning_tells_a_few_stalled_calls_from_a_spread():
    from workbench.commands.run_commands import spread_warning

    stalled = {"median_s": 0.001, "stddev_s": 0.0015, "times_s": [0.001, 0.00102, 0.0051, 0.00099, 0.001]}
    text = spread_warning(stalled)
    assert "1 of 5 calls took up to 5x the median, the other 4 are within 2% of it" in text
    spread = {"median_s": 0.001, "stddev_s": 0.0003, "times_s": [0.0007, 0.001, 0.0013, 0.0009, 0.0012]}
    assert "calls took" not in spread_warning(spread) and "30% of the median" in spread_warning(spread)


def test_ranges_of_arguments_the_entry_does_not_have_are_refused_and_not_kept(ctx):
    err = failed(ctx, "run --ranges 9=0:1 --iterations 1")
    assert "--ranges: @matmul has no argument 9 (its arguments are 0..2)" in err
    assert ctx.session.input_ranges == {}
    res = ctx.registry.dispatch("run --ranges 0=-1:1 --iterations 1", ctx)
    assert res.ok and ctx.session.input_ranges == {0: (-1, 1)}


def test_a_failing_editor_is_not_no_change(ctx, monkeypatch):
    import workbench.commands.edit_commands as edit

    ctx.interactive = True
    monkeypatch.setattr(edit, "default_editor_command", lambda: ["false"])
    assert "the editor (false) exited with status 1; nothing recorded" in failed(ctx, "edit")
    monkeypatch.setattr(edit, "default_editor_command", lambda: ["true"])
    res = ctx.registry.dispatch("edit", ctx)
    assert res.ok and res.summary == "edit: no change" and ctx.session.cursor == 0


def test_pass_takes_what_an_mlir_engineer_pastes(ctx):
    """A quoted pipeline and mlir-opt's own flags, as they stand on a shell command line."""
    for line, label in [('pass "builtin.module(canonicalize)"', "builtin.module(canonicalize)"),
                        ('pass --pass-pipeline="builtin.module(func.func(canonicalize),cse)"',
                         "func.func(canonicalize),cse"),
                        ("pass -canonicalize -cse", "canonicalize,cse"),
                        ("pass 'cse'", "cse")]:
        res = ctx.registry.dispatch(line, ctx)
        assert res.ok, (line, res.error)
        assert ctx.session.steps[ctx.session.cursor - 1].step.spec == label, line
    assert "names no pass" in failed(ctx, "pass -o x")
    assert "did you mean canonicalize?" in failed(ctx, "pass --canonicalise")


def test_step_completion_of_params_offers_applied_steps_only(ctx):
    from workbench.completion import Completer

    for line in ("apply pipelines/lib/tile.mlir", "pass cse", "undo"):
        assert ctx.registry.dispatch(line, ctx).ok
    comp = Completer(ctx.registry, ctx.session)
    assert [c.text for c in comp.complete("params ") if c.text.isdigit()] == ["1"]
    assert [c.text for c in comp.complete("tune ") if c.text.isdigit()] == ["1"]
    assert [c.text for c in comp.complete("show ") if c.text.isdigit()] == ["0", "1", "2"]
