"""Sibling reductions of the same input merged into one multi-result linalg.generic
(`lh-merge-sibling-reductions`).

torch-mlir's group norm reduces its input twice with nothing between the two: the f64 sum (for the mean
that the variance subtracts) and the f32 sum (for the f32 mean). After the elementwise fusion both are
`linalg.generic`s with the same inputs, indexing maps and iterators, one result each: two passes over
the input where one read of each element could feed both accumulators. Here two such reductions A (first)
and B in one block, B depending neither on A nor on anything after A (its body reads no value defined after A; its init may be a `linalg.fill` of a
`tensor.empty` and a constant defined after A: they are moved up), become one generic at A's place: A's inputs, A's and
B's inits, A's body followed by B's (B's input arguments read A's), yielding both results. Each element is
computed as before (same ops, same order per accumulator): the results are bitwise those of the two ops.
"""
from __future__ import annotations

from mlir import ir

from workbench.worker.ir_walk import ops_where


def _attr(op, name: str):
    return op.attributes[name] if name in op.attributes else None


def _n_inputs(op) -> int:
    return len(op.operands) - len(op.results)


def _is_sibling_reduction(op) -> bool:
    """A one-result linalg.generic with a reduction loop and a body of plain ops (no nested regions)."""
    if op.name != "linalg.generic" or len(op.results) != 1:
        return False
    if "reduction" not in str(_attr(op, "iterator_types")):
        return False
    return all(len(inner.regions) == 0 for inner in op.regions[0].blocks[0].operations)


def _same_shape_of_work(a, b) -> bool:
    n = _n_inputs(a)
    if n != _n_inputs(b) or n < 1 or str(_attr(a, "iterator_types")) != str(_attr(b, "iterator_types")):
        return False
    if any(x != y for x, y in zip(list(a.operands)[:n], list(b.operands)[:n])):
        return False
    return [str(m) for m in ir.ArrayAttr(a.attributes["indexing_maps"])] == \
        [str(m) for m in ir.ArrayAttr(b.attributes["indexing_maps"])]


def _position(block_ops: list, op) -> int:
    for i, o in enumerate(block_ops):
        if o == op:
            return i
    return -1


def _init_chain_movable(init, a, block_ops: list) -> list | None:
    """The ops to move before `a` so that `init` dominates it ([] when it already does), or None."""
    owner = init.owner
    if not isinstance(owner, (ir.Operation, ir.OpView)):
        return []   # a block argument
    owner = owner.operation
    pos_a = _position(block_ops, a)
    if owner.block != a.block or _position(block_ops, owner) < pos_a:
        return []
    if owner.name == "tensor.empty" and len(owner.operands) == 0:
        return [owner]
    if owner.name == "linalg.fill" and len(owner.operands) == 2:
        value, dest = owner.operands
        moves = []
        for v in (value, dest):
            sub = v.owner
            if isinstance(sub, (ir.Operation, ir.OpView)) and sub.operation.block == a.block \
                    and _position(block_ops, sub.operation) >= pos_a:
                if sub.operation.name in ("tensor.empty", "arith.constant") and len(sub.operation.operands) == 0:
                    moves.append(sub.operation)
                else:
                    return None
        return moves + [owner]
    return None


def _captures_dominate(b, a, block_ops: list) -> bool:
    """Whether every value B's body reads from outside it (a scalar constant, a bias) is defined before A
    (or outside A's block), so that it still dominates B's ops once they are in A's body."""
    pos_a = _position(block_ops, a)
    body = b.regions[0].blocks[0]
    for inner in body.operations:
        for v in inner.operands:
            owner = v.owner
            if not isinstance(owner, (ir.Operation, ir.OpView)):
                continue   # a block argument: B's own, or of a block around A (defined before it)
            owner = owner.operation
            if owner.block == body:
                continue
            if owner.block == a.block and _position(block_ops, owner) >= pos_a:
                return False
    return True


def _merge(a, b, moves: list) -> ir.Operation:
    for m in moves:
        m.move_before(a)
    n = _n_inputs(a)
    block_a, block_b = a.regions[0].blocks[0], b.regions[0].blocks[0]
    out_type = b.results[0].type
    new_arg = block_a.add_argument(block_b.arguments[n].type, block_b.arguments[n].location)
    yield_a = list(block_a.operations)[-1]
    yield_b = list(block_b.operations)[-1]
    for i in range(n):
        block_b.arguments[i].replace_all_uses_with(block_a.arguments[i])
    block_b.arguments[n].replace_all_uses_with(new_arg)
    for inner in list(block_b.operations)[:-1]:
        inner.move_before(yield_a)
    maps = list(ir.ArrayAttr(a.attributes["indexing_maps"]))
    b_maps = list(ir.ArrayAttr(b.attributes["indexing_maps"]))
    attributes = {x.name: x.attr for x in (a.attributes[k] for k in range(len(a.attributes)))}
    attributes["indexing_maps"] = ir.ArrayAttr.get(maps + [b_maps[-1]])
    if "operandSegmentSizes" in attributes:
        attributes["operandSegmentSizes"] = ir.DenseI32ArrayAttr.get([n, 2])
    with ir.InsertionPoint(yield_a), yield_a.location:
        ir.Operation.create("linalg.yield", operands=list(yield_a.operands) + list(yield_b.operands))
    yield_a.erase()
    with ir.InsertionPoint(a), a.location:
        merged = ir.Operation.create("linalg.generic", results=[a.results[0].type, out_type],
                                     operands=list(a.operands) + [b.operands[n]], attributes=attributes, regions=1)
    block_a.append_to(merged.regions[0])
    a.results[0].replace_all_uses_with(merged.results[0])
    b.results[0].replace_all_uses_with(merged.results[1])
    a.erase()
    b.erase()
    return merged


def _innermost_reduced(op) -> int:
    """The extent of the op's innermost loop where it is a reduction read along the first input's last dim
    (0: not such a loop, or not static)."""
    if "reduction" not in str(_attr(op, "iterator_types")).rstrip("]").split(",")[-1]:
        return 0
    t = op.operands[0].type
    try:
        shaped = ir.ShapedType(t)
    except ValueError:
        return 0
    return shaped.shape[-1] if shaped.rank and shaped.shape[-1] > 0 else 0


def merge_sibling_reductions(module, min_row: int = 0) -> int:
    """Merges pairs of sibling reductions (module docstring) until none is left; the number of merges.
    `min_row`: only reductions whose innermost loop reduces at least that many elements of a row."""
    merged = 0
    changed = True
    while changed:
        changed = False
        for a in ops_where(module, _is_sibling_reduction):
            if min_row and _innermost_reduced(a) < min_row:
                continue
            block_ops = [o.operation for o in a.block.operations]
            pos_a = _position(block_ops, a)
            for b in block_ops[pos_a + 1:]:
                if (not _is_sibling_reduction(b) or not _same_shape_of_work(a, b)
                        or not _captures_dominate(b, a, block_ops)):
                    continue
                moves = _init_chain_movable(b.operands[_n_inputs(b)], a, block_ops)
                if moves is None:
                    continue
                _merge(a, b, moves)
                merged += 1
                changed = True
                break
            if changed:
                break
    return merged
