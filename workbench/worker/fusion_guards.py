"""Upstream's elementwise fusion with some values kept out of it (the CPU and cuda preparations).

`linalg-fuse-elementwise-ops` decides every fusion with one control function: fuse where the producer
(a linalg op, or the tensor.collapse_shape / expand_shape of a fusion by expansion) has a single use.
`run_guarded(module, pipeline, guards)` gives each guarded value a temporary second use (a call of a
private declaration, placed after the op that reads it), runs the pipeline, then erases the calls
and the declarations: whatever the guarded values connect stays as it was. What a guard keeps:

- an operand of a consumer: the producer is not fused into it (`workbench/worker/cpu/fusion.py`
  guards operands read broadcast, which the fused body would recompute per use);
- the result of a tensor.collapse_shape read by a linalg op: the op is not expanded over the
  reshape's dims (`FoldWithProducerReshapeOpByExpansion`, which turns a named op into a generic);
- a linalg op's result that a tensor.expand_shape reads: the op is not expanded either
  (`FoldReshapeWithGenericOpByExpansion`).
"""
from __future__ import annotations

GUARD = "lh_fusion_guard"
#: upstream's fusion as both preparations run it: integer powers expanded, elementwise fusion, unit
#: dims folded, canonicalization
PIPELINE = ("builtin.module(func.func(math-expand-ops{ops=fpowi},linalg-fuse-elementwise-ops,"
            "linalg-fold-unit-extent-dims,canonicalize))")
RESHAPES = ("tensor.expand_shape", "tensor.collapse_shape")


def run_guarded(module, pipeline: str, guards: list[tuple[object, object]]) -> None:
    """Run pass pipeline `pipeline` (a builtin.module(...) text) on `module` with each value of `guards`
    ((value, op) pairs: the op reads the value, or defines it; never a block's last op) given a second
    use right after its op for the duration of the pipeline."""
    from mlir import ir
    from mlir.passmanager import PassManager

    from workbench.worker.ir_walk import append_parsed, ops_where

    declared: dict[str, str] = {}
    for value, _ in guards:
        declared.setdefault(str(value.type), f"{GUARD}_{len(declared)}")
    if declared:
        append_parsed(module, "\n".join(f"func.func private @{name}({t})" for t, name in declared.items()))
    for value, op in guards:
        ops = list(op.operation.block.operations)
        index = next(i for i, o in enumerate(ops) if o.operation == op.operation)
        with ir.InsertionPoint(ops[index + 1]), op.location:
            ir.Operation.create("func.call", operands=[value],
                                attributes={"callee": ir.FlatSymbolRefAttr.get(declared[str(value.type)])})
    PassManager.parse(pipeline).run(module.operation)
    names = set(declared.values())
    for op in ops_where(module, lambda o: o.name == "func.call"
                        and ir.FlatSymbolRefAttr(o.attributes["callee"]).value in names):
        op.erase()
    for op in list(module.body.operations):
        if "sym_name" in op.attributes and ir.StringAttr(op.attributes["sym_name"]).value in names:
            op.operation.erase()
