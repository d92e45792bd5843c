"""`lh-frontend-to-linalg`: front-end dialects (workbench/common/frontend_dialects.py: TOSA) lowered to
linalg by upstream's pipelines, only on a module that holds their ops, so every target pipeline can
start with it: a payload without them is left exactly as it was.
"""
from __future__ import annotations

from workbench.common.frontend_dialects import LOWERINGS


def dialects_of(module) -> set[str]:
    """The dialect prefixes of every op in the module."""
    from mlir import ir

    seen: set[str] = set()

    def visit(op):
        seen.add(op.name.split(".", 1)[0])
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit)
    return seen


def lower_frontend_dialects(module) -> list[str]:
    """Run the LOWERINGS pipelines of the front-end dialects present; the pipelines that ran."""
    from mlir.passmanager import PassManager

    ran = []
    present = dialects_of(module)
    for dialect, pipeline in LOWERINGS.items():
        if dialect in present:
            PassManager.parse(f"builtin.module({pipeline})").run(module.operation)
            ran.append(pipeline)
    return ran
