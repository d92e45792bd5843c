"""Slices of concatenations read from the one operand they lie in (`lh-fold-slices-of-concat`).

torch-mlir writes `torch.cat(...)[..., a:b]` as `tensor.extract_slice` of `tensor.concat`: bufferized,
every operand is copied into the whole concatenation and the slice copied out of it again (two 16 MB
copies for a 2048 x 17 slice). A slice whose range along the concatenated dim lies within one operand
(static offsets, sizes and unit strides) becomes a slice of that operand, the offset shifted; the
concatenation goes away when nothing else reads it.
"""
from __future__ import annotations

from mlir import ir

from workbench.worker.ir_walk import ops_where

DYNAMIC = ir.ShapedType.get_dynamic_size() if hasattr(ir.ShapedType, "get_dynamic_size") else -(1 << 63)


def _static(attr) -> list[int] | None:
    values = list(ir.DenseI64ArrayAttr(attr))
    return None if any(v == DYNAMIC or v < -(1 << 62) for v in values) else values


def fold_slices_of_concat(module) -> int:
    """Rewrite every foldable slice of a concatenation; the number rewritten."""
    folded = 0
    for op in ops_where(module, lambda o: o.name == "tensor.extract_slice"):
        owner = op.operands[0].owner
        concat = getattr(owner, "operation", owner)
        if not isinstance(concat, ir.Operation) or concat.name != "tensor.concat" or len(op.operands) != 1:
            continue   # (dynamic offsets, sizes or strides are operands)
        offsets, sizes, strides = (_static(op.attributes[k]) for k in ("static_offsets", "static_sizes", "static_strides"))
        dim = ir.IntegerAttr(concat.attributes["dim"]).value
        if offsets is None or sizes is None or strides is None or strides[dim] != 1:
            continue
        start = 0
        for operand in concat.operands:
            shape = ir.RankedTensorType(operand.type).shape
            extent = shape[dim]
            if extent < 0:
                break   # a dynamic operand: the later ones' starts are unknown
            if start <= offsets[dim] and offsets[dim] + sizes[dim] <= start + extent:
                shifted = list(offsets)
                shifted[dim] -= start
                with op.location, ir.InsertionPoint(op):
                    new = ir.Operation.create(
                        "tensor.extract_slice", results=[op.result.type], operands=[operand],
                        attributes={"static_offsets": ir.DenseI64ArrayAttr.get(shifted),
                                    "static_sizes": op.attributes["static_sizes"],
                                    "static_strides": op.attributes["static_strides"],
                                    "operandSegmentSizes": ir.DenseI32ArrayAttr.get([1, 0, 0, 0])})
                op.result.replace_all_uses_with(new.result)
                op.erase()
                if not list(concat.result.uses):
                    concat.erase()
                folded += 1
                break
            start += extent
    return folded
