"""`lh-merge-contraction-batches`: a contraction over several leading batch loops read or written through a
reshape that merges them runs over the merged batch (`linalg.generic` of mulf/addf, each operand and the
result indexed (d0, ..., d_{p-1}, ...) by those p loops first).

Why: grouped-query attention (Mistral's 16 query heads over 4 K/V heads) leaves torch-mlir's Q K^T as a
4 x 4 x 512 x 512 contraction (K/V heads x group) collapsed into the 16 x 512 x 512 scores the softmax
reads, and P V as a 4 x 4 contraction of the probabilities expanded back: the reshapes between the
contractions and the softmax hide attention from the selector (the row blocks of
docs/attention-round14.md, lh-flash-attention). Merging the batch loops of a contraction whose result
is only read through a collapse_shape that merges them, or whose operand is an expand_shape that split
them, is exact (the same sums, the batch index renumbered row-major as the reshapes do): the
contraction then reads / writes the softmax's 3-D tensors directly; its other operands are collapsed
(a view of a contiguous tensor), and a result still needed in the split shape is expanded back.

Not where only an operand is expanded and the left one (the probabilities) is an op's result over the
split loops: nn.MultiheadAttention's export computes the scores, the mask's addition and the softmax over
batch x heads and P V over them, with V expanded from the heads merged with the batch; merged, P V would
read the probabilities through a collapse_shape, and the selector would not see the attention.
"""
from __future__ import annotations

import math

from mlir import ir
from mlir.dialects import linalg

from workbench.worker.cpu.dead_results import _erase_unread_init
from workbench.worker.cpu.scaled_contractions import _contraction_body, _maps, _op, _zero_fill
from workbench.worker.ir_walk import iterator_types, ops_where


def _merged_leading(reassociation, p: int, rank: int) -> bool:
    """Whether a reshape's reassociation is [[0..p-1], [p], [p+1], ...] over `rank` dims."""
    groups = [[ir.IntegerAttr(i).value for i in ir.ArrayAttr(g)] for g in ir.ArrayAttr(reassociation)]
    return groups == [list(range(p))] + [[i] for i in range(p, rank)]


def _batch_loops(op) -> int:
    """The leading parallel loops that every operand indexing any of them reads first, in order (the others,
    a mask broadcast over the heads, read none of them), and the result reads first: how many."""
    maps = _maps(op)
    its = iterator_types(op)
    if any(not isinstance(e, ir.AffineDimExpr) for m in maps for e in m.results):
        return 0
    p = 0
    while p < len(its) and its[p] == "parallel":
        q = p + 1
        ok = True
        for n, m in enumerate(maps):
            dims = [ir.AffineDimExpr(e).position for e in m.results]
            if not any(d < q for d in dims) and n < len(maps) - 1:
                continue
            if dims[:q] != list(range(q)) or any(d < q for d in dims[q:]):
                ok = False
        if not ok:
            break
        p = q
    return p


def _leading_merge(p: int, rank: int):
    """The reassociation [[0..p-1], [p], [p+1], ...] of a reshape merging the first `p` of `rank` dims."""
    i64 = ir.IntegerType.get_signless(64)
    return ir.ArrayAttr.get([ir.ArrayAttr.get([ir.IntegerAttr.get(i64, i) for i in range(p)])]
                            + [ir.ArrayAttr.get([ir.IntegerAttr.get(i64, i)]) for i in range(p, rank)])


def _merged_type(value_type, p: int):
    """`value_type` with its first `p` dims merged into one."""
    t = ir.RankedTensorType(value_type)
    shape = list(t.shape)
    return ir.RankedTensorType.get([math.prod(shape[:p])] + shape[p:], t.element_type)


def _collapse(value, p: int):
    """`value` with its first `p` dims merged: the source of the expand_shape that split them, else a
    collapse_shape of it."""
    new_type = _merged_type(value.type, p)
    rank = ir.RankedTensorType(value.type).rank
    producer = _op(value)
    if (producer is not None and producer.name == "tensor.expand_shape" and producer.operands[0].type == new_type
            and _merged_leading(producer.attributes["reassociation"], p, rank)):
        return producer.operands[0]
    return ir.Operation.create("tensor.collapse_shape", results=[new_type], operands=[value],
                               attributes={"reassociation": _leading_merge(p, rank)}).results[0]


def _reads_split_op(op) -> bool:
    """Whether contraction `op`'s left operand is the result of a linalg op over the split batch loops, read
    as it is (no reshape between): nn.MultiheadAttention's P V, whose probabilities the softmax computes over
    batch x heads and whose V torch-mlir expands from their product. Merging it for the expanded V would
    read the probabilities through a collapse_shape, which hides the attention from the selector."""
    producer = _op(op.operands[0])
    dims = [ir.AffineDimExpr(e).position for e in _maps(op)[0].results]
    return producer is not None and producer.name.startswith("linalg.") and bool(dims) and dims[0] == 0


def _merge(op) -> bool:
    op = op.operation
    if len(op.results) != 1 or len(op.regions[0].blocks) != 1:
        return False
    contraction = _contraction_body(op) and _zero_fill(op.operands[2])
    if not contraction and set(iterator_types(op)) != {"parallel"}:
        return False
    if not ir.RankedTensorType(op.results[0].type).has_static_shape or any(
            o.name == "linalg.index" or o.regions for o in op.regions[0].blocks[0].operations):
        return False   # (static shapes; a body reading its loop indices would see the merged ones)
    p = _batch_loops(op)
    if p < 2:
        return False
    result = op.results[0]
    rank = ir.RankedTensorType(result.type).rank
    users = [u.owner.operation for u in result.uses]
    collapses = [u for u in users if u.name == "tensor.collapse_shape"
                 and _merged_leading(u.attributes["reassociation"], p, rank)]
    collapse = collapses[0] if collapses and len(collapses) == len(users) else None
    expanded_input = any(_op(v) is not None and _op(v).name == "tensor.expand_shape"
                         and _merged_leading(_op(v).attributes["reassociation"], p, ir.RankedTensorType(v.type).rank)
                         for v in list(op.operands)[:-1])
    if collapse is None and not expanded_input:
        return False
    if collapse is None and contraction and _reads_split_op(op):
        return False
    maps = _maps(op)
    n_loops = maps[0].n_dims

    def merged_map(m):
        dims = [ir.AffineDimExpr(e).position for e in m.results]
        batched = bool(dims) and dims[0] == 0
        exprs = ([ir.AffineDimExpr.get(0)] if batched else []) + [ir.AffineDimExpr.get(d - p + 1)
                                                                   for d in (dims[p:] if batched else dims)]
        return ir.AffineMap.get(n_loops - p + 1, 0, exprs)

    init_op = _op(op.operands[-1])
    if init_op is None or init_op.name not in ("linalg.fill", "tensor.empty"):
        return False
    n_inputs = len(op.operands) - 1
    with ir.InsertionPoint(op), op.location:
        inputs = []
        for n, v in enumerate(list(op.operands)[:n_inputs]):
            dims = [ir.AffineDimExpr(e).position for e in maps[n].results]
            # (an input that reads none of the batch loops is broadcast over them: read as it is)
            inputs.append(_collapse(v, p) if dims and dims[0] == 0 else v)
        out_type = _merged_type(op.operands[-1].type, p)
        empty = ir.Operation.create("tensor.empty", results=[out_type], operands=[]).results[0]
        new_init = linalg.fill(init_op.operands[0], outs=[empty]) if init_op.name == "linalg.fill" else empty
        its = iterator_types(op)
        attributes = {a.name: a.attr for a in (op.attributes[n] for n in range(len(op.attributes)))}
        attributes["indexing_maps"] = ir.ArrayAttr.get([ir.AffineMapAttr.get(merged_map(m)) for m in maps])
        attributes["iterator_types"] = ir.ArrayAttr.get(
            [ir.Attribute.parse(f"#linalg.iterator_type<{it}>") for it in ["parallel"] + its[p:]])
        new = ir.Operation.create("linalg.generic", results=[out_type], operands=inputs + [new_init],
                                  attributes=attributes, regions=1)
    op.regions[0].blocks[0].append_to(new.regions[0])
    for c in collapses:
        c.results[0].replace_all_uses_with(new.results[0])
        c.erase()
    if collapse is None:
        with ir.InsertionPoint(op), op.location:
            shape = list(ir.RankedTensorType(result.type).shape)
            expand = ir.Operation.create(
                "tensor.expand_shape", results=[result.type], operands=[new.results[0]],
                attributes={"reassociation": _leading_merge(p, rank),
                            "static_output_shape": ir.DenseI64ArrayAttr.get(shape)})
        result.replace_all_uses_with(expand.results[0])
    init = op.operands[-1]
    old_inputs = list(op.operands)[:n_inputs]
    op.erase()
    _erase_unread_init(init)
    for v in old_inputs:
        owner = _op(v)
        if owner is not None and owner.name in ("tensor.expand_shape", "tensor.collapse_shape") and not list(v.uses):
            owner.erase()
    return True


def merge_contraction_batches(module) -> int:
    """Merge the batch loops of every contraction the module docstring describes; how many."""
    done = 0
    for op in ops_where(module, lambda o: o.name == "linalg.generic"):
        done += _merge(op)
    return done
