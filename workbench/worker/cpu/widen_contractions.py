"""`lh-widen-contraction-inputs`: named linalg contractions (matmul, batch_matmul, matvec, ...) that read
bf16 or f16 inputs into an f32 accumulator are rebuilt on f32 inputs, each narrow input extended once
by an elementwise `linalg.generic` (`arith.extf`: exact).

Why: the packed, register-tiled matmul schedules take f32 contractions; on narrow inputs the selector
can only take the contraction step by step (its body extends both operands at every multiply-add:
two conversions per FMA, no packing). Extending the inputs first costs one pass over each input
(M*K + K*N elements against M*N*K multiply-adds) and computes the same values: products of exactly
extended operands, summed in f32, which is what torch's CPU kernels do for bf16 (f32 accumulation).
The extensions are elementwise ops the selector vectorizes.
"""
from __future__ import annotations

#: the input element types widened to f32
NARROW = ("bf16", "f16")


def _element_name(t) -> str:
    from mlir import ir

    t = t.maybe_downcast() if hasattr(t, "maybe_downcast") else t
    if not isinstance(t, ir.RankedTensorType):
        return ""
    return str(t.element_type)


def _extended(value):
    """An f32 copy of the static tensor `value` (tensor.empty + an elementwise extf generic), built at the
    current insertion point."""
    from mlir import ir
    from mlir.dialects import arith, linalg, tensor

    t = ir.RankedTensorType(value.type)
    f32 = ir.F32Type.get()
    empty = tensor.EmptyOp(list(t.shape), f32)
    identity = ir.AffineMapAttr.get(ir.AffineMap.get_identity(t.rank))
    parallel = ir.Attribute.parse("#linalg.iterator_type<parallel>")
    generic = linalg.GenericOp([ir.RankedTensorType.get(t.shape, f32)], [value], [empty.result],
                               ir.ArrayAttr.get([identity, identity]), ir.ArrayAttr.get([parallel] * t.rank))
    block = generic.regions[0].blocks.append(t.element_type, f32)
    with ir.InsertionPoint(block):
        linalg.YieldOp([arith.ExtFOp(f32, block.arguments[0]).result])
    return generic.results[0]


def widen_contraction_inputs(module) -> int:
    """Rebuild every eligible contraction (module docstring); how many were rebuilt."""
    from mlir import ir
    from mlir.dialects import linalg

    from workbench.worker.ir_walk import ops_where

    def eligible(op) -> bool:
        if not op.name.startswith("linalg.") or op.name == "linalg.generic" or len(op.results) != 1:
            return False
        try:
            if not linalg.isa_contraction_op(op):
                return False
        except Exception:   # (ops the binding cannot take as a LinalgOp)
            return False
        n_inputs = len(op.operands) - len(op.results)
        inputs, output = list(op.operands)[:n_inputs], op.operands[n_inputs]
        if _element_name(output.type) != "f32" or not any(_element_name(v.type) in NARROW for v in inputs):
            return False
        return all(ir.RankedTensorType(v.type).has_static_shape for v in inputs
                   if _element_name(v.type) in NARROW)

    rebuilt = 0
    for op in ops_where(module, eligible):
        n_inputs = len(op.operands) - len(op.results)
        with ir.InsertionPoint(op), op.location:
            operands = [(_extended(v) if _element_name(v.type) in NARROW else v) if i < n_inputs else v
                        for i, v in enumerate(op.operands)]
            attributes = {name: op.attributes[name] for name in op.attributes}
            new = ir.Operation.create(op.name, results=[r.type for r in op.results], operands=operands,
                                      attributes=attributes, regions=1)
            linalg.fill_builtin_region(new)
        op.results[0].replace_all_uses_with(new.results[0])
        op.erase()
        rebuilt += 1
    return rebuilt
