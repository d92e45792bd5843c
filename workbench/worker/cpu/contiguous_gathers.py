"""`lh-contiguous-gather-sources`: a `vector.gather` from a non-contiguous memref view reads a contiguous copy.

Why: the vectorizer turns a `tensor.extract` at data-dependent positions (a bilinear upsampling's
source pixels, an embedding row) into a `vector.gather` whose base indices are all 0 and whose index
vector holds positions linearized over the whole source, valid on a tensor. Bufferized, the source can
be a strided view: an FPN's upsampled map was a conv output computed 32 wide (lh-pad-conv-rows) and
sliced to 30, then viewed as 5x6 (strides [256, 32, 6, 1]); the gather's LLVM lowering adds the linear
positions to the base address as if the strides were [240, 30, 6, 1] and read the wrong pixels. Here
each such source is copied (linalg.copy, loops in the lowering) into a fresh identity-layout buffer
right before the outermost op around the gathers in the view's block, freed after it; gathers from
contiguous buffers are left alone.
"""
from __future__ import annotations


def _contiguous(memref) -> bool:
    """Row-major strides with a unit innermost stride (any offset)."""
    strides, _ = memref.get_strides_and_offset()
    expected = 1
    for size, stride in zip(reversed(memref.shape), reversed(strides)):
        if stride != expected:
            return False
        expected *= size
    return True


def _ancestor_in(op, block):
    """The ancestor of `op` (or op) whose parent block is `block`, else None."""
    while op is not None:
        op = op.operation
        if op.block == block:
            return op
        parent = op.parent
        op = parent if parent is not None and parent.name != "builtin.module" else None
    return None


def contiguous_gather_sources(module) -> int:
    """Rewrite the gathers of `module`; the number of sources copied."""
    from mlir import ir
    from mlir.dialects import linalg, memref

    gathers = []

    def visit(op):
        op = op.operation if hasattr(op, "operation") else op
        if op.name == "vector.gather":
            t = op.operands[0].type
            t = t.maybe_downcast() if hasattr(t, "maybe_downcast") else t
            if isinstance(t, ir.MemRefType) and t.has_static_shape and not _contiguous(t):
                gathers.append(op)
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit)
    by_source: dict = {}
    for g in gathers:
        by_source.setdefault(g.operands[0], []).append(g)
    copied = 0
    for source, users in by_source.items():
        owner = source.owner
        block = owner if isinstance(owner, ir.Block) else owner.operation.block
        anchors = [_ancestor_in(g, block) for g in users]
        if any(a is None for a in anchors):
            continue
        first = next(a for a in anchors if not any(b.is_before_in_block(a) for b in anchors))
        last = next(a for a in anchors if not any(a.is_before_in_block(b) for b in anchors))
        view = ir.MemRefType(source.type)
        with first.location, ir.InsertionPoint(first):
            buffer = memref.AllocOp(ir.MemRefType.get(view.shape, view.element_type), [], []).result
            linalg.copy(source, outs=[buffer])
        for g in users:
            g.operands[0] = buffer
        with last.location, ir.InsertionPoint.after(last):
            memref.DeallocOp(buffer)
        copied += 1
    return copied

