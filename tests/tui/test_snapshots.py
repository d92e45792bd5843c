"""Snapshot tests (pytest-textual-snapshot) of the main screens at 80x24 and 200x55; timings and
paths hidden. Update with `pytest tests/tui/test_snapshots.py --snapshot-update` and look at
the SVGs when a screen changes on purpose."""
from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("pytest_textual_snapshot")
pytestmark = pytest.mark.timeout(300)

REPO = Path(__file__).resolve().parents[2]
APP = Path(__file__).parent / "snapshot_app.py"
SIZES = [pytest.param((80, 24), id="80x24"), pytest.param((200, 55), id="200x55")]


async def _wait(pilot):
    """Workers done, no command in flight, and the screen refreshed (robust on slow 2-core CI)."""
    for inp in pilot.app.query("Input"):
        inp.cursor_blink = False  # a blinking cursor makes the capture depend on timing
    for _ in range(200):
        await pilot.app.workers.wait_for_complete()
        await pilot.pause()
        if pilot.app.busy is None and not pilot.app._form_running and not pilot.app._diff_pending:
            break
    await pilot.pause(0.3)
    await pilot.app.workers.wait_for_complete()
    await pilot.pause()
    for inp in pilot.app.query("Input"):
        inp.cursor_blink = False


async def _tiled(pilot):
    await _wait(pilot)
    pilot.app.submit("apply pipelines/lib/tile.mlir")
    await _wait(pilot)


@pytest.mark.parametrize("size", SIZES)
def test_main_screen(snap_compare, wb_state, size):
    assert snap_compare(str(APP), terminal_size=size, run_before=_tiled)


@pytest.mark.parametrize("size", SIZES)
def test_diff_view(snap_compare, wb_state, size):
    async def run_before(pilot):
        await _tiled(pilot)
        await pilot.press("ctrl+d")
        await _wait(pilot)

    assert snap_compare(str(APP), terminal_size=size, run_before=run_before)


@pytest.mark.parametrize("size", SIZES)
def test_side_by_side(snap_compare, wb_state, size):
    async def run_before(pilot):
        await _tiled(pilot)
        await pilot.press("ctrl+d", "ctrl+d")
        await _wait(pilot)

    assert snap_compare(str(APP), terminal_size=size, run_before=run_before)


@pytest.mark.parametrize("size", SIZES)
def test_param_form(snap_compare, wb_state, size):
    async def run_before(pilot):
        await _wait(pilot)
        pilot.app.submit("apply tests/tui/fixtures/tile_gen.py[gen=tile]{tile_m=64}")
        await _wait(pilot)
        await pilot.press("f4", "down", "backspace", "backspace", "0")  # invalid: live validation message
        await _wait(pilot)

    assert snap_compare(str(APP), terminal_size=size, run_before=run_before)


@pytest.mark.parametrize("size", SIZES)
def test_search_in_the_ir(snap_compare, wb_state, size):
    async def run_before(pilot):
        await _tiled(pilot)
        pilot.app.query_one("#ir").focus()
        await pilot.press("slash", *r"scf\.for", "enter")
        await _wait(pilot)
        await pilot.press("n")
        await _wait(pilot)

    assert snap_compare(str(APP), terminal_size=size, run_before=run_before)


@pytest.mark.parametrize("size", SIZES)
def test_results_panel(snap_compare, wb_state, size):
    from workbench.result import Result

    run = {"times_s": [0.0021, 0.0020, 0.0026, 0.0020, 0.0031, 0.0020], "median_s": 0.00205, "min_s": 0.0020,
           "mean_s": 0.00230, "stddev_s": 0.00044, "gflops": 16.4, "iterations": 6, "target": "cpu",
           "check": {"passed": True, "max_abs_err": 1.2e-6, "max_rel_err": 3.0e-7}}

    async def run_before(pilot):
        await _tiled(pilot)
        pilot.app.show_results(Result(True, "ran", data={
            "run": run, "warnings": ["noisy timings: stddev is 21% of the median (> 10%)"]}))
        await _wait(pilot)

    assert snap_compare(str(APP), terminal_size=size, run_before=run_before)


@pytest.mark.parametrize("size", SIZES)
def test_help_screen(snap_compare, wb_state, size):
    async def run_before(pilot):
        await _wait(pilot)
        await pilot.press("f1")
        await _wait(pilot)

    assert snap_compare(str(APP), terminal_size=size, run_before=run_before)
