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

The other way round (after the merges): nn.MultiheadAttention's export computes the scores, the mask's
addition and the softmax over batch x heads (2 x 4 x N x N) but P V as a batch matmul over their product
(8 x N x Dv) reading a collapse_shape of the probabilities (or of the inputs of the op that computes them),
its result expanded back to batch x heads. Such a P V (and that op) runs over the split batch: its other
operand expanded (a view), its result read directly where the expand_shapes read it.
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


def _leading_split(reshape) -> list[int]:
    """The sizes of the leading dims a collapse_shape merges (an expand_shape splits) into its first dim, the
    others kept ([[0..q-1], [q], [q+1], ...], q >= 2); [] for any other reshape."""
    split = reshape.results[0] if reshape.name == "tensor.expand_shape" else reshape.operands[0]
    t = ir.RankedTensorType(split.type)
    if not t.has_static_shape:
        return []
    q = t.rank - ir.RankedTensorType((reshape.operands[0] if reshape.name == "tensor.expand_shape"
                                       else reshape.results[0]).type).rank + 1
    if q < 2 or not _merged_leading(reshape.attributes["reassociation"], q, t.rank):
        return []
    return list(t.shape)[:q]


def _split_type(value_type, sizes: list[int]):
    t = ir.RankedTensorType(value_type)
    return ir.RankedTensorType.get(list(sizes) + list(t.shape)[1:], t.element_type)


def _expand(value, sizes: list[int]):
    """`value` with its first dim split into `sizes`: the source of the collapse_shape that merged them,
    else an expand_shape of it."""
    new_type = _split_type(value.type, sizes)
    producer = _op(value)
    if (producer is not None and producer.name == "tensor.collapse_shape" and producer.operands[0].type == new_type
            and _leading_split(producer) == list(sizes)):
        return producer.operands[0]
    rank = ir.RankedTensorType(new_type).rank
    return ir.Operation.create("tensor.expand_shape", results=[new_type], operands=[value],
                               attributes={"reassociation": _leading_merge(len(sizes), rank),
                                           "static_output_shape": ir.DenseI64ArrayAttr.get(
                                               list(ir.RankedTensorType(new_type).shape))}).results[0]


def _batched_inputs(op) -> list[int]:
    """The inputs of generic `op` that read its first loop first (those that read it at all)."""
    maps = _maps(op)
    out = []
    for n in range(len(op.operands) - len(op.results)):
        dims = [ir.AffineDimExpr(e).position for e in maps[n].results]
        if 0 in dims:
            out.append(n)
    return out


def _splittable(op) -> bool:
    """A generic with one result, static shapes, a body that reads no loop index, affine dims only, whose first
    loop is a batch loop (every operand reading it reads it first)."""
    if op.name != "linalg.generic" or len(op.results) != 1 or len(op.regions[0].blocks) != 1:
        return False
    if not ir.RankedTensorType(op.results[0].type).has_static_shape or any(
            o.name == "linalg.index" or o.regions for o in op.regions[0].blocks[0].operations):
        return False
    init_op = _op(op.operands[-1])
    return init_op is not None and init_op.name in ("linalg.fill", "tensor.empty") and _batch_loops(op) >= 1


def _split_op(op, sizes: list[int], inputs: dict):
    """A clone of generic `op` over its first loop split into `sizes` (a new op before it; `op` left as it is):
    input n is inputs[n] where given, else its batched inputs expanded; a fresh init of the split type."""
    q = len(sizes)
    maps = _maps(op)
    n_loops = maps[0].n_dims

    def split_map(m):
        dims = [ir.AffineDimExpr(e).position for e in m.results]
        batched = bool(dims) and dims[0] == 0
        exprs = ([ir.AffineDimExpr.get(i) for i in range(q)] if batched else []) + [
            ir.AffineDimExpr.get(d + q - 1) for d in (dims[1:] if batched else dims)]
        return ir.AffineMap.get(n_loops + q - 1, 0, exprs)

    n_inputs = len(op.operands) - 1
    batched = _batched_inputs(op)
    init_op = _op(op.operands[-1])
    with ir.InsertionPoint(op), op.location:
        new_inputs = [inputs[n] if n in inputs else (_expand(v, sizes) if n in batched else v)
                      for n, v in enumerate(list(op.operands)[:n_inputs])]
        out_type = _split_type(op.results[0].type, sizes)
        empty = ir.Operation.create("tensor.empty", results=[out_type], operands=[]).results[0]
        new_init = linalg.fill(init_op.operands[0], outs=[empty]) if init_op.name == "linalg.fill" else empty
        its = iterator_types(op)
        attributes = {a.name: a.attr for a in (op.attributes[n] for n in range(len(op.attributes)))}
        attributes["indexing_maps"] = ir.ArrayAttr.get([ir.AffineMapAttr.get(split_map(m)) for m in maps])
        attributes["iterator_types"] = ir.ArrayAttr.get(
            [ir.Attribute.parse(f"#linalg.iterator_type<{it}>") for it in ["parallel"] * q + its[1:]])
        new = ir.Operation.create("linalg.generic", results=[out_type], operands=new_inputs + [new_init],
                                  attributes=attributes, regions=1)
    op.regions[0].blocks[0].append_to(new.regions[0])
    return new


def _erase_with_inputs(op) -> None:
    """Erase `op` (unread), its init if nothing else reads it, and the reshapes of its inputs left unread."""
    init = op.operands[-1]
    old_inputs = list(op.operands)[:len(op.operands) - 1]
    op.erase()
    _erase_unread_init(init)
    for v in old_inputs:
        owner = _op(v)
        if owner is not None and owner.name in ("tensor.expand_shape", "tensor.collapse_shape") and not list(v.uses):
            owner.erase()


def _split(op) -> bool:
    """P V over a merged batch between split ones: a zero-filled contraction whose result is read only through
    expand_shapes splitting its batch into `sizes`, and whose left operand (the probabilities) is a
    collapse_shape merging those dims, or an elementwise op read by it alone whose batched inputs all are
    (nn.MultiheadAttention's export: the scores and their softmax over batch x heads, P V over their product),
    runs over the split batch (the elementwise op too): P V then reads the softmax's tensor directly."""
    op = op.operation
    if not _splittable(op) or not (_contraction_body(op) and _zero_fill(op.operands[2])):
        return False
    users = [u.owner.operation for u in op.results[0].uses]
    if not users or any(u.name != "tensor.expand_shape" for u in users):
        return False
    sizes = _leading_split(users[0])
    if not sizes or any(u.results[0].type != users[0].results[0].type or _leading_split(u) != sizes for u in users):
        return False
    if 0 not in _batched_inputs(op):
        return False
    p = op.operands[0]
    producer = _op(p)
    if producer is None:
        return False
    elementwise = None
    if producer.name == "tensor.collapse_shape" and _leading_split(producer) == sizes:
        split_p = producer.operands[0]
    elif (producer.name == "linalg.generic" and _splittable(producer) and set(iterator_types(producer)) == {"parallel"}
          and [u.owner.operation for u in p.uses] == [op]):
        readers = [_op(producer.operands[n]) for n in _batched_inputs(producer)]
        if not readers or any(r is None or r.name != "tensor.collapse_shape" or _leading_split(r) != sizes
                              for r in readers):
            return False
        elementwise = producer
        split_p = _split_op(producer, sizes, {}).results[0]
    else:
        return False
    new = _split_op(op, sizes, {0: split_p})
    for u in users:
        u.results[0].replace_all_uses_with(new.results[0])
        u.erase()
    _erase_with_inputs(op)
    if elementwise is not None:
        _erase_with_inputs(elementwise)
    return True


def merge_contraction_batches(module) -> int:
    """Merge the batch loops of every contraction the module docstring describes, then split those of P V
    where the softmax it reads is over the split batch (_split); how many."""
    done = 0
    for op in ops_where(module, lambda o: o.name == "linalg.generic"):
        done += _merge(op)
    for op in ops_where(module, lambda o: o.name == "linalg.generic"):
        done += _split(op)
    return done
