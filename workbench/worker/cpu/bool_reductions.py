"""Reductions into bools accumulate in bytes (`lh-widen-bool-reductions`).

`torch.all` / `torch.any` (and the "is the whole row -inf" check torch-mlir writes into every
scaled_dot_product_attention) are linalg reductions with an i1 accumulator combined by `arith.andi`
/ `ori` / `xori`. The vector lowering leaves a `vector.multi_reduction` over i1 unlowered, so the
selector keeps them scalar loops: an 8M-element check of an attention's scores, compared in f64
element by element. Here the accumulator becomes i8 (the combined value extended with `extui`: and /
or / xor of 0/1 bytes are those of the bools), the init is extended the same way (a fill of a
constant: a fill of the byte) and the result truncated back to i1 by an elementwise op after the
reduction, which the elementwise fusion then takes into its consumers. The reduction itself is then
an i8 reduction the vectorizer takes like any other.
"""
from __future__ import annotations

from mlir import ir
from mlir.dialects import linalg

from workbench.worker.cpu.dead_results import _erase_unread_init
from workbench.worker.ir_walk import ops_where

#: combiners that mean the same on 0/1 bytes as on bools
BOOL_COMBINERS = ("arith.andi", "arith.ori", "arith.xori")


def _is_i1(t) -> bool:
    return isinstance(t, ir.IntegerType) and ir.IntegerType(t).width == 1


def _tensor_of(t, element):
    shaped = ir.RankedTensorType(t)
    return ir.RankedTensorType.get(shaped.shape, element)


def _identity_map(rank: int):
    return ir.AffineMapAttr.get(ir.AffineMap.get_identity(rank))


def _elementwise(value, result_type, cast: str):
    """`cast` (arith.extui / arith.trunci) of every element of `value` (a static shape): a linalg.generic,
    at the insertion point."""
    rank = ir.RankedTensorType(value.type).rank
    empty = ir.Operation.create("tensor.empty", results=[result_type], operands=[]).result
    op = ir.Operation.create(
        "linalg.generic", results=[result_type], operands=[value, empty], regions=1,
        attributes={"indexing_maps": ir.ArrayAttr.get([_identity_map(rank)] * 2),
                    "iterator_types": ir.ArrayAttr.get([ir.Attribute.parse("#linalg.iterator_type<parallel>")] * rank),
                    "operandSegmentSizes": ir.DenseI32ArrayAttr.get([1, 1])})
    source = ir.RankedTensorType(value.type).element_type
    target = ir.RankedTensorType(result_type).element_type
    block = op.regions[0].blocks.append(source, target)
    with ir.InsertionPoint(block):
        converted = ir.Operation.create(cast, results=[target], operands=[block.arguments[0]]).result
        ir.Operation.create("linalg.yield", operands=[converted])
    return op.result


def _byte_init(init, i8_type):
    """The i8 form of the reduction's init `init` (a tensor of i1): a fill of the byte where it is a
    fill of a constant, else an elementwise extension."""
    owner = init.owner
    if isinstance(owner, (ir.Operation, ir.OpView)) and owner.operation.name == "linalg.fill":
        fill = owner.operation
        scalar = fill.operands[0].owner
        if isinstance(scalar, (ir.Operation, ir.OpView)) and scalar.operation.name == "arith.constant":
            bit = ir.IntegerAttr(scalar.operation.attributes["value"]).value & 1
            byte = ir.Operation.create("arith.constant", results=[ir.IntegerType.get_signless(8)],
                                       attributes={"value": ir.IntegerAttr.get(ir.IntegerType.get_signless(8), bit)}).result
            empty = ir.Operation.create("tensor.empty", results=[i8_type], operands=[]).result
            return linalg.fill(byte, outs=[empty])
    return _elementwise(init, i8_type, "arith.extui")


def _widen(op) -> bool:
    op = op.operation
    if len(op.results) != 1 or len(op.regions[0].blocks) != 1:
        return False
    result_type = op.results[0].type
    if not isinstance(result_type, ir.RankedTensorType) or not _is_i1(ir.RankedTensorType(result_type).element_type):
        return False
    if any(d < 0 for d in ir.RankedTensorType(result_type).shape):
        return False
    iterators = [str(a) for a in ir.ArrayAttr(op.attributes["iterator_types"])]
    if not any("reduction" in it for it in iterators):
        return False
    body = op.regions[0].blocks[0]
    accumulator = body.arguments[len(body.arguments) - 1]
    yield_op = list(body.operations)[-1]
    combined = yield_op.operands[0].owner
    if not isinstance(combined, (ir.Operation, ir.OpView)):
        return False
    combined = combined.operation
    uses = list(accumulator.uses)
    if (combined.name not in BOOL_COMBINERS or len(uses) != 1 or uses[0].owner.operation != combined
            or len(list(combined.results[0].uses)) != 1):
        return False
    other = [v for v in combined.operands if v != accumulator]
    if len(other) != 1:
        return False
    i8 = ir.IntegerType.get_signless(8)
    i8_type = _tensor_of(result_type, i8)
    with ir.InsertionPoint(op), op.location:
        init = _byte_init(op.operands[len(op.operands) - 1], i8_type)
    accumulator.set_type(i8)
    with ir.InsertionPoint(combined), combined.location:
        wide = ir.Operation.create("arith.extui", results=[i8], operands=[other[0]]).result
        new_combined = ir.Operation.create(combined.name, results=[i8], operands=[wide, accumulator]).result
    with ir.InsertionPoint(yield_op), yield_op.location:
        ir.Operation.create("linalg.yield", operands=[new_combined])
    yield_op.erase()
    combined.erase()
    attributes = {a.name: a.attr for a in (op.attributes[n] for n in range(len(op.attributes)))}
    with ir.InsertionPoint(op), op.location:
        new = ir.Operation.create("linalg.generic", results=[i8_type],
                                  operands=list(op.operands)[:-1] + [init], attributes=attributes, regions=1)
    body.append_to(new.regions[0])
    with ir.InsertionPoint(op), op.location:
        narrow = _elementwise(new.result, result_type, "arith.trunci")
    old_init = op.operands[len(op.operands) - 1]
    op.results[0].replace_all_uses_with(narrow)
    op.erase()
    _erase_unread_init(old_init)
    return True


def widen_bool_reductions(module) -> int:
    """Widen every bool reduction of the module (module docstring); how many."""
    return sum(_widen(op) for op in ops_where(module, lambda o: o.name == "linalg.generic"))
