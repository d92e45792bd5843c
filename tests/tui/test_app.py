"""Pilot tests: drive the Textual app through keys and the palette; wait for workers."""
from __future__ import annotations

import asyncio

import pytest

from workbench.tui.app import WorkbenchApp
from workbench.tui.widgets import CommandInput, IRView, ParamForm

pytestmark = pytest.mark.timeout(300)
SIZE = (130, 42)
TILE = "tests/tui/fixtures/tile_gen.py[gen=tile]{tile_m=64 tile_n=32}"


async def settle(app, pilot):
    """Wait until no command / form worker is running, then let the screen refresh."""
    for _ in range(3):
        await app.workers.wait_for_complete()
        await pilot.pause()
    assert app.busy is None


async def type_command(app, pilot, line: str):
    inp = app.query_one("#cmd", CommandInput)
    assert inp.has_focus
    await pilot.press(*[("space" if ch == " " else ch) for ch in line])
    assert inp.value == line
    await pilot.press("enter")
    await settle(app, pilot)


def run(coro):
    asyncio.run(coro)


def test_command_input_focused_apply_undo_redo(wb_ctx):
    ctx = wb_ctx

    async def go():
        app = WorkbenchApp(ctx, hide_volatile=True)
        async with app.run_test(size=SIZE) as pilot:
            await settle(app, pilot)
            assert app.query_one("#cmd").has_focus
            await type_command(app, pilot, "apply pipelines/lib/tile.mlir")
            assert ctx.session.cursor == 1
            assert app.results[-1].ok
            table = app.query_one("#steps")
            assert table.row_count == 2
            assert "scf.for" in app.query_one("#ir", IRView).text
            await pilot.press("ctrl+z")
            await settle(app, pilot)
            assert ctx.session.cursor == 0
            assert "scf.for" not in app.query_one("#ir", IRView).text
            await pilot.press("ctrl+y")
            await settle(app, pilot)
            assert ctx.session.cursor == 1

    run(go())


def test_failing_command_shows_error_and_changes_nothing(wb_ctx):
    ctx = wb_ctx

    async def go():
        app = WorkbenchApp(ctx, hide_volatile=True)
        async with app.run_test(size=SIZE) as pilot:
            await settle(app, pilot)
            before = ctx.session.current_sha
            await type_command(app, pilot, "pass no-such-pass-xyz")
            res = app.results[-1]
            assert not res.ok and "no-such-pass-xyz" in (res.error + (res.detail or ""))
            assert ctx.session.current_sha == before and ctx.session.cursor == 0
            log_text = "\n".join(str(line.text) for line in app.query_one("#log").lines)
            assert "error:" in log_text

    run(go())


def test_param_edit_reapplies_from_that_step(wb_ctx):
    ctx = wb_ctx

    async def go():
        app = WorkbenchApp(ctx, hide_volatile=True)
        async with app.run_test(size=SIZE) as pilot:
            await settle(app, pilot)
            await type_command(app, pilot, "apply " + TILE)
            await type_command(app, pilot, "pass canonicalize")
            assert ctx.session.cursor == 2
            # select step 1 in the timeline
            table = app.query_one("#steps")
            table.focus()
            await pilot.press("up")
            await settle(app, pilot)
            assert app.selected == 1
            form = app.query_one("#params", ParamForm)
            field = form.query_one("#param-tile_m")
            assert field.value == "64"
            # invalid value: live validation, nothing dispatched on Enter
            field.focus()
            field.value = "0"
            await pilot.pause()
            assert "must be >= 1" in str(form.query_one("#param-error").render())
            await pilot.press("enter")
            await settle(app, pilot)
            assert ctx.session.steps[0].step.params["tile_m"] == 64
            # a valid value: Enter re-applies steps 1..2 through `params 1 tile_m=16`
            field.value = "16"
            await pilot.press("enter")
            await settle(app, pilot)
            assert ctx.session.steps[0].step.params["tile_m"] == 16
            assert ctx.session.cursor == 2
            assert app.results[-1].data["command"] == "params"
            assert "c16" in ctx.session.current_ir
            # Ctrl+Z takes the edit back (the old dict and IR; still 2 steps), Ctrl+Y brings it again
            await pilot.press("ctrl+z")
            await settle(app, pilot)
            assert ctx.session.steps[0].step.params["tile_m"] == 64 and ctx.session.cursor == 2
            assert "c16" not in ctx.session.current_ir
            assert "parameter edit of step 1" in app.results[-1].summary
            await pilot.press("ctrl+y")
            await settle(app, pilot)
            assert ctx.session.steps[0].step.params["tile_m"] == 16 and "c16" in ctx.session.current_ir

    run(go())


def test_diff_toggle_and_side_by_side(wb_ctx):
    ctx = wb_ctx

    async def go():
        app = WorkbenchApp(ctx, hide_volatile=True)
        async with app.run_test(size=SIZE) as pilot:
            await settle(app, pilot)
            await type_command(app, pilot, "apply pipelines/lib/tile.mlir")
            ir = app.query_one("#ir", IRView)
            assert ir.mode == "mlir"
            await pilot.press("ctrl+d")
            await pilot.pause()
            assert app.view == "diff" and ir.mode == "diff"
            assert ir.text.startswith("--- step 0") and "+" in ir.text
            await pilot.press("ctrl+d")
            await pilot.pause()
            assert app.view == "side"
            left, right = app.query_one("#side-left", IRView), app.query_one("#side-right", IRView)
            assert app.query_one("#side").display and not ir.display
            assert len(left.text.splitlines()) == len(right.text.splitlines())
            assert "scf.for" in right.text and "scf.for" not in left.text
            await pilot.press("ctrl+d")
            await pilot.pause()
            assert app.view == "ir" and ir.display

    run(go())


def test_palette_runs_commands_and_save(wb_ctx, tmp_path):
    ctx = wb_ctx
    out = tmp_path / "s.yaml"

    async def go():
        app = WorkbenchApp(ctx, hide_volatile=True)
        async with app.run_test(size=SIZE) as pilot:
            await settle(app, pilot)
            await type_command(app, pilot, "apply pipelines/lib/tile.mlir")
            # palette: a command without required arguments runs at once
            await pilot.press("ctrl+p")
            await pilot.pause()
            await pilot.press(*"undo")
            await pilot.pause(0.5)
            await pilot.press("enter")
            await settle(app, pilot)
            assert ctx.session.cursor == 0
            # palette: a command with arguments is put on the command line
            await pilot.press("ctrl+p")
            await pilot.pause()
            await pilot.press(*"apply")
            await pilot.pause(0.5)
            await pilot.press("enter")
            await settle(app, pilot)
            inp = app.query_one("#cmd", CommandInput)
            assert inp.value == "apply " and inp.has_focus
            inp.value = ""
            await pilot.press("ctrl+y")
            await settle(app, pilot)
            # Ctrl+S pre-fills a save command; change its target and run it
            await pilot.press("ctrl+s")
            await pilot.pause()
            assert inp.value.startswith("save ")
            inp.value = ""
            await type_command(app, pilot, f"save {out}")
            assert out.is_file() and "tile.mlir" in out.read_text()

    run(go())


def test_tab_completion_in_input(wb_ctx):
    ctx = wb_ctx

    async def go():
        app = WorkbenchApp(ctx, hide_volatile=True)
        async with app.run_test(size=SIZE) as pilot:
            await settle(app, pilot)
            inp = app.query_one("#cmd", CommandInput)
            await pilot.press(*"apply tests/tui/fixtures/til")
            await pilot.press("tab")
            await pilot.pause()
            assert inp.value == "apply tests/tui/fixtures/tile_gen.py[gen="
            await pilot.press("tab")
            await pilot.pause()
            assert inp.value == "apply tests/tui/fixtures/tile_gen.py[gen=tile]"
            await pilot.press("{", *"ti", "tab")
            await pilot.pause()
            assert inp.value == "apply tests/tui/fixtures/tile_gen.py[gen=tile]{tile_"
            inp.value = ""
            await pilot.press(*"re")
            await pilot.press("tab")
            await pilot.pause()
            box = app.query_one("#completions")
            assert box.display and "redo" in str(box.render()) and "resume" in str(box.render())

    run(go())


def test_edit_records_verified_module_or_keeps_state(wb_ctx):
    ctx = wb_ctx

    def good(path):
        path.write_text(path.read_text().replace("func.func @matmul", "func.func @matmul_edited"))

    def bad(path):
        path.write_text(path.read_text().replace("linalg.matmul", "linalg.nosuchop"))

    async def go():
        app = WorkbenchApp(ctx, hide_volatile=True, editor=bad)
        async with app.run_test(size=SIZE) as pilot:
            await settle(app, pilot)
            await pilot.press("ctrl+e")
            await settle(app, pilot)
            assert not app.results[-1].ok and ctx.session.cursor == 0
            assert "rejected" in app.results[-1].error
            app.editor = good
            await pilot.press("ctrl+e")
            await settle(app, pilot)
            assert app.results[-1].ok, app.results[-1].error
            assert ctx.session.cursor == 1 and ctx.session.steps[0].step.kind == "edit"
            assert "@matmul_edited" in app.query_one("#ir", IRView).text

    run(go())


def test_escape_cancels_a_running_step(wb_ctx, tmp_path):
    """A slow step runs in a worker: typing stays possible, Escape kills the compile worker,
    the session is unchanged."""
    ctx = wb_ctx
    slow = tmp_path / "slow.py"
    slow.write_text("import time\nGENERATORS = ['gen']\n\ndef gen(seconds: int = 30):\n    time.sleep(seconds)\n    return ''\n")

    async def go():
        app = WorkbenchApp(ctx, hide_volatile=True)
        async with app.run_test(size=SIZE) as pilot:
            await settle(app, pilot)
            before = ctx.session.current_sha
            inp = app.query_one("#cmd", CommandInput)
            inp.value = f"apply {slow}[gen=gen]"
            await pilot.press("enter")
            await pilot.pause(1.0)
            assert app.busy and app.query_one("#progress").visible   # the bar follows `busy`
            await pilot.press(*"his")          # typing while the step runs
            assert inp.value == "his"
            await pilot.press("escape")
            await settle(app, pilot)
            res = app.results[-1]
            assert not res.ok and res.error.startswith("cancelled")
            assert app.busy is None and not app.query_one("#progress").visible
            assert ctx.session.current_sha == before and ctx.session.cursor == 0
            # the session still works afterwards (a fresh compile worker)
            inp.value = ""
            await type_command(app, pilot, "apply pipelines/lib/tile.mlir")
            assert ctx.session.cursor == 1

    run(go())


def test_run_result_goes_to_the_results_panel(wb_ctx):
    from workbench.result import Result

    async def go():
        app = WorkbenchApp(wb_ctx, hide_volatile=True)
        async with app.run_test(size=SIZE) as pilot:
            await settle(app, pilot)
            panel = app.query_one("#results")
            assert not panel.display
            app.show_results(Result(True, "ran", data={"run": {"times_s": [0.01, 0.02, 0.015], "median_s": 0.015}}))
            await pilot.pause()
            assert panel.display and app.query_one("#plot").display

    run(go())


def test_tab_lists_then_inserts_each_candidate(wb_ctx):
    async def go():
        app = WorkbenchApp(wb_ctx, hide_volatile=True)
        async with app.run_test(size=SIZE) as pilot:
            await settle(app, pilot)
            inp = app.query_one("#cmd", CommandInput)
            await pilot.press(*"re", "tab")
            await pilot.pause()
            assert inp.value == "re" and app.query_one("#completions").display   # listed
            await pilot.press("tab")
            first = inp.value
            await pilot.press("tab")
            second = inp.value
            assert {first, second} <= {"redo", "replay", "resume"} and first != second
            # what Tab inserted is really there: Enter runs it (no grey suggestion to lose)
            inp.value = ""
            await pilot.press(*"undo", "tab")
            assert inp.value == "undo "

    run(go())


def test_keyboard_reaches_the_parameter_form_and_enter_returns_to_the_input(wb_ctx):
    ctx = wb_ctx

    async def go():
        app = WorkbenchApp(ctx, hide_volatile=True)
        async with app.run_test(size=SIZE) as pilot:
            await settle(app, pilot)
            await type_command(app, pilot, "apply " + TILE)
            await pilot.press("f4")
            await settle(app, pilot)
            field = app.query_one("#param-tile_m")
            assert field.has_focus
            await pilot.press("down")
            assert app.query_one("#param-tile_n").has_focus
            await pilot.press("up", "ctrl+a", "ctrl+k", *"16", "enter")
            await settle(app, pilot)
            assert ctx.session.steps[0].step.params["tile_m"] == 16
            assert app.query_one("#cmd").has_focus          # typed commands land in the input
            # F6 visits every pane and comes back
            seen, named = [], []
            for _ in range(5):
                await pilot.press("f6")
                await pilot.pause()
                seen.append(app.focused.id)
                named.append(str(app.query_one("#focus-pane").render()))   # the status bar names the pane
            assert seen == ["ir", "steps", "param-tile_m", "log", "cmd"]
            assert named == ["focus: IR", "focus: steps", "focus: parameters", "focus: log", "focus: command"]

    run(go())


def test_f5_runs_with_check_and_the_results_panel_shows_the_verdict(wb_ctx):
    async def go():
        app = WorkbenchApp(wb_ctx, hide_volatile=True)
        async with app.run_test(size=SIZE) as pilot:
            await settle(app, pilot)
            await pilot.press("f5")
            for _ in range(600):
                await settle(app, pilot)
                if app.busy is None and app.results:
                    break
            res = app.results[-1]
            assert res.ok, res.error
            assert res.data["run"]["check"]["passed"] is True
            panel = app.query_one("#results")
            assert panel.display
            verdict = panel.verdict_text()
            assert "CHECK PASSED" in verdict and "median" in verdict
            log_text = "\n".join(app.query_one("#log").plain_lines())
            assert "wb> run --check" in log_text

    run(go())


def test_noisy_timings_get_a_warning(wb_ctx):
    from workbench.commands.run_commands import spread_warning
    from workbench.result import Result

    quiet = {"median_s": 0.010, "stddev_s": 0.0005}
    noisy = {"median_s": 0.010, "stddev_s": 0.0025, "times_s": [0.01, 0.02, 0.008], "iterations": 3}
    assert spread_warning(quiet) is None
    assert "25% of the median" in spread_warning(noisy)

    async def go():
        app = WorkbenchApp(wb_ctx, hide_volatile=True)
        async with app.run_test(size=SIZE) as pilot:
            await settle(app, pilot)
            app.show_results(Result(True, "ran", data={"run": noisy, "warnings": [spread_warning(noisy)]}))
            await pilot.pause()
            assert "noisy: stddev 25% of the median" in app.query_one("#results").verdict_text()

    run(go())


def test_load_and_quit_ask_before_dropping_unsaved_steps(wb_ctx, tmp_path):
    from workbench.tui.screens import ConfirmScreen

    ctx = wb_ctx

    async def go():
        app = WorkbenchApp(ctx, hide_volatile=True)
        async with app.run_test(size=SIZE) as pilot:
            await settle(app, pilot)
            await type_command(app, pilot, "apply pipelines/lib/tile.mlir")
            inp = app.query_one("#cmd", CommandInput)
            inp.value = "load examples/mlp.mlir"
            await pilot.press("enter")
            for _ in range(100):
                await pilot.pause(0.05)
                if isinstance(app.screen, ConfirmScreen):
                    break
            assert isinstance(app.screen, ConfirmScreen) and "not saved" in app.screen.question
            await pilot.press("n")
            await settle(app, pilot)
            assert not app.results[-1].ok and "load cancelled" in app.results[-1].error
            assert ctx.session.cursor == 1 and ctx.session.payload_path.name == "matmul.mlir"
            # Ctrl+Q asks too; n stays
            await pilot.press("ctrl+q")
            await pilot.pause()
            assert isinstance(app.screen, ConfirmScreen)
            await pilot.press("n")
            await pilot.pause()
            assert app.is_running and not isinstance(app.screen, ConfirmScreen)
            # so does the `quit` command
            await type_command(app, pilot, "quit")
            for _ in range(50):
                await pilot.pause(0.05)
                if isinstance(app.screen, ConfirmScreen):
                    break
            assert isinstance(app.screen, ConfirmScreen)
            await pilot.press("n")
            await pilot.pause()
            assert app.is_running
            # saved: no question
            await type_command(app, pilot, f"save {tmp_path / 's.yaml'}")
            assert ctx.session.unsaved_steps() == 0
            await pilot.press("ctrl+q")
            await pilot.pause()
            assert not isinstance(app.screen, ConfirmScreen)
        assert app.return_code == 0

    run(go())


def test_mlir_error_is_printed_once_and_a_verifier_failure_says_so(wb_ctx, tmp_path):
    bad = tmp_path / "bad.mlir"
    bad.write_text(open("pipelines/lib/bufferize.mlir").read().replace("{transform.consumed}", "{transform.readonly}"))

    async def go():
        app = WorkbenchApp(wb_ctx, hide_volatile=True)
        async with app.run_test(size=SIZE) as pilot:
            await settle(app, pilot)
            await type_command(app, pilot, f"apply {bad}")
            res = app.results[-1]
            assert not res.ok and "transform module fails to verify" in res.error
            log_text = "\n".join(app.query_one("#log").plain_lines())
            assert log_text.count("is consumed in the body but is not marked as such") == 1
            assert "Unable to parse" not in log_text
            assert "consumed" not in str(app.query_one("#status").render())

    run(go())


def test_payload_loading_in_the_background_then_shown(wb_empty_ctx, tmp_path):
    """`lh-workbench PAYLOAD`: the app starts while the payload still loads (busy meanwhile), then shows it;
    a payload that fails ends the app with the error kept for the front end (exit status 1)."""
    import threading
    from concurrent.futures import ThreadPoolExecutor

    ctx = wb_empty_ctx
    gate = threading.Event()

    def load():
        gate.wait(10)
        return ctx.registry.dispatch("load examples/matmul.mlir", ctx)

    async def go():
        with ThreadPoolExecutor(1) as pool:
            pending = pool.submit(load)
            app = WorkbenchApp(ctx, hide_volatile=True, pending_load=pending)
            async with app.run_test(size=SIZE) as pilot:
                await pilot.pause()
                assert app.busy == "load" and not ctx.session.loaded
                await type_command_while_busy(app, pilot, "history")
                assert "busy with `load`" in "\n".join(app.query_one("#log").plain_lines())
                gate.set()
                await settle(app, pilot)
                assert ctx.session.loaded and app.load_error is None
                assert "linalg.matmul" in app.query_one("#ir", IRView).text
                await type_command(app, pilot, "apply pipelines/lib/tile.mlir")
                assert ctx.session.cursor == 1

    run(go())
    assert ctx.registry.dispatch("undo", ctx).ok   # no unsaved step: the next `load` asks nothing

    bad = tmp_path / "bad.mlir"
    bad.write_text("func.func @f() {\n  %0 = arith.addi %x, %x : i32\n  return\n}\n")

    async def failing():
        with ThreadPoolExecutor(1) as pool:
            pending = pool.submit(ctx.registry.dispatch, f"load {bad}", ctx)
            app = WorkbenchApp(ctx, hide_volatile=True, pending_load=pending)
            async with app.run_test(size=SIZE) as pilot:
                for _ in range(200):
                    if app.load_error is not None:
                        break
                    await pilot.pause(0.05)
            assert app.load_error is not None and "bad.mlir:2:" in app.load_error.error
            assert app.return_code == 1

    run(failing())


async def type_command_while_busy(app, pilot, line: str):
    await pilot.press(*[("space" if ch == " " else ch) for ch in line])
    await pilot.press("enter")
    await pilot.pause()


def test_run_profile_bars_and_printed_output_reach_the_log(wb_ctx):
    """The results panel has the statistics; the log keeps what it has no room for: `run --profile`'s
    table and a program's printed output (the TUI used to drop both)."""
    async def go():
        app = WorkbenchApp(wb_ctx, hide_volatile=True)
        async with app.run_test(size=SIZE) as pilot:
            await settle(app, pilot)
            await type_command(app, pilot, "run --profile --iterations 2")
            for _ in range(600):
                await settle(app, pilot)
                if app.busy is None and app.results:
                    break
            res = app.results[-1]
            assert res.ok, res.error
            assert res.data["run"]["profile"]["regions"]
            log_text = "\n".join(app.query_one("#log").plain_lines())
            assert "time per call by op" in log_text and "linalg.matmul" in log_text.split("time per call by op")[1]
            assert app.query_one("#results").display

    run(go())


def test_the_quit_question_wraps_instead_of_being_cut(wb_ctx):
    from textual.widgets import Label

    from workbench.tui.screens import ConfirmScreen

    async def go():
        app = WorkbenchApp(wb_ctx, hide_volatile=True)
        async with app.run_test(size=(80, 24)) as pilot:
            await settle(app, pilot)
            await type_command(app, pilot, "apply pipelines/lib/tile.mlir")
            await pilot.press("ctrl+q")
            await pilot.pause()
            assert isinstance(app.screen, ConfirmScreen)
            label = app.screen.query_one(Label)
            assert label.size.height >= 2 and label.size.width <= app.screen.query_one("#confirm").size.width
            await pilot.press("n")

    run(go())


@pytest.mark.parametrize("flags, offered", [([], True), (["--no-resume"], False)])
def test_no_resume_reaches_the_tui(monkeypatch, wb_state, flags, offered):
    """`lh-workbench PAYLOAD --no-resume` on a terminal still offered the autosaved session."""
    import io
    import sys

    import workbench.cli as cli
    import workbench.tui.app as app_module
    from conftest import MATMUL

    seen = {}

    class FakeApp:
        load_error = None

    def fake_run_app(ctx, **kw):
        seen.update(kw)
        kw["pending_load"].result()
        return FakeApp()

    class Terminal(io.StringIO):
        def isatty(self):
            return True

    monkeypatch.setattr(app_module, "run_app", fake_run_app)
    monkeypatch.setattr(sys, "stdin", Terminal())
    monkeypatch.setattr(sys, "stdout", Terminal())
    assert cli.main([str(MATMUL), *flags]) == 0
    assert seen["offer_resume"] is offered


def test_steps_table_fits_its_pane_with_times(wb_ctx):
    """At 80x24 the time column lost its last letter (`29.7m`) under the 2-column scrollbar."""
    from workbench.tui.widgets import StepsTable

    async def go():
        app = WorkbenchApp(wb_ctx)   # real times: `12.3ms`
        size = (80, 24)
        async with app.run_test(size=size) as pilot:
            await settle(app, pilot)
            await type_command(app, pilot, "apply pipelines/lib/tile.mlir")
            for _ in range(size[1] // 2):   # more steps than rows: the vertical scrollbar shows
                await type_command(app, pilot, "pass cse")
            table = app.query_one("#steps", StepsTable)
            await pilot.pause()
            assert table.show_vertical_scrollbar
            assert table.virtual_size.width <= table.size.width - table.styles.scrollbar_size_vertical
            assert table.get_row_at(1)[-1].plain.endswith("ms")

    run(go())


def test_typing_in_the_steps_table_goes_to_the_command_input(wb_ctx):
    from workbench.tui.widgets import StepsTable

    async def go():
        app = WorkbenchApp(wb_ctx, hide_volatile=True)
        async with app.run_test(size=SIZE) as pilot:
            await settle(app, pilot)
            app.query_one("#steps", StepsTable).focus()
            await pilot.pause()
            await pilot.press(*"undo")
            inp = app.query_one("#cmd", CommandInput)
            assert inp.has_focus and inp.value == "undo"
            app.query_one("#steps", StepsTable).focus()
            await pilot.pause()
            await pilot.press("down", "up")   # the table's own keys stay the table's
            assert app.query_one("#steps", StepsTable).has_focus and inp.value == "undo"

    run(go())


def test_the_view_title_keeps_its_key_hint_at_120_columns(wb_ctx):
    """At 120 columns the IR title read `IR after step 0 (payl` (22 cells) beside a 60-cell status."""
    from textual.widgets import Label

    async def go():
        app = WorkbenchApp(wb_ctx, hide_volatile=True)
        async with app.run_test(size=(120, 35)) as pilot:
            await settle(app, pilot)
            title = app.query_one("#view-title", Label)
            text = str(title.render())
            assert text.endswith("[^D diff]") and title.content_region.width >= len(text)

    run(go())


def test_log_lines_of_the_first_run_fit_beside_the_results_panel(wb_ctx):
    """Log lines were rendered at least 78 cells wide (RichLog's min_width) and at the width they were
    written at: beside the results panel (and at 80x24) they were cut, not wrapped."""
    from workbench.tui.widgets import LogView

    async def go():
        app = WorkbenchApp(wb_ctx, hide_volatile=True)
        async with app.run_test(size=SIZE) as pilot:
            await settle(app, pilot)
            await type_command(app, pilot, "run --profile --iterations 2")
            for _ in range(600):
                await settle(app, pilot)
                if app.busy is None and app.results:
                    break
            assert app.results[-1].ok and app.query_one("#results").display
            log = app.query_one("#log", LogView)
            await settle(app, pilot)
            width = log.scrollable_content_region.width
            assert max(strip.cell_length for strip in log.lines) <= width

    run(go())
