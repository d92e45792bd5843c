"""The registry-driven completer (front-end neutral)."""
from __future__ import annotations

from workbench.commands import default_registry
from workbench.completion import Completer, generator_names
from workbench.targets import all_targets


TILE_GEN = "tests/tui/fixtures/tile_gen.py"


def complete(line, session=None):
    return Completer(default_registry(), session).complete(line)


def test_command_names(wb_state):
    got = [c.text for c in complete("re")]
    assert "redo" in got and "replay" in got and "resume" in got
    assert all(t.startswith("re") for t in got)
    assert complete("re")[0].start == 0
    assert any(c.meta for c in complete("un"))  # summaries as meta


def test_unknown_command_completes_nothing(wb_state):
    assert complete("frobnicate x") == []


def test_paths_filtered_by_extension(wb_state):
    got = [c.text for c in complete("load examples/")]
    assert "examples/matmul.mlir" in got
    assert all(t.endswith((".mlir", "/")) for t in got)
    save = [c.text for c in complete("save pipelines/cpu/")]
    assert "pipelines/cpu/lower.yaml" in save
    assert not any(t.endswith(".py") for t in save)


def test_apply_named_pipelines_and_files(wb_state):
    got = [c.text for c in complete("apply cpu-")]
    assert "cpu-lower" in got and "cpu-naive" in got
    files = complete("apply pipelines/lib/ti")
    assert any(c.text == "pipelines/lib/tile.mlir" for c in files)
    assert files[0].start == len("apply ")
    # a python schedule is offered with its [gen= opener
    assert any(c.text == "pipelines/cpu/matmul.py[gen=" for c in complete("apply pipelines/cpu/mat"))


def test_apply_rewrite_names(wb_state):
    assert "rewrite " in [c.text for c in complete("apply rew")]
    got = complete("apply rewrite ")
    assert {c.text for c in got} >= {"ukernel-calls", "wgmma-kernels"}
    assert all(c.start == len("apply rewrite ") for c in got)
    wg = complete("apply rewrite wg")
    assert [c.text for c in wg] == ["wgmma-kernels"] and "wgmma" in wg[0].meta
    assert wg[0].apply("apply rewrite wg") == "apply rewrite wgmma-kernels"


def test_generator_names_from_ast(wb_state, tmp_path):
    f = tmp_path / "sched.py"
    f.write_text("raise SystemExit('must not run')\nGENERATORS = ['tile', 'other']\ndef tile(a: int = 1):\n  pass\ndef _private():\n  pass\n"
                 "def other(**kw):\n  pass\n")
    assert generator_names(f) == ["tile", "other"]
    line = f"apply {f}[gen="
    got = complete(line)
    assert [c.text for c in got] == ["gen=tile]", "gen=other]"]
    assert got[0].apply(line) == f"apply {f}[gen=tile]"


def test_schedule_parameter_keys(wb_state):
    line = f"apply {TILE_GEN}[gen=tile]{{tile_m=32 "
    got = complete(line)
    assert [c.text for c in got] == ["tile_n="]  # tile_m already given
    assert got[0].apply(line) == line + "tile_n="
    assert "int" in got[0].meta and "32" in got[0].meta
    partial = complete(f"apply {TILE_GEN}[gen=tile]{{ti")
    assert {c.text for c in partial} == {"tile_m=", "tile_n="}


def test_bench_param_keys_and_flags(wb_state):
    assert [c.text for c in complete("bench war")] == ["warmup="]
    assert [c.text for c in complete("bench warmup=1 it")] == ["iterations="]
    assert [c.text for c in complete("replay --pa")] == ["--payload "]
    assert any(c.text == "examples/matmul.mlir" for c in complete("replay --payload examples/m"))


def test_step_indices_and_params_keys_from_session(wb_ctx):
    ctx = wb_ctx
    res = ctx.registry.dispatch(f"apply {TILE_GEN}[gen=tile]{{tile_m=64}}", ctx)
    assert res.ok, res.error
    assert ctx.registry.dispatch("pass canonicalize", ctx).ok
    comp = Completer(ctx.registry, ctx.session)
    assert [c.text for c in comp.complete("show ")] == ["0", "1", "2", "--full "]
    assert [c.text for c in comp.complete("diff 1 ")] == ["0", "1", "2", "--full "]
    keys = [c.text for c in comp.complete("params 1 ti")]
    assert keys == ["tile_m=", "tile_n="]
    assert [c.text for c in comp.complete("params 1 tile_m=64 ")] == ["tile_n="]
    # the current step is a pass: no keys without an index
    assert comp.complete("params ti") == []
    assert [c.text for c in comp.complete("export re")] == ["reproducer"]
    assert [c.text for c in comp.complete("target c")] == sorted(t.name for t in all_targets() if t.name.startswith("c"))
    assert "cpu" in [c.text for c in comp.complete("target c")]
    assert "canonicalize" in [c.text for c in comp.complete("pass canon")]


def test_completion_never_raises(wb_state):
    comp = Completer(default_registry(), None)
    for line in ["apply {", "apply ]]]{", "params 99 x", "diff --", 'load "', "apply nowhere.py[gen="]:
        assert isinstance(comp.complete(line), list)
