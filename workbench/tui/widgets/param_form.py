"""The parameter form of the selected step: one checked field per parameter of its schema.

Enter in a field re-applies from that step (`params N k=v ...`); Up/Down move between fields.
"""
from __future__ import annotations

import re
from typing import Any

from textual.binding import Binding
from textual.containers import Horizontal, VerticalScroll
from textual.message import Message
from textual.validation import ValidationResult, Validator
from textual.widgets import Input, Label, Static

from workbench.tui.widgets.ordered_input import OrderedInput


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

    BINDINGS = [
        Binding("up", "field(-1)", "Previous field", show=False, id="params.previous"),
        Binding("down", "field(1)", "Next field", show=False, id="params.next"),
    ]

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
                inp = OrderedInput(value="" if value is None else format_value(value), id="param-" + _SAFE_ID.sub("_", name),
                            validators=[ParamValidator(spec)], disabled=not editable, compact=True,
                            classes="param-input")
                inp.param_name = name  # type: ignore[attr-defined]
                inp.tooltip = (spec.help or "") + f" ({spec.describe()})"
                widgets.append(Horizontal(Label(name, classes="param-label"), inp, classes="param-row"))
            widgets.append(Static("", id="param-error", classes="form-error"))
        await self.mount_all(widgets)

    def fields(self) -> list[Input]:
        return [inp for inp in self.query(".param-input").results(Input) if not inp.disabled]

    def focus_first(self) -> bool:
        """Focus the first editable field; False when there is none."""
        fields = self.fields()
        if fields:
            fields[0].focus()
        return bool(fields)

    def action_field(self, delta: int) -> None:
        fields = self.fields()
        focused = self.screen.focused
        if not fields:
            return
        i = fields.index(focused) if focused in fields else -1
        fields[max(0, min(len(fields) - 1, i + delta))].focus()

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
