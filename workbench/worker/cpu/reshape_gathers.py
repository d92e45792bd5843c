"""`lh-reshape-gathers`: a gather over constant index tables that reads its source in order, element i of
the result being element i of the source (row-major), is that reshape of the source.

torch-mlir writes the broadcast of a group norm's per-group statistics to its channels (and its scale and
shift, N x G x C/G -> N x C) as a `linalg.generic` whose body loads `src[t0[n, c], t1[n, c], ...]` with
index tables `t_k` stored as i64 constants (wrapped for negative indices). Such a gather is scalar loads
(or vector gathers) through four tables, and a barrier: the ops after it cannot be scheduled or chunked
together with the ops before it (a row op reads only its rows; a load at computed indices may read any).
Here the tables are evaluated at every point of the op's domain; when they give the source's elements in
order the op becomes a `tensor.collapse_shape` or `tensor.expand_shape` of the source where one of them
relates the two shapes (else a collapse to one dim and an expand), a view.

Taken: a linalg.generic with all loops parallel, one result read with the identity map, static shapes,
at most MAX_ELEMENTS elements; its inputs integer tables (arith.constant, dense or dense_resource, any
projected-permutation map) and its body index arithmetic (arith ops on integers and indices,
`linalg.index`) ending in one `tensor.extract` from a tensor defined outside the op, whose element type
is the result's, yielded as it is.
"""
from __future__ import annotations

import numpy as np
from mlir import ir

from workbench.worker.cpu.constant_folds import constant_array
from workbench.worker.ir_walk import defining_op, iterator_types, ops_where

#: the largest gather evaluated here (its tables at every point of its domain)
MAX_ELEMENTS = 1 << 20

_CMP = {0: np.equal, 1: np.not_equal, 2: np.less, 3: np.less_equal, 4: np.greater, 5: np.greater_equal}


def _table(value) -> np.ndarray | None:
    """An integer constant tensor's elements as int64 (dense, splat or dense_resource), else None."""
    t = value.type
    if not isinstance(t, ir.RankedTensorType) or not t.has_static_shape:
        return None
    if not isinstance(t.element_type, (ir.IntegerType, ir.IndexType)):
        return None
    width = 64 if isinstance(t.element_type, ir.IndexType) else ir.IntegerType(t.element_type).width
    if width not in (8, 16, 32, 64):
        return None
    data = constant_array(value)
    if data is not None:
        return data.view({8: np.int8, 16: np.int16, 32: np.int32, 64: np.int64}[width]).astype(np.int64)
    op = defining_op(value)
    if op is None or op.name != "arith.constant":
        return None
    try:
        dense = ir.DenseElementsAttr(op.attributes["value"])
        if dense.is_splat:
            return np.full(tuple(t.shape), ir.IntegerAttr(dense.get_splat_value()).value, dtype=np.int64)
    except (ValueError, TypeError):
        return None
    return None


def _maps(op) -> list:
    return [ir.AffineMapAttr(a).value for a in ir.ArrayAttr(op.attributes["indexing_maps"])]


def _source_indices(op) -> tuple | None:
    """(the extract op, one int64 array per source index over the op's domain) when `op` is such a gather
    (module docstring), else None."""
    if op.name != "linalg.generic" or len(op.results) != 1 or any(it != "parallel" for it in iterator_types(op)):
        return None
    result = op.results[0].type
    if not isinstance(result, ir.RankedTensorType) or not result.has_static_shape:
        return None
    domain = list(result.shape)
    if int(np.prod(domain, dtype=np.int64)) > MAX_ELEMENTS or not domain:
        return None
    maps = _maps(op)
    if maps[-1] != ir.AffineMap.get_identity(len(domain)):
        return None
    n_inputs = len(op.operands) - 1
    body = op.regions[0].blocks[0]
    ops = list(body.operations)
    if len(ops) < 2 or ops[-1].name != "linalg.yield" or ops[-2].name != "tensor.extract":
        return None
    extract = ops[-2]
    if ops[-1].operands[0] != extract.results[0]:
        return None
    source = extract.operands[0]
    src_op = defining_op(source)
    if src_op is not None and src_op.parent is not None and src_op.parent == op.operation:
        return None
    st = source.type
    if not isinstance(st, ir.RankedTensorType) or not st.has_static_shape or st.element_type != result.element_type:
        return None
    grid = np.indices(domain, dtype=np.int64) if domain else None
    values: dict = {}
    for k in range(n_inputs):
        table = _table(op.operands[k])
        m = maps[k]
        if table is None or not m.is_projected_permutation:
            return None
        dims = [ir.AffineDimExpr(r).position for r in m.results]
        values[body.arguments[k]] = table[tuple(grid[d] for d in dims)] if dims else np.full(domain, table.item())
    for inner in ops[:-2]:
        name = inner.name
        if name == "arith.constant":
            try:
                values[inner.results[0]] = np.full(domain, ir.IntegerAttr(inner.attributes["value"]).value, np.int64)
            except (ValueError, TypeError):
                return None
            continue
        if name == "linalg.index":
            values[inner.results[0]] = grid[ir.IntegerAttr(inner.attributes["dim"]).value]
            continue
        args = []
        for v in inner.operands:
            if v in values:
                args.append(values[v])
                continue
            const = defining_op(v)
            if const is None or const.name != "arith.constant":
                return None
            try:
                args.append(np.full(domain, ir.IntegerAttr(const.attributes["value"]).value, np.int64))
            except (ValueError, TypeError):
                return None
        if name in ("arith.addi", "arith.subi", "arith.muli"):
            out = {"arith.addi": np.add, "arith.subi": np.subtract, "arith.muli": np.multiply}[name](*args)
        elif name == "arith.select":
            out = np.where(args[0] != 0, args[1], args[2])
        elif name == "arith.cmpi":
            predicate = ir.IntegerAttr(inner.attributes["predicate"]).value
            if predicate not in _CMP:
                return None
            out = _CMP[predicate](args[0], args[1]).astype(np.int64)
        elif name in ("arith.index_cast", "arith.extsi", "arith.index_castui", "arith.extui"):
            out = args[0]
        else:
            return None
        values[inner.results[0]] = out
    indices = []
    for v in extract.operands[1:]:
        if v not in values:
            return None
        indices.append(values[v])
    return extract, indices


def _reassociation(small: list[int], large: list[int]) -> list[list[int]] | None:
    """The groups of consecutive dims of `large` whose extents multiply to each dim of `small` (a collapse
    of `large` into `small`), else None."""
    groups, i = [], 0
    for extent in small:
        group, product = [], 1
        while i < len(large) and (product < extent or (not group)):
            group.append(i)
            product *= large[i]
            i += 1
        while i < len(large) and large[i] == 1 and product == extent and len(groups) == len(small) - 1:
            group.append(i)
            i += 1
        if product != extent:
            return None
        groups.append(group)
    return groups if i == len(large) and groups else None


def _reshape(source, shape: list[int]):
    """`source` viewed at `shape` (same elements in row-major order), built at the insertion point."""
    st = ir.RankedTensorType(source.type)
    src = list(st.shape)
    i64 = ir.IntegerType.get_signless(64)

    def attr(groups):
        return ir.ArrayAttr.get([ir.ArrayAttr.get([ir.IntegerAttr.get(i64, d) for d in g]) for g in groups])

    def collapse(value, groups, to):
        return ir.Operation.create("tensor.collapse_shape", results=[ir.RankedTensorType.get(to, st.element_type)],
                                   operands=[value], attributes={"reassociation": attr(groups)}).results[0]

    def expand(value, groups, to):
        return ir.Operation.create("tensor.expand_shape", results=[ir.RankedTensorType.get(to, st.element_type)],
                                   operands=[value], attributes={"reassociation": attr(groups),
                                                                 "static_output_shape": ir.DenseI64ArrayAttr.get(to)}
                                   ).results[0]

    if src == shape:
        return source
    if len(shape) < len(src) and (groups := _reassociation(shape, src)):
        return collapse(source, groups, shape)
    if len(shape) > len(src) and (groups := _reassociation(src, shape)):
        return expand(source, groups, shape)
    total = int(np.prod(src, dtype=np.int64))
    flat = collapse(source, [list(range(len(src)))], [total]) if len(src) != 1 else source
    return expand(flat, [list(range(len(shape)))], shape) if len(shape) != 1 else flat


def reshape_gathers(module) -> int:
    """Rewrite every such gather (module docstring); how many."""
    done = 0
    for op in ops_where(module, lambda o: o.name == "linalg.generic"):
        found = _source_indices(op)
        if found is None:
            continue
        extract, indices = found
        source = extract.operands[0]
        src_shape = list(ir.RankedTensorType(source.type).shape)
        shape = list(ir.RankedTensorType(op.results[0].type).shape)
        if int(np.prod(src_shape, dtype=np.int64)) != int(np.prod(shape, dtype=np.int64)):
            continue
        if len(indices) != len(src_shape) or any(
                np.any(ix < 0) or np.any(ix >= n) for ix, n in zip(indices, src_shape)):
            continue
        linear = np.ravel_multi_index(tuple(indices), src_shape) if src_shape else np.zeros(shape, np.int64)
        if not np.array_equal(linear.reshape(-1), np.arange(linear.size)):
            continue
        with ir.InsertionPoint(op), op.location:
            view = _reshape(source, shape)
        op.results[0].replace_all_uses_with(view)
        op.erase()
        done += 1
    return done
