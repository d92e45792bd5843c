"""The prompt-toolkit REPL driven through a pipe input."""
from __future__ import annotations

import io

import pytest
from prompt_toolkit.input import create_pipe_input
from prompt_toolkit.output import DummyOutput
from rich.console import Console

from workbench.repl import RegistryCompleter, plot_text, run_repl
from workbench.result import Result

pytestmark = pytest.mark.timeout(180)


def drive(ctx, text: str, history_file=None):
    out = io.StringIO()
    console = Console(file=out, width=120, force_terminal=False, color_system=None)
    with create_pipe_input() as inp:
        inp.send_text(text)
        failures = run_repl(ctx, input=inp, output=DummyOutput(), console=console, history_file=history_file)
    return failures, out.getvalue()


def test_repl_applies_undoes_and_quits(wb_ctx, wb_state):
    failures, out = drive(wb_ctx, "apply pipelines/lib/tile.mlir\nundo\nredo\nhistory\nquit\n")
    assert failures == 0
    s = wb_ctx.session
    assert s.cursor == 1 and len(s.steps) == 1
    assert "step 1: pipelines/lib/tile.mlir" in out
    assert "undone: now at step 0" in out and "redone: now at step 1" in out
    assert wb_ctx.quit_requested
    # autosave after every command
    assert s.journal_path.is_file()
    # persistent history in the state directory
    hist = (wb_state / "repl_history").read_text()
    assert "apply pipelines/lib/tile.mlir" in hist and "undo" in hist


def test_repl_failure_changes_nothing_and_help(wb_ctx):
    before = wb_ctx.session.current_sha
    failures, out = drive(wb_ctx, "apply nowhere.mlir\nfrobnicate\nhelp diff\n\x04")  # Ctrl-D (EOF) ends the loop
    assert failures == 2
    assert wb_ctx.session.current_sha == before and wb_ctx.session.cursor == 0
    assert "error:" in out and "unknown command 'frobnicate'" in out
    assert "usage: diff" in out


def test_repl_prints_ir(wb_ctx):
    failures, out = drive(wb_ctx, "show\n\x04")
    assert failures == 0
    assert "linalg.matmul" in out and "IR after step 0" in out


def test_repl_offers_resume(wb_ctx, wb_state):
    ctx = wb_ctx
    assert ctx.registry.dispatch("apply pipelines/lib/tile.mlir", ctx).ok
    ctx.session.autosave()
    ctx.session._release_journal_lock()   # as if that process had ended: its journal is an orphan now
    sha = ctx.session.current_sha
    # a new session of the same payload: the REPL asks, `y` restores
    from workbench.commands import CommandContext, default_registry
    from workbench.session import Session

    s2 = Session()
    try:
        ctx2 = CommandContext(s2, default_registry())
        assert ctx2.registry.dispatch("load examples/matmul.mlir", ctx2).ok
        failures, out = drive(ctx2, "y\nquit\n")
        assert failures == 0
        assert "resume it?" in out or "replayed 1 steps" in out
        assert s2.cursor == 1 and s2.current_sha == sha
    finally:
        s2.close()
    # answering no keeps the fresh payload
    s3 = Session()
    try:
        ctx3 = CommandContext(s3, default_registry())
        assert ctx3.registry.dispatch("load examples/matmul.mlir", ctx3).ok
        drive(ctx3, "n\nquit\n")
        assert s3.cursor == 0
    finally:
        s3.close()


def test_repl_completer_adapter(wb_ctx):
    from prompt_toolkit.document import Document

    from workbench.completion import Completer

    comp = RegistryCompleter(Completer(wb_ctx.registry, wb_ctx.session))
    got = list(comp.get_completions(Document("apply pipelines/lib/ti"), None))
    assert any(c.text == "pipelines/lib/tile.mlir" and c.start_position == -len("pipelines/lib/ti") for c in got)


def test_run_results_are_plotted():
    res = Result(True, "ran", data={"run": {"times_s": [0.010, 0.012, 0.011, 0.013], "median_s": 0.0115,
                                            "gflops": 3.2}})
    text = plot_text(res, width=60, height=12)
    assert text and "median 11.5 ms" in text and "3.2 GFLOP/s" in text
    assert plot_text(Result(True, "no run")) is None


def test_big_ir_is_printed_plain_without_the_highlighter(monkeypatch):
    import rich.syntax

    from workbench.repl import BIG_BODY_LINES, render

    def no_highlighting(*a, **k):   # rich's highlighter takes minutes on 100k's of lines
        raise AssertionError("big IR went through the highlighter")

    monkeypatch.setattr(rich.syntax, "Syntax", no_highlighting)
    body = "".join(f"  %{i} = arith.addf %a, %b : f32\n" for i in range(50_000))
    assert body.count("\n") > BIG_BODY_LINES
    out = io.StringIO()
    console = Console(file=out, width=120, force_terminal=False, color_system=None)
    render(Result(True, "IR after step 3 (50000 lines)", kind="ir", body=body), console)
    text = out.getvalue()
    assert text.startswith("IR after step 3") and text.count("arith.addf") == 50_000
    # small IR is still highlighted on a terminal (elsewhere it is the plain text: tests/test_qa_round7.py)
    terminal = Console(file=io.StringIO(), width=120, force_terminal=True, color_system=None)
    with pytest.raises(AssertionError, match="highlighter"):
        render(Result(True, "IR", kind="ir", body="func.func @f() {\n  return\n}\n"), terminal)


def test_quit_with_unsaved_steps_says_where_they_are_and_resume_describes_them(wb_ctx, wb_state, tmp_path):
    ctx = wb_ctx
    failures, out = drive(ctx, "apply pipelines/lib/tile.mlir\napply cpu-lower\nquit\n")
    assert failures == 0
    assert "2 unsaved steps kept in the autosave journal" in out and "--resume" in out
    journal = ctx.session.journal_path
    ctx.session._release_journal_lock()   # that process ended: an orphan journal
    from workbench.session import Session

    described = Session.describe_journal(journal, now=journal.stat().st_mtime + 300)
    assert described == "2 steps: tile.mlir, cpu-lower; autosaved 5 min ago"
    s2 = Session()
    try:
        from workbench.commands import CommandContext, default_registry

        ctx2 = CommandContext(s2, default_registry())
        res = ctx2.registry.dispatch("load examples/matmul.mlir", ctx2)
        assert res.ok and "an autosaved session exists (2 steps: tile.mlir, cpu-lower;" in res.summary
        # saved: quitting says nothing more than bye
        failures, out = drive(ctx2, f"n\napply pipelines/lib/tile.mlir\nsave {tmp_path / 's.yaml'}\nquit\n")
        assert failures == 0 and "saved 1 steps" in out and "bye" in out and "autosave journal" not in out
    finally:
        s2.close()


def test_ctrl_d_leaves_like_quit(wb_ctx, wb_state):
    failures, out = drive(wb_ctx, "apply pipelines/lib/tile.mlir\n\x04")
    assert failures == 0 and wb_ctx.quit_requested
    assert "1 unsaved step kept in the autosave journal" in out
