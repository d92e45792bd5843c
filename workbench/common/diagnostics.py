"""MLIR failure messages made readable: one line that says what failed, detail without repeats.

The Python bindings verify while parsing and report both failures as "Unable to parse module
assembly". Which one it was is decided by a probe (`PROBE_SUFFIX`): the text with a bad line
appended is parsed again; a parser that reports the appended line had read the whole text, so
the first failure was the verifier's. Without a probe, the verifier's own phrasing
(`'dialect.op' op ...`, "see current operation" notes) decides. Lines of the detail that repeat the
one-line error are dropped (front ends print the error and then the detail).
"""
from __future__ import annotations

import re

_OP_ERROR = re.compile(r"(?:^|: )'[\w.$-]+' op ")
_PARSE_HEADER = "Unable to parse module assembly"


#: appended to a text that failed to parse: the parser reaches it only if the text itself parsed
PROBE_SUFFIX = "\n@@@\n"
_LOCATION = re.compile(r":(\d+):\d+: ")


def needs_probe(error: str, detail: str | None) -> bool:
    return "does not parse" in error or _PARSE_HEADER in (detail or "")


#: parser errors that MLIR reports only once the enclosing region (or the module) is complete
_DEFERRED_PARSE_ERRORS = ("use of undeclared SSA value", "reference to an undefined block",
                          "undefined symbol alias", "operation location alias was never defined")


def probe_parsed_whole_text(probe_error: str, text: str, error: str = "") -> bool | None:
    """From the error of parsing `text + PROBE_SUFFIX`: True when the parser got past `text`
    (so `text` itself parses, and its failure `error` came from the verifier); None when unknown."""
    m = _LOCATION.search(probe_error or "")
    if not m or any(phrase in error for phrase in _DEFERRED_PARSE_ERRORS):
        return None
    last_line = text.count("\n") + (0 if text.endswith("\n") else 1)
    failed_at = _LOCATION.search(error or "")
    if failed_at and int(failed_at.group(1)) >= last_line:
        # the text failed where it ends (a truncated file: `linalg.ma`, a missing `}`): the appended
        # line changes what the parser reads there, so getting past it proves nothing
        return None
    return int(m.group(1)) > last_line


def is_verifier_failure(error: str, detail: str = "") -> bool:
    """The verifier's phrasing (when no probe could be made)."""
    return bool(_OP_ERROR.search(error)) or "see current operation" in (detail or "")


def _norm(line: str) -> str:
    line = line.strip()
    if line.startswith("error: "):
        line = line[len("error: "):]
    return line.replace('"', "")


def tidy_mlir_failure(error: str, detail: str | None, verifier: bool | None = None,
                      excerpt: str = "") -> tuple[str, str]:
    """(error, detail): "does not parse" becomes "fails to verify" for a verifier failure, MLIR's
    parse header is relabelled, detail lines that only repeat the error are dropped, and the
    `excerpt` (the source line pointed at) comes first.
    `verifier`: what a probe found (None: judge from the phrasing)."""
    detail = detail or ""
    if verifier is None:
        verifier = is_verifier_failure(error, detail)
    if verifier:
        error = error.replace("does not parse", "fails to verify")
    wanted = _norm(error)
    header = []
    lines = []
    for line in detail.splitlines():
        if line.strip().startswith(_PARSE_HEADER):
            if verifier:
                header = ["parsed, but the verifier rejected it:"]
            continue
        norm = _norm(line)
        if norm and norm in wanted:
            continue  # the one-line error says it already
        lines.append(line)
    if not lines and not excerpt:
        header = []
    return error, "\n".join(header + ([excerpt] if excerpt else []) + lines)


#: characters of a source line an excerpt shows (around the error's column)
EXCERPT_WIDTH = 160


def source_excerpt(error: str, text: str) -> str:
    """The line an error points at (`file:LINE:COL: ...`) with a caret under the column, or ''."""
    m = _LOCATION.search(error or "")
    if not m:
        return ""
    line_no = int(m.group(1))
    col = int(m.group(0).split(":")[2])
    lines = text.splitlines()
    if not 1 <= line_no <= len(lines):
        return ""
    src = lines[line_no - 1].expandtabs(4)
    width = len(str(line_no))
    caret = max(0, col - 1)
    if len(src) > EXCERPT_WIDTH:   # a long line (a weight's literal): the part around the column, not its start
        start = max(0, min(caret - EXCERPT_WIDTH // 2, len(src) - EXCERPT_WIDTH))
        head, tail = ("..." if start else ""), ("..." if start + EXCERPT_WIDTH < len(src) else "")
        src = head + src[start:start + EXCERPT_WIDTH] + tail
        caret = caret - start + len(head)
    return f"{line_no:>{width}} | {src}\n{' ' * width} | {' ' * caret}^"


#: what a file's name ends with when its text may be quoted in an error though the user did not name it
#: (a session or pipeline file did): the text of a file of another kind (`/etc/shadow`, `~/.ssh/id_rsa`,
#: `/proc/self/environ`) named by a session from elsewhere must not end up in the error, the log or `--json`
MLIR_SUFFIXES = (".mlir", ".mlirbc")


def may_quote(path: str | None, named_by: str | None, suffixes: tuple[str, ...] = MLIR_SUFFIXES) -> bool:
    """Whether an error about `path` may quote its text (an excerpt, the parser's message, which quotes
    tokens): the user named the file (`named_by` None), or its name says it is of the kind expected."""
    return named_by is None or not path or str(path).lower().endswith(suffixes)


def withheld(error: str, path: str, named_by: str, kind: str = "MLIR") -> str:
    """`error` (`...PATH:LINE:COL: what the parser said`) without what it quotes of `path`: where the parse
    stopped, and why the rest is not shown."""
    m = re.search(re.escape(str(path)) + r"(:\d+:\d+)?", error)
    head = error[:m.end()] if m else str(path)
    return (f"{head}: not {kind} text (named by {named_by}, and its name does not end in "
            f"{MLIR_SUFFIXES[0]}: neither its text nor the parser's message about it is shown)")
