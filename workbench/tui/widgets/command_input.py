"""The command line: Tab inserts completions, Up/Down walk the history.

Tab always changes the text (no grey suggestion that a later key throws away): one candidate is
inserted; several are listed and their common prefix inserted; Tab again inserts the candidates
one after the other.
"""
from __future__ import annotations

import os
from typing import Any

from textual.binding import Binding
from textual.geometry import Size
from textual.message import Message
from textual.widget import Widget
from workbench.tui.widgets.ordered_input import OrderedInput


class CommandInput(OrderedInput):
    BINDINGS = [
        Binding("tab", "complete", "Complete", show=False, id="cmd.complete"),
        Binding("up", "history(-1)", "Previous command", show=False, id="cmd.history_previous"),
        Binding("down", "history(1)", "Next command", show=False, id="cmd.history_next"),
    ]

    class Candidates(Message):
        """The completions to list (empty: hide the list); `current` is the one inserted, if any."""

        def __init__(self, items: list[str], current: int = -1) -> None:
            super().__init__()
            self.items = items
            self.current = current

    def __init__(self, completer, **kw: Any) -> None:
        super().__init__(**kw)
        self.completer = completer
        self.history: list[str] = []
        self._hist_pos = 0
        # Tab after Tab with several candidates: (text before them, their texts, next one)
        self._cycle: tuple[str, list[str], list[str], int] | None = None
        self.awaiting_focus = False   # typed into from another widget; its focus is on the way

    def type_forwarded(self, ch: str) -> None:
        """A character typed in another widget starts or continues a command here: it goes at the
        end at once (in the order typed) and the focus follows; that focus keeps the text unselected,
        or the next key would replace what was forwarded."""
        self.cursor_position = len(self.value)
        self.insert_text_at_cursor(ch)
        if not self.has_focus:
            self.awaiting_focus = True
            self.focus()

    @property
    def select_on_focus(self) -> bool:
        """Input's select-all on focus, except for the focus that follows forwarded typing (read once,
        by Input's focus handler, which runs after this class's handlers: a flag it reads is the one
        ordering that holds)."""
        if getattr(self, "awaiting_focus", False):
            self.awaiting_focus = False
            return False
        return self._select_on_focus

    @select_on_focus.setter
    def select_on_focus(self, value: bool) -> None:
        self._select_on_focus = value

    def remember(self, line: str) -> None:
        if line and (not self.history or self.history[-1] != line):
            self.history.append(line)
        self._hist_pos = len(self.history)

    def action_history(self, delta: int) -> None:
        if not self.history:
            return
        self._hist_pos = max(0, min(len(self.history), self._hist_pos + delta))
        self.value = self.history[self._hist_pos] if self._hist_pos < len(self.history) else ""
        self.cursor_position = len(self.value)

    def _set_before_cursor(self, new: str) -> None:
        after = self.value[self.cursor_position:]
        self.value = new + after
        self.cursor_position = len(new)

    def action_complete(self) -> None:
        before = self.value[: self.cursor_position]
        cycle = self._cycle
        if cycle is not None and before in cycle[2]:
            # Tab again: insert the next candidate
            stem, labels, full, nxt = cycle
            self._set_before_cursor(full[nxt])
            following = nxt + 1 if nxt + 1 < len(full) else 1
            self._cycle = (stem, labels, full, following)
            self.post_message(self.Candidates(labels, nxt - 1))
            return
        self._cycle = None
        comps = self.completer.complete(before)
        if not comps:
            self.post_message(self.Candidates([]))
            self.app.bell()
            return
        if len(comps) == 1:
            new = comps[0].apply(before)
            if not new.endswith(("/", "=", "[gen=", " ")) and not new.endswith("]"):
                new += " "
            self._set_before_cursor(new)
            self.post_message(self.Candidates([]))
            return
        start = min(c.start for c in comps)
        texts = [before[start:c.start] + c.text for c in comps]
        full = [before[:start] + t for t in texts]
        prefix = before[:start] + os.path.commonprefix(texts)
        labels = [c.display or c.text for c in comps]
        if len(prefix) > len(before):
            self._set_before_cursor(prefix)
            self._cycle = (prefix, labels, [prefix] + full, 1)
            self.post_message(self.Candidates(labels))
        else:
            # nothing in common to add: list them; Tab again inserts the first, then the next ...
            self._cycle = (before, labels, [before] + full, 1)
            self.post_message(self.Candidates(labels))

    def _watch_value(self, value: str) -> None:
        """Textual's Input sets its virtual size as a layout change on every keystroke, which
        re-lays out and repaints the whole screen (the IR view, the steps...); the command line's
        size never changes, so the new size is set quietly and only the input is repainted."""
        if self.suggester is not None or self.styles.auto_dimensions or not hasattr(self, "_initial_value"):
            super()._watch_value(value)
            return
        self.set_reactive(Widget.virtual_size, Size(self.content_width, 1))
        self._suggestion = ""
        self.refresh()
        validation_result = self.validate(value) if "changed" in self.validate_on else None
        self.post_message(self.Changed(self, value, validation_result))
        if self._initial_value:
            self.cursor_position = len(self.value)
            self._initial_value = False

    def on_key(self, event) -> None:
        if event.key != "tab":
            self._cycle = None
