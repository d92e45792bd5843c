"""`lh-defer-accumulator-loads`: a loop's accumulators start from zero; memory is added once at the end.

Why: a register-blocked kernel (the matmul and conv micro-kernels of the CPU schedules, a row
reduction's vector accumulator) reads its tile of the output into registers, runs the K loop on it and
writes it back:

    %c = vector.transfer_read %C[%i, %j]                      (the tile: 6 or 8 rows of C)
    %r = scf.for ... iter_args(%acc = %c) { ... vector.fma(%a, %b, %acc) ... }
    vector.transfer_write %r, %C[%i, %j]

Every FMA of the loop waits for that read. When the tile is not in L1 (C rows are a whole row of the
output apart, so consecutive tiles miss; at 2048^3 and up they come from L3), the whole kernel waits
the miss latency before its first FMA, once per tile and K block. As BLAS micro-kernels do, the loop
here starts from zeros, the tile is prefetched where the read was, and read and added after the loop,
where the next tile's FMAs, which do not depend on it, overlap the latency:

    memref.prefetch %C[%i + r, %j + line]  (each row and cache line of the tile)
    %r = scf.for ... iter_args(%acc = zeros) { ... }
    %c = vector.transfer_read %C[%i, %j]
    vector.transfer_write (%c + %r), %C[%i, %j]

Only where that is the same value up to the order of the float additions: the iter_arg reaches the
loop's yield at the same positions through `vector.fma` (as the accumuland), `arith.addf`, and the
`vector.extract` / `vector.insert` that take rows apart and put them back, and nowhere else; the loop
writes no memory, nor does anything between the read and the write; the read has no mask and is read
back by that write alone (same buffer, indices, map). Floats only (the sum is reassociated, as a
blocked BLAS sums K).
"""
from __future__ import annotations

import numpy as np
from mlir import ir

from workbench.worker.ir_walk import defining_op, ops_where

#: ops a loop body (and what lies between the read and the write) may hold: none writes memory
_READ_ONLY_PREFIXES = ("arith.", "math.", "index.", "affine.apply", "affine.min", "affine.max", "ub.")
_READ_ONLY = frozenset({
    "scf.for", "scf.yield", "scf.if", "memref.subview", "memref.load", "memref.cast", "memref.reinterpret_cast",
    "memref.collapse_shape", "memref.expand_shape", "memref.extract_strided_metadata", "memref.dim",
    "memref.prefetch", "memref.assume_alignment", "affine.load", "vector.transfer_read", "vector.load",
    "vector.extract", "vector.insert", "vector.broadcast", "vector.fma", "vector.outerproduct",
    "vector.contract", "vector.shape_cast", "vector.transpose", "vector.splat", "vector.from_elements",
    "vector.extract_strided_slice", "vector.insert_strided_slice", "vector.reduction", "vector.multi_reduction",
    "vector.shuffle", "vector.bitcast", "vector.step", "vector.constant_mask", "vector.create_mask",
    "vector.maskedload", "vector.gather",
})
#: at most this many prefetches a tile (rows x cache lines); larger tiles are left without
MAX_PREFETCHES = 32
CACHE_LINE = 64


def _read_only(op) -> bool:
    name = op.name
    if not (name in _READ_ONLY or name.startswith(_READ_ONLY_PREFIXES)):
        return False
    return all(_read_only(inner) for region in op.regions for block in region.blocks for inner in block.operations)


def _static_position(op) -> tuple[int, ...] | None:
    """vector.extract / vector.insert's position when all of it is static, else None."""
    if len(op.operands) != (1 if op.name == "vector.extract" else 2):
        return None
    return tuple(ir.DenseI64ArrayAttr(op.attributes["static_position"]))


def _additive_to_yield(loop, index: int, vtype: ir.VectorType) -> bool:
    """Whether the loop's yield at `index` is its iter_arg `index` plus values that do not depend on it,
    element by element at the same positions (see the module doc for the ops it may pass through)."""
    body = loop.regions[0].blocks[0]
    origin = {body.arguments[1 + index]: np.arange(int(np.prod(vtype.shape))).reshape(vtype.shape)}

    def of(value):
        return origin.get(value)

    for op in body.operations:
        op = op.operation
        tracked = [of(v) is not None for v in op.operands]
        if not any(tracked):
            continue
        name = op.name
        if name == "vector.extract" and tracked == [True]:
            pos = _static_position(op)
            if pos is None:
                return False
            origin[op.results[0]] = np.asarray(of(op.operands[0])[pos])
        elif name == "vector.insert" and not any(tracked[2:]):
            pos = _static_position(op)
            if pos is None:
                return False
            dest_shape = ir.VectorType(op.operands[1].type).shape
            dest = of(op.operands[1])
            merged = np.full(dest_shape, -1) if dest is None else dest.copy()
            src = of(op.operands[0])
            merged[pos] = -1 if src is None else src
            origin[op.results[0]] = merged
        elif name == "vector.fma" and tracked == [False, False, True]:
            origin[op.results[0]] = of(op.operands[2])
        elif name == "arith.addf" and sum(tracked) == 1:
            origin[op.results[0]] = of(op.operands[tracked.index(True)])
        elif name == "scf.yield":
            for k, value in enumerate(op.operands):
                got = of(value)
                if k != index and got is not None:
                    return False
                if k == index and (got is None or not np.array_equal(got, np.arange(got.size).reshape(got.shape))):
                    return False
        else:
            return False
    # an op below the body's top level that reads an accumulator value: out of what is tracked
    nested = ops_where(loop, lambda o: o.operation != loop.operation and o.operation.parent != loop)
    return not any(v in origin for op in nested for v in op.operands)


def _same_access(read, write) -> bool:
    r, w = read.opview, write.opview
    return (r.base == w.base and list(r.indices) == list(w.indices) and r.mask is None and w.mask is None
            and str(r.permutation_map) == str(w.permutation_map) and str(r.in_bounds) == str(w.in_bounds)
            and r.result.type == write.operands[0].type)


def _ops_between(first, last) -> list:
    """The ops strictly between `first` and `last` of one block (empty when `last` is not after `first`)."""
    ops, inside = [], False
    for op in first.block.operations:
        op = op.operation
        if op == last:
            return ops if inside else []
        if inside:
            ops.append(op)
        if op == first:
            inside = True
    return []


def _index_plus(value, offset: int):
    from mlir.dialects import arith

    if offset == 0:
        return value
    return arith.AddIOp(value, arith.ConstantOp(ir.IndexType.get(), offset).result).result


def _prefetch_tile(read) -> None:
    """memref.prefetch of every row and cache line the read's tile covers (its last two dims), at the
    read's place; nothing for tiles of more than MAX_PREFETCHES lines or reads that are not row-major
    over the buffer's last dims."""
    from mlir.dialects import memref

    r = read.opview
    vtype = ir.VectorType(r.result.type)
    mtype = ir.MemRefType(r.base.type)
    indices = list(r.indices)
    width = getattr(vtype.element_type, "width", 0) // 8
    if not width or vtype.rank > mtype.rank:
        return
    pmap = ir.AffineMapAttr(r.permutation_map).value
    if pmap != ir.AffineMap.get_minor_identity(pmap.n_dims, vtype.rank):
        return
    rows = vtype.shape[-2] if vtype.rank >= 2 else 1
    lines = max(1, -(-vtype.shape[-1] * width // CACHE_LINE))
    if vtype.rank > 2 or rows * lines > MAX_PREFETCHES:
        return
    per_line = CACHE_LINE // width
    for row in range(rows):
        for line in range(lines):
            at = list(indices)
            if vtype.rank >= 2:
                at[-2] = _index_plus(at[-2], row)
            at[-1] = _index_plus(at[-1], line * per_line)
            memref.PrefetchOp(r.base, at, isWrite=False, localityHint=3, isDataCache=True)


def defer_accumulator_loads(module) -> int:
    """Rewrite every such loop accumulator of `module` (see the module doc); the number rewritten."""
    from mlir.dialects import arith

    done = 0
    for loop in ops_where(module, lambda o: o.name == "scf.for"):
        loop = loop.operation
        inits = list(loop.operands)[3:]
        if not inits or not _read_only(loop):
            continue
        for index, init in enumerate(inits):
            read = defining_op(init)
            if read is None or read.name != "vector.transfer_read" or read.block != loop.block:
                continue
            vtype = ir.VectorType(init.type)
            if not isinstance(vtype.element_type, (ir.F32Type, ir.F64Type, ir.F16Type, ir.BF16Type)):
                continue
            uses = list(loop.results[index].uses)
            if len(uses) != 1 or len(list(init.uses)) != 1:
                continue
            write = uses[0].owner
            write = write.operation if hasattr(write, "operation") else write
            if (write.name != "vector.transfer_write" or uses[0].operand_number != 0 or write.block != loop.block
                    or not _same_access(read, write)):
                continue
            between = _ops_between(read, loop) + _ops_between(loop, write)
            if not all(_read_only(op) for op in between) or not _additive_to_yield(loop, index, vtype):
                continue
            with ir.InsertionPoint(loop), loop.location:
                _prefetch_tile(read)
                zero = arith.ConstantOp(vtype, ir.DenseElementsAttr.get_splat(
                    vtype, ir.FloatAttr.get(vtype.element_type, 0.0))).result
            loop.operands[3 + index] = zero
            with ir.InsertionPoint(write), loop.location:
                tile = read.clone()
                write.operands[0] = arith.AddFOp(tile.results[0], loop.results[index]).result
            read.erase()
            done += 1
    return done
