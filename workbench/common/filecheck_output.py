"""`run --filecheck`: what a program printed, matched against the payload file's `// CHECK:` lines as
LLVM's FileCheck matches them (upstream integration tests: `mlir-opt ... | mlir-runner ... | FileCheck %s`).

The matching is the `filecheck` package's (a Python port of LLVM FileCheck: CHECK, -NEXT, -SAME, -NOT,
-LABEL, -EMPTY, -DAG, -COUNT, `{{regex}}`, `[[VAR:regex]]` / `[[VAR]]`, `{LITERAL}`); this module runs
its matcher directive by directive to say which output line each CHECK line matched, or where the first
one failed (the check file's line, the expected text, the output line nearest to it). It drives the
package's Matcher step by step (its per-directive methods and _pre_check / _post_check, the loop of
Matcher.run): hence the pin below 1.1 in pyproject.toml."""
from __future__ import annotations

import io
import re
from dataclasses import dataclass, field
from typing import Any

DEFAULT_PREFIXES = ("CHECK",)
_GREEDY_NEXT, _LAZY_NEXT = r"\n?[^\n]*", r"\n?[^\n]*?"
#: why a directive did not match, by its kind (CHECK, CHECK-DAG, CHECK-COUNT: not found at all)
_NOT_MATCHED = {"NEXT": "not on the line after the previous match", "SAME": "not on the same line as the previous match",
                "EMPTY": "the next output line is not empty", "LABEL": "label not found in the output"}


class FileCheckUnavailable(RuntimeError):
    """The `filecheck` package is not installed (one line for the user)."""


@dataclass
class CheckedLine:
    line: int                   # the check file's line
    directive: str              # CHECK-NEXT, ...
    expected: str               # the pattern text as written
    output_line: int | None     # the output line it matched (None: CHECK-NOT / CHECK-DAG)

    def to_json(self) -> dict:
        return {"line": self.line, "directive": self.directive, "expected": self.expected,
                "output_line": self.output_line}


@dataclass
class FileCheckReport:
    passed: bool
    total: int
    prefixes: list[str]
    check_file: str
    lines: list[CheckedLine] = field(default_factory=list)
    first_failure: dict | None = None

    @property
    def matched(self) -> int:
        return len(self.lines)

    def to_json(self) -> dict:
        return {"passed": self.passed, "matched": self.matched, "total": self.total, "prefixes": self.prefixes,
                "check_file": self.check_file, "lines": [c.to_json() for c in self.lines],
                "first_failure": self.first_failure}

    def summary(self) -> str:
        """One line: `filecheck passed (12/12 CHECK lines)` or where it failed."""
        what = f"{self.matched}/{self.total} {'/'.join(self.prefixes)} lines"
        if self.passed:
            return f"filecheck passed ({what})"
        f = self.first_failure or {}
        if not self.total and f.get("line") == 0:   # nothing to match: "matmul.mlir: CHECK: '' no CHECK lines in the file"
            return f"filecheck FAILED: {f.get('location')} has no {'/'.join(self.prefixes)} lines to match"
        near = f.get("nearest_output")
        return (f"filecheck FAILED ({what} matched): {f.get('location')}: {f.get('directive')}: "
                f"{f.get('expected')!r} {f.get('message', 'not matched')}"
                + (f"; nearest output line {f['nearest_output_line']}: {near.strip()!r}" if near is not None else ""))

    def body(self, output: str) -> str:
        """Per CHECK line: the output line it matched, then the first that did not."""
        out_lines = output.splitlines()
        rows = [f"filecheck of the printed output against {self.check_file} ({'/'.join(self.prefixes)}):"]
        for c in self.lines:
            where = (f"output line {c.output_line}: {_clip(out_lines[c.output_line - 1])}"
                     if c.output_line is not None and 0 < c.output_line <= len(out_lines) else
                     "absent, as required" if c.directive.endswith("-NOT") else "matched")
            rows.append(f"  ok    :{c.line} {c.directive}: {_clip(c.expected)}  <- {where}")
        if self.first_failure:
            f = self.first_failure
            rows.append(f"  FAIL  :{f['line']} {f['directive']}: {_clip(f['expected'])}  ({f['message']})")
            if f.get("nearest_output") is not None:
                rows.append(f"        nearest output line {f['nearest_output_line']}: {_clip(f['nearest_output'])}")
        return "\n".join(rows)


def _clip(text: str, width: int = 100) -> str:
    text = text.rstrip()
    return text if len(text) <= width else text[:width - 3] + "..."


def _line_of(content: str, pos: int) -> int:
    """1-based line of character `pos` of `content`."""
    return content.count("\n", 0, max(0, min(pos, len(content)))) + 1


def filecheck_output(check_text: str, output: str, prefixes: list[str] | tuple[str, ...] = DEFAULT_PREFIXES,
                     check_file: str = "<checks>", match_full_lines: bool = False, strict_whitespace: bool = False,
                     variables: dict[str, str] | None = None) -> FileCheckReport:
    """Match `output` against the CHECK lines (of `prefixes`) in `check_text`, as `FileCheck check_file
    --check-prefixes=... [--match-full-lines] [--strict-whitespace] [-DVAR=VALUE]` reads its standard input."""
    try:
        from filecheck.compiler import compile_uops
        from filecheck.error import CheckError, ErrorOnMatch, ParseError
        from filecheck.finput import FInput
        from filecheck.matcher import Matcher
        from filecheck.ops import CheckOp
        from filecheck.options import DumpInputKind, Options
        from filecheck.parser import Parser, pattern_for_opts
        from filecheck.preprocess import Preprocessor
    except ImportError as e:
        raise FileCheckUnavailable(f"run --filecheck needs the `filecheck` package (pip install filecheck): {e}")

    prefixes = list(prefixes) or list(DEFAULT_PREFIXES)
    opts = Options(match_filename=check_file, check_prefixes=prefixes, dump_input=DumpInputKind.FAIL,
                   match_full_lines=match_full_lines, strict_whitespace=strict_whitespace,
                   variables=dict(variables or {}))
    report = FileCheckReport(False, 0, prefixes, check_file)
    try:
        ops = tuple(Parser(opts, io.StringIO(check_text), *pattern_for_opts(opts)))
    except ParseError as e:
        report.first_failure = {"location": f"{check_file}:{e.line_no}", "line": e.line_no, "directive": "?",
                                "expected": e.offending_line.strip(), "message": e.message}
        return report
    report.total = len(ops)
    if not ops:
        report.first_failure = {"location": check_file, "line": 0, "directive": "/".join(prefixes),
                                "expected": "", "message": f"no {'/'.join(prefixes)} lines in the file"}
        return report
    content = FInput.canonicalize_line_ends(output)
    finput = FInput("<output>", content)
    matcher = Matcher(opts, finput, iter(ops))    # type: ignore[arg-type]
    matcher.stderr = io.StringIO()                # its messages are ours to word

    def match_next_line(op: CheckOp) -> None:
        """CHECK-NEXT at the leftmost match on the next line, as LLVM FileCheck: filecheck 1.0.6 compiles it
        to a greedy `\\n?[^\\n]*PATTERN`, which matched the last occurrence on the line (`CHECK-NEXT: [`
        then `CHECK-SAME: [36, ...` failed on `[[36, ...`)."""
        pattern, captures = compile_uops(op, matcher.ctx.live_variables, opts)
        if pattern.pattern.startswith(_GREEDY_NEXT):
            pattern = re.compile(_LAZY_NEXT + pattern.pattern[len(_GREEDY_NEXT):], pattern.flags)
        match = finput.match(pattern)
        if match is None:
            raise CheckError(f'Couldn\'t match "{op.arg}".', op)
        finput.move_to(match.end(0))
        matcher.capture_results(match, captures, op)

    steps = {"DAG": matcher.check_dag, "COUNT": matcher.check_count, "NOT": matcher.enqueue_not,
             "EMPTY": matcher.check_empty, "NEXT": match_next_line, "SAME": matcher.match_eventually,
             "LABEL": matcher.check_label, "CHECK": matcher.match_eventually}
    pending_not: list[CheckOp] = []
    current: CheckOp | None = None
    try:
        Preprocessor(opts, finput, ops).run()     # CHECK-LABEL lines split the output first
        for current in ops:
            matcher._pre_check(current)
            steps[current.name](current)
            matcher._post_check(current)          # verifies the CHECK-NOTs queued before this line
            if current.name == "NOT":
                pending_not.append(current)
                continue
            for op in pending_not:
                report.lines.append(CheckedLine(op.source_line, _directive(op), op.arg, None))
            pending_not = []
            end = finput.range.start
            at = None if current.name == "DAG" else _line_of(content, end - 1 if end and content[end - 1:end] == "\n"
                                                                 and current.name != "EMPTY" else end)
            report.lines.append(CheckedLine(current.source_line, _directive(current), current.arg, at))
        current = None
        finput.range.start = max(len(content) - 1, 0)
        matcher._post_check(CheckOp("SYNTH", "NOP", "", -1, []))   # CHECK-NOTs after the last positive line
        for op in pending_not:
            report.lines.append(CheckedLine(op.source_line, _directive(op), op.arg, None))
        report.passed = True
    except ErrorOnMatch as e:                     # a CHECK-NOT's text is in the output
        report.first_failure = _failure(check_file, e.op, "excluded text found in the output",
                                        content, e.match.start(0))
    except CheckError as e:
        op = e.op if e.op is not None else current
        message = _NOT_MATCHED.get(op.name, "not found in the output")
        try:
            prefix_match = matcher.find_prefix_match_for(op)
        except Exception:       # a best-effort hint only (variables of the failed line may be undefined)
            prefix_match = None
        near = prefix_match.start(0) if prefix_match is not None else finput.range.start
        report.first_failure = _failure(check_file, op, message, content, near)
    return report


def _directive(op: Any) -> str:
    """The directive as the file writes it: `CHECK-COUNT-4` (the filecheck package names it `CHECK-COUNT4`)."""
    name = op.check_name
    count = getattr(op, "count", None)
    if op.name == "COUNT" and count is not None:
        name = name.replace(f"-COUNT{count}", f"-COUNT-{count}", 1)
    return name


def _failure(check_file: str, op: Any, message: str, content: str, pos: int) -> dict:
    lines = content.splitlines()
    line = _line_of(content, pos)
    if content[pos:pos + 1] == "\n" and line < len(lines):
        line += 1                 # at the end of a line: the next one is where the search went on
    nearest = lines[line - 1] if 0 < line <= len(lines) else None
    return {"location": f"{check_file}:{op.source_line}", "line": op.source_line, "directive": _directive(op),
            "expected": op.arg, "message": message, "nearest_output_line": line if nearest is not None else None,
            "nearest_output": nearest}
