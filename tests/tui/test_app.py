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
            assert app.busy
            await pilot.press(*"his")          # typing while the step runs
            assert inp.value == "his"
            await pilot.press("escape")
            await settle(app, pilot)
            res = app.results[-1]
            assert not res.ok and res.error.startswith("cancelled")
            assert ctx.session.current_sha == before and ctx.session.cursor == 0
            # the session still works afterwards (a fresh compile worker)
            inp.value = ""
            await type_command(app, pilot, "apply pipelines/lib/tile.mlir")
            assert ctx.session.cursor == 1

    run(go())


def test_run_result_is_plotted(wb_ctx):
    from workbench.result import Result

    async def go():
        app = WorkbenchApp(wb_ctx, hide_volatile=True)
        async with app.run_test(size=SIZE) as pilot:
            await settle(app, pilot)
            plot = app.query_one("#plot")
            assert not plot.display
            app.show_plot(Result(True, "ran", data={"run": {"times_s": [0.01, 0.02, 0.015], "median_s": 0.015}}))
            await pilot.pause()
            assert plot.display

    run(go())
