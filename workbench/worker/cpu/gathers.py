"""Gathers whose loads can be contiguous (`lh-gather-indices`).

A linalg.generic that loads at computed indices (`tensor.extract` in its body: a reflect or replicate
pad, index_select, an embedding, take_along_dim, a flip) is vectorized with contiguous loads only where
the vectorizer can see that every index but the last is the same for the whole vector and the last one
is `linalg.index(vector loop) + constant` (`vectorize_nd_extract`); anything else becomes a
vector.gather, which costs more than scalar loads on some hosts. torch-mlir writes the indices in
forms it cannot see through: tables computed by input-less generics read as operands
(`(d0, d1, d2) -> (d1)`), wraps of negative indices (`select(i < 0, i + n, i)`), reflections
(`n - |n - |i - p||`). `gather_indices(module)` rewrites every such all-parallel gather with static
shapes:

  1. index tables: an input produced by an input-less generic of index arithmetic is computed in the
     gather's body instead (its body cloned, its `linalg.index k` the gather's index of the dim its map
     reads at k); canonicalization drops the operand and the table;
  2. a load from another gather's result (used there only; through an expand_shape too) computes that
     gather's element in place: a reflect pad along H then W is one pass over memory;
  3. an index that is a function of one loop only is evaluated over that loop's range: where it equals
     the loop index plus a constant it becomes exactly that (an `arith.addi`), a constant becomes a
     constant;
  4. a last index that is affine with unit stride over a long run of the vector loop but not over all of
     it (a reflect or replicate pad's interior) splits the op along that loop: the run (contiguous
     loads), and the parts before and after it (a few columns of gathers), each a generic over slices,
     inserted into the output;
  5. where every load is then contiguous along the vector loop, data read along other loops (the ids
     of index_select and of an embedding) is loaded in the body (`tensor.extract` of the operand at the
     loops' indices), which the vectorizer sees as the same for the whole vector.

`contiguous_extracts(op, vdim)` tells the selector whether an op's loads are contiguous along loop `vdim`.
"""
from __future__ import annotations

import numpy as np
from mlir import ir

from workbench.worker.ir_walk import clone_mapped, iterator_types, ops_where

#: ops of index arithmetic that can be evaluated here (on int64 numpy arrays) and cloned into a body
INDEX_OPS = {"arith.constant", "arith.addi", "arith.subi", "arith.muli", "arith.divsi", "arith.divui",
             "arith.remsi", "arith.remui", "arith.floordivsi", "arith.ceildivsi", "arith.minsi", "arith.maxsi",
             "arith.minui", "arith.maxui", "arith.select", "arith.cmpi", "arith.index_cast",
             "arith.index_castui", "arith.extsi", "arith.extui", "arith.trunci", "arith.andi", "arith.ori",
             "arith.xori", "math.absi", "linalg.index"}
#: a run of a unit-stride last index is split off when it is at least this long and at least half its loop
MIN_CONTIGUOUS_RUN = 4


def _op(value):
    """The op defining `value`, None for a block argument."""
    owner = value.owner
    if isinstance(owner, ir.Block):
        return None
    return getattr(owner, "operation", owner)


def _body(op):
    return op.regions[0].blocks[0]


def _maps(op) -> list:
    return [ir.AffineMapAttr(m).value for m in ir.ArrayAttr(op.attributes["indexing_maps"])]




def _domain(op) -> list[int] | None:
    """Static loop ranges (None when one is dynamic or unknown)."""
    maps = _maps(op)
    dims = [-1] * maps[0].n_dims
    for amap, operand in zip(maps, op.operands):
        if not isinstance(operand.type, ir.RankedTensorType):
            return None
        shape = ir.RankedTensorType(operand.type).shape
        for pos, expr in enumerate(amap.results):
            if isinstance(expr, ir.AffineDimExpr) and shape[pos] >= 0:
                dims[ir.AffineDimExpr(expr).position] = shape[pos]
    return None if any(d < 0 for d in dims) else dims


def _in_body(value, body) -> bool:
    op = _op(value)
    if op is None:
        return value.owner == body
    return op.block == body


def _index_dim(op) -> int:
    return ir.IntegerAttr(op.attributes["dim"]).value


def _gather_ops(module) -> list:
    """All-parallel linalg.generic ops on static tensors with a tensor.extract in their body."""
    found = []
    for op in ops_where(module, lambda o: o.name == "linalg.generic"):
        if not op.results or any(it != "parallel" for it in iterator_types(op)) or _domain(op) is None:
            continue
        if any(inner.operation.name == "tensor.extract" for inner in _body(op).operations):
            found.append(op)
    return found


# -- dependence and evaluation of index values ------------------------------------------------------

def dependence(value, op) -> set[int] | None:
    """The loops a body value of linalg op `op` depends on (its linalg.index ops, the map dims of the
    block arguments it reads), None where it depends on something else in the body (a load)."""
    body = _body(op)
    maps = _maps(op)
    seen: dict = {}

    def walk(v) -> set[int] | None:
        defining = _op(v)
        if defining is None:
            if v.owner != body:
                return set()
            amap = maps[ir.BlockArgument(v).arg_number]
            return {ir.AffineDimExpr(e).position for e in amap.results if isinstance(e, ir.AffineDimExpr)} | {
                d for e in amap.results if not isinstance(e, (ir.AffineDimExpr, ir.AffineConstantExpr))
                for d in range(amap.n_dims)}   # (an expression: every dim, conservatively)
        if defining.block != body:
            return set()   # defined above the op: the same for every iteration
        key = defining
        if key in seen:
            return seen[key]
        if defining.name == "linalg.index":
            result = {_index_dim(defining)}
        elif defining.name == "tensor.extract" and not _in_body(defining.operands[0], body):
            # a load from a tensor of outside (an id): varies with its indices
            result = set()
            for operand in list(defining.operands)[1:]:
                inner = walk(operand)
                if inner is None:
                    result = None
                    break
                result |= inner
        elif defining.name not in INDEX_OPS:
            result = None
        else:
            result = set()
            for operand in defining.operands:
                inner = walk(operand)
                if inner is None:
                    result = None
                    break
                result |= inner
        seen[key] = result
        return result

    return walk(value)


def _int_width(t) -> int:
    if isinstance(t, ir.IndexType):
        return 64
    return ir.IntegerType(t).width


def _constant_value(op):
    attr = op.attributes["value"]
    if isinstance(attr, ir.IntegerAttr) or ir.IntegerAttr.isinstance(attr):
        return ir.IntegerAttr(attr).value
    if ir.BoolAttr.isinstance(attr):
        return int(ir.BoolAttr(attr).value)
    return None


CMP = {0: np.equal, 1: np.not_equal, 2: np.less, 3: np.less_equal, 4: np.greater, 5: np.greater_equal}


def evaluate(value, op, dim: int, extent: int) -> np.ndarray | None:
    """The values of an integer body value of `op` that depends on loop `dim` alone (or on none), for
    every iteration 0..extent-1 of it (int64); None where it cannot be evaluated here (an unknown op, a
    division by zero, a value from outside that is no constant)."""
    body = _body(op)
    cache: dict = {}
    j = np.arange(extent, dtype=np.int64)

    def ev(v):
        defining = _op(v)
        if defining is None:
            return None
        if defining.block != body and defining.name != "arith.constant":
            return None
        if defining in cache:
            return cache[defining]
        result = _ev_op(defining, v)
        cache[defining] = result
        return result

    def _ev_op(d, v):
        name = d.name
        if name == "arith.constant":
            c = _constant_value(d)
            return None if c is None else np.full(extent, c, dtype=np.int64)
        if name == "linalg.index":
            return j.copy() if _index_dim(d) == dim else None
        if name not in INDEX_OPS:
            return None
        args = [ev(o) for o in d.operands]
        if any(a is None for a in args):
            return None
        width = _int_width(v.type) if not isinstance(v.type, ir.IndexType) else 64
        with np.errstate(all="ignore"):
            if name == "arith.addi":
                return args[0] + args[1]
            if name == "arith.subi":
                return args[0] - args[1]
            if name == "arith.muli":
                return args[0] * args[1]
            if name in ("arith.divsi", "arith.remsi", "arith.floordivsi", "arith.ceildivsi"):
                a, b = args
                if np.any(b == 0):
                    return None
                if name == "arith.floordivsi":
                    return a // b
                if name == "arith.ceildivsi":
                    return -((-a) // b)
                q = np.sign(a) * np.sign(b) * (np.abs(a) // np.abs(b))
                return q if name == "arith.divsi" else a - b * q
            if name in ("arith.divui", "arith.remui"):
                a, b = args
                if np.any(b <= 0) or np.any(a < 0):
                    return None
                return a // b if name == "arith.divui" else a % b
            if name in ("arith.minsi", "arith.minui"):
                return np.minimum(args[0], args[1]) if name == "arith.minsi" or np.all(np.concatenate(args) >= 0) else None
            if name in ("arith.maxsi", "arith.maxui"):
                return np.maximum(args[0], args[1]) if name == "arith.maxsi" or np.all(np.concatenate(args) >= 0) else None
            if name == "arith.select":
                return np.where(args[0] != 0, args[1], args[2])
            if name == "arith.cmpi":
                predicate = ir.IntegerAttr(d.attributes["predicate"]).value
                if predicate not in CMP:
                    if np.any(np.concatenate(args) < 0):
                        return None   # unsigned comparisons of negative values
                    predicate -= 4
                return CMP[predicate](args[0], args[1]).astype(np.int64)
            if name in ("arith.index_cast", "arith.index_castui", "arith.extsi", "arith.extui", "arith.trunci"):
                a = args[0]
                if name in ("arith.extui", "arith.index_castui") and np.any(a < 0):
                    return None
                if width < 64 and np.any((a >= (1 << (width - 1))) | (a < -(1 << (width - 1)))):
                    return None   # wrapped by a narrower type: not modelled
                return a
            if name == "arith.andi":
                return args[0] & args[1]
            if name == "arith.ori":
                return args[0] | args[1]
            if name == "arith.xori":
                return args[0] ^ args[1]
            if name == "math.absi":
                return np.abs(args[0])
        return None

    return ev(value)


def _affine_offset(values: np.ndarray) -> int | None:
    """c when values[j] == j + c for every j, else None."""
    c = int(values[0])
    return c if np.array_equal(values, np.arange(len(values), dtype=np.int64) + c) else None


def _plain_index(value, op) -> tuple[int, int] | None:
    """(dim, c) when a body value is `linalg.index dim` or `linalg.index dim + constant` (as the
    vectorizer sees a unit-stride index), else None."""
    defining = _op(value)
    if defining is None or defining.block != _body(op):
        return None
    if defining.name == "linalg.index":
        return _index_dim(defining), 0
    if defining.name == "arith.addi":
        a, b = (_op(o) for o in defining.operands)
        if a is not None and b is not None and a.name == "linalg.index" and b.name == "arith.constant":
            c = _constant_value(b)
            return (_index_dim(a), c) if c is not None else None
    return None


def _vector_loop(op) -> int | None:
    """The output's innermost loop (the vector loop of the selector's schedules), None without one."""
    results = _maps(op)[-1].results
    return ir.AffineDimExpr(results[-1]).position if results and isinstance(results[-1], ir.AffineDimExpr) else None


def contiguous_extracts(op, vdim: int) -> bool:
    """Whether every tensor.extract in linalg op `op`'s body loads contiguously along loop `vdim`: its
    indices but the last the same for every iteration of `vdim`, the last one too or `linalg.index
    vdim + constant` (what `vectorize_nd_extract` turns into a contiguous load)."""
    extracts = [inner for inner in _body(op).operations if inner.operation.name == "tensor.extract"]
    if not extracts:
        return False
    for extract in extracts:
        indices = list(extract.operands)[1:]
        for position, index in enumerate(indices):
            deps = dependence(index, op)
            if deps is None:
                return False
            if vdim not in deps:
                continue
            plain = _plain_index(index, op)
            if position != len(indices) - 1 or plain is None or plain[0] != vdim:
                return False
    return True


# -- the rewrites -----------------------------------------------------------------------------------

def _index_value(expr, ip, loc):
    """A body value for an affine map result: `linalg.index d` for a dim, a constant for a constant."""
    index = ir.IndexType.get()
    with ip, loc:
        if isinstance(expr, ir.AffineDimExpr):
            return ir.Operation.create("linalg.index", results=[index], attributes={
                "dim": ir.IntegerAttr.get(ir.IntegerType.get_signless(64), ir.AffineDimExpr(expr).position)}).result
        value = ir.AffineConstantExpr(expr).value
        return ir.Operation.create("arith.constant", results=[index],
                                   attributes={"value": ir.IntegerAttr.get(index, value)}).result


def _index_table(value):
    """The input-less, all-parallel generic of index arithmetic that produces `value`, None otherwise."""
    producer = _op(value)
    if producer is None or producer.name != "linalg.generic" or len(producer.operands) != 1 or len(producer.results) != 1:
        return None
    if any(it != "parallel" for it in iterator_types(producer)) or not _maps(producer)[0].is_permutation:
        return None
    for inner in _body(producer).operations:
        name = inner.operation.name
        if name == "linalg.yield":
            continue
        if name not in INDEX_OPS:
            return None
        for operand in inner.operands:
            outside = _op(operand)
            if outside is None or (outside.block != _body(producer) and outside.name != "arith.constant"):
                return None
    return producer


def _inline_tables(op) -> bool:
    """Step 1: index tables read by gather `op` computed in its body. Whether any was."""
    body = _body(op)
    maps = _maps(op)
    n_inputs = len(op.operands) - len(op.results)
    changed = False
    for i in range(n_inputs):
        argument = body.arguments[i]
        if not list(argument.uses):
            continue
        table = _index_table(op.operands[i])
        amap = maps[i]
        if table is None or not all(isinstance(e, (ir.AffineDimExpr, ir.AffineConstantExpr)) for e in amap.results):
            continue
        table_map = _maps(table)[0]
        # the table's loop k is read at the position of its map's result that names k
        position = {ir.AffineDimExpr(e).position: p for p, e in enumerate(table_map.results)}
        first = body.operations[0]
        ip = ir.InsertionPoint(first)
        mapped: dict = {}
        result = None
        for inner in _body(table).operations:
            if inner.operation.name == "linalg.yield":
                result = mapped[inner.operands[0]] if _in_body(inner.operands[0], _body(table)) else inner.operands[0]
                break
            if inner.operation.name == "linalg.index":
                value = _index_value(amap.results[position[_index_dim(inner.operation)]], ip, op.location)
                mapped[inner.results[0]] = value
                continue
            clone_mapped(inner, mapped, ip)
        if result is None:
            continue
        argument.replace_all_uses_with(result)
        changed = True
    return changed


def _feeds_an_index(value, body) -> bool:
    """Whether a body value is used, through index arithmetic, as an index of a tensor.extract."""
    stack, seen = [value], set()
    while stack:
        v = stack.pop()
        for use in v.uses:
            user = use.owner
            user = getattr(user, "operation", user)
            if user.name == "tensor.extract" and use.operand_number > 0:
                return True
            if user.name in INDEX_OPS and user not in seen:
                seen.add(user)
                stack.extend(user.results)
    return False


def _load_invariant_inputs(op) -> bool:
    """Step 5: inputs that do not use the vector loop (the output's innermost) and feed an index become
    loads in the body. Whether any did."""
    body = _body(op)
    maps = _maps(op)
    out_map = maps[-1]
    if not out_map.results or not isinstance(out_map.results[-1], ir.AffineDimExpr):
        return False
    vdim = ir.AffineDimExpr(out_map.results[-1]).position
    n_inputs = len(op.operands) - len(op.results)
    changed = False
    for i in range(n_inputs):
        argument = body.arguments[i]
        amap = maps[i]
        operand = op.operands[i]
        if (not list(argument.uses) or not isinstance(operand.type, ir.RankedTensorType)
                or not all(isinstance(e, (ir.AffineDimExpr, ir.AffineConstantExpr)) for e in amap.results)
                or any(isinstance(e, ir.AffineDimExpr) and ir.AffineDimExpr(e).position == vdim for e in amap.results)
                or not _feeds_an_index(argument, body)):
            continue
        ip = ir.InsertionPoint(body.operations[0])
        indices = [_index_value(e, ip, op.location) for e in amap.results]
        with ip, op.location:
            load = ir.Operation.create("tensor.extract", results=[argument.type], operands=[operand, *indices])
        argument.replace_all_uses_with(load.result)
        changed = True
    return changed


def _constant_index(value: int, ip, loc):
    index = ir.IndexType.get()
    with ip, loc:
        return ir.Operation.create("arith.constant", results=[index],
                                   attributes={"value": ir.IntegerAttr.get(index, value)}).result


def _fold_indices(op) -> bool:
    """Step 3: extract indices that are a function of one loop (or of none) and affine with unit stride
    (or constant) over its range written as such. Whether any was."""
    body = _body(op)
    domain = _domain(op)
    changed = False
    for extract in [inner for inner in body.operations if inner.operation.name == "tensor.extract"]:
        for k, index in enumerate(list(extract.operands)[1:], start=1):
            deps = dependence(index, op)
            if deps is None or len(deps) > 1 or _plain_index(index, op) is not None:
                continue
            if _op(index) is None or _op(index).block != body:
                continue
            dim = next(iter(deps)) if deps else 0
            values = evaluate(index, op, dim, domain[dim] if deps else 1)
            if values is None:
                continue
            ip = ir.InsertionPoint(extract.operation)
            if not deps:
                extract.operation.operands[k] = _constant_index(int(values[0]), ip, op.location)
                changed = True
                continue
            offset = _affine_offset(values)
            if offset is None:
                continue
            with ip, op.location:
                loop = ir.Operation.create("linalg.index", results=[ir.IndexType.get()], attributes={
                    "dim": ir.IntegerAttr.get(ir.IntegerType.get_signless(64), dim)}).result
                if offset:
                    loop = ir.Operation.create("arith.addi", results=[loop.type], operands=[
                        loop, _constant_index(offset, ip, op.location)]).result
            extract.operation.operands[k] = loop
            changed = True
    return changed


def _unit_stride_run(values: np.ndarray) -> tuple[int, int]:
    """The longest [a, b) over which values[j + 1] == values[j] + 1."""
    best, start = (0, 1), 0
    for j in range(1, len(values) + 1):
        if j == len(values) or values[j] != values[j - 1] + 1:
            if j - start > best[1] - best[0]:
                best = (start, j)
            start = j
    return best


def _slice(value, dim_position: int, start: int, size: int, ip, loc):
    t = ir.RankedTensorType(value.type)
    shape = list(t.shape)
    offsets = [0] * len(shape)
    offsets[dim_position] = start
    shape[dim_position] = size
    with ip, loc:
        return ir.Operation.create(
            "tensor.extract_slice", results=[ir.RankedTensorType.get(shape, t.element_type)], operands=[value],
            attributes={"static_offsets": ir.DenseI64ArrayAttr.get(offsets),
                        "static_sizes": ir.DenseI64ArrayAttr.get(shape),
                        "static_strides": ir.DenseI64ArrayAttr.get([1] * len(shape)),
                        "operandSegmentSizes": ir.DenseI32ArrayAttr.get([1, 0, 0, 0])}).result


def _insert(piece, into, dim_position: int, start: int, ip, loc):
    t = ir.RankedTensorType(piece.type)
    offsets = [0] * t.rank
    offsets[dim_position] = start
    with ip, loc:
        return ir.Operation.create(
            "tensor.insert_slice", results=[into.type], operands=[piece, into],
            attributes={"static_offsets": ir.DenseI64ArrayAttr.get(offsets),
                        "static_sizes": ir.DenseI64ArrayAttr.get(list(t.shape)),
                        "static_strides": ir.DenseI64ArrayAttr.get([1] * t.rank),
                        "operandSegmentSizes": ir.DenseI32ArrayAttr.get([1, 1, 0, 0, 0])}).result


def _split_at_run(op) -> list | None:
    """Step 4: the pieces (new generics) of a one-load gather `op` split along its vector loop around the
    run where its last index has unit stride; None when there is nothing to split (op unchanged)."""
    body = _body(op)
    maps = _maps(op)
    extracts = [inner for inner in body.operations if inner.operation.name == "tensor.extract"]
    out_map = maps[-1]
    if (len(extracts) != 1 or len(op.results) != 1 or not out_map.results
            or not isinstance(out_map.results[-1], ir.AffineDimExpr)):
        return None
    vdim = ir.AffineDimExpr(out_map.results[-1]).position
    domain = _domain(op)
    last = list(extracts[0].operands)[-1]
    if dependence(last, op) != {vdim} or _plain_index(last, op) is not None:
        return None
    values = evaluate(last, op, vdim, domain[vdim])
    if values is None:
        return None
    a, b = _unit_stride_run(values)
    if b - a < max(MIN_CONTIGUOUS_RUN, domain[vdim] / 2) or b - a == domain[vdim]:
        return None
    # every operand that uses the vector loop reads it as a plain dim (sliced along it)
    positions = []
    for amap in maps:
        found = None
        for p, e in enumerate(amap.results):
            if isinstance(e, ir.AffineDimExpr) and ir.AffineDimExpr(e).position == vdim:
                found = p
            elif not isinstance(e, (ir.AffineDimExpr, ir.AffineConstantExpr)):
                return None
        positions.append(found)
    n_inputs = len(op.operands) - 1
    ip = ir.InsertionPoint(op)
    loc = op.location
    result = op.operands[n_inputs]
    pieces = []
    for start, stop in ((0, a), (a, b), (b, domain[vdim])):
        if stop <= start:
            continue
        # (the output's slice from the pieces inserted so far: destination passing, written in place)
        slices = {i: _slice(result if i == n_inputs else op.operands[i], position, start, stop - start, ip, loc)
                  for i, position in enumerate(positions) if position is not None}
        piece = op.clone(ip=ip)
        for i, value in slices.items():
            piece.operands[i] = value
        piece.results[0].set_type(piece.operands[n_inputs].type)
        if start:
            for inner in list(_body(piece).operations):
                if inner.operation.name == "linalg.index" and _index_dim(inner.operation) == vdim:
                    at_start = ir.InsertionPoint(_body(piece).operations[0])
                    offset = _constant_index(start, at_start, loc)
                    with at_start, loc:
                        shifted = ir.Operation.create("arith.addi", results=[inner.result.type],
                                                      operands=[inner.result, offset])
                    _op(offset).move_after(inner.operation)
                    shifted.move_after(_op(offset))
                    inner.result.replace_all_uses_except(shifted.result, shifted)
        result = _insert(piece.results[0], result, positions[-1], start, ip, loc)
        pieces.append(piece)
    op.results[0].replace_all_uses_with(result)
    op.erase()
    return pieces


def _expand_absi(op) -> bool:
    """math.absi in the body of `op` as `maxsi(x, 0 - x)`: vectorized (index arithmetic the same for
    every lane is vectorized too), math.absi on n-D vectors has no LLVM lowering. Whether any was."""
    absis = [inner for inner in _body(op).operations if inner.operation.name == "math.absi"]
    for absi in absis:
        x = absi.operands[0]
        with ir.InsertionPoint(absi.operation), absi.location:
            zero = ir.Operation.create("arith.constant", results=[x.type],
                                       attributes={"value": ir.IntegerAttr.get(x.type, 0)}).result
            negated = ir.Operation.create("arith.subi", results=[x.type], operands=[zero, x]).result
            magnitude = ir.Operation.create("arith.maxsi", results=[x.type], operands=[x, negated]).result
        absi.results[0].replace_all_uses_with(magnitude)
        absi.operation.erase()
    return bool(absis)


def _drop_unused_inputs(op):
    """`op` without the inputs its body no longer reads (a new generic; `op` itself when all are read)."""
    body = _body(op)
    n_inputs = len(op.operands) - len(op.results)
    keep = [i for i in range(n_inputs) if list(body.arguments[i].uses)] + list(range(n_inputs, len(op.operands)))
    if len(keep) == len(op.operands):
        return op
    maps = ir.ArrayAttr(op.attributes["indexing_maps"])
    attributes = {name: op.attributes[name] for name in op.attributes}
    attributes["indexing_maps"] = ir.ArrayAttr.get([maps[i] for i in keep])
    attributes["operandSegmentSizes"] = ir.DenseI32ArrayAttr.get([len(keep) - len(op.results), len(op.results)])
    with ir.InsertionPoint(op), op.location:
        new = ir.Operation.create("linalg.generic", results=[r.type for r in op.results],
                                  operands=[op.operands[i] for i in keep], attributes=attributes, regions=1)
    block = new.regions[0].blocks.append(*[body.arguments[i].type for i in keep])
    for k, i in enumerate(keep):
        body.arguments[i].replace_all_uses_with(block.arguments[k])
    for inner in list(body.operations):
        block.append(inner.operation)
    for old, fresh in zip(op.results, new.results):
        old.replace_all_uses_with(fresh)
    op.erase()
    return new


def _source_through_reshape(value):
    """(producer op, expand_shape op or None) for a tensor loaded by an extract: the generic producing it,
    directly or through one tensor.expand_shape; (None, None) otherwise."""
    defining = _op(value)
    reshape = None
    if defining is not None and defining.name == "tensor.expand_shape":
        reshape, defining = defining, _op(defining.operands[0])
    if defining is None or defining.name != "linalg.generic":
        return None, None
    return defining, reshape


def _producer_indices(extract, reshape, ip, loc) -> list:
    """The indices into the reshape's source (or the extract's tensor) of an extract's element: through an
    expand_shape, each source dim the row-major linearization of its group of result dims."""
    indices = list(extract.operands)[1:]
    if reshape is None:
        return indices
    shape = ir.RankedTensorType(reshape.results[0].type).shape
    groups = [[ir.IntegerAttr(d).value for d in ir.ArrayAttr(group)]
              for group in ir.ArrayAttr(reshape.attributes["reassociation"])]
    index = ir.IndexType.get()
    source = []
    with ip, loc:
        for group in groups:
            acc = indices[group[0]]
            for d in group[1:]:
                size = _constant_index(shape[d], ip, loc)
                scaled = ir.Operation.create("arith.muli", results=[index], operands=[acc, size]).result
                acc = ir.Operation.create("arith.addi", results=[index], operands=[scaled, indices[d]]).result
            source.append(acc)
    return source


def _fuse_producer_gathers(op) -> bool:
    """A load of the consumer gather `op` from the result of another gather (all-parallel, identity output
    map, used only there; through an expand_shape too) becomes that gather's body, computed at the loaded
    element's indices: a reflect pad along H then W is one pass over memory, not two. Whether any was."""
    body = _body(op)
    changed = False
    for extract in [inner for inner in body.operations if inner.operation.name == "tensor.extract"]:
        producer, reshape = _source_through_reshape(extract.operands[0])
        if producer is None or producer == op or len(producer.results) != 1:
            continue
        uses = list(producer.results[0].uses)
        reshape_uses = list(reshape.results[0].uses) if reshape is not None else []
        if len(uses) != 1 or (reshape is not None and len(reshape_uses) != 1):
            continue
        maps = _maps(producer)
        pbody = _body(producer)
        n_inputs = len(producer.operands) - 1
        if (any(it != "parallel" for it in iterator_types(producer)) or maps[-1] != ir.AffineMap.get_identity(maps[-1].n_dims)
                or list(pbody.arguments[n_inputs].uses)
                or not any(inner.operation.name == "tensor.extract" for inner in pbody.operations)
                or any(not all(isinstance(e, (ir.AffineDimExpr, ir.AffineConstantExpr)) for e in m.results)
                       for m in maps[:n_inputs])
                or any(len(inner.regions) for inner in pbody.operations)):
            continue
        ip = ir.InsertionPoint(extract.operation)
        loc = extract.location
        indices = _producer_indices(extract, reshape, ip, loc)
        mapped: dict = {}
        for i in range(n_inputs):
            argument = pbody.arguments[i]
            if not list(argument.uses):
                continue
            at = [indices[ir.AffineDimExpr(e).position] if isinstance(e, ir.AffineDimExpr)
                  else _constant_index(ir.AffineConstantExpr(e).value, ip, loc) for e in maps[i].results]
            with ip, loc:
                mapped[argument] = ir.Operation.create("tensor.extract", results=[argument.type],
                                                       operands=[producer.operands[i], *at]).result
        result = None
        for inner in pbody.operations:
            name = inner.operation.name
            if name == "linalg.yield":
                result = mapped.get(inner.operands[0], inner.operands[0])
                break
            if name == "linalg.index":
                mapped[inner.results[0]] = indices[_index_dim(inner.operation)]
                continue
            clone_mapped(inner, mapped, ip)
        extract.results[0].replace_all_uses_with(result)
        extract.operation.erase()
        if reshape is not None:
            reshape.erase()
        producer.erase()
        changed = True
    return changed


def gather_indices(module) -> int:
    """Rewrite the module's gathers (module docstring); the number of ops changed."""
    from mlir.passmanager import PassManager

    changed = sum(1 for op in _gather_ops(module) if _inline_tables(op))
    while True:   # one producer at a time (the fused one is erased; a chain of gathers collapses)
        if not any(_fuse_producer_gathers(op) for op in reversed(_gather_ops(module))):
            break
        changed += 1
    for op in _gather_ops(module):
        touched = _inline_tables(op)
        touched |= _fold_indices(op)
        fewer = _drop_unused_inputs(op)
        touched |= fewer is not op
        op = fewer
        pieces = _split_at_run(op)
        if pieces is not None:
            for piece in pieces:
                _fold_indices(piece)
            touched = True
        for part in pieces or [op]:
            vdim = _vector_loop(part)
            # ids loaded in the body only where that leaves every load contiguous (else the op stays a
            # gather as it was, its loads counted as they were)
            if vdim is not None and contiguous_extracts(part, vdim) and _load_invariant_inputs(part):
                part = _drop_unused_inputs(part)
                touched = True
            touched |= _expand_absi(part)
        changed += bool(touched)
    if changed:
        PassManager.parse("builtin.module(func.func(canonicalize,cse))", context=module.context).run(module.operation)
    return changed
