"""`lh-lift-tensor-cf`: unstructured control flow over tensors (`cf.br` / `cf.cond_br` between blocks whose
arguments are tensors: upstream's detensorize_while / detensorize_if test payloads) lifted to scf, so that
bufferization and the deallocation pass (which supports structured loops only) take it.

Only functions with a tensor block argument after their entry block are touched (upstream's
`lift-cf-to-scf` on that function alone): every other payload is left exactly as it was. The lifting
yields `ub.poison` for the values a path does not define (the loop results the other exit carries), which
one-shot bufferization refuses; a poison tensor is never read, so any tensor of its type stands for it: it
becomes a `tensor.empty` (dynamic sizes 0).
"""
from __future__ import annotations

from mlir import ir


def _is_tensor(t) -> bool:
    return isinstance(t, (ir.RankedTensorType, ir.UnrankedTensorType))


def has_tensor_cf(func) -> bool:
    """Whether a function's body has a block after the entry block with a tensor argument (a `cf` branch
    carries a tensor)."""
    if not func.regions or not len(func.regions[0].blocks):
        return False
    blocks = list(func.regions[0].blocks)
    return any(_is_tensor(a.type) for b in blocks[1:] for a in b.arguments)


def _functions(module) -> list:
    from workbench.worker.ir_walk import ops_where

    return ops_where(module, lambda op: op.name == "func.func" and has_tensor_cf(op))


def _replace_poison_tensors(func) -> int:
    """`ub.poison : tensor<...>` -> `tensor.empty` of the type (its dynamic sizes 0); the count replaced."""
    from workbench.worker.ir_walk import ops_where

    poisons = ops_where(func, lambda op: op.name == "ub.poison" and len(op.results) == 1
                        and isinstance(op.results[0].type, ir.RankedTensorType))
    for poison in poisons:
        t = ir.RankedTensorType(poison.results[0].type)
        with ir.InsertionPoint(poison), poison.location:
            sizes = []
            if any(t.is_dynamic_dim(i) for i in range(t.rank)):
                index = ir.IndexType.get()
                zero = ir.Operation.create("arith.constant", results=[index],
                                           attributes={"value": ir.IntegerAttr.get(index, 0)}).result
                sizes = [zero] * sum(1 for i in range(t.rank) if t.is_dynamic_dim(i))
            empty = ir.Operation.create("tensor.empty", results=[t], operands=sizes)
        poison.results[0].replace_all_uses_with(empty.results[0])
        poison.erase()
    return len(poisons)


def lift_tensor_cf(module) -> list[str]:
    """Lift the cf of every function with tensor block arguments to scf and replace the poison tensors the
    lifting leaves; the names of the functions changed."""
    from mlir.passmanager import PassManager

    changed = []
    for func in _functions(module):
        PassManager.parse("func.func(lift-cf-to-scf)").run(func)
        _replace_poison_tensors(func)
        changed.append(ir.StringAttr(func.attributes["sym_name"]).value)
    return changed
