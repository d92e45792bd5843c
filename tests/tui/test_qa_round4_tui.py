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


@pytest.mark.parametrize("keys, expected", [
    ([("h", "h"), ("i", "i"), ("x", "x"), ("backspace", None), ("y", "y")], "hiy"),
    ([("3", "3"), ("2", "2"), ("left", None), ("1", "1")], "312"),
    ([("a", "a"), ("b", "b"), ("home", None), ("delete", None), ("c", "c")], "cb"),
])
def test_editing_keys_typed_together_act_in_order(wb_ctx, keys, expected):
    """Keys that arrive together (typed while the screen repaints, sent by tmux): Textual ran the Input's
    bindings a message late, after the next letter was inserted: `hix` Backspace `y` gave `hix`, `32` Left
    `1` gave `321`; in the command input, the parameter form and the search bar."""
    from workbench.tui.widgets import ParamForm, SearchBar

    async def go():
        app = WorkbenchApp(wb_ctx, hide_volatile=True)
        async with app.run_test(size=(80, 24)) as pilot:
            await app.workers.wait_for_complete()
            await pilot.pause()

            async def typed(inp) -> str:
                inp.value = ""
                inp.focus()
                await pilot.pause()
                for key, ch in keys:     # all queued before any is handled
                    app.post_message(events.Key(key, ch))
                for _ in range(3):
                    await pilot.pause()
                return inp.value

            assert await typed(app.query_one("#cmd", CommandInput)) == expected
            ctx = wb_ctx
            assert ctx.registry.dispatch("apply pipelines/lib/tile.py[gen=tile_matmul]{tile_m=64}", ctx).ok
            form = app.query_one(ParamForm)
            await form.show_step(1, ctx.session.steps[0].step, True)
            await pilot.pause()
            assert await typed(form.fields()[0]) == expected
            await pilot.press("escape")
            app.query_one(SearchBar).open(app.query_one("#ir"))
            await pilot.pause()
            assert await typed(app.query_one(SearchBar).input) == expected

    asyncio.run(go())
