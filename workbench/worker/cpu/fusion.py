"""Elementwise fusion that never multiplies work (the CPU and cuda targets' preparation step).

Upstream's `linalg-fuse-elementwise-ops` fuses an elementwise producer into every consumer that is
its only user, whatever the consumer reads it for. Where the consumer reads the producer's result
broadcast (its indexing map for that operand leaves out a parallel loop, or is no plain dimension
list: a window), the fused body recomputes the producer once per use instead of once per element:
scaled attention scores scaled inside the q @ k^T contraction (two multiplications per
multiply-add, and the contraction is no longer a matmul the packed schedules take), a batch norm's
1/sqrt(var + eps) computed for every element instead of every channel.

`fuse_elementwise(module)`: such operands get a temporary second use (a call of a private
declaration: upstream fuses single-use producers only), then upstream's pipeline runs (integer
powers expanded, elementwise fusion, unit dims folded, canonicalization), then the calls and
declarations go.
"""
from __future__ import annotations

PIPELINE = ("builtin.module(func.func(math-expand-ops{ops=fpowi},linalg-fuse-elementwise-ops,"
            "linalg-fold-unit-extent-dims,canonicalize))")
GUARD = "lh_fusion_guard"
RESHAPES = ("tensor.expand_shape", "tensor.collapse_shape")


def _broadcast_operands(op) -> list:
    """The input operands of linalg op `op` that it reads broadcast (a parallel loop left out of
    their map) or through a window (a map result that is no plain loop dimension)."""
    from mlir import ir

    from workbench.worker.payload_inspect import _indexing_maps, _iterators_from_maps, iterator_types

    maps = _indexing_maps(op)     # a generic's, or a named op's (the pass generalizes named ops)
    if not maps:
        return []
    try:
        iterators = iterator_types(op)
    except (KeyError, ValueError):
        iterators = _iterators_from_maps(maps)
    parallel = {d for d, it in enumerate(iterators) if it == "parallel"}
    n_inputs = len(op.operands) - len(op.results)
    out = []
    for amap, value in zip(maps[:n_inputs], list(op.operands)[:n_inputs]):
        dims = set()
        plain = True
        for expr in amap.results:
            if isinstance(expr, ir.AffineDimExpr):
                dims.add(ir.AffineDimExpr(expr).position)
            elif not isinstance(expr, ir.AffineConstantExpr):
                plain = False
        if not plain or parallel - dims:
            out.append(value)
    return out


def _is_linalg_result(value) -> bool:
    from mlir import ir

    return isinstance(value.owner, (ir.Operation, ir.OpView)) and value.owner.name.startswith("linalg.")


#: a producer whose body is one of these (and its yield) is cheaper to recompute in each consumer than
#: to write out and read back: torch-mlir widens a layer norm's input to f64 once for the mean and the
#: variance (a 64 MB f64 copy of a 32 MB input at 16x512x1024)
CASTS = {"arith.extf", "arith.truncf", "arith.sitofp", "arith.uitofp", "arith.fptosi", "arith.fptoui",
         "arith.extsi", "arith.extui", "arith.trunci", "arith.bitcast"}


def _duplicate_casts(module) -> int:
    """Each further linalg consumer of an elementwise cast (one input, all loops parallel, a body of one
    cast) gets a copy of it, so that upstream's fusion (single-use producers only) takes it into every
    consumer; consumers reading it broadcast keep the shared one. How many copies."""
    from mlir import ir

    from workbench.worker.ir_walk import ops_where
    from workbench.worker.payload_inspect import iterator_types

    copies = 0
    for op in ops_where(module, lambda o: o.name == "linalg.generic"):
        try:
            iterators = iterator_types(op)
            body = [o.operation.name for o in op.regions[0].blocks[0].operations]
        except (KeyError, ValueError, IndexError):
            continue
        if (len(op.results) != 1 or len(op.operands) != 2 or any(it != "parallel" for it in iterators)
                or len(body) != 2 or body[0] not in CASTS):
            continue
        uses = [(u.owner, u.operand_number) for u in op.results[0].uses]
        consumers = [(owner, n) for owner, n in uses if owner.name.startswith("linalg.")
                     and op.results[0] not in _broadcast_operands(owner)]
        if len(uses) < 2 or len(consumers) != len(uses):
            continue
        for owner, n in consumers[1:]:
            with ir.InsertionPoint(owner):
                copy = op.operation.clone()
            owner.operands[n] = copy.results[0]
            copies += 1
    return copies


def fuse_elementwise(module) -> int:
    """The guarded fusion (module docstring); how many operands were kept from fusing."""
    from mlir import ir
    from mlir.passmanager import PassManager

    from workbench.worker.ir_walk import append_parsed, ops_where

    _duplicate_casts(module)
    guards: list[tuple[object, object]] = []     # (value, consumer)
    for op in ops_where(module, lambda o: o.name.startswith("linalg.") and o.name not in ("linalg.yield", "linalg.index")):
        for value in _broadcast_operands(op):
            values = [value]
            if isinstance(value.owner, (ir.Operation, ir.OpView)) and value.owner.name in RESHAPES:
                values.append(value.owner.operands[0])   # fusion by expansion looks through the reshape
            guards += [(v, op) for v in values if _is_linalg_result(v)]
    declared: dict[str, str] = {}
    for value, _ in guards:
        declared.setdefault(str(value.type), f"{GUARD}_{len(declared)}")
    if declared:
        append_parsed(module, "\n".join(f"func.func private @{name}({t})" for t, name in declared.items()))
    for value, consumer in guards:
        ops = list(consumer.operation.block.operations)
        index = next(i for i, o in enumerate(ops) if o.operation == consumer.operation)
        with ir.InsertionPoint(ops[index + 1]), consumer.location:   # (a consumer is never a block's last op)
            ir.Operation.create("func.call", operands=[value],
                                attributes={"callee": ir.FlatSymbolRefAttr.get(declared[str(value.type)])})
    PassManager.parse(PIPELINE).run(module.operation)
    names = set(declared.values())
    for op in ops_where(module, lambda o: o.name == "func.call"
                        and ir.FlatSymbolRefAttr(o.attributes["callee"]).value in names):
        op.erase()
    for op in list(module.body.operations):
        if "sym_name" in op.attributes and ir.StringAttr(op.attributes["sym_name"]).value in names:
            op.operation.erase()
    return len(guards)
