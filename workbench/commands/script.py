"""Scripted command files (*.lhw): one command per line, `#` comments."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from workbench.commands.registry import CommandContext
from workbench.result import Result


@dataclass
class ScriptOutcome:
    ok: bool
    results: list[tuple[int, str, Result]] = field(default_factory=list)
    failed_line: int | None = None

    @property
    def error(self) -> str | None:
        for lineno, line, res in self.results:
            if not res.ok:
                return f"line {lineno}: {line}: {res.error}"
        return None


def without_comment(line: str) -> str:
    """The command of a script or REPL line without its trailing comment: a `#` that starts a word
    (at the line's start or after a blank) outside quotes and brackets, as the README's tour writes
    them (`bench iterations=20   # the wrapper, inserted here`). A `#` inside a word (`out#1.yaml`),
    quotes or brackets (`{attr=#map}`, `tensor<#enc>`) is the command's."""
    from workbench.common.bracket_scan import unquoted

    for i, ch, depth in unquoted(line, "([{<", ")]}>"):
        if ch == "#" and depth == 0 and (i == 0 or line[i - 1].isspace()):
            return line[:i].rstrip()
    return line


def script_lines(text: str) -> list[tuple[int, str]]:
    from workbench.common.files import without_bom

    out = []
    for lineno, raw in enumerate(without_bom(text).splitlines(), start=1):
        line = without_comment(raw.strip())
        if not line:
            continue
        out.append((lineno, line))
    return out


def run_script(path: Path, ctx: CommandContext, keep_going: bool = False,
               on_result: Callable[[int, str, Result], None] | None = None) -> ScriptOutcome:
    from workbench.common.files import read_regular_text

    return run_script_text(read_regular_text(Path(path)), ctx, keep_going, on_result)


def run_script_text(text: str, ctx: CommandContext, keep_going: bool = False,
                    on_result: Callable[[int, str, Result], None] | None = None) -> ScriptOutcome:
    outcome = ScriptOutcome(ok=True)
    for lineno, line in script_lines(text):
        res = ctx.registry.dispatch(line, ctx)
        ctx.session.autosave()
        outcome.results.append((lineno, line, res))
        if on_result:
            on_result(lineno, line, res)
        if not res.ok:
            outcome.ok = False
            if outcome.failed_line is None:
                outcome.failed_line = lineno
            if not keep_going:
                break
        if ctx.quit_requested:
            break
    return outcome
