"""Walking payload IR (worker side): the ops of a module or op that satisfy a predicate."""
from __future__ import annotations

from typing import Callable

from mlir import ir


def ops_where(root, keep: Callable[[object], bool]) -> list:
    """Every op nested in `root` (a module or an op, itself included) for which `keep(op)` holds, in walk order."""
    found = []

    def visit(op):
        if keep(op):
            found.append(op)
        return ir.WalkResult.ADVANCE

    root.operation.walk(visit)
    return found
