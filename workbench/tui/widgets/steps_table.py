"""The steps timeline: one row per step, sized to the pane (the marker and the time always show).

`history` (reactive) is `Session.history()`; setting it redraws the table. Column widths follow
the widget's width: the step text is what gets shortened.
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from rich.text import Text
from textual.binding import Binding
from textual.reactive import reactive
from textual.widgets import DataTable

KIND_SHORT = {"payload": "payload", "transform": "xform", "schedule": "sched", "pipeline": "pipe",
              "include": "incl"}


def short_spec(spec: str, width: int = 30) -> str:
    """The spec with its file's directory dropped, cut to `width` with an ellipsis."""
    head = re.split(r"[\[{ ]", spec, maxsplit=1)[0]
    if "/" in head:
        spec = spec.replace(head, Path(head).name, 1)
    if width <= 1:
        return spec[:max(0, width)]
    return spec if len(spec) <= width else spec[: width - 1] + "…"


class StepsTable(DataTable):
    BINDINGS = [
        Binding("enter", "select_cursor", "Edit parameters", show=False, id="steps.select"),
    ]

    history: reactive[list[dict]] = reactive(list, init=False)
    selected: reactive[int] = reactive(0, init=False)
    hide_times: bool = False

    def __init__(self, **kw: Any) -> None:
        super().__init__(cursor_type="row", zebra_stripes=False, cell_padding=0, **kw)
        self._width = 0

    def watch_history(self) -> None:
        self._rebuild()

    def watch_selected(self, value: int) -> None:
        if 0 <= value < self.row_count and self.cursor_row != value:
            with self.prevent(DataTable.RowHighlighted):   # the app set it: no echo back
                self.move_cursor(row=value, animate=False)

    def on_key(self, event) -> None:
        """A letter typed here starts a command: it goes to the command input, which takes the focus
        (the table has no letter keys; typing `apply ...` after clicking a step was lost). The keys typed
        before the focus has moved still arrive here, spaces among them: those go along too (typed fast,
        or pasted by a terminal, `apply pipelines/lib/tile.mlir` arrived as `applypipelines/lib/tile.mlir`).
        Each goes in at once, so none overtakes another or is replaced by the focus's selection."""
        if not (event.is_printable and event.character):
            return
        found = self.app.query("#cmd")
        if not found:
            return
        cmd = found.first()
        if event.character == " " and not cmd.awaiting_focus:
            return
        event.stop()
        event.prevent_default()
        cmd.type_forwarded(event.character)

    def on_resize(self) -> None:
        if self.size.width != self._width:
            self._rebuild()

    def _rebuild(self) -> None:
        # a redraw is not the user moving the cursor: no RowHighlighted while rebuilding
        with self.prevent(DataTable.RowHighlighted):
            self._fill()

    def _fill(self) -> None:
        # the vertical scrollbar's columns (2 by default; 1 cut the time column's last letter at 80x24)
        width = max(20, (self.size.width or 40) - self.styles.scrollbar_size_vertical)
        self._width = self.size.width
        show_kind = width >= 40
        index_w, time_w, kind_w = 4, 8, (8 if show_kind else 0)
        spec_w = max(6, width - index_w - time_w - kind_w)
        self.clear(columns=True)
        self.add_column("  #", width=index_w, key="index")
        if show_kind:
            self.add_column("kind", width=kind_w, key="kind")
        self.add_column("step", width=spec_w, key="step")
        self.add_column(Text("time", justify="right"), width=time_w, key="time")
        for h in self.history:
            i = h["index"]
            current = h["current"]
            marker = "▶" if current else ("" if h["active"] else "~")
            style = "" if h["active"] else "dim italic"
            index_cell = Text(f"{marker}{i} ".rjust(index_w), style="bold" if current else style)
            if i == 0:
                spec = short_spec(Path(h["spec"]).name, spec_w - 1)
                secs = ""
            else:
                noop = " ∅" if h["noop"] else ""
                spec = short_spec(h["spec"], spec_w - 1 - len(noop)) + noop
                secs = "--" if self.hide_times else f"{h['seconds'] * 1000:.1f}ms"
            cells = [index_cell]
            if show_kind:
                cells.append(Text(KIND_SHORT.get(h["kind"], h["kind"]), style=style))
            cells += [Text(spec, style=style), Text(secs, style=style, justify="right")]
            self.add_row(*cells, key=str(i))
        if 0 <= self.selected < self.row_count:
            self.move_cursor(row=self.selected, animate=False)
