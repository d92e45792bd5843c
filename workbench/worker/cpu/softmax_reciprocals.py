"""A softmax's division by its row sums as a multiplication by their reciprocals (`lh-softmax-reciprocals`).

The last step of a softmax written out (torch-mlir's decomposition: max, exp(x - max), sum, divide) divides
every element of the row by the row's sum: one `divf` per element, 8 x 1500 x 1500 of them in an attention
layer of Whisper's encoder, and a vector division costs ~20 times a multiplication (AVX-512: one zmm
`vdivps` per 10 cycles against two `vmulps` per cycle). Here the row sums' reciprocals are computed once
per row (an elementwise op over the rows, which the CPU selector's row chains take in as a "rows" member)
and the elements multiplied by them, as torch's own CPU softmax kernel does (`x * (1 / sum)`).

Taken only where the divisor is a softmax's denominator: an `addf` reduction from 0 of an op whose body
has a `math.exp` (a sum of exponentials), read by the dividing op through a map that drops some of its
loops (constant along the row), and the block argument read only as that divisor. Such a sum is >= 1 where
the max was subtracted (its largest term is exp(0)): its reciprocal neither overflows nor loses range;
x * (1 / s) differs from x / s by at most an ulp or so (within the float checks); a row that is NaN (all
-inf) stays NaN, the guard's select after sees it the same.
"""
from __future__ import annotations

from mlir import ir

from workbench.worker.ir_walk import iterator_types, ops_where


def _op(value):
    owner = value.owner
    return owner.operation if isinstance(owner, (ir.Operation, ir.OpView)) else None


def _maps(op) -> list:
    return [ir.AffineMapAttr(a).value for a in ir.ArrayAttr(op.attributes["indexing_maps"])]


def _is_zero_fill(value) -> bool:
    fill = _op(value)
    if fill is None or fill.name != "linalg.fill":
        return False
    c = _op(fill.operands[0])
    return (c is not None and c.name == "arith.constant" and isinstance(c.attributes["value"], ir.FloatAttr)
            and ir.FloatAttr(c.attributes["value"]).value == 0.0)


def _sum_of_exponentials(value) -> bool:
    """Whether `value` is a generic's addf reduction from 0 of the result of an op with math.exp in its body."""
    red = _op(value)
    if red is None or red.name != "linalg.generic" or len(red.results) != 1 or len(red.operands) != 2:
        return False
    if "reduction" not in iterator_types(red) or not _is_zero_fill(red.operands[1]):
        return False
    ops = list(red.regions[0].blocks[0].operations)
    args = red.regions[0].blocks[0].arguments
    if len(ops) != 2 or ops[0].name != "arith.addf" or set(ops[0].operands) != {args[0], args[1]}:
        return False
    source = _op(red.operands[0])
    if source is None or source.name != "linalg.generic":
        return False
    found = []
    source.walk(lambda o: (found.append(o) if o.name == "math.exp" else None, ir.WalkResult.ADVANCE)[1])
    return bool(found)


def _reciprocal(value):
    """1 / every element of `value` (a static f32 tensor): a linalg.generic, at the insertion point."""
    t = ir.RankedTensorType(value.type)
    rank, element = t.rank, t.element_type
    empty = ir.Operation.create("tensor.empty", results=[t], operands=[]).result
    identity = ir.AffineMapAttr.get(ir.AffineMap.get_identity(rank))
    op = ir.Operation.create(
        "linalg.generic", results=[t], operands=[value, empty], regions=1,
        attributes={"indexing_maps": ir.ArrayAttr.get([identity, identity]),
                    "iterator_types": ir.ArrayAttr.get([ir.Attribute.parse("#linalg.iterator_type<parallel>")] * rank),
                    "operandSegmentSizes": ir.DenseI32ArrayAttr.get([1, 1])})
    block = op.regions[0].blocks.append(element, element)
    with ir.InsertionPoint(block):
        one = ir.Operation.create("arith.constant", results=[element],
                                  attributes={"value": ir.FloatAttr.get(element, 1.0)}).result
        r = ir.Operation.create("arith.divf", results=[element], operands=[one, block.arguments[0]]).result
        ir.Operation.create("linalg.yield", operands=[r])
    return op.result


def _rewrite(op) -> int:
    op = op.operation
    if len(op.regions[0].blocks) != 1 or any(it != "parallel" for it in iterator_types(op)):
        return 0
    body = op.regions[0].blocks[0]
    n_inputs = len(op.operands) - len(op.results)
    maps = _maps(op)
    out_rank = maps[-1].n_dims
    changed = 0
    for k in range(n_inputs):
        arg = body.arguments[k]
        uses = list(arg.uses)
        if not uses or any(u.owner.operation.name != "arith.divf" or u.operand_number != 1 for u in uses):
            continue
        used = {ir.AffineDimExpr(e).position for e in maps[k].results if isinstance(e, ir.AffineDimExpr)}
        if not isinstance(arg.type, ir.F32Type) or len(used) >= out_rank:
            continue   # (a divisor read through every loop is no row's)
        if not _sum_of_exponentials(op.operands[k]):
            continue
        t = op.operands[k].type
        if not isinstance(t, ir.RankedTensorType) or any(d < 0 for d in ir.RankedTensorType(t).shape):
            continue
        with ir.InsertionPoint(op), op.location:
            op.operands[k] = _reciprocal(op.operands[k])
        for u in uses:
            div = u.owner.operation
            with ir.InsertionPoint(div), div.location:
                mul = ir.Operation.create("arith.mulf", results=[div.results[0].type],
                                          operands=[div.operands[0], arg])
            div.results[0].replace_all_uses_with(mul.results[0])
            div.erase()
        changed += 1
    return changed


def softmax_reciprocals(module) -> int:
    """Rewrite every softmax division by row sums (module docstring); how many divisors."""
    return sum(_rewrite(op) for op in ops_where(module, lambda o: o.name == "linalg.generic"))
