"""The IR view: a line-virtualized, read-only text view (Textual's Line API).

Only the lines on screen are sliced out of the text, highlighted (workbench.highlight) and
rendered, so a 640k-line module costs what 50 lines cost. Indexing a big text (line starts)
and searching it run in thread workers; the first screen shows at once from the text's head.
Keys: arrows / j k, PageUp/PageDown, Home/End/g/G, / search (regex), n/N next/previous match,
z fold/unfold the region at the cursor, Z fold every function / unfold all.
"""
from __future__ import annotations

import time
from functools import partial
from typing import Any

from rich.segment import Segment
from rich.style import Style
from textual import events, work
from textual.binding import Binding
from textual.geometry import Size
from textual.message import Message
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip

from workbench.highlight import DIFF_STYLES, THEME, diff_kind, tokens
from workbench.tui import text_model as tm

#: texts up to this many characters are indexed on the UI thread (a few ms)
SYNC_INDEX_CHARS = 1_000_000
#: lines wider than this are highlighted only where they are on screen
LONG_LINE = 2000
GUTTER_STYLE = Style(color="#6c7086")
CURSOR_STYLE = Style(bgcolor="#2d3340")
MATCH_STYLE = Style(bgcolor="#6b5a00")
CURRENT_MATCH_STYLE = Style(bgcolor="#d7875f", color="#000000", bold=True)
FOLD_STYLE = Style(color="#89b4fa", italic=True)


class IRView(ScrollView, can_focus=True):
    """Read-only IR (or a diff) with highlighting computed per visible line.

    mode: "mlir" (plain IR), "diff" (unified diff, +/- lines tinted) or "side" (one half of an
    aligned side-by-side diff; `line_marks` tints changed/padding lines).
    """

    BINDINGS = [
        Binding("up,k", "cursor(-1)", "Up", show=False, id="ir.up"),
        Binding("down,j", "cursor(1)", "Down", show=False, id="ir.down"),
        Binding("pageup,b", "page(-1)", "Page up", show=False, id="ir.page_up"),
        Binding("pagedown,space", "page(1)", "Page down", show=False, id="ir.page_down"),
        Binding("home,g", "top", "Top", show=False, id="ir.top"),
        Binding("end,G", "bottom", "Bottom", show=False, id="ir.bottom"),
        Binding("left,h", "scroll_columns(-8)", "Scroll left", show=False, id="ir.left"),
        Binding("right,l", "scroll_columns(8)", "Scroll right", show=False, id="ir.right"),
        Binding("slash", "search", "Search", id="ir.search"),
        Binding("n", "next_match(1)", "Next match", show=False, id="ir.next_match"),
        Binding("N", "next_match(-1)", "Previous match", show=False, id="ir.previous_match"),
        Binding("z", "fold", "Fold", show=False, id="ir.fold"),
        Binding("Z", "fold_all", "Fold all functions", show=False, id="ir.fold_all"),
    ]

    cursor_line: reactive[int] = reactive(0, always_update=False)
    #: one line for the pane title: position, matches, folds, indexing
    status: reactive[str] = reactive("")

    class SearchRequested(Message):
        """`/` in the view: the app opens the search bar for it."""

        def __init__(self, view: "IRView") -> None:
            super().__init__()
            self.view = view

    class SearchDone(Message):
        def __init__(self, view: "IRView", query: str, count: int, error: str | None, seconds: float) -> None:
            super().__init__()
            self.view = view
            self.query = query
            self.count = count
            self.error = error
            self.seconds = seconds

    def __init__(self, text: str = "", mode: str = "mlir", **kw: Any) -> None:
        super().__init__(**kw)
        self.mode = mode
        self.line_marks: dict[int, str] = {}
        self.index = tm.LineIndex("")
        self.indexing = False
        self.folds = tm.FoldMap()
        self.source_key: Any = None
        self.search_result: tm.SearchResult | None = None
        self.search_query = ""
        self.search_error: str | None = None
        self.current_match = -1
        self.last_search_s: float | None = None
        self.partner: IRView | None = None   # the other half of a side-by-side view scrolls along
        self._text = ""
        self._text_lines = 0
        self._generation = 0
        self._cache: dict[int, Strip] = {}          # highlighted lines (full width)
        self._screen_cache: dict[tuple, Strip] = {}  # what render_line returned
        self._symbols: list[tm.Symbol] | None = None
        if text:
            self.show(text, mode)

    # -- content ---------------------------------------------------------------------------------
    @property
    def text(self) -> str:
        return self._text

    @property
    def line_count(self) -> int:
        """Lines of the whole text (known before indexing ends: counted once, in C)."""
        return self.index.count if not self.indexing else self._text_lines

    def show(self, text: str, mode: str = "mlir", marks: dict[int, str] | None = None, key: Any = None) -> None:
        """Display `text`. Same `key` (and mode) as what is shown: nothing to do, the position stays."""
        if key is not None and key == self.source_key and mode == self.mode:
            return
        same_text = text == self._text
        self.source_key = key
        self.mode = mode
        self.line_marks = marks or {}
        self._generation += 1
        generation = self._generation
        self._text = text
        self._text_lines = text.count("\n") + (0 if not text or text.endswith("\n") else 1)
        self._symbols = None
        if not same_text:
            self.folds.clear()
        if len(text) <= SYNC_INDEX_CHARS:
            self._install(tm.LineIndex(text), generation)
            return
        # big: the first screen from the head now, the whole index in a thread
        self.indexing = True
        self._install(tm.LineIndex.head(text, 500), generation, partial=True)
        # (not @work: it describes a worker by the repr of its arguments, 30 MB of IR here)
        self.run_worker(partial(self._index_worker, text, generation), thread=True, group="ir-index",
                        description=f"index {len(text)} characters", exit_on_error=False)

    def _index_worker(self, text: str, generation: int) -> None:
        index = tm.LineIndex(text)
        self.app.call_from_thread(self._install, index, generation)

    def _install(self, index: tm.LineIndex, generation: int, partial: bool = False) -> None:
        if generation != self._generation:
            return  # a newer text arrived meanwhile
        completes_head = self.indexing and not partial   # the same text's full index after its head's
        self.index = index
        self.indexing = partial
        if not completes_head:   # (the head's rendered lines stay right: same lines, same gutter)
            self._clear_caches()
        self._update_virtual_size()
        self.cursor_line = min(self.cursor_line, max(0, index.count - 1))
        if not partial and self.search_query:
            self.run_search(self.search_query, move=False)
        self._update_status()
        self.refresh()

    def _gutter_width(self) -> int:
        return len(str(max(1, self.line_count))) + 2

    def _update_virtual_size(self) -> None:
        rows = self.folds.rows(self.index.count) if not self.indexing else self.line_count
        size = Size(self._gutter_width() + self.index.max_len + 16, max(rows, 1))
        if size == self.virtual_size:
            return
        if self._scrollbars_stay(size):
            # only the scrollable extent changes (a big text's full index arriving, a fold): no layout pass,
            # which at 200x55 costs 40-80 ms of the UI thread while keystrokes wait; the scrollbars are
            # told directly (what a layout would tell them)
            self.set_reactive(IRView.virtual_size, size)
            if self._vertical_scrollbar is not None:
                self._vertical_scrollbar.window_virtual_size = size.height
            if self._horizontal_scrollbar is not None:
                self._horizontal_scrollbar.window_virtual_size = size.width
            self.refresh()
        else:
            self.virtual_size = size

    def _scrollbars_stay(self, size: Size) -> bool:
        """Whether this view shows the same scrollbars with `size` as its virtual size (Textual's rule:
        `scroll` always, `hidden` never, `auto` when the content is larger than the view)."""
        width, height = self.container_size
        if not width or not height or not self.virtual_size.height:
            return False

        def shown(overflow: str, larger: bool) -> bool:
            return overflow == "scroll" or (overflow == "auto" and larger)

        return shown(self.styles.overflow_x, size.width > width) == self.show_horizontal_scrollbar and \
            shown(self.styles.overflow_y, size.height > height) == self.show_vertical_scrollbar

    @property
    def rows(self) -> int:
        return self.folds.rows(self.index.count)

    # -- rendering ------------------------------------------------------------------------------
    def render_line(self, y: int) -> Strip:
        scroll_x, scroll_y = self.scroll_offset
        row = scroll_y + y
        width = self.scrollable_content_region.width
        if row >= self.rows:
            return Strip.blank(width)
        line = self.folds.row_to_line(row)
        # a full repaint of the screen asks for every visible line again: answer from a cache
        key = (line, scroll_x, width, line == self.cursor_line)
        strip = self._screen_cache.get(key)
        if strip is None:
            if len(self._screen_cache) > 2000:
                self._screen_cache.clear()
            strip = self._screen_cache[key] = self._render_row(line, scroll_x, width)
        return strip

    def _render_row(self, line: int, scroll_x: int, width: int) -> Strip:
        gw = self._gutter_width()
        folded = self.folds.fold_at(line)
        marker = "▸" if folded >= 0 else " "
        gutter = Strip([_segment(f"{line + 1:>{gw - 2}}{marker} ", GUTTER_STYLE)])
        body_width = max(0, width - gw)
        plain_len = int(self.index.starts[line + 1] - self.index.starts[line] - 1) \
            if line + 1 < self.index.count else len(self.index.line(line))
        if plain_len > LONG_LINE:
            body = self._render_text(line, scroll_x, body_width).crop(0, body_width)
        else:
            body = self._cache.get(line)
            if body is None:
                if len(self._cache) > 4000:
                    self._cache.clear()
                body = self._cache[line] = self._render_text(line, 0, None)
            body = body.crop(scroll_x, scroll_x + body_width)
        body = body.extend_cell_length(body_width)
        strip = Strip.join([gutter, body])
        if line == self.cursor_line:
            strip = strip.apply_style(CURSOR_STYLE)
        return strip

    def _render_text(self, line: int, x0: int, width: int | None) -> Strip:
        """One line as segments, styled by: the diff kind of the line, the MLIR tokens, the line's
        mark (side by side), the search matches (later ones win). Built directly from the spans:
        several times cheaper than rich Text's stylize + render."""
        plain = self.index.line(line)
        if "\t" in plain:
            plain = plain.expandtabs(4)
        if width is not None:  # a huge line: only its visible window
            plain = plain[x0: x0 + width]
        line_style: Style | None = None
        token_text, token_offset = plain, 0
        if self.mode == "diff":
            kind = diff_kind(plain)
            if kind:
                line_style = DIFF_STYLES[kind]
            if kind in ("file", "hunk"):
                token_text = ""
            else:
                token_text, token_offset = plain[1:], 1
        mark = self.line_marks.get(line)
        if mark:
            line_style = _add(line_style, DIFF_STYLES[mark])
        spans = [(start + token_offset, end + token_offset, THEME[name]) for start, end, name in tokens(token_text)]
        matches: list[tuple[int, int, Style]] = []
        res = self.search_result
        if res is not None and res.count:
            current = int(res.offsets[self.current_match]) if self.current_match >= 0 else -1
            base = int(self.index.starts[line]) + (x0 if width is not None else 0)
            matches = [(a, b, CURRENT_MATCH_STYLE if base + a == current else MATCH_STYLE)
                       for a, b in tm.match_spans(res.pattern, plain)]
        segments = _styled_segments(plain, line_style, spans, matches)
        k = self.folds.fold_at(line)
        if k >= 0 and width is None:
            segments.append(_segment(f"  ⋯ {self.folds.ends[k] - line - 1} lines", FOLD_STYLE))
        return Strip(segments)

    def _clear_caches(self) -> None:
        self._cache.clear()
        self._screen_cache.clear()

    def refresh_content(self) -> None:
        self._clear_caches()
        self._update_virtual_size()
        self.refresh()

    # -- cursor and scrolling ------------------------------------------------------------------
    def validate_cursor_line(self, value: int) -> int:
        return max(0, min(value, max(0, self.index.count - 1)))

    def watch_cursor_line(self, old: int, new: int) -> None:
        self._scroll_to_line(new)
        self._update_status()
        self.refresh()

    def _scroll_to_line(self, line: int, center: bool = False) -> None:
        row = self.folds.line_to_row(line)
        height = max(1, self.scrollable_content_region.height)
        top = self.scroll_offset.y
        if center and not top <= row < top + height:
            self.scroll_to(y=max(0, row - height // 3), animate=False, immediate=True)
        elif row < top:
            self.scroll_to(y=row, animate=False, immediate=True)
        elif row >= top + height:
            self.scroll_to(y=row - height + 1, animate=False, immediate=True)

    def watch_scroll_y(self, old: float, new: float) -> None:
        super().watch_scroll_y(old, new)
        partner = self.partner
        if partner is not None and round(partner.scroll_y) != round(new):
            partner.scroll_to(y=new, animate=False, immediate=True)

    def _cursor_in_view(self) -> None:
        """Keys move the cursor from where the view is (after mouse scrolling)."""
        row = self.folds.line_to_row(self.cursor_line)
        top = int(self.scroll_offset.y)
        height = max(1, self.scrollable_content_region.height)
        if not top <= row < top + height:
            self.cursor_line = self.folds.row_to_line(min(top, max(0, self.rows - 1)))

    def action_cursor(self, delta: int) -> None:
        self._cursor_in_view()
        row = self.folds.line_to_row(self.cursor_line) + delta
        self.cursor_line = self.folds.row_to_line(max(0, min(row, self.rows - 1)))

    def action_page(self, direction: int) -> None:
        height = max(1, self.scrollable_content_region.height - 1)
        self._cursor_in_view()
        row = self.folds.line_to_row(self.cursor_line) + direction * height
        row = max(0, min(row, self.rows - 1))
        self.scroll_to(y=max(0, self.scroll_offset.y + direction * height), animate=False, immediate=True)
        self.cursor_line = self.folds.row_to_line(row)

    def action_top(self) -> None:
        self.cursor_line = 0
        self.scroll_to(y=0, animate=False, immediate=True)

    def action_bottom(self) -> None:
        self.cursor_line = self.folds.row_to_line(max(0, self.rows - 1))
        self._scroll_to_line(self.cursor_line)

    def action_scroll_columns(self, delta: int) -> None:
        self.scroll_to(x=max(0, self.scroll_offset.x + delta), animate=False, immediate=True)

    def go_to_line(self, line: int) -> None:
        """Put the cursor on `line` (unfolding what hides it), a third from the top."""
        line = self.validate_cursor_line(line)
        k = self.folds.containing(line)
        while k >= 0:
            self.folds.remove(k)
            k = self.folds.containing(line)
        self.refresh_content()
        self.cursor_line = line
        self._scroll_to_line(line, center=True)
        self._update_status()

    def on_click(self, event: events.Click) -> None:
        row = int(self.scroll_offset.y) + event.y
        if 0 <= row < self.rows:
            self.cursor_line = self.folds.row_to_line(row)

    def on_focus(self) -> None:
        self.refresh()

    # -- search -----------------------------------------------------------------------------------
    def action_search(self) -> None:
        self.post_message(self.SearchRequested(self))

    def run_search(self, query: str, move: bool = True) -> None:
        """Search `query` (a regex; smart case) in a thread; SearchDone reports the count."""
        self.search_query = query
        if not query:
            self.clear_search()
            return
        self._search_worker(query, self._generation, move, time.perf_counter())

    @work(thread=True, exclusive=True, group="ir-search", exit_on_error=False)
    def _search_worker(self, query: str, generation: int, move: bool, started: float) -> None:
        index = self.index if not self.indexing else tm.LineIndex(self._text)
        try:
            result, error = tm.search(index, query), None
        except tm.SearchError as e:
            result, error = None, str(e)
        self.app.call_from_thread(self._search_done, query, generation, result, error, move, started)

    def _search_done(self, query: str, generation: int, result, error, move: bool, started: float) -> None:
        if generation != self._generation or query != self.search_query:
            return
        self.search_result = result
        self.search_error = error
        self.current_match = -1
        if result is not None and result.count:
            self.current_match = result.first_at_or_after(self.cursor_line)
            if move:
                self.go_to_line(int(result.lines[self.current_match]))
        self.last_search_s = time.perf_counter() - started
        self._clear_caches()
        self.refresh()
        self._update_status()
        self.post_message(self.SearchDone(self, query, result.count if result else 0, error, self.last_search_s))

    def clear_search(self) -> None:
        self.search_query = ""
        self.search_result = None
        self.search_error = None
        self.current_match = -1
        self._clear_caches()
        self.refresh()
        self._update_status()

    def action_next_match(self, direction: int) -> None:
        res = self.search_result
        if res is None or not res.count:
            if not self.search_query:
                self.post_message(self.SearchRequested(self))
            return
        if self.current_match < 0:
            self.current_match = res.first_at_or_after(self.cursor_line)
        else:
            self.current_match = (self.current_match + direction) % res.count
        self._clear_caches()
        self.go_to_line(int(res.lines[self.current_match]))

    # -- outline and folding ------------------------------------------------------------------
    def symbols(self) -> list[tm.Symbol]:
        if self._symbols is None:
            index = self.index if not self.indexing else tm.LineIndex(self._text)
            self._symbols = tm.outline(index)
        return self._symbols

    def action_fold(self) -> None:
        if self.indexing:
            return
        line = self.cursor_line
        k = self.folds.fold_at(line)
        if k >= 0:
            self.folds.remove(k)
        else:
            region = tm.enclosing_region(self.index, line)
            if region is None:
                self.notify("no region here to fold", severity="warning", timeout=2)
                return
            self.folds.add(*region)
            self.cursor_line = region[0]
        self.refresh_content()
        self._scroll_to_line(self.cursor_line)
        self._update_status()

    def action_fold_all(self) -> None:
        if self.indexing:
            return
        if len(self.folds):
            self.folds.clear()
        else:
            self.folds.set_all(tm.function_regions(self.index, self.symbols()))
            k = self.folds.containing(self.cursor_line)
            if k >= 0:
                self.cursor_line = self.folds.starts[k]
        self.refresh_content()
        self._scroll_to_line(self.cursor_line)
        self._update_status()

    # -- status ---------------------------------------------------------------------------------
    def _update_status(self) -> None:
        parts = [f"line {self.cursor_line + 1}/{self.line_count}"]
        if self.indexing:
            parts.append(f"indexing {len(self._text) / 1e6:.0f} MB…")
        if self.search_error:
            parts.append(self.search_error)
        elif self.search_result is not None:
            n = self.search_result.count
            parts.append(f"match {self.current_match + 1}/{n}" if n else "no match")
        if len(self.folds):
            parts.append(f"{len(self.folds)} folded")
        self.status = " · ".join(parts)


def _segment(text: str, style: Style | None) -> Segment:
    return Segment(text, style)


def _add(a: Style | None, b: Style | None) -> Style | None:
    if a is None:
        return b
    return a if b is None else a + b


def _styled_segments(plain: str, line_style: Style | None, spans: list, matches: list) -> list[Segment]:
    """Segments of `plain`: line_style, then the (non-overlapping, sorted) token spans, then the
    (non-overlapping, sorted) match spans on top."""
    if not spans and not matches:
        return [Segment(plain, line_style)] if plain else []
    cuts = {0, len(plain)}
    for a, b, _ in spans:
        cuts.add(a)
        cuts.add(b)
    for a, b, _ in matches:
        cuts.add(a)
        cuts.add(b)
    points = sorted(c for c in cuts if 0 <= c <= len(plain))
    out: list[Segment] = []
    si = mi = 0
    for a, b in zip(points, points[1:]):
        while si < len(spans) and spans[si][1] <= a:
            si += 1
        while mi < len(matches) and matches[mi][1] <= a:
            mi += 1
        style = line_style
        if si < len(spans) and spans[si][0] <= a:
            style = _add(style, spans[si][2])
        if mi < len(matches) and matches[mi][0] <= a:
            style = _add(style, matches[mi][2])
        out.append(Segment(plain[a:b], style))
    return out
