"""The log: every command with its result. Searchable (`/`, n/N) like the IR view."""
from __future__ import annotations

from typing import Any

from rich.style import Style
from textual.binding import Binding
from textual.message import Message
from textual.strip import Strip
from textual.widgets import RichLog

from workbench.tui import text_model as tm

MATCH_STYLE = Style(bgcolor="#6b5a00")                        # a match (the IR view's colours)
CURRENT_MATCH_STYLE = Style(bgcolor="#d7875f", color="#000000")  # the matches of the current line


class LogView(RichLog):
    BINDINGS = [
        Binding("slash", "search", "Search", id="log.search"),
        Binding("n", "next_match(1)", "Next match", show=False, id="log.next_match"),
        Binding("N", "next_match(-1)", "Previous match", show=False, id="log.previous_match"),
        Binding("home,g", "scroll_home", "Top", show=False, id="log.top"),
        Binding("end,G", "scroll_end", "Bottom", show=False, id="log.bottom"),
    ]

    class SearchRequested(Message):
        def __init__(self, view: "LogView") -> None:
            super().__init__()
            self.view = view

    class SearchDone(Message):
        def __init__(self, view: "LogView", query: str, count: int, error: str | None) -> None:
            super().__init__()
            self.view = view
            self.query = query
            self.count = count
            self.error = error

    def __init__(self, **kw: Any) -> None:
        # min_width: RichLog renders every line at least 78 cells wide (cut, not wrapped, in a narrower log:
        # at 80x24, or beside the results panel)
        super().__init__(wrap=True, markup=False, highlight=False, max_lines=5000, min_width=20, **kw)
        # what was written, to wrap again when the width changes (the results panel appears beside the
        # log after the first run: lines wrapped at the full width were cut at its edge)
        self._written: list[tuple[Any, dict]] = []
        self._wrapped_at: set[int] = set()   # the widths the lines now shown were wrapped at
        self.search_query = ""
        self.matches: list[int] = []       # indexes into self.lines
        self.current_match = -1
        self._pattern = None

    def write(self, content: Any, *args: Any, **kw: Any):
        if args:   # positional options (width, expand, ...): as keywords, to write it again
            kw.update(zip(("width", "expand", "shrink", "scroll_end", "animate"), args))
        if self._size_known:   # (before that RichLog defers it and writes it again, through here, once sized)
            self._written.append((content, kw))
            if len(self._written) > (self.max_lines or 5000):
                del self._written[: len(self._written) - (self.max_lines or 5000)]
            self._wrapped_at.add(self.scrollable_content_region.width)
        return super().write(content, **kw)

    def clear(self):
        self._written = []
        self._wrapped_at = set()
        return super().clear()

    def on_resize(self, event) -> None:
        super().on_resize(event)
        if self._written and self._wrapped_at - {self.scrollable_content_region.width}:
            self.call_after_refresh(self._rewrap)

    def _rewrap(self) -> None:
        width = self.scrollable_content_region.width
        if not width or not self._wrapped_at - {width}:
            return
        written, self._written = self._written, []
        at_end = self.is_vertical_scroll_end
        query = self.search_query
        self.clear()
        for content, kw in written:
            self.write(content, **{**kw, "scroll_end": False})
        if query:
            self.run_search(query, move=False)
        if at_end:
            self.scroll_end(animate=False)

    def plain_lines(self) -> list[str]:
        return [strip.text for strip in self.lines]

    def action_search(self) -> None:
        self.post_message(self.SearchRequested(self))

    def run_search(self, query: str, move: bool = True) -> None:
        self.search_query = query
        self.matches, self.current_match = [], -1
        self._pattern = None
        error = None
        if query:
            try:
                pattern = tm.compile_pattern(query)
            except tm.SearchError as e:
                error = str(e)
            else:
                self._pattern = pattern
                self.matches = [i for i, text in enumerate(self.plain_lines()) if pattern.search(text)]
        if self.matches and move:
            # the newest match first: what was just printed is what one looks for
            self.current_match = len(self.matches) - 1
            self._show_current()
        self._line_cache.clear()
        self.refresh()
        self.post_message(self.SearchDone(self, query, len(self.matches), error))

    def clear_search(self) -> None:
        self.run_search("", move=False)

    def action_next_match(self, direction: int) -> None:
        if not self.matches:
            if not self.search_query:
                self.post_message(self.SearchRequested(self))
            return
        self.current_match = (self.current_match + direction) % len(self.matches)
        self._show_current()

    def _show_current(self) -> None:
        y = self.matches[self.current_match]
        height = self.scrollable_content_region.height
        self.auto_scroll = False
        self.scroll_to(y=max(0, y - height // 2), animate=False, immediate=True)
        self._line_cache.clear()
        self.refresh()

    def action_scroll_end(self) -> None:
        self.auto_scroll = True
        super().action_scroll_end()

    def render_line(self, y: int) -> Strip:
        strip = super().render_line(y)
        if self.matches and self._pattern is not None:
            index = int(self.scroll_offset.y) + y
            if index in self._match_set():
                current = self.current_match >= 0 and index == self.matches[self.current_match]
                return self._mark_matches(strip, index, CURRENT_MATCH_STYLE if current else MATCH_STYLE)
        return strip

    def _mark_matches(self, strip: Strip, index: int, style: Style) -> Strip:
        """The strip of log line `index` with the cells of each match styled (the line scrolled by scroll_x)."""
        x0 = int(self.scroll_offset.x)
        spans = [(max(0, a - x0), min(strip.cell_length, b - x0))
                 for a, b in tm.match_spans(self._pattern, self.lines[index].text)]
        spans = [(a, b) for a, b in spans if a < b]
        if not spans:
            return strip
        # (Strip.divide takes the end of every part, the last one included)
        cuts = sorted({c for a, b in spans for c in (a, b) if 0 < c < strip.cell_length}) + [strip.cell_length]
        parts, out, pos = strip.divide(cuts), [], 0
        for part in parts:
            inside = any(a <= pos < b for a, b in spans)
            out.append(part.apply_style(style) if inside else part)
            pos += part.cell_length
        return Strip.join(out)

    def _match_set(self) -> set[int]:
        if getattr(self, "_set_for", None) is not self.matches:
            self._set_for = self.matches
            self._set = set(self.matches)
        return self._set
