"""Go to symbol: the outline of the IR shown (functions, globals, and the structured ops in them),
filtered as you type; Enter jumps to the line, Escape goes back."""
from __future__ import annotations

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Label, OptionList
from textual.widgets.option_list import Option

from workbench.tui.text_model import Symbol

SHOWN = 500


class OutlineScreen(ModalScreen[int | None]):
    BINDINGS = [
        Binding("escape", "dismiss_none", "Close", id="outline.close"),
        Binding("down", "move(1)", "Next", show=False, id="outline.next"),
        Binding("up", "move(-1)", "Previous", show=False, id="outline.previous"),
    ]

    def __init__(self, symbols: list[Symbol], title: str = "go to symbol") -> None:
        super().__init__()
        self.symbols = symbols
        self.title_text = title

    def compose(self) -> ComposeResult:
        with Vertical(id="outline"):
            yield Label(f"{self.title_text} ({len(self.symbols)}): type to filter, Enter jumps", id="outline-title")
            yield Input(placeholder="filter: name or op (e.g. @matmul, linalg, forall)", id="outline-filter")
            yield OptionList(id="outline-list")

    def on_mount(self) -> None:
        self._fill("")
        self.query_one("#outline-filter", Input).focus()

    def _fill(self, query: str) -> None:
        words = query.lower().split()
        options = []
        for s in self.symbols:
            hay = f"{s.name} {s.kind}".lower()
            if all(w in hay for w in words):
                options.append(Option(f"{s.label}   :{s.line + 1}", id=str(s.line)))
                if len(options) >= SHOWN:
                    break
        lst = self.query_one("#outline-list", OptionList)
        lst.clear_options()
        lst.add_options(options)
        if options:
            lst.highlighted = 0

    @on(Input.Changed, "#outline-filter")
    def _filter(self, event: Input.Changed) -> None:
        self._fill(event.value)

    @on(Input.Submitted, "#outline-filter")
    def _submit(self) -> None:
        lst = self.query_one("#outline-list", OptionList)
        if lst.highlighted is not None and lst.option_count:
            self.dismiss(int(lst.get_option_at_index(lst.highlighted).id))

    @on(OptionList.OptionSelected)
    def _picked(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(int(event.option.id))

    def action_move(self, delta: int) -> None:
        lst = self.query_one("#outline-list", OptionList)
        if lst.option_count:
            cur = lst.highlighted if lst.highlighted is not None else -1
            lst.highlighted = max(0, min(lst.option_count - 1, cur + delta))

    def action_dismiss_none(self) -> None:
        self.dismiss(None)
