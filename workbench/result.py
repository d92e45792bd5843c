"""The one result type every command returns and every front end renders.

A `Result` carries a one-line summary, an optional error (always one line) with
optional detail (diagnostics, stderr tails), a `kind` telling front ends how to
present it, and `data`: the JSON form. `to_json()` is what `--json` writes;
`rich()` is what the REPL, the TUI log and scripts print.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any


#: characters of one line of an error shown on a terminal (a step with a 100 kB option string, echoed by
#: MLIR's own message, made one line of 200 kB); the result's JSON keeps the whole text
ERROR_LINE_LIMIT = 1000


#: control characters (C0 but tab and newline, DEL, C1) that a message may echo from a hostile script or file:
#: written raw, `\x1b[2J` would clear the user's terminal and `\x1b]52;...` set its clipboard. And Unicode's
#: bidirectional overrides and isolates: a session's `pass: "\u202ecse"` printed as it is turned the rest of the
#: terminal line around (the "Trojan Source" trick: what is shown is not the text)
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def json_text(document: Any, indent: int | None = 2) -> str:
    """`document` as strict JSON: a float that is inf or NaN (a check's error against a reference that holds
    -inf, an output's statistics) is written as the string "inf", "-inf" or "nan" (`float()` reads them back);
    Python's json wrote `Infinity` / `NaN`, which no other JSON reader (jq, JSON.parse) accepts. Objects that
    are not JSON types are written as their str(), as keys too: a session file's parameter dict may have any
    YAML key (`.nan: 1`, `2001-12-14: 1`), which json.dumps refused with a traceback."""
    import json
    import math

    def key(k: Any) -> Any:
        if isinstance(k, float) and not math.isfinite(k):
            return str(k)
        return k if k is None or isinstance(k, (str, int, float, bool)) else str(k)

    def finite(value: Any) -> Any:
        if isinstance(value, float) and not math.isfinite(value):
            return str(value)
        if isinstance(value, dict):
            return {key(k): finite(v) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return [finite(v) for v in value]
        return value

    return json.dumps(finite(document), indent=indent, default=str, allow_nan=False)


def printable(text: str) -> str:
    """`text` with its control characters written as escapes (`\\x1b`, `\\u202e`), tabs and newlines kept."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}" if ord(m.group()) < 0x100 else f"\\u{ord(m.group()):04x}",
                        text)


def one_line(text: str) -> str:
    """`text` as one line of a terminal: printable(), and its newlines, carriage returns and tabs escaped too (a
    step's label: `pass: "cse\\ncanonicalize"` split the step's progress and error lines in two, and the second
    half of the error was taken for its detail)."""
    return printable(text).replace("\n", "\\n").replace("\r", "\\r").replace("\t", "\\t")


def clip_lines(text: str, limit: int = ERROR_LINE_LIMIT) -> str:
    """Each line of `text` cut to `limit` characters, saying how many more there were, and its control
    characters escaped: what a terminal may be shown of a message."""
    text = printable(text)
    return "\n".join(line if len(line) <= limit else f"{line[:limit]}... (+{len(line) - limit} characters; "
                     f"--json has the whole message)" for line in text.split("\n"))


@dataclass
class Result:
    ok: bool = True
    summary: str = ""
    kind: str = "text"  # text | ir | diff | table | run | help | inspect | asm
    data: dict[str, Any] = field(default_factory=dict)
    error: str | None = None
    detail: str | None = None
    body: str | None = None  # IR text, diff text, help text ...

    @classmethod
    def failure(cls, error: str, detail: str | None = None, **data: Any) -> "Result":
        first, _, rest = error.strip().partition("\n")
        if rest and not detail:
            detail = rest
        return cls(ok=False, summary=first, error=first, detail=detail, data=dict(data))

    def to_json(self) -> dict[str, Any]:
        # the same keys whether the command worked or not (`error` and `detail` null when there is nothing to say)
        out: dict[str, Any] = {"ok": self.ok, "summary": self.summary, "kind": self.kind, "error": self.error,
                               "detail": self.detail or None}
        out.update(self.data)
        return out

    def extra_warnings(self) -> list[str]:
        """`data["warnings"]` that the summary does not already say."""
        return [w for w in self.data.get("warnings") or [] if w not in (self.summary or "")]

    # ---- rendering -------------------------------------------------------
    def rich(self):
        """A rich renderable (imported lazily so headless paths stay light)."""
        from rich.console import Group
        from rich.syntax import Syntax
        from rich.table import Table
        from rich.text import Text

        parts = []
        if not self.ok:
            parts.append(Text(f"error: {clip_lines(self.error)}", style="bold red"))
            if self.detail:
                parts.append(Text(clip_lines(self.detail.rstrip()), style="red"))
            return Group(*parts)
        if self.summary:
            parts.append(Text(clip_lines(self.summary), style="bold green" if self.kind != "text" else ""))
        for warning in self.extra_warnings():
            parts.append(Text("warning: " + clip_lines(warning), style="bold yellow"))
        table = self.data.get("table")
        if self.kind == "table" and table:
            t = Table(*table["columns"], show_lines=False, header_style="bold cyan")
            for row in table["rows"]:
                t.add_row(*[Text(str(c)) for c in row])   # cells are data: `[gen=f]` is no markup tag
            parts.append(t)
        if self.body:
            # long lines wrap: cropped at the console's width, an op lost its types (`-> tensor<256x...`)
            if self.kind == "ir":
                from workbench.highlight import mlir_lexer

                parts.append(Syntax(self.body, mlir_lexer(), line_numbers=False, word_wrap=True))
            elif self.kind == "diff":
                parts.append(Syntax(self.body, "diff", word_wrap=True))
            elif self.kind == "asm" and self.data.get("format") == "gas":
                parts.append(Syntax(self.body, "gas", word_wrap=True))
            else:
                parts.append(Text(self.body))
        return Group(*parts)

    def plain(self) -> str:
        """Plain text (for logs, non-TTY output)."""
        lines = []
        if not self.ok:
            lines.append(f"error: {clip_lines(self.error)}")
            if self.detail:
                lines.append(clip_lines(self.detail.rstrip()))
            return "\n".join(lines)
        if self.summary:
            lines.append(clip_lines(self.summary))
        lines += ["warning: " + clip_lines(w) for w in self.extra_warnings()]
        table = self.data.get("table")
        if self.kind == "table" and table:
            cols = table["columns"]
            rows = [[str(c) for c in r] for r in table["rows"]]
            widths = [max([len(c)] + [len(r[i]) for r in rows]) for i, c in enumerate(cols)]
            lines.append("  ".join(c.ljust(w) for c, w in zip(cols, widths)).rstrip())
            for r in rows:
                lines.append("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip())
        if self.body:
            lines.append(self.body.rstrip("\n"))
        return "\n".join(lines)

