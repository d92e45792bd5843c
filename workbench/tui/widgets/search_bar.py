"""The search bar under the IR view or the log: a regex, its match count; Enter searches,
Escape closes (the target view keeps its matches for n/N)."""
from __future__ import annotations

from typing import Any

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.message import Message
from textual.reactive import reactive
from textual.widgets import Input, Label

from workbench.tui.widgets.ordered_input import OrderedInput


class SearchBar(Horizontal):
    BINDINGS = [Binding("escape", "close", "Close search", id="search.close")]

    #: "3/57", "no match", "bad regex ...": shown right of the field
    result_text: reactive[str] = reactive("")

    class Search(Message):
        def __init__(self, query: str) -> None:
            super().__init__()
            self.query = query

    class Closed(Message):
        pass

    def __init__(self, **kw: Any) -> None:
        super().__init__(**kw)
        self.target = None      # the view searched (IRView or LogView)

    def compose(self) -> ComposeResult:
        yield Label("/", id="search-prompt")
        yield OrderedInput(placeholder="regex (lowercase: any case); Enter searches, n/N next/previous, Esc closes",
                    id="search-input", compact=True)
        yield Label("", id="search-result")

    def watch_result_text(self, text: str) -> None:
        self.query_one("#search-result", Label).update(text)

    @property
    def input(self) -> Input:
        return self.query_one("#search-input", Input)

    def open(self, target, query: str = "") -> None:
        self.target = target
        self.display = True
        self.input.value = query or getattr(target, "search_query", "")
        self.input.focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.post_message(self.Search(event.value))

    def action_close(self) -> None:
        self.display = False
        self.post_message(self.Closed())
