"""`lh-flatten-contiguous-transfers`: n-D vector transfers over whole contiguous trailing rows of a static
tensor (or identity-layout memref) whose value is flat on the other side become 1-D transfers of a
collapse_shape view:
  - a `vector.transfer_read` whose every user is a `vector.shape_cast` to a 1-D vector;
  - a `vector.transfer_write` of a `vector.shape_cast` of a 1-D vector.

Why: the VNNI micro-kernel (pipelines/cpu/matmul_vnni.py) reads a panel row of packed B as
vector<1x1x16x2xbf16> (what the vectorized unit contraction reads) and the x86vector dot product takes it
as vector<32xbf16>; the pack of B writes such rows from a flat shuffle. The vector lowering unrolls n-D
transfers into 16 transfers of two bf16 each, reassembled by shuffles. Upstream's
FlattenContiguousRowMajorTransfer{Read,Write}Pattern do this, but no pass or transform op of the pinned
bindings applies them. The VNNI schedule's selection runs this on tensors, between the schedule and the
bufferization (whose vector lowering would first break the shape casts into element shuffles).
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
    return _contiguous_in_memory(op.operands[0], memref.rank - first - 1)


def _contiguous_in_memory(value, trailing: int) -> bool:
    """Whether the `trailing` innermost dims of the tensor `value` stay whole (so its rows are contiguous once
    bufferized) through the tensor.extract_slice ops that define it: a slice of a tile of a larger tensor (a
    transposing copy's 16 x 16 block of a wider matrix) is a strided view, whose collapse the bufferization
    would copy. Memrefs: their identity layout says it (_shaped)."""
    from mlir import ir

    while isinstance(value.type, ir.RankedTensorType) and getattr(value.owner, "name", "") == "tensor.extract_slice":
        slice_op = value.owner
        source = slice_op.operands[0]
        source_shape = list(ir.RankedTensorType(source.type).shape)
        sizes = list(ir.DenseI64ArrayAttr(slice_op.attributes["static_sizes"]))
        strides = list(ir.DenseI64ArrayAttr(slice_op.attributes["static_strides"]))
        if len(sizes) != len(source_shape) or len(source_shape) <= trailing:
            return False   # (a rank-reducing slice: not followed)
        if sizes[len(sizes) - trailing:] != source_shape[len(sizes) - trailing:] or any(t != 1 for t in strides[-trailing - 1:]):
            return False
        value = source
    return True


def _collapsed_rows(stype, vector_shape: list[int]):
    """The view a transfer of `vector_shape` (leading unit dims, then whole contiguous rows) over the
    trailing dims of `stype` reads or writes as one 1-D vector: (the first row dim, the elements of one
    index step along it, the collapse's reassociation, the collapsed shape)."""
    from mlir import ir

    lead = next(i for i, d in enumerate(vector_shape) if d != 1)
    first = stype.rank - (len(vector_shape) - lead)   # the shaped value's dim of the rows' first dim
    inner = 1
    for d in list(stype.shape)[first + 1:]:
        inner *= d
    i64 = ir.IntegerType.get_signless(64)
    groups = [[i] for i in range(first)] + [list(range(first, stype.rank))]
    reassociation = ir.ArrayAttr.get([ir.ArrayAttr.get([ir.IntegerAttr.get(i64, i) for i in g]) for g in groups])
    return first, inner, reassociation, list(stype.shape)[:first] + [stype.shape[first] * inner]


def _collapsed_view(value, stype, collapsed_shape: list[int], reassociation):
    """`value` (a static tensor or an identity memref of type `stype`) collapsed to `collapsed_shape`."""
    from mlir import ir
    from mlir.dialects import memref as memref_d, tensor

    if isinstance(stype, ir.RankedTensorType):
        return tensor.CollapseShapeOp(ir.RankedTensorType.get(collapsed_shape, stype.element_type), value,
                                      reassociation).result
    return memref_d.CollapseShapeOp(ir.MemRefType.get(collapsed_shape, stype.element_type,
                                                      memory_space=stype.memory_space), value, reassociation).result


def flatten_contiguous_reads(module) -> int:
    """Rewrite every eligible read (module docstring); how many were rewritten."""
    from mlir import ir
    from mlir.dialects import arith, vector as vector_d

    from workbench.worker.ir_walk import ops_where

    rewritten = 0
    for op in ops_where(module, _flattenable):
        source = op.operands[0]
        stype = _shaped(source)
        vtype = ir.VectorType(op.results[0].type)
        shape = list(vtype.shape)
        first, inner, reassociation, collapsed_shape = _collapsed_rows(stype, shape)
        flat = 1
        for d in shape:
            flat *= d
        indices = list(op.operands)[1:1 + stype.rank]
        padding = op.operands[1 + stype.rank]
        with ir.InsertionPoint(op), op.location:
            view = _collapsed_view(source, stype, collapsed_shape, reassociation)
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


def _flattenable_write(op) -> bool:
    """A transfer_write of a vector that is a shape_cast of a 1-D vector (a flat value written n-D: the
    VNNI pack's panel rows) onto whole contiguous trailing rows of a static tensor / identity memref."""
    from mlir import ir

    if op.name != "vector.transfer_write":
        return False
    value = op.operands[0]
    owner = value.owner
    if getattr(owner, "name", "") != "vector.shape_cast" or ir.VectorType(owner.operands[0].type).rank != 1:
        return False
    dest = _shaped(op.operands[1])
    if dest is None or not dest.has_static_shape:
        return False
    vector = ir.VectorType(value.type)
    if vector.rank < 2 or vector.rank > dest.rank or len(op.operands) != 2 + dest.rank:   # (no mask)
        return False
    if "in_bounds" in op.attributes and not all(ir.BoolAttr(b).value for b in ir.ArrayAttr(op.attributes["in_bounds"])):
        return False
    perm = ir.AffineMapAttr(op.attributes["permutation_map"]).value
    if [ir.AffineDimExpr(r).position if isinstance(r, ir.AffineDimExpr) else -1 for r in perm.results] != \
            list(range(dest.rank - vector.rank, dest.rank)):
        return False
    return _contiguous_rows(list(vector.shape), list(dest.shape), list(op.operands)[2:2 + dest.rank])


def _contiguous_rows(shape: list[int], dest_shape: list[int], indices: list) -> bool:
    """`shape` (leading unit dims, then rows) covers whole trailing rows of `dest_shape` at `indices` (the
    indices inside the rows constant zero)."""
    from mlir import ir

    lead = next((i for i, d in enumerate(shape) if d != 1), len(shape))
    rows = shape[lead:]
    if len(rows) < 2 or rows[1:] != dest_shape[len(dest_shape) - len(rows) + 1:]:
        return False
    first = len(dest_shape) - len(rows)
    for index in indices[first + 1:]:
        owner = index.owner
        if getattr(owner, "name", "") != "arith.constant" or ir.IntegerAttr(owner.attributes["value"]).value != 0:
            return False
    return True


def flatten_contiguous_writes(module) -> int:
    """Rewrite every eligible write (`_flattenable_write`) as a 1-D write of the flat value into a
    collapse_shape view (on tensors, the result expanded back); how many were rewritten."""
    from mlir import ir
    from mlir.dialects import arith, tensor, vector as vector_d

    from workbench.worker.ir_walk import ops_where

    rewritten = 0
    for op in ops_where(module, _flattenable_write):
        flat = op.operands[0].owner.operands[0]
        dest = op.operands[1]
        dtype = _shaped(dest)
        shape = list(ir.VectorType(op.operands[0].type).shape)
        first, inner, reassociation, collapsed_shape = _collapsed_rows(dtype, shape)
        indices = list(op.operands)[2:2 + dtype.rank]
        minor = ir.AffineMapAttr.get(ir.AffineMap.get_minor_identity(len(collapsed_shape), 1))
        in_bounds = ir.ArrayAttr.get([ir.BoolAttr.get(True)])
        with ir.InsertionPoint(op), op.location:
            scaled = arith.MulIOp(indices[first], arith.ConstantOp(ir.IndexType.get(), inner).result).result
            if isinstance(dtype, ir.RankedTensorType):
                view = _collapsed_view(dest, dtype, collapsed_shape, reassociation)
                written = vector_d.TransferWriteOp(view.type, flat, view, indices[:first] + [scaled], minor,
                                                   in_bounds).result
                result = tensor.ExpandShapeOp(dtype, written, reassociation, [], list(dtype.shape)).result
                op.results[0].replace_all_uses_with(result)
            else:
                view = _collapsed_view(dest, dtype, collapsed_shape, reassociation)
                vector_d.TransferWriteOp(None, flat, view, indices[:first] + [scaled], minor, in_bounds)
        op.erase()
        rewritten += 1
    return rewritten


def _through_shape_cast(value, forward: bool):
    """The op at the other end of `value` past at most one vector.shape_cast: its producer (backward) or
    its only user (forward)."""
    if forward:
        users = [u.owner for u in value.uses]
        if len(users) != 1:
            return None
        op = users[0]
        if op.name == "vector.shape_cast":
            users = [u.owner for u in op.results[0].uses]
            return users[0] if len(users) == 1 else None
        return op
    op = value.owner
    if getattr(op, "name", "") == "vector.shape_cast":
        op = op.operands[0].owner
    return op if hasattr(op, "name") else None


def _shuffle_transposable(op) -> bool:
    """A vector.transpose that only moves data from a read to a write (register transposes of packing
    copies), static, at most 256 elements."""
    from mlir import ir

    if op.name != "vector.transpose":
        return False
    vtype = ir.VectorType(op.operands[0].type)
    elements = 1
    for d in vtype.shape:
        elements *= d
    if elements > 256:
        return False
    source = _through_shape_cast(op.operands[0], forward=False)
    sink = _through_shape_cast(op.results[0], forward=True)
    return (getattr(source, "name", "") == "vector.transfer_read"
            and getattr(sink, "name", "") == "vector.transfer_write")


def shuffle_transposes(module) -> int:
    """Each `_shuffle_transposable` transpose as one 1-D vector.shuffle; where the transpose keeps the
    innermost dim whole and that dim is 32 or 64 bits (the pairs of bf16 of a VNNI pack), on those wider
    elements (a bitcast each side): a shuffle of 32-bit lanes instead of 16-bit ones. How many."""
    import itertools

    from mlir import ir
    from mlir.dialects import vector as vector_d

    from workbench.worker.ir_walk import ops_where

    rewritten = 0
    for op in ops_where(module, _shuffle_transposable):
        source = op.operands[0]
        vtype = ir.VectorType(source.type)
        shape = list(vtype.shape)
        perm = list(ir.DenseI64ArrayAttr(op.attributes["permutation"]))
        element = vtype.element_type
        bits = ir.IntegerType(element).width if isinstance(element, ir.IntegerType) else \
            {"bf16": 16, "f16": 16, "f32": 32, "f64": 64}.get(str(element), 0)
        wide = perm[-1] == len(shape) - 1 and shape[-1] > 1 and shape[-1] * bits in (32, 64)
        out_shape = [shape[p] for p in perm]
        total = 1
        for d in shape:
            total *= d
        if wide:   # the innermost dim as one wider integer lane
            lane = ir.IntegerType.get_signless(shape[-1] * bits)
            shape, perm = shape[:-1], perm[:-1]
        moved = [shape[p] for p in perm]
        strides = [1] * len(shape)
        for i in range(len(shape) - 2, -1, -1):
            strides[i] = strides[i + 1] * shape[i + 1]
        mask = [sum(out[d] * strides[perm[d]] for d in range(len(perm)))
                for out in itertools.product(*[range(d) for d in moved])]
        with ir.InsertionPoint(op), op.location:
            flat = vector_d.ShapeCastOp(ir.VectorType.get([total], element), source).result
            if wide:
                flat = vector_d.BitCastOp(ir.VectorType.get([len(mask)], lane), flat).result
            shuffled = vector_d.ShuffleOp(flat, flat, mask).result
            if wide:
                shuffled = vector_d.BitCastOp(ir.VectorType.get([total], element), shuffled).result
            result = vector_d.ShapeCastOp(ir.VectorType.get(out_shape, element), shuffled).result
        op.results[0].replace_all_uses_with(result)
        op.erase()
        rewritten += 1
    return rewritten
