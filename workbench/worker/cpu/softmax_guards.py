"""A row's "all -inf" check read off its maximum (`lh-fold-all-neg-inf-checks`).

torch's `_safe_softmax` (every scaled_dot_product_attention, torch-mlir's decomposition) guards the rows
that are all -inf (fully masked: their softmax is NaN, the guard makes it 0): an `oeq -inf` i1 tensor of
the scores, an `andi` reduction of it over the softmax's dim, and a select of the normalized values. That
is a further pass over the scores (8 x 1500 x 1500 floats in Whisper's encoder) beside the softmax's own
max reduction over the same scores and dim.

A row is all -inf exactly when its `maximumf` reduction from -inf is -inf: maximumf propagates NaN (a row
with a NaN has max NaN, and NaN is no `oeq` -inf either), a row with a larger element has a larger max,
and an empty row is all -inf with max the init -inf. So where the same scores, read through the same
indexing map over the same loops, have such a max reduction, the and-reduction (of the `oeq -inf`
compare, an op of its own or in its body) becomes an elementwise `oeq -inf` of the max, over the
reduction's result: no pass over the scores (the elementwise fusion then takes it into the select).
Exact: the same bools.
"""
from __future__ import annotations

import math

from mlir import ir

from workbench.worker.cpu.dead_results import _erase_unread_init
from workbench.worker.ir_walk import iterator_types, ops_where


def _op(value):
    owner = value.owner
    return owner.operation if isinstance(owner, (ir.Operation, ir.OpView)) else None


def _constant_value(value):
    """The float of `value` where it is an arith.constant (a scalar, or a splat tensor), else None."""
    owner = _op(value)
    if owner is None or owner.name != "arith.constant":
        return None
    attr = owner.attributes["value"]
    if isinstance(attr, ir.FloatAttr):
        return ir.FloatAttr(attr).value
    try:
        dense = ir.DenseFPElementsAttr(attr)
    except (ValueError, TypeError):
        return None
    return dense.get_splat_value().value if dense.is_splat else None


def _is_neg_inf_in_body(value, op) -> bool:
    """Whether `value` (in the body of generic `op`) is -inf: a constant, or a block argument of an input
    that is a splat -inf constant."""
    if isinstance(value, ir.BlockArgument) and value.owner == op.regions[0].blocks[0]:
        n_inputs = len(op.operands) - len(op.results)
        if value.arg_number >= n_inputs:
            return False
        v = _constant_value(op.operands[value.arg_number])
    else:
        v = _constant_value(value)
    return v is not None and math.isinf(v) and v < 0


def _single_body_op(op, name: str):
    """The one op before the yield of generic `op`'s body where it is named `name`, else None."""
    if len(op.regions[0].blocks) != 1:
        return None
    ops = list(op.regions[0].blocks[0].operations)
    if len(ops) != 2 or ops[0].name != name or ops[1].name != "linalg.yield":
        return None
    if list(ops[1].operands) != [ops[0].results[0]]:
        return None
    return ops[0]


def _maps(op) -> list:
    return [ir.AffineMapAttr(a).value for a in ir.ArrayAttr(op.attributes["indexing_maps"])]


def _compared_input(op, cmp, argument_of):
    """The value compared `oeq -inf` by `cmp` (in generic `op`'s body) where that is the block argument
    of an input of `op`: (input index); else None."""
    if cmp is None or ir.IntegerAttr(cmp.attributes["predicate"]).value != 1:   # arith.cmpf oeq
        return None
    a, b = cmp.operands
    for x, other in ((a, b), (b, a)):
        if _is_neg_inf_in_body(other, op) and isinstance(x, ir.BlockArgument) and x.owner == argument_of:
            n_inputs = len(op.operands) - len(op.results)
            if x.arg_number < n_inputs:
                return x.arg_number
    return None


def _true_fill(init) -> bool:
    owner = _op(init)
    if owner is None or owner.name != "linalg.fill":
        return False
    c = _op(owner.operands[0])
    return c is not None and c.name == "arith.constant" and ir.IntegerAttr(c.attributes["value"]).value & 1 == 1


def _neg_inf_fill(init) -> bool:
    owner = _op(init)
    if owner is None or owner.name != "linalg.fill":
        return False
    v = _constant_value(owner.operands[0])
    return v is not None and math.isinf(v) and v < 0


def _all_neg_inf_source(red):
    """(scores, map of the scores in `red`'s loops, compare op to erase or None) where generic `red` is an
    and-reduction from true of `x oeq -inf` over the scores x; else None."""
    if len(red.results) != 1 or len(red.operands) != 2 or len(red.regions[0].blocks) != 1:
        return None
    rtype = red.results[0].type
    if not isinstance(rtype, ir.RankedTensorType) or str(ir.RankedTensorType(rtype).element_type) != "i1":
        return None
    if "reduction" not in iterator_types(red) or not _true_fill(red.operands[1]):
        return None
    body = red.regions[0].blocks[0]
    ops = list(body.operations)
    yield_op = ops[-1]
    combined = _op(yield_op.operands[0])
    if combined is None or combined.name != "arith.andi" or combined.block != body:
        return None
    acc = body.arguments[1]
    others = [v for v in combined.operands if v != acc]
    if len(others) != 1 or len(list(acc.uses)) != 1:
        return None
    other = others[0]
    red_maps = _maps(red)
    if isinstance(other, ir.BlockArgument) and other.owner == body and other.arg_number == 0 and len(ops) == 2:
        # the compare is an elementwise op of its own: identity maps over the scores' shape
        cmp_op = _op(red.operands[0])
        if cmp_op is None or cmp_op.name != "linalg.generic" or len(cmp_op.results) != 1:
            return None
        if any(it != "parallel" for it in iterator_types(cmp_op)):
            return None
        cmp = _single_body_op(cmp_op, "arith.cmpf")
        index = _compared_input(cmp_op, cmp, cmp_op.regions[0].blocks[0])
        if index is None:
            return None
        cmp_maps = _maps(cmp_op)
        if not (cmp_maps[index].is_permutation and cmp_maps[index] == cmp_maps[-1]
                and cmp_maps[-1] == ir.AffineMap.get_identity(cmp_maps[-1].n_dims)):
            return None
        return cmp_op.operands[index], red_maps[0], cmp_op
    # the compare in the reduction's body (fused): cmpf oeq in, -inf; andi
    cmp = _op(other)
    if cmp is None or cmp.name != "arith.cmpf" or cmp.block != body or len(ops) != 3:
        return None
    index = _compared_input(red, cmp, body)
    if index != 0:
        return None
    return red.operands[0], red_maps[0], None


def _is_max_of(mx, scores, scores_map, iterators) -> bool:
    if mx.name != "linalg.generic" or len(mx.results) != 1 or len(mx.operands) != 2:
        return False
    if mx.operands[0] != scores or iterator_types(mx) != iterators or _maps(mx)[0] != scores_map:
        return False
    if not _neg_inf_fill(mx.operands[1]):
        return False
    m = _single_body_op(mx, "arith.maximumf")
    if m is None:
        return False
    args = mx.regions[0].blocks[0].arguments
    return set(m.operands) == {args[0], args[1]} and args[0] != args[1]


def _new_input_map(red_out, mx_out, n_red_dims: int):
    """The map of the max's result in a parallel loop nest over the reduction's result: each of the max's
    result dims is the position of that loop dim among the reduction's results; None where one is not."""
    position = {}
    for p, e in enumerate(red_out.results):
        if isinstance(e, ir.AffineDimExpr):
            position[ir.AffineDimExpr(e).position] = p
        elif not (isinstance(e, ir.AffineConstantExpr) and ir.AffineConstantExpr(e).value == 0):
            return None
    exprs = []
    for e in mx_out.results:
        if isinstance(e, ir.AffineDimExpr) and ir.AffineDimExpr(e).position in position:
            exprs.append(ir.AffineDimExpr.get(position[ir.AffineDimExpr(e).position]))
        elif isinstance(e, ir.AffineConstantExpr) and ir.AffineConstantExpr(e).value == 0:
            exprs.append(ir.AffineConstantExpr.get(0))
        else:
            return None
    # every kept (parallel) dim of the reduction's result must be one of the max's
    kept = {ir.AffineDimExpr(e).position for e in mx_out.results if isinstance(e, ir.AffineDimExpr)}
    if set(position) != kept:
        return None
    return ir.AffineMap.get(len(red_out.results), 0, exprs)


def _fold(red) -> bool:
    red = red.operation
    found = _all_neg_inf_source(red)
    if found is None:
        return False
    scores, scores_map, cmp_op = found
    iterators = iterator_types(red)
    block = red.block
    order = {op: n for n, op in enumerate(block.operations)}
    maxes = [u.owner.operation for u in scores.uses
             if isinstance(u.owner, (ir.Operation, ir.OpView)) and u.owner.operation.block == block
             and u.owner.operation in order and order[u.owner.operation] < order[red]
             and _is_max_of(u.owner.operation, scores, scores_map, iterators)]
    if not maxes:
        return False
    mx = maxes[0]
    red_out, mx_out = _maps(red)[-1], _maps(mx)[-1]
    in_map = _new_input_map(red_out, mx_out, len(iterators))
    if in_map is None:
        return False
    rtype = ir.RankedTensorType(red.results[0].type)
    if any(d < 0 for d in rtype.shape):
        return False
    rank = rtype.rank
    f32 = ir.RankedTensorType(mx.results[0].type).element_type
    i1 = rtype.element_type
    with ir.InsertionPoint(red), red.location:
        empty = ir.Operation.create("tensor.empty", results=[rtype], operands=[]).result
        new = ir.Operation.create(
            "linalg.generic", results=[rtype], operands=[mx.results[0], empty], regions=1,
            attributes={"indexing_maps": ir.ArrayAttr.get([ir.AffineMapAttr.get(in_map),
                                                           ir.AffineMapAttr.get(ir.AffineMap.get_identity(rank))]),
                        "iterator_types": ir.ArrayAttr.get(
                            [ir.Attribute.parse("#linalg.iterator_type<parallel>")] * rank),
                        "operandSegmentSizes": ir.DenseI32ArrayAttr.get([1, 1])})
        body = new.regions[0].blocks.append(f32, i1)
        with ir.InsertionPoint(body):
            neg_inf = ir.Operation.create("arith.constant", results=[f32],
                                          attributes={"value": ir.FloatAttr.get(f32, float("-inf"))}).result
            eq = ir.Operation.create("arith.cmpf", results=[i1], operands=[body.arguments[0], neg_inf],
                                     attributes={"predicate": ir.IntegerAttr.get(ir.IntegerType.get_signless(64), 1)}
                                     ).result
            ir.Operation.create("linalg.yield", operands=[eq])
    old_init = red.operands[1]
    red.results[0].replace_all_uses_with(new.results[0])
    red.erase()
    _erase_unread_init(old_init)
    if cmp_op is not None and not list(cmp_op.results[0].uses):
        cmp_init = cmp_op.operands[len(cmp_op.operands) - 1]
        cmp_op.erase()
        _erase_unread_init(cmp_init)
    return True


def fold_all_neg_inf_checks(module) -> int:
    """Fold every "row all -inf" and-reduction that has a max of the same scores (module docstring); how many."""
    return sum(_fold(op) for op in ops_where(module, lambda o: o.name == "linalg.generic"))
