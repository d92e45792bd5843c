"""Printed IR without its weights twice: long hex string literals (the data of a `dense<"0x...">` or of a
`dense_resource` blob) stored once, by sha256, and the text around them per IR.

A real-size model's printed IR is its weights (ResNet-18: 94 MB, of which 200 kB are ops), and most steps
leave the weights alone. The compile worker sends each printed IR as `parts` (text, blob sha, text, ...,
text) plus the blobs the front end has not had from it yet (`BlobSender`); the front end keeps every blob
once (`BlobStore`) and every IR as a `CompactText`, which gives back the exact text (`expand`) or, for
reading on a screen, the text with each blob shown as a short placeholder (`elided`).
"""
from __future__ import annotations

import hashlib
import threading

#: string literals at least this long are stored as blobs (a 1024-float weight is 8 kB of hex)
BLOB_MIN_CHARS = 4096
#: what `elided` shows in place of a blob (as upstream's --mlir-elide-elementsattrs-if-larger, `__elided__`)
ELIDED = "__elided__ {size}, sha256 {sha}"


def blob_sha(blob: str) -> str:
    return hashlib.sha256(blob.encode()).hexdigest()


def _long_strings(text: str):
    """(start, end) of the contents of each hex string literal ("0x...", how MLIR prints the data of a
    `dense` or `dense_resource` attribute) of at least BLOB_MIN_CHARS characters with no newline or
    backslash in it (str.find, not a regex: 10x faster on 100 MB of hex)."""
    pos = 0
    while True:
        opening = text.find('"', pos)
        if opening < 0:
            return
        closing = text.find('"', opening + 1)
        while closing > 0 and text[closing - 1] == "\\":      # an escaped quote inside a short string
            closing = text.find('"', closing + 1)
        if closing < 0:
            return
        if (closing - opening - 1 >= BLOB_MIN_CHARS and text.startswith("0x", opening + 1)
                and text.find("\n", opening, closing) < 0
                and text.find("\\", opening, closing) < 0):
            yield opening + 1, closing
        pos = closing + 1


def split_blobs(text: str, sha_of=blob_sha) -> tuple[list[str], dict[str, str]]:
    """`text` as parts [text, sha, text, sha, ..., text] (odd length) and its blobs by sha256."""
    parts: list[str] = []
    blobs: dict[str, str] = {}
    start = 0
    for begin, end in _long_strings(text):
        blob = text[begin:end]
        sha = sha_of(blob)
        blobs.setdefault(sha, blob)
        parts += [text[start:begin], sha]
        start = end
    parts.append(text[start:])
    return parts, blobs


def _size(chars: int) -> str:
    for unit, scale in (("MB", 1e6), ("kB", 1e3)):
        if chars >= scale:
            return f"{chars / scale:.1f} {unit}"
    return f"{chars} B"


class BlobStore:
    """Blobs by sha256, shared by every `CompactText` made from one compile worker's answers."""

    def __init__(self) -> None:
        self._blobs: dict[str, str] = {}
        self._lock = threading.Lock()

    def add(self, blobs: dict[str, str]) -> None:
        with self._lock:
            for sha, blob in blobs.items():
                self._blobs.setdefault(sha, blob)

    def __getitem__(self, sha: str) -> str:
        return self._blobs[sha]

    def __contains__(self, sha: str) -> bool:
        return sha in self._blobs

    def __len__(self) -> int:
        return len(self._blobs)

    @property
    def nbytes(self) -> int:
        return sum(len(b) for b in self._blobs.values())


class CompactText:
    """One printed IR as text parts around blob references (see the module docstring)."""

    __slots__ = ("parts", "blobs", "_length")

    def __init__(self, parts: list[str] | tuple[str, ...], blobs: BlobStore) -> None:
        if len(parts) % 2 != 1:
            raise ValueError("compact text parts alternate text and blob sha, text first and last")
        self.parts = tuple(parts)
        self.blobs = blobs
        self._length: int | None = None

    @classmethod
    def from_text(cls, text: str, blobs: BlobStore) -> "CompactText":
        parts, found = split_blobs(text)
        blobs.add(found)
        return cls(parts, blobs)

    def _blob_shas(self):
        return self.parts[1::2]

    def expand(self) -> str:
        """The exact text."""
        if len(self.parts) == 1:
            return self.parts[0]
        return "".join(part if i % 2 == 0 else self.blobs[part] for i, part in enumerate(self.parts))

    def elided(self) -> str:
        """The text with every blob as a short placeholder naming its size and sha256 (for reading)."""
        return "".join(part if i % 2 == 0 else ELIDED.format(size=_size(len(self.blobs[part])), sha=part[:12])
                       for i, part in enumerate(self.parts))

    @property
    def elides(self) -> bool:
        return len(self.parts) > 1

    def __len__(self) -> int:
        if self._length is None:
            self._length = sum(len(p) if i % 2 == 0 else len(self.blobs[p]) for i, p in enumerate(self.parts))
        return self._length

    @property
    def own_nbytes(self) -> int:
        """What this IR costs beyond the shared blobs."""
        return sum(len(p) for p in self.parts[0::2]) + 64 * (len(self.parts) // 2)

    def count(self, sub: str) -> int:
        """Occurrences of `sub` (a short string such as a newline; blobs hold no newline)."""
        return sum(p.count(sub) for p in self.parts[0::2]) + sum(self.blobs[s].count(sub) for s in self._blob_shas())

    def __str__(self) -> str:
        return self.expand()


def as_text(value: "str | CompactText") -> str:
    return value.expand() if isinstance(value, CompactText) else value


def as_elided(value: "str | CompactText") -> str:
    return value.elided() if isinstance(value, CompactText) else value


class BlobSender:
    """The compile worker's side: which blobs the front end already has from this worker process."""

    def __init__(self) -> None:
        self.sent: dict[str, str] = {}
        #: (length, head, tail) of the last blob seen with them -> (its sha256, the blob): a blob printed
        #: again is recognised by one string comparison (memcmp) instead of hashing it again
        self._known: dict[tuple[int, str, str], tuple[str, str]] = {}

    def sha_of(self, blob: str) -> str:
        """A blob's sha256 (one seen last time: recognised by one comparison, not hashed again)."""
        probe = (len(blob), blob[:64], blob[-64:])
        known = self._known.get(probe)
        if known is not None and known[1] == blob:
            return known[0]
        sha = blob_sha(blob)
        self._known[probe] = (sha, blob)
        return sha

    def compact(self, text: str) -> tuple[list[str], dict[str, str]]:
        """`text` as parts and the blobs not sent before (marked sent: the caller sends them now)."""
        parts, found = split_blobs(text, self.sha_of)
        return parts, self.unsent(found)

    def unsent(self, blobs: dict[str, str]) -> dict[str, str]:
        """Those of `blobs` (by sha256) not sent before, marked sent: the caller sends them now."""
        new = {sha: blob for sha, blob in blobs.items() if sha not in self.sent}
        self.sent.update(new)
        return new
