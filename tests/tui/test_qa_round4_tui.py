"""Fourth QA round, the TUI under tmux: what a terminal does that the pilot's one-key-at-a-time
presses did not (each test failed before its fix)."""
from __future__ import annotations

import asyncio

import pytest
from textual import events

from workbench.tui.app import WorkbenchApp
from workbench.tui.widgets import CommandInput, StepsTable

pytestmark = pytest.mark.timeout(300)


def test_a_command_typed_fast_in_the_steps_table_keeps_its_spaces(wb_ctx):
    """`apply pipelines/lib/tile.mlir` typed (or pasted) in a terminal while the steps list had the focus
    ran as `applypipelines/lib/tile.mlir`: the keys that arrived before the focus had moved to the command
    input were forwarded one by one, except the spaces, which the table dropped."""
    async def go():
        app = WorkbenchApp(wb_ctx, hide_volatile=True)
        async with app.run_test(size=(80, 24)) as pilot:
            await app.workers.wait_for_complete()
            await pilot.pause()
            table = app.query_one("#steps", StepsTable)
            table.focus()
            await pilot.pause()
            for ch in "pass cse":    # all delivered to the table before the focus moves
                table.post_message(events.Key("space" if ch == " " else ch, ch))
            for _ in range(3):
                await pilot.pause()
            inp = app.query_one("#cmd", CommandInput)
            assert inp.has_focus and inp.value == "pass cse"
            table.focus()
            await pilot.pause()
            table.post_message(events.Key("space", " "))   # a space alone is not a command
            await pilot.pause()
            assert table.has_focus and inp.value == "pass cse"

    asyncio.run(go())
