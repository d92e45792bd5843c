"""Widgets of the workbench TUI: the IR view, the command input, the parameter form."""
from __future__ import annotations

import difflib
import re
from typing import Any

from rich.text import Text
from textual.binding import Binding
from textual.containers import Horizontal, VerticalScroll
from textual.message import Message
from textual.suggester import Suggester
from textual.validation import ValidationResult, Validator
from textual.widgets import Input, Label, Static, TextArea

from workbench.highlight import DIFF_STYLES, THEME, diff_kind, tokens


class IRView(TextArea):
    """Read-only IR with MLIR highlighting computed per visible line (cheap on huge modules).

    mode: "mlir" (plain IR), "diff" (unified diff, +/- lines tinted) or "side" (one half of an
    aligned side-by-side diff; `line_marks` tints changed/padding lines).
    """

    def __init__(self, text: str = "", mode: str = "mlir", **kw: Any) -> None:
        super().__init__(text, read_only=True, show_line_numbers=True, soft_wrap=False,
                         highlight_cursor_line=False, **kw)
        self.mode = mode
        self.line_marks: dict[int, str] = {}

    def show(self, text: str, mode: str = "mlir", marks: dict[int, str] | None = None) -> None:
        self.mode = mode
        self.line_marks = marks or {}
        self.load_text(text)

    def get_line(self, line_index: int) -> Text:
        line = super().get_line(line_index)
        plain = line.plain
        offset = 0
        if self.mode == "diff":
            kind = diff_kind(plain)
            if kind in ("file", "hunk"):
                line.stylize(DIFF_STYLES[kind])
                return line
            if kind:
                line.stylize(DIFF_STYLES[kind])
            offset = 1
            plain = plain[1:]
        for start, end, name in tokens(plain):
            line.stylize(THEME[name], start + offset, end + offset)
        mark = self.line_marks.get(line_index)
        if mark:
            line.stylize(DIFF_STYLES[mark])
        return line


def side_by_side(a: str, b: str) -> tuple[str, str, dict[int, str], dict[int, str]]:
    """Align two texts line by line; return (left, right, left_marks, right_marks)."""
    la, lb = a.splitlines(), b.splitlines()
    left: list[str] = []
    right: list[str] = []
    lm: dict[int, str] = {}
    rm: dict[int, str] = {}
    sm = difflib.SequenceMatcher(None, la, lb, autojunk=False)
    for tag, i1, i2, j1, j2 in sm.get_opcodes():
        if tag == "equal":
            left += la[i1:i2]
            right += lb[j1:j2]
            continue
        n = max(i2 - i1, j2 - j1)
        for k in range(n):
            idx = len(left)
            if i1 + k < i2:
                left.append(la[i1 + k])
                lm[idx] = "del" if tag == "delete" or j1 + k >= j2 else "change"
            else:
                left.append("")
                lm[idx] = "pad"
            if j1 + k < j2:
                right.append(lb[j1 + k])
                rm[idx] = "add" if tag == "insert" or i1 + k >= i2 else "change"
            else:
                right.append("")
                rm[idx] = "pad"
    return "\n".join(left), "\n".join(right), lm, rm


class CompletionSuggester(Suggester):
    """Inline (ghost text) suggestion: the first completion of what is typed."""

    def __init__(self, completer) -> None:
        super().__init__(use_cache=False, case_sensitive=True)
        self.completer = completer

    async def get_suggestion(self, value: str) -> str | None:
        if not value:
            return None
        comps = self.completer.complete(value)
        if not comps:
            return None
        out = comps[0].apply(value)
        return out if out.startswith(value) and out != value else None


class CommandInput(Input):
    """The command line: Tab completes (common prefix, candidates listed), Up/Down walk history."""

    BINDINGS = [
        Binding("tab", "complete", "Complete", show=False),
        Binding("up", "history(-1)", "Previous command", show=False),
        Binding("down", "history(1)", "Next command", show=False),
    ]

    class Candidates(Message):
        def __init__(self, items: list[str]) -> None:
            super().__init__()
            self.items = items

    def __init__(self, completer, **kw: Any) -> None:
        super().__init__(suggester=CompletionSuggester(completer), **kw)
        self.completer = completer
        self.history: list[str] = []
        self._hist_pos = 0

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

    def action_complete(self) -> None:
        before = self.value[: self.cursor_position]
        comps = self.completer.complete(before)
        if not comps:
            self.post_message(self.Candidates([]))
            return
        if len(comps) == 1:
            new = comps[0].apply(before)
            if not new.endswith(("/", "=", "[gen=", " ")) and not new.endswith("]"):
                new += " "
            self.post_message(self.Candidates([]))
        else:
            start = min(c.start for c in comps)
            texts = [before[start:c.start] + c.text for c in comps]
            prefix = _common_prefix(texts)
            new = before[:start] + prefix if len(before[:start] + prefix) > len(before) else before
            self.post_message(self.Candidates([c.display or c.text for c in comps]))
        self.value = new + self.value[self.cursor_position:]
        self.cursor_position = len(new)


def _common_prefix(items: list[str]) -> str:
    import os

    return os.path.commonprefix(items)


class ParamValidator(Validator):
    def __init__(self, spec) -> None:
        super().__init__()
        self.spec = spec

    def validate(self, value: str) -> ValidationResult:
        from workbench.steps.params import ParamError
        from workbench.steps.spec import parse_value

        try:
            self.spec.coerce(parse_value(value) if self.spec.type in ("any",) else value)
        except ParamError as e:
            return self.failure(str(e))
        return self.success()


_SAFE_ID = re.compile(r"[^A-Za-z0-9_-]")


class ParamForm(VerticalScroll):
    """The parameters of the selected step; Enter in a field re-applies via `params N k=v`."""

    class Submitted(Message):
        def __init__(self, step: int, command: str | None, error: str | None) -> None:
            super().__init__()
            self.step = step
            self.command = command
            self.error = error

    def __init__(self, **kw: Any) -> None:
        super().__init__(**kw)
        self.step_index = 0
        self.schema = None
        self.values: dict[str, Any] = {}
        self._key: tuple | None = None

    async def show_step(self, index: int, step, editable: bool) -> None:
        """Rebuild the form for `step` (None: payload / nothing to edit)."""
        schema = None
        why = ""
        if step is not None:
            try:
                schema = step.schema()
            except Exception as e:  # a schedule file that no longer parses, ...
                why = f"no schema: {e}"
        key = (index, repr(step.params) if step is not None else None, step.label() if step is not None else None,
               editable, why)
        if key == self._key:
            return
        self._key = key
        self.step_index = index
        self.schema = schema
        self.values = dict(step.params) if step is not None else {}
        await self.remove_children()
        widgets = []
        if step is None:
            widgets.append(Static("payload: no parameters", classes="form-note"))
        elif schema is None or not schema.params:
            widgets.append(Static(why or f"step {index} ({step.kind}): no parameters", classes="form-note"))
        else:
            from workbench.steps.spec import format_value

            widgets.append(Static(f"step {index}: {step.kind}" + ("" if editable else " (undone: read-only)"),
                                  classes="form-title"))
            for name, spec in schema.params.items():
                value = self.values.get(name, spec.default)
                inp = Input(value="" if value is None else format_value(value), id="param-" + _SAFE_ID.sub("_", name),
                            validators=[ParamValidator(spec)], disabled=not editable, compact=True,
                            classes="param-input")
                inp.param_name = name  # type: ignore[attr-defined]
                inp.tooltip = (spec.help or "") + f" ({spec.describe()})"
                widgets.append(Horizontal(Label(name, classes="param-label"), inp, classes="param-row"))
            widgets.append(Static("", id="param-error", classes="form-error"))
        await self.mount_all(widgets)

    def on_input_changed(self, event: Input.Changed) -> None:
        if not hasattr(event.input, "param_name"):
            return
        event.stop()
        errors = []
        for inp in self.query(".param-input").results(Input):
            res = inp.validate(inp.value)
            if res is not None and not res.is_valid:
                errors += res.failure_descriptions
        try:
            self.query_one("#param-error", Static).update("\n".join(errors))
        except Exception:
            pass

    def build_command(self) -> tuple[str | None, str | None]:
        """(`params N k=v ...`, None) for the changed fields, or (None, error)."""
        from workbench.steps.params import ParamError
        from workbench.steps.spec import format_value, parse_value

        if self.schema is None:
            return None, "this step has no parameters"
        changes = []
        for inp in self.query(".param-input").results(Input):
            name = inp.param_name  # type: ignore[attr-defined]
            spec = self.schema.params[name]
            try:
                new = spec.coerce(parse_value(inp.value) if spec.type == "any" else inp.value)
            except ParamError as e:
                return None, str(e)
            if new != self.values.get(name, spec.default):
                changes.append(f"{name}={format_value(new)}")
        if not changes:
            return None, "no parameter changed"
        return f"params {self.step_index} " + " ".join(changes), None

    def on_input_submitted(self, event: Input.Submitted) -> None:
        if not hasattr(event.input, "param_name"):
            return
        event.stop()
        command, error = self.build_command()
        self.post_message(self.Submitted(self.step_index, command, error))
