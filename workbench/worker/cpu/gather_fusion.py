"""Elementwise producers computed at the gathered elements only (`lh-fuse-into-gathers`).

A gather (`tensor.extract` at computed indices in a linalg body) that reads a few elements of a
tensor an elementwise linalg.generic writes in full makes the whole tensor be computed, written and
read back for those few elements: torch's nll_loss / cross_entropy write the whole log-softmax
(4096 x 1000) and pick one element per row. Here such an extract becomes the producer's body applied
to the extracts of the producer's inputs at the mapped indices (`linalg.index` the extract's
indices), repeated through chains of producers; a producer nothing else reads goes away, and what is
left of the chain (the row max, the exp-sum) is fused by the elementwise fusion that follows.

Taken only where the gathering op reads at most 1/GATHER_RATIO of the producer's elements (one
element per row of a long row): elsewhere the recomputation could cost more than the pass over
memory it saves.
"""
from __future__ import annotations

from mlir import ir

from workbench.worker.ir_walk import clone_mapped, ops_where

#: the producer must have at least this many times more elements than the gathering op reads
GATHER_RATIO = 8


def _is_tensor(t) -> bool:
    return isinstance(t, ir.RankedTensorType)


def _static_count(shape) -> int | None:
    count = 1
    for d in shape:
        if d < 0:
            return None
        count *= d
    return count


def _domain_count(op) -> int | None:
    """Iterations of the linalg op `op` (static shapes): the product of its operands' loop extents."""
    from workbench.worker.payload_inspect import _indexing_maps

    maps = _indexing_maps(op)
    if not maps:
        return None
    extents: dict[int, int] = {}
    for amap, value in zip(maps, op.operands):
        if not _is_tensor(value.type):
            continue
        shape = ir.RankedTensorType(value.type).shape
        for expr, size in zip(amap.results, shape):
            if isinstance(expr, ir.AffineDimExpr):
                extents[ir.AffineDimExpr(expr).position] = size
    count = 1
    for size in extents.values():
        if size < 0:
            return None
        count *= size
    return count


def _elementwise_producer(value):
    """The linalg.generic producing `value` when it is elementwise (all loops parallel, one result, its
    output indexed by the identity, inputs by dims and constants, a body without regions that never
    reads the output), else None."""
    owner = value.owner
    if not isinstance(owner, (ir.Operation, ir.OpView)):
        return None
    op = owner.operation
    if op.name != "linalg.generic" or len(op.results) != 1 or len(op.regions[0].blocks) != 1:
        return None
    iterators = [str(a) for a in ir.ArrayAttr(op.attributes["iterator_types"])]
    if any("parallel" not in it for it in iterators):
        return None
    maps = [ir.AffineMapAttr(m).value for m in ir.ArrayAttr(op.attributes["indexing_maps"])]
    out_map = maps[-1]
    if [ir.AffineDimExpr(e).position if isinstance(e, ir.AffineDimExpr) else None
            for e in out_map.results] != list(range(out_map.n_dims)):
        return None
    for amap in maps[:-1]:
        if not all(isinstance(e, ir.AffineDimExpr) or isinstance(e, ir.AffineConstantExpr) for e in amap.results):
            return None
    body = op.regions[0].blocks[0]
    if list(body.arguments[-1].uses) or any(o.regions for o in body.operations):
        return None
    return op


def _inline_at(extract, producer) -> None:
    """Replace `extract` (tensor.extract of the producer's result) by the producer's body at its indices."""
    indices = list(extract.operands)[1:]
    maps = [ir.AffineMapAttr(m).value for m in ir.ArrayAttr(producer.attributes["indexing_maps"])]
    body = producer.regions[0].blocks[0]
    n_inputs = len(producer.operands) - 1
    mapping: dict = {}
    with ir.InsertionPoint(extract), extract.location:
        for k in range(n_inputs):
            source = producer.operands[k]
            arg = body.arguments[k]
            if not list(arg.uses):
                continue
            if not _is_tensor(source.type):
                mapping[arg] = source   # a scalar input: the value itself
                continue
            at = []
            for expr in maps[k].results:
                if isinstance(expr, ir.AffineDimExpr):
                    at.append(indices[ir.AffineDimExpr(expr).position])
                else:
                    constant = ir.AffineConstantExpr(expr).value
                    at.append(ir.Operation.create("arith.constant", results=[ir.IndexType.get()],
                                                  attributes={"value": ir.IntegerAttr.get(ir.IndexType.get(), constant)}).result)
            mapping[arg] = ir.Operation.create("tensor.extract", results=[arg.type], operands=[source] + at).result
        result = None
        for inner in body.operations:
            inner = inner.operation
            if inner.name == "linalg.yield":
                result = mapping.get(inner.operands[0], inner.operands[0])
                break
            if inner.name == "linalg.index":
                mapping[inner.results[0]] = indices[ir.IntegerAttr(inner.attributes["dim"]).value]
                continue
            clone_mapped(inner, mapping)
    extract.results[0].replace_all_uses_with(result)
    extract.erase()


def _erase_if_unread(op) -> None:
    if any(list(r.uses) for r in op.results):
        return
    inits = list(op.operands)
    op.erase()
    for value in inits:
        owner = value.owner
        if isinstance(owner, (ir.Operation, ir.OpView)) and owner.operation.name in ("linalg.fill", "tensor.empty") \
                and not any(list(r.uses) for r in owner.operation.results):
            _erase_if_unread(owner.operation)


def fuse_into_gathers(module) -> int:
    """Rewrite the gathers of elementwise producers (module docstring), through chains; how many extracts."""
    rewritten = 0
    changed = True
    while changed:
        changed = False
        for extract in ops_where(module, lambda o: o.name == "tensor.extract" and o.parent is not None
                                 and o.parent.name == "linalg.generic"):
            producer = _elementwise_producer(extract.operands[0])
            if producer is None:
                continue
            consumer = extract.parent
            reads = _domain_count(consumer)
            size = _static_count(ir.RankedTensorType(producer.results[0].type).shape)
            if reads is None or size is None or reads * GATHER_RATIO > size:
                continue
            _inline_at(extract, producer)
            _erase_if_unread(producer)
            rewritten += 1
            changed = True
            break   # the walk's ops may be gone: walk again
    return rewritten
