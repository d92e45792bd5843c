"""`lh-fold-splat-extracts`: a `tensor.extract` of a tensor whose every element is known (a splat constant,
`dense<1.0e-02>`, zeros, ones; a `tensor.splat`; a dense constant at constant indices) becomes that value.

    %w = arith.constant dense<1.0e-02> : tensor<4x6x3x3xf32>
    linalg.generic ... { %e = tensor.extract %w[%i, %j, %k, %l] ...     ->    linalg.yield %cst_1e-2 }

Why: these are the extracts MLIR's folder removes (tensor.extract's fold), and any pass that runs the
greedy pattern driver folds them: `inspect` reads its loop structures from a generalized copy of the
module (linalg-generalize-named-ops), where a filter flip of a splat weight (a ConvTranspose2d's) had no
extract left, so the selector planned a plain vectorization for an op that still gathered, and
`select --apply` failed ("Attempted to vectorize, but failed"). The selector's preparation folds them in
the IR it schedules too (inspect now reads generic ops as they are), so both sides see a body that yields
the value: a broadcast, not a gather.
"""
from __future__ import annotations


#: ops without side effects that a folded extract may leave unread
_PURE = ("arith.constant", "arith.addi", "arith.subi", "arith.muli", "arith.divsi", "arith.divui", "arith.remsi",
         "arith.remui", "arith.index_cast", "arith.index_castui", "arith.select", "arith.minsi", "arith.maxsi",
         "arith.cmpi", "linalg.index", "tensor.splat", "affine.apply")


def _known_element(extract):
    """The attribute of the element `extract` reads, where the source's elements are known; else None."""
    from mlir import ir

    from workbench.worker.ir_walk import defining_op

    source = defining_op(extract.operands[0])
    if source is None:
        return None
    if source.name == "tensor.splat":
        return source.operands[0]
    if source.name != "arith.constant":
        return None
    try:
        dense = ir.DenseElementsAttr(source.attributes["value"])
    except (ValueError, TypeError):   # (a dense_resource blob: its elements are not known here)
        return None
    if dense.is_splat:
        return dense.get_splat_value()
    indices = []
    for v in list(extract.operands)[1:]:
        producer = defining_op(v)
        if producer is None or producer.name != "arith.constant":
            return None
        indices.append(ir.IntegerAttr(producer.attributes["value"]).value)
    shape = list(ir.RankedTensorType(dense.type).shape)
    flat = 0
    for i, d in zip(indices, shape):
        if not 0 <= i < d:
            return None
        flat = flat * d + i
    element_type = ir.RankedTensorType(dense.type).element_type
    try:
        if isinstance(element_type, ir.FloatType):
            return ir.FloatAttr.get(element_type, ir.DenseFPElementsAttr(dense)[flat])
        return ir.IntegerAttr.get(element_type, ir.DenseIntElementsAttr(dense)[flat])
    except (ValueError, TypeError, IndexError):   # (an element type the bindings do not read: left)
        return None


def fold_splat_extracts(module) -> int:
    """Replace every tensor.extract of a known element (module docstring) by that value; how many."""
    from mlir import ir
    from mlir.dialects import arith

    from workbench.worker.ir_walk import erase_unread, ops_where

    folded = 0
    for op in ops_where(module, lambda o: o.name == "tensor.extract"):
        element = _known_element(op)
        if element is None:
            continue
        if isinstance(element, ir.Value):
            value = element
        else:
            with ir.InsertionPoint(op), op.location:
                value = arith.ConstantOp(op.results[0].type, element).result
        operands = list(op.operands)
        op.results[0].replace_all_uses_with(value)
        op.erase()
        for operand in operands:   # (the index arithmetic only it read; an unread splat constant)
            erase_unread(operand, _PURE)
        folded += 1
    return folded
