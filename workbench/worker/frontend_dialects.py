"""`lh-frontend-to-linalg`: front-end dialects (workbench/common/frontend_dialects.py: TOSA) lowered to
linalg by upstream's pipelines, and elementwise arith / math ops on whole tensors made linalg.generic
ops, only on a module that holds such ops, so every target pipeline can start with it: a payload
without them is left exactly as it was. A transform script the payload carries (upstream test files)
is erased first (workbench/worker/payload_schedules.py): it is not part of the program.
"""
from __future__ import annotations

from workbench.common.frontend_dialects import ELEMENTWISE_DIALECTS, ELEMENTWISE_ON_TENSORS, LOWERINGS


def dialects_of(module) -> set[str]:
    """The dialect prefixes of every op in the module."""
    from mlir import ir

    seen: set[str] = set()

    def visit(op):
        seen.add(op.name.split(".", 1)[0])
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit)
    if "sparse_tensor" not in seen and any("#sparse_tensor.encoding" in str(op.operation.attributes["function_type"])
                                           for op in module.body.operations
                                           if op.operation.name == "func.func"):
        seen.add("sparse_tensor")   # a sparse kernel without sparse_tensor ops: its tensor types say it
    return seen


def is_elementwise_on_tensor(op) -> bool:
    """Whether `op` is an arith / math op computing a whole tensor (not a scalar in a linalg body; not a
    constant)."""
    from mlir import ir

    return (op.name.split(".", 1)[0] in ELEMENTWISE_DIALECTS and op.name != "arith.constant"
            and any(isinstance(r.type, ir.RankedTensorType) for r in op.results))


def has_elementwise_on_tensors(module) -> bool:
    from workbench.worker.ir_walk import ops_where

    return bool(ops_where(module, is_elementwise_on_tensor))


def lower_frontend_dialects(module) -> list[str]:
    """Run the LOWERINGS pipelines of the front-end dialects present, then turn elementwise ops on
    tensors into linalg.generic ops; the pipelines that ran."""
    from mlir.passmanager import PassManager

    from workbench.worker.payload_schedules import erase_schedules

    ran = []
    if erase_schedules(module):   # an upstream test file's own transform script is not part of the program
        ran.append("lh-erase-transform-schedules")
    present = dialects_of(module)
    lowerings = list(LOWERINGS.items())
    if has_elementwise_on_tensors(module):   # before the sparsifier, which lowers the whole module
        at = next((i for i, (d, _) in enumerate(lowerings) if d == "sparse_tensor"), len(lowerings))
        lowerings.insert(at, ("", ELEMENTWISE_ON_TENSORS))
    for dialect, pipeline in lowerings:
        if not dialect or dialect in present:
            PassManager.parse(f"builtin.module({pipeline})").run(module.operation)
            ran.append(pipeline)
    return ran
