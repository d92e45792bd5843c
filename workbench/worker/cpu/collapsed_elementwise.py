"""`lh-collapse-expanded-elementwise`: an elementwise linalg.generic that reads a matmul's result through a
`tensor.expand_shape` (the matmul over collapsed rows that lh-shared-rhs-matmuls makes of a linear layer on a
3-D input, an LSTM's input projection; the bias add after it) runs over the matmul's collapsed shape
instead, and its result is expanded.

Why: the elementwise op then reads the matmul's result directly, 2-D over its (m, n), so the selector's
epilogue chain takes it into the matmul's schedule (pipelines/cpu/matmul_family.py[gen=matmul_epilogue]:
the bias / relu applied to each register tile while in cache, not one more pass over the whole result).

Taken: all loops parallel, one result, no `linalg.index` in the body; every input read with the identity
map is that expand_shape's result or gets the same collapse (a contiguous view); every other input reads
loops the expansion keeps whole (a bias along the last dim), or all the loops of a split one, in order (a
QKV projection's bias, expanded to 3 x 256 with its output: collapsed with them); static shapes.

The same pass gives such a matmul's init, a `tensor.collapse_shape` of a `linalg.fill` (the zeroed 3-D output
collapsed with it), a fill of its own collapsed shape (`collapse_filled_inits`): the selector then sees the fill
(`init_is_fill`), and the epilogue schedule fuses it into the register tiles (accumulators that start at
zero, no pass zeroing the output; a reshape is no op it can fuse).
"""
from __future__ import annotations


def _reassociation(expand) -> list[list[int]]:
    from mlir import ir

    return [[ir.IntegerAttr(d).value for d in ir.ArrayAttr(group)]
            for group in ir.ArrayAttr(expand.attributes["reassociation"])]


def _collapsible(op):
    """(expand_shape op, its reassociation) when generic `op` can run over the expansion's source
    (module docstring), else None."""
    from mlir import ir

    from workbench.worker.cpu.fusion import _parallel_generic
    from workbench.worker.cpu.shared_rhs import _map_dims

    if len(op.results) != 1 or not _parallel_generic(op):
        return None
    if any(o.name == "linalg.index" for o in op.regions[0].blocks[0].operations):
        return None
    dims = _map_dims(op)
    rank = op.results[0].type.rank if isinstance(op.results[0].type, ir.RankedTensorType) else -1
    identity = tuple(range(rank))
    if dims is None or rank < 2 or dims[-1] != identity:
        return None
    n_inputs = len(op.operands) - 1
    expand = None
    for value, d in zip(list(op.operands)[:n_inputs], dims[:n_inputs]):
        owner = value.owner
        if (d == identity and isinstance(owner, (ir.Operation, ir.OpView)) and owner.name == "tensor.expand_shape"
                and isinstance(owner.operands[0].owner, (ir.Operation, ir.OpView))
                and owner.operands[0].owner.name == "linalg.matmul"):
            expand = owner
            break
    if expand is None:
        return None
    groups = _reassociation(expand)
    for value, d in zip(list(op.operands), dims):
        if not (isinstance(value.type, ir.RankedTensorType) and value.type.has_static_shape):
            return None
        if d != identity and _operand_groups(d, groups) is None:
            return None   # reads a loop the expansion splits, but not all of them in order: no collapsed map
    return expand, groups


def _operand_groups(d: tuple[int, ...], groups: list[list[int]]) -> list[tuple[list[int], int]] | None:
    """For an input read at loops `d`: its dims in runs that each read one whole group of the expansion, in
    order (a dim a group of its own, or the dims of a split one: a QKV bias expanded to 3 x 256 read at the two
    loops the 768 columns were split into), each with that group's index; None when a run reads part of one."""
    group_of = {x: i for i, group in enumerate(groups) for x in group}
    runs, p = [], 0
    while p < len(d):
        group = groups[group_of[d[p]]] if d[p] in group_of else None
        if group is None or tuple(d[p:p + len(group)]) != tuple(group):
            return None
        runs.append((list(range(p, p + len(group))), group_of[d[p]]))
        p += len(group)
    return runs


def _collapse_shape(value, groups: list[list[int]], reassociation):
    """tensor.collapse_shape of the static `value` by `groups` (the `reassociation` attribute), built at
    the current insertion point."""
    from mlir import ir

    t = ir.RankedTensorType(value.type)
    shape = [1] * len(groups)
    for i, group in enumerate(groups):
        for d in group:
            shape[i] *= t.shape[d]
    collapsed = ir.RankedTensorType.get(shape, t.element_type)
    return ir.Operation.create("tensor.collapse_shape", results=[collapsed], operands=[value],
                               attributes={"reassociation": reassociation}).results[0]


def collapse_expanded_elementwise(module) -> int:
    """Rewrite every such op (module docstring); how many were rewritten."""
    from mlir import ir

    from workbench.worker.cpu.shared_rhs import _map_dims
    from workbench.worker.ir_walk import ops_where

    rewritten = 0
    for op in ops_where(module, lambda o: o.name == "linalg.generic"):
        found = _collapsible(op)
        if found is None:
            continue
        expand, groups = found
        group_of = {d: i for i, group in enumerate(groups) for d in group}
        rank = len(group_of)
        identity = tuple(range(rank))
        reassociation = expand.attributes["reassociation"]
        dims = _map_dims(op)
        n_inputs = len(op.operands) - 1
        with ir.InsertionPoint(op), op.location:
            operands, maps = [], []
            for value, d in zip(list(op.operands), dims):
                if d == identity:
                    source = value.owner.operands[0] if (
                        isinstance(value.owner, (ir.Operation, ir.OpView)) and value.owner.name == "tensor.expand_shape"
                        and _reassociation(value.owner) == groups) else None
                    operands.append(source if source is not None else _collapse_shape(value, groups, reassociation))
                    maps.append(ir.AffineMap.get_identity(len(groups)))
                else:
                    runs = _operand_groups(d, groups)
                    maps.append(ir.AffineMap.get(len(groups), 0, [ir.AffineDimExpr.get(g) for _, g in runs]))
                    if all(len(dims_) == 1 for dims_, _ in runs):
                        operands.append(value)
                    else:   # (the input's dims of a split group collapsed with it)
                        operand_groups = [dims_ for dims_, _ in runs]
                        operands.append(_collapse_shape(value, operand_groups, ir.ArrayAttr.get([
                            ir.ArrayAttr.get([ir.IntegerAttr.get(ir.IntegerType.get_signless(64), x) for x in g])
                            for g in operand_groups])))
            attributes = {a.name: a.attr for a in (op.attributes[n] for n in range(len(op.attributes)))}
            attributes["indexing_maps"] = ir.ArrayAttr.get([ir.AffineMapAttr.get(m) for m in maps])
            attributes["iterator_types"] = ir.ArrayAttr.get([ir.Attribute.parse("#linalg.iterator_type<parallel>")]
                                                            * len(groups))
            attributes["operandSegmentSizes"] = ir.DenseI32ArrayAttr.get([n_inputs, 1])
            new = ir.Operation.create("linalg.generic", results=[operands[-1].type], operands=operands,
                                      attributes=attributes, regions=1)
            op.regions[0].blocks[0].append_to(new.regions[0])
            expanded = ir.Operation.create(
                "tensor.expand_shape", results=[op.results[0].type], operands=[new.results[0]],
                attributes={"reassociation": reassociation, "static_output_shape": expand.attributes["static_output_shape"]})
        op.results[0].replace_all_uses_with(expanded.results[0])
        op.erase()
        rewritten += 1
    return rewritten


def collapse_filled_inits(module) -> int:
    """Every linalg.matmul whose init is a static tensor.collapse_shape of a linalg.fill read by nothing else
    gets a fill of the collapsed shape (of a tensor.empty) instead (module docstring); how many."""
    from mlir import ir
    from mlir.dialects import linalg, tensor

    from workbench.worker.cpu.padded_conv_rows import built_value, single_use
    from workbench.worker.ir_walk import ops_where

    rewritten = 0
    for op in ops_where(module, lambda o: o.name == "linalg.matmul"):
        init = op.operands[len(op.operands) - 1]
        collapse = init.owner
        if not (isinstance(collapse, (ir.Operation, ir.OpView)) and collapse.name == "tensor.collapse_shape"
                and single_use(init)):
            continue
        fill = collapse.operands[0].owner
        if not (isinstance(fill, (ir.Operation, ir.OpView)) and fill.name == "linalg.fill"
                and single_use(collapse.operands[0])):
            continue
        t = ir.RankedTensorType(init.type)
        if not t.has_static_shape:
            continue
        with ir.InsertionPoint(op), op.location:
            empty = tensor.EmptyOp(list(t.shape), t.element_type).result
            filled = built_value(linalg.fill(fill.operands[0], outs=[empty]))
        op.operands[len(op.operands) - 1] = filled
        collapse.erase()
        fill.erase()
        rewritten += 1
    return rewritten
