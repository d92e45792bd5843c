"""The help screen (F1, ?): every key binding, generated from the bindings themselves, with the
keys the user's keymap gives them and the id to remap them by."""
from __future__ import annotations

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static


def binding_keys(app, binding: Binding) -> str:
    """The keys that trigger `binding` now (keymap applied), as the footer shows them."""
    keys = app._keymap.get(binding.id, binding.key) if binding.id else binding.key
    shown = []
    for key in keys.split(","):
        key = key.strip()
        shown.append(app.get_key_display(Binding(key, "")) if key else key)
    return " ".join(dict.fromkeys(shown))


def bindings_table(app, sections: list[tuple[str, list]]) -> Table:
    table = Table(show_header=True, header_style="bold cyan", box=None, padding=(0, 2), expand=True)
    table.add_column("keys", no_wrap=True)
    table.add_column("does")
    table.add_column("id (keymap)", style="dim", no_wrap=True)
    for title, bindings in sections:
        table.add_row(Text(title, style="bold underline"), "", "")
        for b in bindings:
            if isinstance(b, tuple):
                b = Binding(*b)
            table.add_row(binding_keys(app, b), b.description or b.action, b.id or "")
        table.add_row("", "", "")
    return table


class HelpScreen(ModalScreen[None]):
    BINDINGS = [Binding("escape,f1,question_mark,q", "close", "Close help", id="help.close")]

    def __init__(self, sections: list[tuple[str, list]], footer: str = "") -> None:
        super().__init__()
        self.sections = sections
        self.footer = footer

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help"):
            yield Static(Text("Keys (Esc closes)", style="bold"))
            yield Static(bindings_table(self.app, self.sections), id="help-table")
            if self.footer:
                yield Static(Text(self.footer, style="dim"), id="help-footer")

    def as_text(self, width: int = 160) -> str:
        """The table as plain text (what the screen shows)."""
        import io

        from rich.console import Console

        console = Console(file=io.StringIO(), width=width, color_system=None)
        console.print(bindings_table(self.app, self.sections))
        return console.file.getvalue()

    def on_mount(self) -> None:
        self.query_one("#help").focus()

    def action_close(self) -> None:
        self.dismiss(None)
