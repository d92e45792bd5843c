"""Pilot tests of finding one's way through big IR: the line-virtualized view, Home/End/g/G, `/`
search with n/N, go to symbol, folding, log search, help screen, keymap, the 80x24 layout."""
from __future__ import annotations

import asyncio

import pytest

from workbench.tui.app import WorkbenchApp
from workbench.tui.screens import HelpScreen, OutlineScreen
from workbench.tui.widgets import IRView, LogView, SearchBar
from workbench.tui.widgets import ir_view as ir_view_module

pytestmark = pytest.mark.timeout(300)
SIZE = (130, 42)


def big_module(functions: int) -> str:
    out = ["module {"]
    for n in range(functions):
        out += [f"  func.func @f{n}(%arg0: memref<64xf32>) -> f32 {{",
                "    %c0 = arith.constant 0 : index",
                f"    %k = arith.constant {n}.0 : f32",
                "    %r = scf.for %i = %c0 to %c0 step %c0 iter_args(%acc = %k) -> (f32) {",
                "      %v = memref.load %arg0[%i] : memref<64xf32>",
                "      scf.yield %v : f32",
                "    }",
                "    return %r : f32",
                "  }"]
    out.append("}")
    return "\n".join(out) + "\n"


async def settle(app, pilot):
    for _ in range(3):
        await app.workers.wait_for_complete()
        await pilot.pause()


async def shown(app, pilot, view: IRView, text: str):
    view.show(text, key=("test", len(text)))
    for _ in range(200):
        await settle(app, pilot)
        if not view.indexing:
            return
    raise AssertionError("indexing did not finish")


def run(coro):
    asyncio.run(coro)


def test_big_ir_is_rendered_per_visible_line_and_navigated(wb_ctx, monkeypatch):
    text = big_module(30_000)   # 270k lines, > SYNC_INDEX_CHARS: indexed in a thread
    calls = []
    real = IRView._render_text
    monkeypatch.setattr(IRView, "_render_text", lambda self, *a: calls.append(a[0]) or real(self, *a))

    async def go():
        app = WorkbenchApp(wb_ctx, hide_volatile=True)
        async with app.run_test(size=SIZE) as pilot:
            await settle(app, pilot)
            ir = app.query_one("#ir", IRView)
            assert len(text) > ir_view_module.SYNC_INDEX_CHARS
            await shown(app, pilot, ir, text)
            assert ir.line_count == 270_002
            height = ir.scrollable_content_region.height
            # only what is on screen was highlighted
            assert 0 < len(set(calls)) <= height + 2
            ir.focus()
            await pilot.press("G")
            await pilot.pause()
            assert ir.cursor_line == 270_001 and ir.scroll_offset.y >= 270_002 - height
            await pilot.press("g")
            await pilot.pause()
            assert ir.cursor_line == 0 and ir.scroll_offset.y == 0
            await pilot.press("end")
            await pilot.pause()
            assert ir.cursor_line == 270_001
            await pilot.press("home", "pagedown")
            await pilot.pause()
            assert ir.cursor_line >= height - 2
            calls.clear()
            await pilot.press("pagedown")
            await pilot.pause()
            assert len(set(calls)) <= height + 2   # a page costs a page
            assert "line" in ir.status and "/270002" in ir.status

    run(go())


def test_search_regex_count_next_previous_and_highlight(wb_ctx):
    text = big_module(2000)

    async def go():
        app = WorkbenchApp(wb_ctx, hide_volatile=True)
        async with app.run_test(size=SIZE) as pilot:
            await settle(app, pilot)
            ir = app.query_one("#ir", IRView)
            await shown(app, pilot, ir, text)
            ir.focus()
            await pilot.press("slash")
            bar = app.query_one("#search", SearchBar)
            assert bar.display and bar.input.has_focus
            await pilot.press(*r"@f1\d\d\(", "enter")
            await settle(app, pilot)
            res = ir.search_result
            assert res is not None and res.count == 100            # @f100( .. @f199(
            assert bar.result_text == "1/100 matches"
            assert ir.cursor_line == text.splitlines().index("  func.func @f100(%arg0: memref<64xf32>) -> f32 {")
            assert ir.has_focus                                     # n / N go to the view
            first = ir.cursor_line
            await pilot.press("n")
            assert ir.cursor_line == first + 9 and ir.current_match == 1
            await pilot.press("N", "N")
            assert ir.current_match == 99 and ir.cursor_line > first    # wrapped to the last
            # the current match is drawn in its own style, on the visible line only
            strip = ir._render_text(ir.cursor_line, 0, None)
            assert any(seg.style == ir_view_module.CURRENT_MATCH_STYLE for seg in strip)
            assert "100" in ir.status and "/" in ir.status
            # a bad regex: said in the bar, nothing breaks
            await pilot.press("slash")
            bar.input.value = "(("
            await pilot.press("enter")
            await settle(app, pilot)
            assert "bad regex" in bar.result_text
            await pilot.press("escape")
            assert not bar.display

    run(go())


def test_go_to_symbol_and_folding(wb_ctx):
    text = big_module(300)

    async def go():
        app = WorkbenchApp(wb_ctx, hide_volatile=True)
        async with app.run_test(size=SIZE) as pilot:
            await settle(app, pilot)
            ir = app.query_one("#ir", IRView)
            await shown(app, pilot, ir, text)
            await pilot.press("ctrl+o")
            await pilot.pause()
            assert isinstance(app.screen, OutlineScreen)
            await pilot.press(*"@f217 func", "enter")
            await pilot.pause()
            target = text.splitlines().index("  func.func @f217(%arg0: memref<64xf32>) -> f32 {")
            assert ir.cursor_line == target and ir.has_focus
            # z folds the function at the cursor, z again unfolds it
            rows = ir.rows
            await pilot.press("z")
            assert ir.rows == rows - 7 and ir.folds.fold_at(target) >= 0
            await pilot.press("down")
            assert ir.cursor_line == target + 8                     # the closing line
            await pilot.press("up", "z")
            assert ir.rows == rows
            # inside a loop: z folds the innermost region around the cursor
            await pilot.press("down", "down", "down", "down")
            await pilot.press("z")
            assert ir.folds.starts == [target + 3] and ir.cursor_line == target + 3
            # Z unfolds all (there are folds), Z then folds every function, Z again unfolds all
            await pilot.press("Z")
            assert len(ir.folds) == 0 and ir.rows == rows
            await pilot.press("Z")
            assert len(ir.folds) == 300 and ir.rows == 2 + 300 * 2
            await pilot.press("Z")
            assert len(ir.folds) == 0 and ir.rows == rows
            # a search hit inside a fold opens it
            await pilot.press("Z")
            ir.run_search("%k = arith.constant 42.0")
            await settle(app, pilot)
            assert ir.index.line(ir.cursor_line).strip().startswith("%k = arith.constant 42.0")
            assert ir.folds.containing(ir.cursor_line) < 0 and len(ir.folds) == 299

    run(go())


def test_log_search(wb_ctx):
    async def go():
        app = WorkbenchApp(wb_ctx, hide_volatile=True)
        async with app.run_test(size=SIZE) as pilot:
            await settle(app, pilot)
            for i in range(40):
                app.log_line(f"line {i} {'needle' if i in (3, 30) else ''}")
            log = app.query_one("#log", LogView)
            log.focus()
            await pilot.press("slash", *"needle", "enter")
            await settle(app, pilot)
            assert len(log.matches) == 2 and app.query_one("#search", SearchBar).result_text == "2/2 matches"
            assert "needle" in log.lines[log.matches[log.current_match]].text
            await pilot.press("n")
            assert log.current_match == 0
            # the match is highlighted, not the whole line
            from workbench.tui.widgets.log_view import CURRENT_MATCH_STYLE
            strip = log._mark_matches(log.lines[log.matches[0]], log.matches[0], CURRENT_MATCH_STYLE)
            styled = "".join(seg.text for seg in strip if seg.style and seg.style.bgcolor == CURRENT_MATCH_STYLE.bgcolor)
            assert styled == "needle"

    run(go())


def test_help_screen_lists_every_binding_and_escape_closes(wb_ctx):
    async def go():
        app = WorkbenchApp(wb_ctx, hide_volatile=True)
        async with app.run_test(size=SIZE) as pilot:
            await settle(app, pilot)
            await pilot.press("f1")
            await pilot.pause()
            assert isinstance(app.screen, HelpScreen)
            text = app.screen.as_text()
            for binding_id in app.binding_ids():
                assert binding_id in text, binding_id
            await pilot.press("escape")
            await pilot.pause()
            assert not isinstance(app.screen, HelpScreen)
            # Textual's keys panel (palette: "Keys") closes with Escape too
            app.action_show_help_panel()
            await pilot.pause()
            assert app.screen.query("HelpPanel")
            await pilot.press("escape")
            await pilot.pause()
            assert not app.screen.query("HelpPanel")
            # `?` outside a text field opens the help screen
            app.query_one("#ir").focus()
            await pilot.press("question_mark")
            await pilot.pause()
            assert isinstance(app.screen, HelpScreen)

    run(go())


def test_keymap_file_remaps_bindings(wb_ctx, tmp_path, monkeypatch):
    keymap = tmp_path / "keys.toml"
    keymap.write_text('"app.undo" = "ctrl+u"\n[ir]\nbottom = "e"\n')
    monkeypatch.setenv("LH_WORKBENCH_KEYMAP", str(keymap))
    ctx = wb_ctx
    assert ctx.registry.dispatch("apply pipelines/lib/tile.mlir", ctx).ok

    async def go():
        app = WorkbenchApp(ctx, hide_volatile=True)
        async with app.run_test(size=SIZE) as pilot:
            await settle(app, pilot)
            assert app.keymap_warnings == []
            await pilot.press("ctrl+u")
            await settle(app, pilot)
            assert ctx.session.cursor == 0
            ir = app.query_one("#ir", IRView)
            ir.focus()
            await pilot.press("e")
            assert ir.cursor_line == ir.line_count - 1
            await pilot.press("f1")
            await pilot.pause()
            assert "^u" in app.screen.as_text()

    run(go())


def test_layout_at_80x24(wb_ctx):
    ctx = wb_ctx
    assert ctx.registry.dispatch("apply pipelines/lib/tile.mlir[seq=tile_parallel]", ctx).ok

    async def go():
        app = WorkbenchApp(ctx, hide_volatile=True)
        async with app.run_test(size=(80, 24)) as pilot:
            await settle(app, pilot)
            left, ir = app.query_one("#left"), app.query_one("#ir")
            assert left.size.width <= 30 and ir.size.width >= 48       # the IR gets most columns
            assert ir.size.height >= 10
            table = app.query_one("#steps")
            row = table.get_row_at(1)
            # the current-step marker and the time are never cut off, the step text is
            assert str(row[0]).strip() == "▶1" and str(row[-1]).strip() == "--"
            footer = app.screen.query_one("Footer")
            assert footer.region.bottom == 24 and footer.region.width == 80
            keys = " ".join(str(w.render()) for w in footer.query("FooterKey"))
            assert "Help" in keys and "Quit" in keys
            await pilot.press("ctrl+b")
            await pilot.pause()
            assert not left.display and ir.size.width >= 78
            await pilot.press("ctrl+b")
            await pilot.pause()
            assert left.display

    run(go())
