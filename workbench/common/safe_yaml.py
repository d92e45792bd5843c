"""YAML reading that a hostile file cannot turn into a denial of service.

`yaml.safe_load` refuses tags that run code, but not a "billion laughs" alias bomb: nine
anchors of nine aliases each construct a tiny shared graph that any walk over it (parameter
substitution, JSON output) expands to 10^9 nodes. `load` composes the document, counts how
many nodes it has *with aliases expanded* (memoized, so counting is linear in the file), and
refuses it above a limit before anything is constructed. Files are capped in size too.
"""
from __future__ import annotations

import errno
import sys
from pathlib import Path
from typing import Any

import yaml

from workbench.common.files import read_regular_file

# a session or pipeline file is a few KiB (the shipped ones are under 6 KiB; `save` writes ~140 bytes a step).
# PyYAML's pure-Python scanner reads ~0.5 MiB/s, so the size is checked before parsing: a file of 200,000
# step records (3 MB) took 20 s under load to reach the node limit; at 1 MiB it is refused at once, and the
# largest file parsed takes ~2 s.
MAX_BYTES = 1 << 20
MAX_EXPANDED_NODES = 200_000  # nodes after expanding aliases (a long session has a few thousand)
MAX_DEPTH = 64                # nested collections (a session nests 4 deep; the composer recurses per level)


class YAMLTooLarge(yaml.YAMLError):
    pass


class BoundedSafeLoader(yaml.SafeLoader):
    """SafeLoader that refuses documents whose alias-expanded node count exceeds MAX_EXPANDED_NODES
    and collections nested deeper than MAX_DEPTH (`[[[[...` 5000 deep ran PyYAML's recursive
    composer out of Python stack: a RecursionError traceback)."""

    _depth = 0
    _composed = 0   # nodes composed so far (an alias adds none)

    def compose_node(self, parent, index):
        self._depth += 1
        try:
            if self._depth > MAX_DEPTH:
                mark = self.peek_event().start_mark
                raise YAMLTooLarge(f"line {mark.line + 1}: collections nested deeper than {MAX_DEPTH} levels")
            # a file of 200,000 step records (no alias) was refused as an alias bomb, after composing all of
            # it: 70-100 s of PyYAML. Counting as it composes stops at the limit and says what it is.
            if not self.check_event(yaml.AliasEvent):
                self._composed += 1
                if self._composed > MAX_EXPANDED_NODES:
                    mark = self.peek_event().start_mark
                    raise YAMLTooLarge(f"line {mark.line + 1}: more than {MAX_EXPANDED_NODES} nodes (a session "
                                       "or pipeline file has a few thousand)")
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1

    def construct_mapping(self, node, deep=False):
        # a key written twice: PyYAML keeps the last value, so a session with two `Pipeline:` lists (two
        # files pasted together) replayed the second and dropped the first without a word. Keys that
        # a merge (`<<: *defaults`) brings in may be overridden: only the mapping's own keys count.
        if isinstance(node, yaml.MappingNode):
            seen: dict = {}
            for key_node, _ in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge" or not isinstance(key_node, yaml.ScalarNode):
                    continue
                key = self.construct_object(key_node)
                try:
                    first = seen.setdefault(key, key_node)
                except TypeError:
                    continue
                if first is not key_node:
                    mark = key_node.start_mark
                    raise yaml.constructor.ConstructorError(
                        None, None, f"key {key!r} given twice (first on line {first.start_mark.line + 1})", mark)
        return super().construct_mapping(node, deep=deep)

    def construct_scalar(self, node):
        # a double-quoted "\ud800" is a lone UTF-16 surrogate, not a character: a pass name holding one reached
        # MLIR's parser (which takes UTF-8) as a TypeError and a traceback; refused here, at its line and column
        # and a "\0" (a NUL) in a path ended replay with `internal error: ValueError: embedded null byte`: no
        # path, pass or parameter of a session holds one
        value = super().construct_scalar(node)
        if isinstance(value, str):
            bad = next((i for i, c in enumerate(value) if "\ud800" <= c <= "\udfff" or c == "\0"), None)
            if bad is not None:
                what = ("a NUL character, which no path, pass or parameter holds" if value[bad] == "\0" else
                        "a lone UTF-16 surrogate, not a character (UTF-8 cannot hold it)")
                raise yaml.constructor.ConstructorError(
                    None, None, f"{value[bad]!r} at character {bad + 1} of a string is {what}", node.start_mark)
        return value

    def construct_yaml_int(self, node):
        # an integer of more than 4300 decimal digits: Python's int() refuses it (`Exceeds the limit (4300
        # digits) for integer string conversion`), which ended replay with `internal error: ValueError`
        try:
            return super().construct_yaml_int(node)
        except ValueError:
            digits = sum(c.isdigit() for c in str(node.value))
            raise yaml.constructor.ConstructorError(
                None, None, f"an integer of {digits} digits (Python reads at most {sys.get_int_max_str_digits()}; "
                "no count, size or parameter has that many)", node.start_mark) from None

    def get_single_node(self):
        node = super().get_single_node()
        if node is not None:
            expanded = _expanded_size(node)
            if expanded > MAX_EXPANDED_NODES:
                raise YAMLTooLarge(f"document expands to more than {MAX_EXPANDED_NODES} nodes through "
                                   f"aliases (an alias bomb?)")
        return node


BoundedSafeLoader.add_constructor("tag:yaml.org,2002:int", BoundedSafeLoader.construct_yaml_int)


def _expanded_size(root: yaml.Node) -> int:
    sizes: dict[int, int] = {}
    # iterative post-order walk; a cycle (a recursive alias) counts as over the limit
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    active: set[int] = set()
    while stack:
        node, done = stack.pop()
        key = id(node)
        if done:
            active.discard(key)
            total = 1
            for child in _children(node):
                total += sizes[id(child)]
                if total > MAX_EXPANDED_NODES:
                    break
            sizes[key] = min(total, MAX_EXPANDED_NODES + 1)
            continue
        if key in sizes:
            continue
        if key in active:
            return MAX_EXPANDED_NODES + 1
        active.add(key)
        stack.append((node, True))
        for child in _children(node):
            if id(child) not in sizes:
                stack.append((child, False))
    return sizes[id(root)]


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    if isinstance(node, yaml.MappingNode):
        return [n for pair in node.value for n in pair]
    return []


class YAMLCharacterError(yaml.YAMLError):
    """A character YAML does not allow (a control character, NUL): PyYAML's ReaderError says it on two
    lines (`in "<unicode string>", position 25`); this one has the line and column as a problem mark."""

    def __init__(self, problem: str, mark: yaml.Mark):
        super().__init__(problem)
        self.problem, self.problem_mark = problem, mark

    def __str__(self) -> str:
        return f"line {self.problem_mark.line + 1}, column {self.problem_mark.column + 1}: {self.problem}"


def load(text: str) -> Any:
    """`yaml.safe_load` with the size limits above (raises yaml.YAMLError)."""
    if len(text) > MAX_BYTES:   # characters: at most 4 bytes each, and never fewer characters than bytes read
        raise YAMLTooLarge(f"document larger than {MAX_BYTES >> 20} MiB (a session or pipeline file has a few KiB)")
    try:
        return yaml.load(text, Loader=BoundedSafeLoader)
    except yaml.reader.ReaderError as e:
        before = text[:e.position] if isinstance(e.position, int) else ""
        mark = yaml.Mark("<text>", e.position, before.count("\n"), len(before) - (before.rfind("\n") + 1), None, None)
        raise YAMLCharacterError(f"unacceptable character #x{e.character:04x} (control characters are not "
                                 "allowed in YAML)" if isinstance(e.character, int)
                                 else str(e.reason), mark) from None


def read_text(path: Path) -> str:
    """A YAML file's text: OSError (one-line strerror) for what is not a regular file or is over
    MAX_BYTES, yaml.YAMLError for bytes that are not UTF-8."""
    try:
        data = read_regular_file(Path(path), MAX_BYTES)   # OSError for a directory, /dev/zero, a FIFO, > 1 MiB
    except OSError as e:
        if e.errno == errno.EFBIG:
            raise OSError(e.errno, f"{e.strerror} (a session or pipeline file has a few KiB)", e.filename) from None
        raise
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise yaml.YAMLError(f"not UTF-8 text (byte {e.start}: {data[e.start:e.start + 1]!r})")


def load_file(path: Path) -> Any:
    return load(read_text(path))


class _PlainDumper(yaml.SafeDumper):
    """SafeDumper that writes a value every time it occurs: no `&id001` anchors and `*id001` aliases
    where two parameters happen to share one list object (files people read and edit)."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def dump(data: Any, **options: Any) -> str:
    """yaml.safe_dump without anchors and aliases (see _PlainDumper)."""
    return yaml.dump(data, Dumper=_PlainDumper, **options)
