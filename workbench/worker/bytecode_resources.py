"""The `dense_resource` blobs of an MLIR bytecode file, read in place (no MLIR needed).

The Python bindings can make a `DenseResourceElementsAttr` but not read its bytes back; the run worker
(workbench/worker/run_worker.py) hands the JIT a model's weights as data (external globals bound to the blob's
bytes) rather than as code, and reads them here, from the bytecode it was sent. The format
(mlir/Bytecode/Encoding.h, BytecodeWriter.cpp of MLIR 22): magic `ML\\xefR`, version, producer string, then
sections (id, length, optional alignment); the resource-offset section lists, per dialect, each resource's
name (a string-section index), byte span in the resource section and kind; a blob there is
`varint alignment, varint size, 0xCB padding to the alignment (from the file's start), the bytes`.
Anything unexpected gives {} (the caller then leaves the weights in the code, as before)."""
from __future__ import annotations

MAGIC = b"ML\xefR"
STRING, DIALECT, RESOURCE, RESOURCE_OFFSET = 0, 1, 5, 6
BLOB = 0   # AsmResourceEntryKind::Blob
PADDING = 0xCB


class _Malformed(Exception):
    pass


class _Reader:
    def __init__(self, data: memoryview, start: int, end: int):
        self.data, self.pos, self.end = data, start, end

    def byte(self) -> int:
        if self.pos >= self.end:
            raise _Malformed("past the end")
        self.pos += 1
        return self.data[self.pos - 1]

    def varint(self) -> int:
        """MLIR's prefix varint: the first byte's trailing zeros + 1 say how many bytes; 0: 8 more bytes."""
        first = self.byte()
        if first & 1:
            return first >> 1
        if first == 0:
            value = int.from_bytes(self.data[self.pos:self.pos + 8], "little")
            self.pos += 8
            return value
        n = (first & -first).bit_length()
        value = int.from_bytes(self.data[self.pos - 1:self.pos - 1 + n], "little") >> n
        self.pos += n - 1
        return value


def _sections(data: memoryview) -> dict[int, tuple[int, int]]:
    if bytes(data[:4]) != MAGIC:
        raise _Malformed("not MLIR bytecode")
    r = _Reader(data, 4, len(data))
    r.varint()                                   # version
    while r.byte() != 0:                         # producer, NUL-terminated
        pass
    sections = {}
    while r.pos < len(data):
        sid = r.byte()
        length = r.varint()
        if sid & 0x80:
            alignment = r.varint()
            while alignment > 1 and r.pos % alignment:
                if r.byte() != PADDING:
                    raise _Malformed("section padding")
        if r.pos + length > len(data):
            raise _Malformed("section past the end")
        sections[sid & 0x7F] = (r.pos, length)
        r.pos += length
    return sections


def _strings(data: memoryview, start: int, length: int) -> list[str]:
    r = _Reader(data, start, start + length)
    sizes = [r.varint() for _ in range(r.varint())][::-1]   # written last string first
    out, pos = [], r.pos
    for size in sizes:
        out.append(bytes(data[pos:pos + size - 1]).decode())   # (each ends with a NUL)
        pos += size
    return out


def _dialect_names(data: memoryview, start: int, length: int, strings: list[str]) -> list[str]:
    r = _Reader(data, start, start + length)
    return [strings[r.varint() >> 1] for _ in range(r.varint())]   # (the low bit: a version follows elsewhere)


def builtin_blobs(data: bytes | memoryview) -> dict[str, memoryview]:
    """name -> the bytes of each blob of the builtin dialect's resources (`dense_resource<name>`), views into
    `data`; {} where `data` is not bytecode this reader understands."""
    view = memoryview(data)
    try:
        sections = _sections(view)
        if RESOURCE_OFFSET not in sections or RESOURCE not in sections:
            return {}
        strings = _strings(view, *sections[STRING])
        dialects = _dialect_names(view, *sections[DIALECT], strings)
        start, length = sections[RESOURCE_OFFSET]
        offsets = _Reader(view, start, start + length)
        resource_pos = sections[RESOURCE][0]
        blobs: dict[str, memoryview] = {}
        for _ in range(offsets.varint()):           # external resource groups: skipped over
            offsets.varint()
            for _ in range(offsets.varint()):
                offsets.varint()
                resource_pos += offsets.varint()
                offsets.byte()
        while offsets.pos < offsets.end:
            dialect = dialects[offsets.varint()]
            for _ in range(offsets.varint()):
                name, span, kind = strings[offsets.varint()], offsets.varint(), offsets.byte()
                if dialect == "builtin" and kind == BLOB:
                    blob = _Reader(view, resource_pos, resource_pos + span)
                    alignment, size = blob.varint(), blob.varint()
                    while alignment > 1 and blob.pos % alignment:
                        if blob.byte() != PADDING:
                            raise _Malformed("blob padding")
                    if blob.pos + size > resource_pos + span:
                        raise _Malformed("blob past its span")
                    blobs[name] = view[blob.pos:blob.pos + size]
                resource_pos += span
        return blobs
    except (_Malformed, IndexError, UnicodeDecodeError):
        return {}
