"""Snapshot tests (pytest-textual-snapshot) at a fixed terminal size; timings and paths hidden."""
from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("pytest_textual_snapshot")
pytestmark = pytest.mark.timeout(300)

REPO = Path(__file__).resolve().parents[2]
APP = Path(__file__).parent / "snapshot_app.py"
SIZE = (120, 36)


async def _wait(pilot):
    """Workers done, no command in flight, and the screen refreshed (robust on slow 2-core CI)."""
    for inp in pilot.app.query("Input"):
        inp.cursor_blink = False  # a blinking cursor makes the capture depend on timing
    for _ in range(200):
        await pilot.app.workers.wait_for_complete()
        await pilot.pause()
        if pilot.app.busy is None and not pilot.app._form_running:
            break
    await pilot.pause(0.3)
    await pilot.app.workers.wait_for_complete()
    await pilot.pause()


def test_main_screen(snap_compare, wb_state):
    async def run_before(pilot):
        await _wait(pilot)
        pilot.app.submit("apply pipelines/lib/tile.mlir")
        await _wait(pilot)

    assert snap_compare(str(APP), terminal_size=SIZE, run_before=run_before)


def test_diff_view(snap_compare, wb_state):
    async def run_before(pilot):
        await _wait(pilot)
        pilot.app.submit("apply pipelines/lib/tile.mlir")
        await _wait(pilot)
        await pilot.press("ctrl+d")
        await _wait(pilot)

    assert snap_compare(str(APP), terminal_size=SIZE, run_before=run_before)


def test_param_form(snap_compare, wb_state):
    async def run_before(pilot):
        await _wait(pilot)
        pilot.app.submit("apply tests/tui/fixtures/tile_gen.py[gen=tile]{tile_m=64}")
        await _wait(pilot)
        pilot.app.query_one("#param-tile_n").focus()
        await pilot.press("backspace", "backspace", "0")  # invalid: live validation message
        await _wait(pilot)

    assert snap_compare(str(APP), terminal_size=SIZE, run_before=run_before)
