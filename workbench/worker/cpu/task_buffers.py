"""`lh-task-buffers-on-stack`: the scratch buffers of a forall chunk on the stack of the task that runs it.

A multi-threaded schedule (pipelines/cpu/matmul_parallel.py, the family and the conv schedules in a
`scf.forall`) allocates its packing buffers at the top of each chunk: a `memref.alloc` per chunk and per
call, which cpu-lower made a `malloc` in the async runtime's task. Measured on a 1024^3 f32 matmul on
2 threads of a Zen 4 (select --apply, then cpu-lower): 51-53 GFLOP/s, against 84-205 for the same
schedule lowered by cpu-matmul-parallel-lower, which promotes buffers to the stack (promote-buffers-to-
stack) and ran 90-98 with cpu-lower after that promotion; on the 16-core Xeon of the GPU machine, 2048^3
on 16 threads, 499-538 GFLOP/s against 1013-1097 (numpy 1061-1110), and with this pass 888-972 against
966-1026 for the parallel lowering in one call (numpy 894-1059). On one thread, where the buffers are
allocated once per call outside any task, the two lowerings were even.

Here a static `memref.alloc` directly in a forall's body (once per chunk, not in a loop inside it), of at
most 1 MiB and 4 MiB for the chunk together, whose memory stays in the chunk (used through views by
loads, stores, transfers, copies and linalg ops; never returned, yielded, passed to a call or turned
back into a tensor), becomes a `memref.alloca` with the same alignment; its deallocations go. The task
is a function of its own after async-parallel-for, so the stack it takes is given back when the chunk
ends. Upstream's promote-buffers-to-stack is not used for this: it promotes allocations in loops too,
where each trip would take more stack.
"""
from __future__ import annotations

from mlir import ir

from workbench.worker.ir_walk import ops_where

MAX_BUFFER_BYTES = 1 << 20
MAX_CHUNK_BYTES = 4 << 20
#: ops through which the buffer's memory escapes the chunk (or whose effect on it is unknown here)
_ESCAPES = ("func.return", "func.call", "func.call_indirect", "scf.yield", "scf.condition", "cf.br",
            "cf.cond_br", "scf.forall.in_parallel", "memref.extract_aligned_pointer_as_index",
            "memref.extract_strided_metadata")
#: ops that give another view of the same memory (followed to their users)
_VIEWS = ("memref.subview", "memref.cast", "memref.reinterpret_cast", "memref.expand_shape",
          "memref.collapse_shape", "memref.transpose", "memref.view", "memref.memory_space_cast")


def _bytes(t: ir.MemRefType) -> int | None:
    width = getattr(t.element_type, "width", None)
    if width is None or width % 8:
        return None
    n = 1
    for d in t.shape:
        n *= d
    return n * width // 8


def _stays_in_chunk(value, deallocs: list) -> bool:
    for use in value.uses:
        user = use.owner
        name = user.name
        if name in _ESCAPES or name.startswith(("bufferization.", "llvm.", "async.")):
            return False
        if name == "memref.dealloc":
            deallocs.append(user)
        elif name in _VIEWS:
            if not all(_stays_in_chunk(r, deallocs) for r in user.results):
                return False
        elif name == "memref.store" and use.operand_number == 0:
            return False   # (the buffer itself stored somewhere: not at these types, refused anyway)
    return True


def promote_task_buffers(module) -> int:
    """Promote the buffers the module docstring describes; how many."""
    from mlir.dialects import memref

    promoted = 0
    for forall in ops_where(module, lambda op: op.name == "scf.forall"):
        total = 0
        # the allocations listed before anything is erased (a handle to an erased dealloc dangles)
        allocs = [op for op in forall.regions[0].blocks[0].operations
                  if op.name == "memref.alloc" and not len(op.operands)]
        for op in allocs:
            t = ir.MemRefType(op.results[0].type)
            size = _bytes(t)
            if (t.memory_space is not None or size is None or size > MAX_BUFFER_BYTES
                    or total + size > MAX_CHUNK_BYTES):
                continue
            deallocs: list = []
            if not _stays_in_chunk(op.results[0], deallocs):
                continue
            alignment = ir.IntegerAttr(op.attributes["alignment"]).value if "alignment" in op.attributes else None
            with ir.InsertionPoint(op), op.location:
                alloca = memref.AllocaOp(t, [], [], alignment=alignment)
            for d in deallocs:
                d.erase()
            op.results[0].replace_all_uses_with(alloca.result)
            op.erase()
            total += size
            promoted += 1
    return promoted
