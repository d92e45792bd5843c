"""The text behind the IR view, without any widget: line index, search, outline, regions, folds, diffs.

Everything here is plain data + functions so that the costly parts (indexing 640k lines, a regex
over 30 MB, a side-by-side alignment) can run in a thread worker and be tested on their own.
The IR view renders only the visible lines from a `LineIndex`: its cost is per visible line.
"""
from __future__ import annotations

import bisect
import re
from dataclasses import dataclass, field

import numpy as np


class LineIndex:
    """A text and the offset where each of its lines starts (numpy, built without a Python loop).

    `line(i)` slices the text: no list of 640k line strings is kept.
    """

    def __init__(self, text: str, starts: np.ndarray | None = None) -> None:
        self.text = text
        self.starts = line_starts(text) if starts is None else starts
        self.count = int(len(self.starts))
        if self.count:
            ends = np.empty_like(self.starts)
            ends[:-1] = self.starts[1:] - 1
            ends[-1] = len(text) - (1 if text.endswith("\n") else 0)
            self.max_len = int((ends - self.starts).max())
        else:
            self.max_len = 0

    def lowered(self) -> str:
        """The text in lower case (ASCII texts: same offsets), computed once."""
        low = getattr(self, "_lowered", None)
        if low is None:
            low = self._lowered = self.text.lower()
        return low

    def line(self, i: int) -> str:
        start = int(self.starts[i])
        if i + 1 < self.count:
            return self.text[start: int(self.starts[i + 1]) - 1]
        end = len(self.text)
        if self.text.endswith("\n"):
            end -= 1
        return self.text[start:end]

    def line_of(self, offset: int) -> int:
        """The line holding character `offset`."""
        return int(np.searchsorted(self.starts, offset, side="right")) - 1

    def end_of(self, i: int) -> int:
        """Offset just past line i (its newline excluded)."""
        return int(self.starts[i + 1]) - 1 if i + 1 < self.count else len(self.text.rstrip("\n"))

    @classmethod
    def head(cls, text: str, lines: int) -> "LineIndex":
        """An index of the first `lines` lines only (what a first screen needs), in O(lines)."""
        pos = 0
        for _ in range(lines):
            nxt = text.find("\n", pos)
            if nxt < 0:
                pos = len(text)
                break
            pos = nxt + 1
        return cls(text[:pos])


def line_starts(text: str) -> np.ndarray:
    """Offsets of line starts (splitlines-compatible on '\\n' text: no empty last line)."""
    if not text:
        return np.zeros(0, dtype=np.int64)
    if text.isascii():
        raw = np.frombuffer(text.encode("ascii"), dtype=np.uint8)
    else:  # one 32-bit unit per character keeps character offsets
        raw = np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32)
    newlines = np.flatnonzero(raw == 10)
    starts = np.empty(len(newlines) + 1, dtype=np.int64)
    starts[0] = 0
    starts[1:] = newlines + 1
    if text.endswith("\n"):
        starts = starts[:-1]
    return starts


# -- search ---------------------------------------------------------------------------------------

class SearchError(ValueError):
    pass


@dataclass
class SearchResult:
    pattern: re.Pattern
    offsets: np.ndarray          # start offset of every match
    lines: np.ndarray            # the line of every match

    @property
    def count(self) -> int:
        return int(len(self.offsets))

    def first_at_or_after(self, line: int) -> int:
        """Index of the first match on or after `line` (wrapping to 0)."""
        if not self.count:
            return -1
        k = int(np.searchsorted(self.lines, line, side="left"))
        return k if k < self.count else 0


def ignores_case(query: str) -> bool:
    return query == query.lower()


def compile_pattern(query: str, flags: int | None = None) -> re.Pattern:
    """A regex; smart case: all-lowercase queries ignore case. A bad regex is a SearchError."""
    if flags is None:
        flags = re.MULTILINE | (re.IGNORECASE if ignores_case(query) else 0)
    try:
        return re.compile(query, flags)
    except re.error as e:
        raise SearchError(f"bad regex {query!r}: {e}") from None


def search(index: LineIndex, query: str) -> SearchResult:
    """Every non-empty match of `query` in the text: one regex pass over the whole text (C speed),
    lines found by binary search over the line starts (vectorized).

    Case-insensitive regexes are several times slower in `re`; an all-lowercase query (smart case)
    on ASCII text is searched case-sensitively in the lowercased text instead (same offsets)."""
    pattern = compile_pattern(query)
    haystack, finder = index.text, pattern
    if pattern.flags & re.IGNORECASE and index.text.isascii():
        haystack = index.lowered()
        finder = compile_pattern(query, re.MULTILINE)
    offsets = np.fromiter((m.start() for m in finder.finditer(haystack) if m.end() > m.start()),
                          dtype=np.int64)
    lines = np.searchsorted(index.starts, offsets, side="right") - 1 if len(offsets) else offsets
    return SearchResult(pattern, offsets, lines)


def match_spans(pattern: re.Pattern, line: str) -> list[tuple[int, int]]:
    return [(m.start(), m.end()) for m in pattern.finditer(line) if m.end() > m.start()]


# -- outline ----------------------------------------------------------------------------------------

_SYMBOL_RE = re.compile(
    r'^(?P<indent>[ \t]*)(?:%[^=\n]*=\s*)?"?(?P<op>[a-z_][\w$]*(?:\.[\w$]+)*)"?\s+'
    r'(?:(?:"?(?:private|public|nested)"?|external|internal|weak|linkonce_odr|constant)\s+)*'
    r'@(?P<name>[\w.$-]+|"[^"\n]*")', re.MULTILINE)
_OUTLINE_OPS = re.compile(
    r'^(?P<indent>[ \t]*)(?:%[^=\n]*=\s*)?"?(?P<op>linalg\.\w+|scf\.(?:for|forall|parallel|while)|'
    r'affine\.(?:for|parallel)|gpu\.launch(?:_func)?|async\.execute|omp\.parallel|tensor\.pad|'
    r'transform\.(?:sequence|foreach_match|include))\b"?', re.MULTILINE)


@dataclass(frozen=True)
class Symbol:
    line: int
    depth: int          # indentation level (2 spaces)
    kind: str           # the op name: func.func, memref.global, linalg.matmul, ...
    name: str           # @symbol, or the op for unnamed ops

    @property
    def label(self) -> str:
        return f"{'  ' * self.depth}{self.name}  {self.kind}" if self.name.startswith("@") else \
            f"{'  ' * self.depth}{self.kind}"


def outline(index: LineIndex, ops: bool = True, limit: int = 200_000) -> list[Symbol]:
    """Symbol definitions (functions, globals, named sequences, modules with a name) and, with `ops`,
    the structured ops inside them (linalg ops, loops, launches): one regex pass each."""
    out: list[tuple[int, Symbol]] = []
    text = index.text
    for m in _SYMBOL_RE.finditer(text):
        off = m.start()
        depth = len(m.group("indent").expandtabs(2)) // 2
        out.append((off, Symbol(0, depth, m.group("op"), "@" + m.group("name").strip('"'))))
        if len(out) >= limit:
            break
    if ops:
        for m in _OUTLINE_OPS.finditer(text):
            depth = len(m.group("indent").expandtabs(2)) // 2
            out.append((m.start(), Symbol(0, depth, m.group("op"), m.group("op"))))
            if len(out) >= 2 * limit:
                break
    out.sort(key=lambda t: t[0])
    if not out:
        return []
    lines = np.searchsorted(index.starts, np.array([o for o, _ in out], dtype=np.int64), side="right") - 1
    return [Symbol(int(ln), s.depth, s.kind, s.name) for ln, (_, s) in zip(lines, out)]


# -- regions and folds ----------------------------------------------------------------------------

def _indent_of(line: str) -> str:
    return line[: len(line) - len(line.lstrip(" \t"))]


def opens_region(line: str) -> bool:
    body = line.split("//", 1)[0].rstrip() if "//" in line else line.rstrip()
    return body.endswith("{")


def region_end(index: LineIndex, i: int) -> int | None:
    """The line that closes the region opened on line i (MLIR's printer closes a region with '}'
    at the opening line's indentation), or None when line i opens none."""
    line = index.line(i)
    if not opens_region(line):
        return None
    needle = "\n" + _indent_of(line) + "}"
    pos = index.text.find(needle, index.end_of(i))
    if pos < 0:
        return None
    end = index.line_of(pos + 1)
    return end if end > i + 1 else None


def enclosing_region(index: LineIndex, i: int, max_scan: int = 200_000) -> tuple[int, int] | None:
    """(start, end) of the innermost region that line i is inside of (or opens)."""
    end = region_end(index, i)
    if end is not None:
        return i, end
    indent = len(_indent_of(index.line(i))) if i < index.count else 0
    for j in range(i - 1, max(-1, i - max_scan), -1):
        line = index.line(j)
        if not line.strip():
            continue
        ind = len(_indent_of(line))
        if ind < indent and opens_region(line):
            end = region_end(index, j)
            if end is not None and end >= i:
                return j, end
            indent = ind
    return None


@dataclass
class FoldMap:
    """Folded regions: fold (start, end) hides the lines start+1 .. end-1 (the opening line and the
    closing line stay). Maps display rows to text lines and back in O(log folds)."""

    starts: list[int] = field(default_factory=list)
    ends: list[int] = field(default_factory=list)
    _hidden_before: list[int] = field(default_factory=list)
    _row_starts: list[int] = field(default_factory=list)
    hidden: int = 0

    def _rebuild(self) -> None:
        self._hidden_before = []
        self._row_starts = []
        total = 0
        for s, e in zip(self.starts, self.ends):
            self._hidden_before.append(total)
            self._row_starts.append(s - total)
            total += e - s - 1
        self.hidden = total

    def __len__(self) -> int:
        return len(self.starts)

    def fold_at(self, line: int) -> int:
        """Index of the fold whose opening line is `line`, or -1."""
        k = bisect.bisect_left(self.starts, line)
        return k if k < len(self.starts) and self.starts[k] == line else -1

    def containing(self, line: int) -> int:
        """Index of the fold that hides `line`, or -1."""
        k = bisect.bisect_right(self.starts, line) - 1
        return k if k >= 0 and self.starts[k] < line < self.ends[k] else -1

    def add(self, start: int, end: int) -> None:
        """Fold (start, end); folds that overlap it (regions inside it) are replaced by it."""
        if end - start < 2:
            return
        keep = [(s, e) for s, e in zip(self.starts, self.ends) if e <= start or s >= end]
        keep.append((start, end))
        keep.sort()
        self.starts = [s for s, _ in keep]
        self.ends = [e for _, e in keep]
        self._rebuild()

    def set_all(self, regions: list[tuple[int, int]]) -> None:
        regions = sorted(r for r in regions if r[1] - r[0] >= 2)
        starts, ends = [], []
        for s, e in regions:
            if ends and s < ends[-1]:
                continue  # nested in the previous one
            starts.append(s)
            ends.append(e)
        self.starts, self.ends = starts, ends
        self._rebuild()

    def remove(self, k: int) -> None:
        del self.starts[k], self.ends[k]
        self._rebuild()

    def clear(self) -> None:
        self.starts, self.ends = [], []
        self._rebuild()

    def rows(self, line_count: int) -> int:
        return line_count - self.hidden

    def row_to_line(self, row: int) -> int:
        k = bisect.bisect_right(self._row_starts, row) - 1
        if k < 0:
            return row
        if row == self._row_starts[k]:
            return self.starts[k]
        return row + self._hidden_before[k] + (self.ends[k] - self.starts[k] - 1)

    def line_to_row(self, line: int) -> int:
        k = bisect.bisect_right(self.starts, line) - 1
        if k < 0:
            return line
        if line <= self.starts[k]:
            return line - self._hidden_before[k]
        if line < self.ends[k]:
            return self.starts[k] - self._hidden_before[k]
        return line - self._hidden_before[k] - (self.ends[k] - self.starts[k] - 1)


def function_regions(index: LineIndex, symbols: list[Symbol]) -> list[tuple[int, int]]:
    """The bodies of the outermost symbols that have a region (functions of a module)."""
    regions = []
    named = [s for s in symbols if s.name.startswith("@")]
    if not named:
        return regions
    top = min(s.depth for s in named)
    # a named module holding functions: fold the functions, not the module
    depths = sorted({s.depth for s in named})
    if len(depths) > 1 and sum(1 for s in named if s.depth == top) == 1:
        top = depths[1]
    for s in named:
        if s.depth == top:
            end = region_end(index, s.line)
            if end is not None:
                regions.append((s.line, end))
    return regions


# -- diffs ---------------------------------------------------------------------------------------
# (workbench.common.textdiff: patience diff for big IR, computed in a helper process)
from workbench.common.textdiff import side_by_side, unified_diff  # noqa: E402,F401
