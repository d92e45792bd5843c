"""linalg.copy between contiguous buffers -> memref.copy (lowered to one llvm.memcpy).

What bufferization leaves as copies (a concatenation's operands copied into their slices of the
result: an unrolled RNN's output, one copy per time step) becomes loop nests in `cpu-lower`, each
optimized by LLVM on its own. A copy between buffers of the same static shape, both row-major
contiguous (identity layouts, or slices of whole inner rows at a static offset), is one memcpy
instead: no loops to compile, and as fast as a copy gets. Other copies are left as they are.
"""
from __future__ import annotations

from mlir import ir

from workbench.worker.ir_walk import ops_where


def _contiguous(t) -> bool:
    if not isinstance(t, ir.MemRefType) or not t.has_static_shape:
        return False
    try:
        strides, offset = t.get_strides_and_offset()
    except Exception:
        return False
    expected = 1
    for size, stride in reversed(list(zip(t.shape, strides))):
        if size != 1 and stride != expected:
            return False
        expected *= size
    return offset >= 0   # (a dynamic offset is negative)


def contiguous_copies_as_memcpy(module) -> int:
    """Rewrite the copies (module doc); how many."""
    copies = ops_where(module, lambda op: op.name == "linalg.copy" and len(op.operands) == 2)
    done = 0
    for op in copies:
        src, dst = op.operands[0], op.operands[1]
        if not (_contiguous(src.type) and _contiguous(dst.type)) or ir.MemRefType(src.type).shape != ir.MemRefType(dst.type).shape:
            continue
        if ir.MemRefType(src.type).element_type != ir.MemRefType(dst.type).element_type:
            continue
        with ir.InsertionPoint(op), op.location:
            ir.Operation.create("memref.copy", operands=[src, dst])
        op.erase()
        done += 1
    return done
