"""Results of a linalg.generic that nothing reads are dropped with the work that computes only them
(`lh-drop-dead-results`).

torch-mlir writes `amin`, `max(dim).values`, a log-softmax's row maximum and friends as one reduction
with two results, the value and its index (`arith.select` of `linalg.index` where the new element
wins), even where the index is never read. The index's accumulator is read in the body (the select
keeps the old index), so upstream's erase-unused-operands patterns keep it, and an op with two
results is no plain reduction for the vectorizer: it stays a reduction taken step by step, with an
i64 index vector beside every value vector. Here an unread result whose accumulator (its `outs`
block argument) only feeds ops that compute that result alone goes away with those ops, its init
operand and its indexing map: what is left is the value's reduction with its combiner.

Likewise an init nothing reads: a linalg.fill feeding an `outs` operand whose block argument the body
never reads (torch-mlir's zero fill before torch.gather) is replaced by the fill's own init, and the
fill goes.
"""
from __future__ import annotations

from mlir import ir

from workbench.worker.ir_walk import ops_where


def _live_ops(body: ir.Block, live_values: list) -> set:
    """The body ops the values `live_values` depend on (backward slice within `body`)."""
    live: set = set()
    work = list(live_values)
    while work:
        value = work.pop()
        owner = value.owner
        if not isinstance(owner, (ir.Operation, ir.OpView)):
            continue   # a block argument
        owner = owner.operation
        if owner.block != body or owner in live:
            continue
        live.add(owner)
        work.extend(owner.operands)
        for region in owner.regions:   # values a nested region reads from the body
            for block in region.blocks:
                for inner in block.operations:
                    work.extend(inner.operands)
    return live


def _drop_dead_results(op) -> bool:
    """Drop the droppable unread results of the linalg.generic `op` (replaced by a new op); whether it changed."""
    op = op.operation
    n_results = len(op.results)
    n_inputs = len(op.operands) - n_results
    if n_results < 2 or len(op.regions[0].blocks) != 1:
        return False
    body = op.regions[0].blocks[0]
    ops = list(body.operations)
    yield_op = ops[-1]
    if yield_op.name != "linalg.yield" or len(yield_op.operands) != n_results:
        return False
    unread = [i for i in range(n_results) if not list(op.results[i].uses)]
    if not unread or len(unread) == n_results:
        return False   # (an op with no result read at all is for DCE / other passes)
    kept = [i for i in range(n_results) if i not in unread]
    live = _live_ops(body, [yield_op.operands[i] for i in kept])
    # an unread result goes when its accumulator feeds live ops of no kept result
    dropped = [i for i in unread
               if not any(u.owner.operation in live for u in body.arguments[n_inputs + i].uses)]
    if not dropped:
        return False
    kept = [i for i in range(n_results) if i not in dropped]
    live = _live_ops(body, [yield_op.operands[i] for i in kept])
    if any(o not in live and o != yield_op and o.regions for o in ops):
        return False   # an op with regions left over: not ours to judge
    with ir.InsertionPoint(yield_op), yield_op.location:
        ir.Operation.create("linalg.yield", operands=[yield_op.operands[i] for i in kept])
    yield_op.erase()
    for dead in reversed(ops[:-1]):
        if dead not in live:
            dead.erase()
    if any(list(body.arguments[n_inputs + i].uses) for i in dropped):
        raise AssertionError("lh-drop-dead-results: a dropped accumulator is still read")   # (checked above)
    for i in sorted(dropped, reverse=True):
        body.erase_argument(n_inputs + i)
    maps = list(ir.ArrayAttr(op.attributes["indexing_maps"]))
    drop_operands = {n_inputs + i for i in dropped}
    attributes = {a.name: a.attr for a in (op.attributes[n] for n in range(len(op.attributes)))}
    attributes["indexing_maps"] = ir.ArrayAttr.get([m for n, m in enumerate(maps) if n not in drop_operands])
    attributes["operandSegmentSizes"] = ir.DenseI32ArrayAttr.get([n_inputs, len(kept)])
    with ir.InsertionPoint(op), op.location:
        new = ir.Operation.create("linalg.generic", results=[op.results[i].type for i in kept],
                                  operands=[v for n, v in enumerate(op.operands) if n not in drop_operands],
                                  attributes=attributes, regions=1)
    body.append_to(new.regions[0])
    inits = [op.operands[n] for n in sorted(drop_operands)]
    for n, i in enumerate(kept):
        op.results[i].replace_all_uses_with(new.results[n])
    op.erase()
    for init in inits:
        _erase_unread_init(init)
    return True


#: ops that only make a dropped result's init (a fill of a fresh tensor): erased once nothing reads them
INIT_OPS = ("linalg.fill", "tensor.empty")


def _erase_unread_init(value) -> None:
    owner = value.owner
    if not isinstance(owner, (ir.Operation, ir.OpView)):
        return
    owner = owner.operation
    if owner.name not in INIT_OPS or any(list(r.uses) for r in owner.results):
        return
    operands = list(owner.operands)
    owner.erase()
    for operand in operands:
        _erase_unread_init(operand)


def _drop_unread_fills(op) -> bool:
    """The linalg.fill inits of generic `op` whose `outs` block argument its body never reads become the
    fill's own init (a tensor.empty): the fill was a pass over the output for nothing (torch-mlir's zero
    fill before a gather that writes every element: torch.gather's 1024x256 output, a quarter of its time on
    one core). Upstream's fusion does this for the ops it sees (RemoveOutsDependency); a lone generic gets
    no fusion step. Whether any was."""
    op = op.operation
    n_results = len(op.results)
    n_inputs = len(op.operands) - n_results
    if len(op.regions[0].blocks) != 1:
        return False
    body = op.regions[0].blocks[0]
    changed = False
    for i in range(n_results):
        init = op.operands[n_inputs + i]
        owner = init.owner
        if (list(body.arguments[n_inputs + i].uses) or not isinstance(owner, (ir.Operation, ir.OpView))
                or owner.operation.name != "linalg.fill" or len(owner.operation.results) != 1):
            continue
        op.operands[n_inputs + i] = owner.operation.operands[1]
        _erase_unread_init(init)
        changed = True
    return changed


def drop_dead_results(module) -> int:
    """Drop every droppable unread linalg.generic result (module docstring) and the fills of inits nothing
    reads (_drop_unread_fills); how many ops changed."""
    changed = 0
    for op in ops_where(module, lambda o: o.name == "linalg.generic" and len(o.results) > 1):
        changed += _drop_dead_results(op)
    for op in ops_where(module, lambda o: o.name == "linalg.generic"):
        changed += _drop_unread_fills(op)
    return changed
