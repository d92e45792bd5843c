"""Large linalg ops no schedule touched, split over the cores (`lh-split-leftover-ops{threads=N}`).

The selector schedules the payload's ops; bufferization then adds ops of its own: a `tensor.pad`
becomes a fill of the padded buffer (`linalg.map`) and a copy of the source into its interior
(`linalg.copy`), and a schedule that pads a tile remainder copies its operands in and its result out.
These run as plain loops on one core after every scheduled op ran on all of them: on the 16-core
device host a 3x3 conv's pad took 1.9 of its 5.0 ms, a 1-D conv's four copies most of its 3 ms.

Each such op on buffers (all loops parallel, static shape, outside any loop, at least
`min-elements` elements written) becomes an `scf.forall` of `threads` chunks of its first loop with
at least `threads` iterations (else its longest), as `transform.structured.tile_using_forall` makes it:
the lowering runs the chunks as tasks on MLIR's async runtime, each chunk's loops as before (LLVM
vectorizes the copies and fills).
"""
from __future__ import annotations

from mlir import ir

from workbench.worker.ir_walk import apply_transform, inside_loop, iterator_types, ops_where

#: elements an op writes at least before its split pays for the tasks' dispatch (~10 us): a copy of
#: 2^17 f32 (512 KiB) takes ~50 us on one core
DEFAULT_MIN_ELEMENTS = 1 << 17
#: ops whose loops are all parallel by construction
ALL_PARALLEL = ("linalg.copy", "linalg.map", "linalg.fill", "linalg.broadcast", "linalg.transpose")
TAG = "lh.split_leftover"


def _written(op) -> ir.MemRefType | None:
    """The buffer type the op writes (its last operand), if it is a static memref."""
    if not len(op.operands):
        return None
    t = op.operands[len(op.operands) - 1].type
    if not isinstance(t, ir.MemRefType) or not t.has_static_shape or t.rank == 0:
        return None
    return ir.MemRefType(t)


def _all_parallel(op) -> bool:
    if op.name in ALL_PARALLEL:
        return True
    if op.name != "linalg.generic" or "iterator_types" not in op.attributes:
        return False
    return all(it == "parallel" for it in iterator_types(op))


def split_plan(shape: list[int], threads: int) -> tuple[int, int] | None:
    """(loop, chunks): the first loop with at least `threads` iterations split `threads` ways, else the
    longest loop split as many ways as it has iterations; None when no loop has two."""
    loop = next((d for d, n in enumerate(shape) if n >= threads), None)
    if loop is None:
        loop = max(range(len(shape)), key=lambda d: shape[d])
    chunks = min(threads, shape[loop])
    return (loop, chunks) if chunks > 1 else None


def split_leftover_ops(module, threads: int, min_elements: int = DEFAULT_MIN_ELEMENTS) -> int:
    """Split the module's large unscheduled ops (module doc); how many."""
    if threads < 2:
        return 0
    plans = []
    for op in ops_where(module, lambda o: o.name.startswith("linalg.")):
        t = _written(op)
        if t is None or not _all_parallel(op) or inside_loop(op):
            continue
        elements = 1
        for n in t.shape:
            elements *= n
        if elements < min_elements:
            continue
        plan = split_plan(list(t.shape), threads)
        if plan is not None:
            plans.append((op, t.rank, plan))
    if not plans:
        return 0
    i64 = ir.IntegerType.get_signless(64, module.context)
    body = []
    a = "!transform.any_op"
    for k, (op, rank, (loop, chunks)) in enumerate(plans):
        op.attributes[TAG] = ir.IntegerAttr.get(i64, k)
        counts = [0] * rank
        counts[loop] = chunks
        body.append(f"    %op{k} = transform.structured.match attributes {{{TAG} = {k} : i64}} in %root : ({a}) -> {a}\n"
                    f"    %tiled{k}, %forall{k} = transform.structured.tile_using_forall %op{k} num_threads {counts} "
                    f": ({a}) -> ({a}, {a})\n")
    apply_transform(module, "".join(body))
    for op in ops_where(module, lambda o: TAG in o.attributes):
        del op.attributes[TAG]
    return len(plans)
