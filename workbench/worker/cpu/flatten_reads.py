"""`lh-flatten-contiguous-reads`: an n-D `vector.transfer_read` whose value is only used flattened (every
user a `vector.shape_cast` to a 1-D vector) and that reads whole contiguous trailing rows of a static
tensor (or identity-layout memref) becomes one 1-D transfer_read of a collapse_shape view.

Why: the VNNI micro-kernel (pipelines/cpu/matmul_vnni.py) reads a panel row of packed B as
vector<1x1x16x2xbf16> (what the vectorized unit contraction reads) and the x86vector dot product takes it
as vector<32xbf16>; convert-vector-to-scf unrolls the n-D read into 16 reads of two bf16 and LLVM
reassembles the 64 bytes with shuffles. Upstream's FlattenContiguousRowMajorTransferReadPattern does
this, but no pass or transform op of the pinned bindings applies it. The VNNI schedule's selection runs
it on tensors, between the schedule and the bufferization (whose vector lowering would first break the
shape casts into element shuffles).
"""
from __future__ import annotations


def _shaped(value):
    """The static tensor or identity-layout memref type of `value`, else None."""
    from mlir import ir

    t = value.type
    t = t.maybe_downcast() if hasattr(t, "maybe_downcast") else t
    if isinstance(t, ir.RankedTensorType):
        return t
    if isinstance(t, ir.MemRefType) and t.layout.is_identity:
        return t
    return None


def _flattenable(op) -> bool:
    from mlir import ir

    if op.name != "vector.transfer_read":
        return False
    result = op.results[0]
    users = [u.owner for u in result.uses]
    if not users or any(u.name != "vector.shape_cast" or ir.VectorType(u.results[0].type).rank != 1 for u in users):
        return False
    memref = _shaped(op.operands[0])
    if memref is None or not memref.has_static_shape:
        return False
    vector = ir.VectorType(result.type)
    if vector.rank < 2 or vector.rank > memref.rank:
        return False
    if "in_bounds" in op.attributes and not all(ir.BoolAttr(b).value for b in ir.ArrayAttr(op.attributes["in_bounds"])):
        return False
    perm = ir.AffineMapAttr(op.attributes["permutation_map"]).value
    minor = list(range(memref.rank - vector.rank, memref.rank))
    if [ir.AffineDimExpr(r).position if isinstance(r, ir.AffineDimExpr) else -1 for r in perm.results] != minor:
        return False
    if len(op.operands) != 2 + memref.rank:   # (no mask)
        return False
    shape, mshape = list(vector.shape), list(memref.shape)
    lead = next((i for i, d in enumerate(shape) if d != 1), len(shape))
    rows = shape[lead:]
    if len(rows) < 2 or rows[1:] != mshape[len(mshape) - len(rows) + 1:]:
        return False
    # the trailing indices (within the collapsed rows) are constant zero
    first = memref.rank - len(rows)
    for index in list(op.operands)[1:1 + memref.rank][first + 1:]:
        owner = index.owner
        if getattr(owner, "name", "") != "arith.constant" or ir.IntegerAttr(owner.attributes["value"]).value != 0:
            return False
    return True


def flatten_contiguous_reads(module) -> int:
    """Rewrite every eligible read (module docstring); how many were rewritten."""
    from mlir import ir
    from mlir.dialects import arith, memref as memref_d, tensor, vector as vector_d

    from workbench.worker.ir_walk import ops_where

    rewritten = 0
    for op in ops_where(module, _flattenable):
        source = op.operands[0]
        stype = _shaped(source)
        vtype = ir.VectorType(op.results[0].type)
        shape = list(vtype.shape)
        lead = next(i for i, d in enumerate(shape) if d != 1)
        first = stype.rank - (len(shape) - lead)   # the source dim of the rows' first dim
        inner = 1
        for d in list(stype.shape)[first + 1:]:
            inner *= d
        i64 = ir.IntegerType.get_signless(64)
        groups = [[i] for i in range(first)] + [list(range(first, stype.rank))]
        reassociation = ir.ArrayAttr.get([ir.ArrayAttr.get([ir.IntegerAttr.get(i64, i) for i in g]) for g in groups])
        collapsed_shape = list(stype.shape)[:first] + [stype.shape[first] * inner]
        flat = 1
        for d in shape:
            flat *= d
        indices = list(op.operands)[1:1 + stype.rank]
        padding = op.operands[1 + stype.rank]
        with ir.InsertionPoint(op), op.location:
            if isinstance(stype, ir.RankedTensorType):
                view = tensor.CollapseShapeOp(ir.RankedTensorType.get(collapsed_shape, stype.element_type),
                                              source, reassociation).result
            else:
                view = memref_d.CollapseShapeOp(ir.MemRefType.get(collapsed_shape, stype.element_type,
                                                                  memory_space=stype.memory_space),
                                                source, reassociation).result
            index = ir.IndexType.get()
            scaled = arith.MulIOp(indices[first], arith.ConstantOp(index, inner).result).result
            minor = ir.AffineMap.get_minor_identity(len(collapsed_shape), 1)
            read = vector_d.TransferReadOp(ir.VectorType.get([flat], vtype.element_type), view,
                                           indices[:first] + [scaled], ir.AffineMapAttr.get(minor), padding,
                                           ir.ArrayAttr.get([ir.BoolAttr.get(True)])).result
        for user in [u.owner for u in op.results[0].uses]:
            if list(ir.VectorType(user.results[0].type).shape) == [flat]:
                user.results[0].replace_all_uses_with(read)
            else:
                with ir.InsertionPoint(user), user.location:
                    cast = vector_d.ShapeCastOp(user.results[0].type, read).result
                user.results[0].replace_all_uses_with(cast)
            user.erase()
        op.erase()
        rewritten += 1
    return rewritten
