"""Printing a module whose weights are `dense_resource` blobs without printing the blobs each time.

A model's printed IR is mostly its weights: the `{-# dialect_resources: ... #-}` section at the end of the
text, the hex of every blob the module references (GPT-2 at 4 layers: 28 MB of hex around 140 kB of ops).
Steps almost never change them, yet every printed step result printed, decoded, hashed and split them
again: ~60% of a print. The printer can leave them out (`large_resource_limit=0`: the section is printed
empty), and the section it leaves out depends only on which blobs the module references, in the order
the printer meets them, which is the order of the `dense_resource<NAME>` references in the text before it
(MLIR collects the referenced handles while printing the ops, then prints each handle's blob in that
order), and on the blobs, which a context never changes under a name (a new blob gets a new name).

So `SectionCache` keeps, per context and list of referenced names, the section as the full printer wrote
it, found once by printing the module whole (and checked: the full text is the short one with that
section in place of the empty one); later prints of a module with the same references print only the
ops and append the kept section. The text is byte for byte the full printer's (tests/test_select_speed.py
compares them over a whole `select --apply`).
"""
from __future__ import annotations

import hashlib
import re
import weakref
from collections import OrderedDict

from workbench.common.compact_text import BlobSender, split_blobs

#: `dense_resource<NAME>` in printed IR (NAME a bare identifier or a quoted string)
_REFERENCE = re.compile(rb'dense_resource<("(?:[^"\\]|\\.)*"|[^>]*)>')
#: where the printer starts the resource section (always last in the text)
_SECTION = b"\n{-#\n"
#: sections kept per context (each holds the bytes of its blobs' hex: one model's weights)
SECTIONS_PER_CONTEXT = 2


class _Section:
    """A resource section as the full printer wrote it, and its compact split into text parts around blob
    shas (made on first use; the blobs themselves are the BlobSender's, which has sent them)."""

    __slots__ = ("raw", "parts")

    def __init__(self, raw: bytes) -> None:
        self.raw = raw
        self.parts: list[str] | None = None


_NO_SECTION = _Section(b"")


class PrintedModule:
    """One module's text as the compile worker answers with it: `body` (the ops, printed for it) and the
    resource section (kept, shared by the prints of modules that reference the same blobs), and the
    sha256 of the two together."""

    __slots__ = ("body", "_section", "sha")

    def __init__(self, body: bytes, section: _Section, sha: str) -> None:
        self.body, self._section, self.sha = body, section, sha

    def text(self) -> str:
        return (self.body + self._section.raw).decode() if self._section.raw else self.body.decode()

    def compact(self, sender: BlobSender) -> tuple[list[str], dict[str, str]]:
        """The text's parts as `compact_text.split_blobs` gives them, and the blobs `sender` has not sent
        (marked sent: the caller sends them now). A kept section is split once."""
        parts, blobs = split_blobs(self.body.decode(), sender.sha_of)
        new = sender.unsent(blobs)
        section = self._section
        if not section.raw:
            return parts, new
        if section.parts is None or any(sha not in sender.sent for sha in section.parts[1::2]):
            section.parts, blobs = split_blobs(section.raw.decode(), sender.sha_of)
            new.update(sender.unsent(blobs))
        # the body ends outside any string literal (after the module's closing brace), so the text's split
        # is the body's with the section's first text part joined to its last
        return parts[:-1] + [parts[-1] + section.parts[0]] + section.parts[1:], new


class SectionCache:
    """The resource sections printed in each context, by the names the ops reference (see the module
    docstring). `print(module)` -> PrintedModule."""

    def __init__(self, per_context: int = SECTIONS_PER_CONTEXT) -> None:
        self.per_context = per_context
        self._kept: "weakref.WeakKeyDictionary[object, OrderedDict[tuple, _Section]]" = weakref.WeakKeyDictionary()
        self.full_prints = 0      # prints of the whole module (no section kept for it yet)

    def print(self, module) -> PrintedModule:
        op = module.operation
        short = op.get_asm(binary=True, assume_verified=True, large_resource_limit=0)
        cut = short.rfind(_SECTION)
        if cut < 0:    # no resources: the text is whole
            return PrintedModule(short, _NO_SECTION, hashlib.sha256(short).hexdigest())
        body = short[:cut]
        key = (tuple(_REFERENCE.findall(body)), short[cut:])
        kept_here = self._kept.setdefault(module.context, OrderedDict())
        section = kept_here.get(key)
        if section is None:
            full = op.get_asm(binary=True, assume_verified=True)
            self.full_prints += 1
            if not (full.startswith(body) and full.startswith(_SECTION, cut)):
                # not the layout this relies on: the whole text, nothing kept
                return PrintedModule(full, _NO_SECTION, hashlib.sha256(full).hexdigest())
            section = kept_here[key] = _Section(full[cut:])
            while len(kept_here) > self.per_context:
                kept_here.popitem(last=False)
        else:
            kept_here.move_to_end(key)
        digest = hashlib.sha256(body)
        digest.update(section.raw)
        return PrintedModule(body, section, digest.hexdigest())
