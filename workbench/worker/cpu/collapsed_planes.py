"""`lh-collapse-planes{lanes=N}`: an elementwise linalg.generic over channels-first images whose rows are no
whole number of vectors (N x C x 56 x 56: a batch norm, a group norm's normalize, a bias add, an
activation) runs over the flattened plane (N x C x 3136) instead, its result expanded back.

Why: vectorized along a row of 56, every row is 3 zmm + 1 ymm, and half the rows start 32 bytes into a
cache line, so every 64-byte store of those rows is split across two lines; over the plane (3136 = 196 x 16)
the op is whole vectors, each plane 64-byte aligned. The collapse is a view of contiguous dims (no copy).

Taken: one result, all loops parallel, no `linalg.index` and no tensor read from above in the body (a
gather), static shapes, the output read with the identity map. The collapsed loops are the shortest
trailing run (at least two) whose extents multiply to whole vectors when the innermost alone is not; every
operand reads either all of them, as the trailing results of its map in order, or none. Not taken where an
input comes from, or the result goes to, an op other than an elementwise linalg.generic or data movement (a
convolution, a matmul or a reduction, whose schedules read their own producers and epilogues at the op's
shape).
"""
from __future__ import annotations

from mlir import ir

from workbench.worker.cpu.collapsed_elementwise import _collapse_shape
from workbench.worker.cpu.fusion import _parallel_generic
from workbench.worker.cpu.shared_rhs import _map_dims
from workbench.worker.ir_walk import defining_op, ops_where

#: producers and users the rewrite leaves in place around the op (anything else: the op is left alone)
_NEIGHBOURS = {"linalg.generic", "linalg.fill", "tensor.empty", "tensor.expand_shape", "tensor.collapse_shape",
               "tensor.extract_slice", "tensor.parallel_insert_slice", "tensor.insert_slice", "func.return",
               "arith.constant"}


def _neighbour(op) -> bool:
    """Whether a producer or user `op` (None: a block argument) leaves the rewrite free: data movement, or
    an elementwise generic (a contraction written as a generic reads its operands at its own shape)."""
    if op is None:
        return True
    if op.name == "linalg.generic":
        return _parallel_generic(op)
    return op.name in _NEIGHBOURS


def _run(op, lanes: int) -> int | None:
    """The first loop of the trailing run to collapse (module docstring), None when the op is not taken."""
    if len(op.results) != 1 or not _parallel_generic(op):
        return None
    body = op.regions[0].blocks[0]
    for inner in body.operations:
        if inner.name in ("linalg.index", "tensor.extract"):
            return None
    dims = _map_dims(op)
    t = op.results[0].type
    if dims is None or not isinstance(t, ir.RankedTensorType) or not t.has_static_shape or t.rank < 3:
        return None
    rank = t.rank
    if dims[-1] != tuple(range(rank)) or t.shape[-1] % lanes == 0:
        return None
    for value in op.operands:
        if not (isinstance(value.type, ir.RankedTensorType) and value.type.has_static_shape):
            return None
        if not _neighbour(defining_op(value)):
            return None
    for use in op.results[0].uses:
        if not _neighbour(use.owner.operation if hasattr(use.owner, "operation") else use.owner):
            return None
    extent = t.shape[-1]
    for first in range(rank - 2, 0, -1):
        extent *= t.shape[first]
        run = tuple(range(first, rank))
        if all(not set(d) & set(run) or (len(d) >= len(run) and d[-len(run):] == run and not set(d[:-len(run)]) & set(run))
               for d in dims):
            if extent % lanes == 0:
                return first
        else:
            return None
    return None


def collapse_planes(module, lanes: int = 16) -> int:
    """Rewrite every such op (module docstring); how many were rewritten."""
    rewritten = 0
    for op in ops_where(module, lambda o: o.name == "linalg.generic"):
        first = _run(op, lanes)
        if first is None:
            continue
        t = ir.RankedTensorType(op.results[0].type)
        rank = t.rank
        dims = _map_dims(op)
        n_inputs = len(op.operands) - 1
        new_rank = first + 1

        with ir.InsertionPoint(op), op.location:
            operands, maps = [], []
            for value, d in zip(list(op.operands), dims):
                m = ir.AffineMap.get(new_rank, 0, [ir.AffineDimExpr.get(x) for x in
                                                   (d if first not in d else d[:-(rank - first)] + (first,))])
                if first in d:
                    vrank = ir.RankedTensorType(value.type).rank
                    keep = vrank - (rank - first)
                    groups = [[i] for i in range(keep)] + [list(range(keep, vrank))]
                    reassociation = ir.ArrayAttr.get([ir.ArrayAttr.get(
                        [ir.IntegerAttr.get(ir.IntegerType.get_signless(64), i) for i in g]) for g in groups])
                    value = _collapse_shape(value, groups, reassociation)
                operands.append(value)
                maps.append(m)
            attributes = {a.name: a.attr for a in (op.attributes[n] for n in range(len(op.attributes)))}
            attributes["indexing_maps"] = ir.ArrayAttr.get([ir.AffineMapAttr.get(m) for m in maps])
            attributes["iterator_types"] = ir.ArrayAttr.get(
                [ir.Attribute.parse("#linalg.iterator_type<parallel>")] * new_rank)
            attributes["operandSegmentSizes"] = ir.DenseI32ArrayAttr.get([n_inputs, 1])
            new = ir.Operation.create("linalg.generic", results=[operands[-1].type], operands=operands,
                                      attributes=attributes, regions=1)
            op.regions[0].blocks[0].append_to(new.regions[0])
            groups = [[i] for i in range(first)] + [list(range(first, rank))]
            reassociation = ir.ArrayAttr.get([ir.ArrayAttr.get(
                [ir.IntegerAttr.get(ir.IntegerType.get_signless(64), i) for i in g]) for g in groups])
            expanded = ir.Operation.create(
                "tensor.expand_shape", results=[t], operands=[new.results[0]],
                attributes={"reassociation": reassociation,
                            "static_output_shape": ir.DenseI64ArrayAttr.get(list(t.shape))})
        op.results[0].replace_all_uses_with(expanded.results[0])
        op.erase()
        rewritten += 1
    return rewritten
