"""A row scaling of a contraction's operand applied to the contraction's result (`lh-scale-after-contractions`).

Attention's softmax ends with a division of every exp by its row's sum (and torch's `_safe_softmax` guard,
a select of 0 for rows that are all -inf), and the probabilities then meet V in a batch matmul: the
division is a pass over the 8 x 1500 x 1500 scores of Whisper's encoder, and its result another 72 MB
tensor written and read back. Scaling commutes with the sum over the contraction's reduction dims where
the scale does not depend on them: sum_k (E[m, k] / s[m]) V[k, n] = (sum_k E[m, k] V[k, n]) / s[m], and
sum_k select(c[m], 0, x) V = select(c[m], 0, sum_k x V). So a contraction (a linalg.generic of `mulf` /
`addf` from a zero fill) whose operand is such an elementwise op of one full input E (read the way the
result is written) and of values that do not vary along the contraction's reduction dims reads E
instead, and the elementwise op runs on the contraction's result: over 8 x 1500 x 64 elements, not 8 x
1500 x 1500 (flash attention's final rescale).

The elementwise body may be, in E: `divf(x, r)`, `mulf(x, r)` / `mulf(r, x)`, `negf(x)`, `select(c, 0, x)` /
`select(c, x, 0)` (a constant 0.0), with r / c computed from the other inputs and constants alone (any
other op that reads E, or a body op with regions or `linalg.index`, keeps the op as it is). Not
bitwise the same (the division after the sum rounds differently); within the float checks.
"""
from __future__ import annotations

from mlir import ir

from workbench.worker.cpu.dead_results import _erase_unread_init
from workbench.worker.ir_walk import iterator_types, ops_where

#: ops linear in their E operand (the other operand, if any, free of E)
LINEAR_OPS = ("arith.divf", "arith.mulf", "arith.negf", "arith.select")


def _op(value):
    owner = value.owner
    return owner.operation if isinstance(owner, (ir.Operation, ir.OpView)) else None


def _maps(op) -> list:
    return [ir.AffineMapAttr(a).value for a in ir.ArrayAttr(op.attributes["indexing_maps"])]


def _is_zero_float(value) -> bool:
    owner = _op(value)
    if owner is None or owner.name != "arith.constant" or not isinstance(owner.attributes["value"], ir.FloatAttr):
        return False
    return ir.FloatAttr(owner.attributes["value"]).value == 0.0


def _zero_fill(value) -> bool:
    owner = _op(value)
    return owner is not None and owner.name == "linalg.fill" and _is_zero_float(owner.operands[0])


def _contraction_body(op) -> bool:
    """Whether generic `op` is sum(in0 * in1) into its one output."""
    if len(op.operands) != 3 or len(op.results) != 1 or len(op.regions[0].blocks) != 1:
        return False
    body = op.regions[0].blocks[0]
    ops = list(body.operations)
    if len(ops) != 3 or [o.name for o in ops] != ["arith.mulf", "arith.addf", "linalg.yield"]:
        return False
    a, b, out = body.arguments
    mul, add, yield_op = ops
    return (set(mul.operands) == {a, b} and a != b and set(add.operands) == {out, mul.results[0]}
            and list(yield_op.operands) == [add.results[0]])


def _linear_in(producer, e_index: int) -> bool:
    """Whether the body of elementwise generic `producer` is linear in its input `e_index` (module docstring)."""
    body = producer.regions[0].blocks[0]
    n_inputs = len(producer.operands) - 1
    if list(body.arguments[n_inputs].uses):
        return False
    linear = {body.arguments[e_index]}
    for o in list(body.operations)[:-1]:
        if o.regions or o.name == "linalg.index":
            return False
        reads = [v for v in o.operands if v in linear]
        if not reads:
            continue
        if o.name not in LINEAR_OPS or len(o.results) != 1:
            return False
        operands = list(o.operands)
        if o.name == "arith.negf":
            ok = True
        elif o.name == "arith.divf":
            ok = operands[0] in linear and operands[1] not in linear
        elif o.name == "arith.mulf":
            ok = len(reads) == 1 and operands[0] != operands[1]
        else:   # select(c, x, 0) / select(c, 0, x)
            c, t, f = operands
            ok = c not in linear and ((t in linear and f not in linear and _is_zero_float(f))
                                      or (f in linear and t not in linear and _is_zero_float(t)))
        if not ok:
            return False
        linear.add(o.results[0])
    yield_op = list(body.operations)[-1]
    return len(yield_op.operands) == 1 and yield_op.operands[0] in linear


def _substitute(expr, results: list):
    """A dim / constant expression with each dim d_t replaced by results[t] (dims / constants)."""
    if isinstance(expr, ir.AffineDimExpr):
        return results[ir.AffineDimExpr(expr).position]
    if isinstance(expr, ir.AffineConstantExpr):
        return expr
    return None


def _dead_views(value) -> list:
    """The users of `value` that are reshapes nothing reads (the fusion leaves them)."""
    return [u.owner.operation for u in value.uses
            if u.owner.operation.name in ("tensor.expand_shape", "tensor.collapse_shape")
            and not list(u.owner.operation.results[0].uses)]


def _scale(contraction) -> bool:
    c = contraction.operation
    if not _contraction_body(c) or not _zero_fill(c.operands[2]):
        return False
    iterators = iterator_types(c)
    reductions = {n for n, it in enumerate(iterators) if it == "reduction"}
    if not reductions:
        return False
    c_maps = _maps(c)
    out_map = c_maps[2]
    # the result: each parallel loop dim once, in some order
    out_position = {}
    for p, e in enumerate(out_map.results):
        if not isinstance(e, ir.AffineDimExpr) or ir.AffineDimExpr(e).position in reductions:
            return False
        out_position[ir.AffineDimExpr(e).position] = p
    if set(out_position) != set(range(len(iterators))) - reductions:
        return False
    for i in (0, 1):
        producer = _op(c.operands[i])
        if (producer is None or producer.name != "linalg.generic" or len(producer.results) != 1
                or len(list(producer.results[0].uses)) - len(_dead_views(producer.results[0])) != 1
                or len(producer.regions[0].blocks) != 1
                or any(it != "parallel" for it in iterator_types(producer))):
            continue
        p_maps = _maps(producer)
        n_inputs = len(producer.operands) - 1
        rank = p_maps[-1].n_dims
        identity = ir.AffineMap.get_identity(rank)
        if p_maps[-1] != identity:
            continue
        element = ir.RankedTensorType(producer.results[0].type).element_type
        full = [j for j in range(n_inputs) if p_maps[j] == identity
                and ir.RankedTensorType(producer.operands[j].type).element_type == element]
        operand_map = c_maps[i]
        if any(not isinstance(e, (ir.AffineDimExpr, ir.AffineConstantExpr)) for e in operand_map.results):
            continue
        for j in full:
            if not _linear_in(producer, j):
                continue
            # the other inputs, indexed by the contraction's loops: free of its reduction dims
            epilogue_maps = []
            for k in range(n_inputs):
                if k == j:
                    continue
                exprs = [_substitute(e, list(operand_map.results)) for e in p_maps[k].results]
                if any(x is None for x in exprs):
                    break
                out_exprs = []
                for x in exprs:
                    if isinstance(x, ir.AffineDimExpr):
                        d = ir.AffineDimExpr(x).position
                        if d not in out_position:
                            break
                        out_exprs.append(ir.AffineDimExpr.get(out_position[d]))
                    else:
                        out_exprs.append(x)
                if len(out_exprs) != len(exprs):
                    break
                epilogue_maps.append(ir.AffineMap.get(len(out_map.results), 0, out_exprs))
            else:
                _rewrite(c, i, producer, j, epilogue_maps)
                return True
    return False


def _rewrite(c, i: int, producer, j: int, epilogue_maps: list) -> None:
    n_inputs = len(producer.operands) - 1
    operands = list(c.operands)
    operands[i] = producer.operands[j]
    attributes = {a.name: a.attr for a in (c.attributes[n] for n in range(len(c.attributes)))}
    result_type = c.results[0].type
    rank = ir.RankedTensorType(result_type).rank
    element = ir.RankedTensorType(result_type).element_type
    others = [k for k in range(n_inputs) if k != j]
    with ir.InsertionPoint(c), c.location:
        new = ir.Operation.create("linalg.generic", results=[result_type], operands=operands,
                                  attributes=attributes, regions=1)
    c.regions[0].blocks[0].append_to(new.regions[0])
    with ir.InsertionPoint(c), producer.location:
        empty = ir.Operation.create("tensor.empty", results=[result_type], operands=[]).result
        identity = ir.AffineMapAttr.get(ir.AffineMap.get_identity(rank))
        epilogue = ir.Operation.create(
            "linalg.generic", results=[result_type],
            operands=[new.results[0]] + [producer.operands[k] for k in others] + [empty], regions=1,
            attributes={"indexing_maps": ir.ArrayAttr.get([identity] + [ir.AffineMapAttr.get(m) for m in epilogue_maps]
                                                          + [identity]),
                        "iterator_types": ir.ArrayAttr.get([ir.Attribute.parse("#linalg.iterator_type<parallel>")] * rank),
                        "operandSegmentSizes": ir.DenseI32ArrayAttr.get([1 + len(others), 1])})
    old_body = producer.regions[0].blocks[0]
    block = epilogue.regions[0].blocks.append(
        element, *[old_body.arguments[k].type for k in others], element)
    mapping = {old_body.arguments[j]: block.arguments[0]}
    for n, k in enumerate(others):
        mapping[old_body.arguments[k]] = block.arguments[1 + n]
    with ir.InsertionPoint(block):
        for o in old_body.operations:
            clone = o.clone()
            for n, v in enumerate(o.operands):
                if v in mapping:
                    clone.operands[n] = mapping[v]
            for old, fresh in zip(o.results, clone.results):
                mapping[old] = fresh
    c.results[0].replace_all_uses_with(epilogue.results[0])
    c.erase()
    init = producer.operands[n_inputs]
    for view in _dead_views(producer.results[0]):
        view.erase()
    producer.erase()
    _erase_unread_init(init)


def scale_after_contractions(module) -> int:
    """Move every row scaling of a contraction's operand after the contraction (module docstring); how many."""
    return sum(_scale(op) for op in ops_where(module, lambda o: o.name == "linalg.generic"
                                              and "reduction" in iterator_types(o)))
