"""Buffer deallocation for code with MPI ops (worker side).

MLIR's ownership-based buffer deallocation refuses any op whose memory effects it does not know
("ops with unknown memory side effects are not supported"), and the `mpi` dialect's ops that take
buffers (mpi.allreduce, mpi.send, mpi.recv, ...) declare none. Without deallocation every heap
buffer of a partitioned function (temporaries, the buffer an all-reduce sums into, a copy made for
it) leaked on every call: the bench loop grew by their size per iteration.

Here each such MPI op is replaced, for the duration of `buffer-deallocation-pipeline`, by a call
to a private external function with the same operands and results (a call may read and write its
buffer arguments but takes no ownership of them: exactly an MPI call's contract), and put back
afterwards with its name and attributes. The deallocation pass then places frees after the last use,
including uses by MPI calls, and keeps returned buffers alive.
"""
from __future__ import annotations

from mlir import ir, passmanager

from workbench.worker.ir_walk import ops_where

HIDDEN_OP = "lh.mpi_op"
HIDDEN_ATTRS = "lh.mpi_attrs"
_PREFIX = "__lh_hidden_mpi_"


def _takes_buffers(op) -> bool:
    return op.name.startswith("mpi.") and any(isinstance(v.type, ir.MemRefType) for v in op.operands)


def _attrs(attributes) -> dict:
    return {attributes[i].name: attributes[i].attr for i in range(len(attributes))}


def hide_mpi_ops(module) -> int:
    """MPI ops with buffer operands -> func.call of private declarations (marked for `restore_mpi_ops`)."""
    ops = ops_where(module, _takes_buffers)
    for i, op in enumerate(ops):
        ins, outs = [v.type for v in op.operands], [r.type for r in op.results]
        name = f"{_PREFIX}{op.name[4:]}_{i}"
        with ir.InsertionPoint.at_block_begin(module.body), module.operation.location:
            ir.Operation.create("func.func", regions=1, attributes={
                "sym_name": ir.StringAttr.get(name),
                "function_type": ir.TypeAttr.get(ir.FunctionType.get(ins, outs)),
                "sym_visibility": ir.StringAttr.get("private")})
        with ir.InsertionPoint(op), op.location:
            call = ir.Operation.create("func.call", results=outs, operands=list(op.operands), attributes={
                "callee": ir.FlatSymbolRefAttr.get(name),
                HIDDEN_OP: ir.StringAttr.get(op.name),
                HIDDEN_ATTRS: ir.DictAttr.get(_attrs(op.attributes))})
        for old, new in zip(op.results, call.results):
            old.replace_all_uses_with(new)
        op.erase()
    return len(ops)


def restore_mpi_ops(module) -> int:
    calls = ops_where(module, lambda op: op.name == "func.call" and HIDDEN_OP in op.attributes)
    callees = set()
    for call in calls:
        callees.add(ir.FlatSymbolRefAttr(call.attributes["callee"]).value)
        with ir.InsertionPoint(call), call.location:
            op = ir.Operation.create(ir.StringAttr(call.attributes[HIDDEN_OP]).value,
                                     results=[r.type for r in call.results], operands=list(call.operands),
                                     attributes=_attrs(ir.DictAttr(call.attributes[HIDDEN_ATTRS])))
        for old, new in zip(call.results, op.results):
            old.replace_all_uses_with(new)
        call.erase()
    for f in list(module.body.operations):
        if f.operation.name == "func.func" and ir.StringAttr(f.attributes["sym_name"]).value in callees:
            f.erase()
    return len(calls)


FREES = ("memref.dealloc", "bufferization.dealloc")


def deallocate(module) -> bool:
    """`buffer-deallocation-pipeline` on a module whose MPI ops take buffers; False (nothing done) where
    the module frees buffers itself already (convert-shard-to-mpi's halo exchange does, a schedule may),
    which the ownership-based deallocation refuses ("memory free side-effect on MemRef value not
    supported"): such code keeps its own frees and nothing more, as before this pass existed."""
    if ops_where(module, lambda op: op.name in FREES):
        return False
    hide_mpi_ops(module)
    try:
        with module.context:
            passmanager.PassManager.parse("builtin.module(buffer-deallocation-pipeline)").run(module.operation)
    finally:
        restore_mpi_ops(module)
    return True
