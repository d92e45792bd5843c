"""`lh-parallel-dims-first` (cuda-lower, before the naive mapping): a linalg.generic of host code that
reduces a dim outside a parallel one (torch's amin / argmin / sum over dim 0: iterators [reduction,
parallel]) gets its loops interchanged, parallel dims first (transform.structured.interchange, which
also renumbers linalg.index). convert-linalg-to-parallel-loops then makes one scf.parallel with the
reduction loop inside, which the naive mapping runs as ONE kernel, a thread per output element looping
over the reduced dims (consecutive threads on consecutive outputs). Before, the reduction loop stayed
on the host around the parallel one: a kernel launch and a stream synchronization per reduced index
(amin over 8 rows: 8 launches, 0.086 ms on the H200). Each output's reduction keeps its order."""
from __future__ import annotations

from mlir import ir

TAG = "lh.parallel_first"


def _in_device_code(op) -> bool:
    parent = op.parent
    while parent is not None:
        if parent.operation.name in ("gpu.launch", "gpu.module", "gpu.func"):
            return True
        parent = parent.operation.parent
    return False


def parallel_dims_first(module) -> int:
    """Interchange every such generic (module docstring); how many."""
    from workbench.worker.ir_walk import apply_transform, ops_where

    def reduction_outside(op) -> bool:
        if op.name != "linalg.generic":
            return False
        its = [str(a) for a in ir.ArrayAttr(op.attributes["iterator_types"])]
        kinds = ["reduction" in it for it in its]
        return any(kinds[k] and not kinds[k + 1] for k in range(len(kinds) - 1))

    todo = [op for op in ops_where(module, reduction_outside) if not _in_device_code(op)]
    body = ""
    for n, op in enumerate(todo):
        its = [str(a) for a in ir.ArrayAttr(op.attributes["iterator_types"])]
        perm = [k for k, it in enumerate(its) if "reduction" not in it] + [k for k, it in enumerate(its) if "reduction" in it]
        op.attributes[TAG] = ir.IntegerAttr.get(ir.IntegerType.get_signless(64), n)
        body += (f'    %g{n} = transform.structured.match ops{{["linalg.generic"]}} attributes{{{TAG} = {n} : i64}} '
                 f'in %root : (!transform.any_op) -> !transform.any_op\n'
                 f'    %i{n} = transform.structured.interchange %g{n} iterator_interchange = {perm} '
                 f': (!transform.any_op) -> !transform.any_op\n')
    if not todo:
        return 0
    apply_transform(module, body)
    for op in ops_where(module, lambda o: TAG in o.attributes):
        del op.attributes[TAG]
    return len(todo)
