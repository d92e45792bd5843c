"""`lh-narrow-widened-results`: an elementwise op whose result is the widening of a narrower value
(`arith.extf` of an f16 / bf16 value yielded as f32: torch-mlir's upcast before a softmax or a norm)
and which several ops read (so elementwise fusion left it alone) is written in the narrow type; each
reader widens as it reads (on tensors). The values are the same; the tensor in memory is half the
size. On a GPU it matters where the op is materialized: fused into a matmul's write-back (attention's
scaled scores, 16 x 1024 x 1024: 32 MB instead of 64 written and read again)."""
from __future__ import annotations

NARROW = ("f16", "bf16")


def _candidate(op):
    """(the extf, the narrow type) when `op` fits (module docstring), else None."""
    from mlir import ir

    if op.name != "linalg.generic" or len(op.results) != 1 or "reduction" in str(op.attributes["iterator_types"]):
        return None
    result = op.results[0]
    n_in = len(op.operands) - 1
    init = op.operands[n_in]
    if isinstance(init.owner, ir.Block) or init.owner.name != "tensor.empty":
        return None
    body = op.regions[0].blocks[0]
    if list(body.arguments[n_in].uses):
        return None
    yielded = list(body.operations)[-1].operands[0]
    ext = yielded.owner
    if isinstance(ext, ir.Block) or ext.name != "arith.extf" or str(ext.operands[0].type) not in NARROW:
        return None
    uses = list(result.uses)
    if len(uses) < 2 or any(u.owner.name != "linalg.generic" or u.operand_number >= len(u.owner.operands) -
                            len(u.owner.results) for u in uses):
        return None
    return ext, ext.operands[0].type


def narrow_widened_results(module) -> int:
    """Rewrite every such op (module docstring); how many were rewritten."""
    from mlir import ir
    from mlir.dialects import arith, tensor

    from workbench.worker.ir_walk import ops_where

    rewritten = 0
    for op in ops_where(module, lambda o: o.name == "linalg.generic"):
        found = _candidate(op)
        if found is None:
            continue
        ext, narrow = found
        wide_t = ir.RankedTensorType(op.results[0].type)
        narrow_t = ir.RankedTensorType.get(wide_t.shape, narrow)
        n_in = len(op.operands) - 1
        readers = [(u.owner, u.operand_number) for u in op.results[0].uses]
        with ir.InsertionPoint(op), op.location:
            op.operands[n_in] = tensor.EmptyOp(wide_t.shape, narrow).result
        op.results[0].set_type(narrow_t)
        body = op.regions[0].blocks[0]
        body.arguments[n_in].set_type(narrow)
        terminator = list(body.operations)[-1]
        terminator.operands[0] = ext.operands[0]
        if not list(ext.results[0].uses):
            ext.erase()
        for reader, index in readers:
            arg = reader.regions[0].blocks[0].arguments[index]
            arg.set_type(narrow)
            first = list(reader.regions[0].blocks[0].operations)[0]
            with ir.InsertionPoint(first), reader.location:
                wide = arith.extf(wide_t.element_type, arg)
            arg.replace_all_uses_except(wide, wide.owner.operation)
        rewritten += 1
    return rewritten
