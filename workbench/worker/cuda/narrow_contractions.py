"""`lh-narrow-contraction-inputs`: a named matmul / batch matmul into f32 that reads an f32 extension of
an f16 or bf16 tensor (an elementwise `linalg.generic` yielding `arith.extf` of its one input, identity
maps) reads the narrow tensor instead; the op extends it itself (a named op on f16 inputs with an f32
init extends each operand in its body). The inverse of the cpu target's lh-widen-contraction-inputs.

Why: torch-mlir writes an f16 / bf16 linear layer (`x @ w.t() + b`) as extensions of x and w to f32,
an f32 matmul, the bias add and a truncation back. The wgmma kernel takes f16 / bf16 operands with
an f32 accumulator (the cuda selector reads the operand type), so on the f32 operands the matmul
took the f32 SIMT schedule instead. The result is the same: extensions are exact, and the products
of f16 / bf16 values are exact in f32 either way, summed into the f32 accumulator.
"""
from __future__ import annotations

#: the named ops rewritten (those the cuda selector gives a matmul schedule)
CONTRACTIONS = ("linalg.matmul", "linalg.batch_matmul")
#: the operand element types read narrow
NARROW = ("f16", "bf16")


def _extension_source(value):
    """The f16 / bf16 tensor that `value` is the f32 extension of (an elementwise generic: one input,
    identity maps, a body of one arith.extf), else None."""
    from mlir import ir

    owner = value.owner
    if not isinstance(owner, (ir.Operation, ir.OpView)) or owner.name != "linalg.generic":
        return None
    if len(owner.operands) != 2 or len(owner.results) != 1:
        return None
    maps = [ir.AffineMapAttr(m).value for m in owner.attributes["indexing_maps"]]
    if any(not m.is_permutation or m != ir.AffineMap.get_identity(m.n_dims) for m in maps):
        return None
    block = owner.regions[0].blocks[0]
    body = list(block.operations)
    if (len(body) != 2 or body[0].operation.name != "arith.extf" or body[0].operands[0] != block.arguments[0]
            or body[1].operands[0] != body[0].results[0]):
        return None
    source = owner.operands[0]
    source_type = ir.RankedTensorType(source.type)
    if str(source_type.element_type) not in NARROW or str(ir.RankedTensorType(value.type).element_type) != "f32":
        return None
    return source


def narrow_contraction_inputs(module) -> int:
    """Rebuild every such contraction on the narrow operands (module docstring); how many were rebuilt.
    Extensions nothing reads any more are erased."""
    from mlir import ir
    from mlir.dialects import linalg

    from workbench.worker.ir_walk import ops_where

    rebuilt = 0
    for op in ops_where(module, lambda o: o.name in CONTRACTIONS):
        if len(op.results) != 1 or str(ir.RankedTensorType(op.results[0].type).element_type) != "f32":
            continue
        n_inputs = len(op.operands) - 1
        inputs = list(op.operands)[:n_inputs]
        sources = [_extension_source(v) for v in inputs]
        if any(s is None for s in sources):
            continue   # (one narrow operand and one f32: no wgmma kernel reads mixed operand types)
        if len({str(ir.RankedTensorType(s.type).element_type) for s in sources}) != 1:
            continue
        extensions = []
        for v in inputs:   # (x @ x: one extension read twice)
            if not any(e.operation == v.owner.operation for e in extensions):
                extensions.append(v.owner)
        with ir.InsertionPoint(op), op.location:
            new = ir.Operation.create(op.name, results=[r.type for r in op.results],
                                      operands=sources + [op.operands[n_inputs]],
                                      attributes={name: op.attributes[name] for name in op.attributes}, regions=1)
            linalg.fill_builtin_region(new)
        op.results[0].replace_all_uses_with(new.results[0])
        op.erase()
        for extension in extensions:
            if not list(extension.results[0].uses):
                extension.erase()
        rebuilt += 1
    return rebuilt
