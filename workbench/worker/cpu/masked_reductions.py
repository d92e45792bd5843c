"""`lh-unmask-fp-reductions`: a masked float max / min reduction (`vector.mask %m { vector.reduction
<maximumf>, %x, %acc }`) -> the unmasked reduction of `select(%m, %x, neutral)`, neutral -inf for a max
and +inf for a min.

Why: the generic schedule vectorizes a reduction whose tile does not divide the row with masks (the
remainder tile: 48 keys in tiles of 32, the second half masked), and convert-vector-to-llvm (LLVM 22.1.8)
lowered the masked `maximumf` reduction with the masked lanes counted as -0.0, not as -inf: a row max of
[-5] * 48 from -inf came out -0.0, and a row all -inf (a fully masked attention row) -0.0, where torch
gives -5 and -inf (docs/attention-round15.md). With the lanes selected to the kind's neutral value first,
the reduction needs no mask.
"""
from __future__ import annotations

#: float reductions the rewrite takes, and the neutral value of each
NEUTRAL = {"maximumf": float("-inf"), "maxnumf": float("-inf"), "minimumf": float("inf"), "minnumf": float("inf")}


def unmask_fp_reductions(module) -> int:
    """Rewrite every masked vector.reduction of a NEUTRAL kind in `module`; the number rewritten."""
    from mlir import ir
    from mlir.dialects import arith

    found = []

    def visit(op):
        if op.name == "vector.mask" and len(op.operands) == 1 and len(op.results) == 1:
            ops = list(op.regions[0].blocks[0].operations)
            if len(ops) == 2 and ops[0].name == "vector.reduction" and ops[1].name == "vector.yield":
                kind = str(ops[0].attributes["kind"]).rsplit("<", 1)[-1].rstrip(">")
                vector = ir.VectorType(ops[0].operands[0].type)
                mask = ir.VectorType(op.operands[0].type)
                if (kind in NEUTRAL and isinstance(vector.element_type, ir.FloatType) and vector.rank == 1
                        and list(mask.shape) == list(vector.shape)):
                    found.append((op, ops[0], kind))
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit)
    for mask_op, reduction, kind in found:
        vector_type = reduction.operands[0].type
        element = ir.VectorType(vector_type).element_type
        with ir.InsertionPoint(mask_op), mask_op.location:
            neutral = arith.ConstantOp(vector_type, ir.DenseElementsAttr.get_splat(
                vector_type, ir.FloatAttr.get(element, NEUTRAL[kind]))).result
            picked = arith.select(mask_op.operands[0], reduction.operands[0], neutral)
            clone = reduction.clone()   # (at the insertion point: before the mask op)
            clone.operands[0] = picked
        mask_op.results[0].replace_all_uses_with(clone.results[0])
        mask_op.erase()
    return len(found)
