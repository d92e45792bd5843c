"""Attention over key blocks with an online softmax (`lh-flash-attention{rows=R keys=K}`).

torch-mlir's scaled_dot_product_attention, once prepared (lh-fold-all-neg-inf-checks, lh-fuse-elementwise,
lh-softmax-reciprocals), is
    S   = Q K^T [+ mask]                    (a contraction from a zero fill, then an elementwise op)
    mx  = max_n S                           (a `maximumf` reduction from -inf)
    E   = exp(S - mx)
    sum = sum_n E                           (an `addf` reduction from 0)
    P   = f(E, rows)                        (E * (1 / sum), select(mx == -inf, 0, .): linear in E)
    O   = P V                               (a contraction from a zero fill)
f's row scaling is moved after P V first (lh-scale-after-contractions' rewrite: O = f(E V, rows)); then
E V, sum and mx are computed R query rows and K keys at a time, flash-attention style: for every block
of R rows (and every batch index), a loop over the key blocks carries the running max m, the running sum
l and the partial output acc (R x Dv):
    S_j   = Q_i K_j^T [+ mask_ij]           (the original ops, on slices: R x K)
    m'    = max(m, max_n S_j)               (the block's max reduction from -inf, then the max with m)
    ms    = m' == -inf ? 0 : m'             (a row with no finite score yet: exp(-inf - 0) = 0, no NaN)
    E_j   = exp(S_j - ms)
    a     = exp(m - ms)                     (the rescale of what the earlier blocks summed)
    l'    = l * a + sum_n E_j
    acc'  = acc * a + E_j V_j
m, l and acc start in the block's rows of the results and are updated in place (m' written over m after
a is computed): the key loop carries no buffers of its own, none is allocated per block or key block.
After the last block m, l and acc are mx, sum and E V of the whole rows (a row all -inf: mx = -inf,
sum = 0, E V = 0, which the guard turns into torch's 0), and f runs on acc. No score row is materialized
past K columns: a block's R x K scores stay in L1/L2 however long the sequence.

With `parallel`, the loops over the batch dims and the row blocks are one scf.forall (each block's
running max, sum and output its own, written back with parallel_insert_slice): the blocks split over the
cores, the key loop serial inside each.

The block ops are clones of the original generics on slices (the same indexing maps, batch dims kept as
size 1): the selector's per-op schedules take them inside the loops. Rows and keys must divide the
query and key counts (static shapes); anything else is left as it is.
"""
from __future__ import annotations

from mlir import ir
from mlir.dialects import arith, linalg, math, scf, tensor

from workbench.worker.cpu.dead_results import INIT_OPS
from workbench.worker.cpu.scaled_contractions import _contraction_body, _dead_views, _maps, _op, _scale, _zero_fill
from workbench.worker.ir_walk import iterator_types, ops_where

NEG_INF = float("-inf")


def _body_names(op) -> list[str]:
    return [o.name for o in op.regions[0].blocks[0].operations]


def _users(value) -> list:
    dead = _dead_views(value)
    return [u.owner.operation for u in value.uses if u.owner.operation not in dead]


def _fill_of(value, number: float) -> bool:
    owner = _op(value)
    if owner is None or owner.name != "linalg.fill":
        return False
    const = _op(owner.operands[0])
    return (const is not None and const.name == "arith.constant" and isinstance(const.attributes["value"], ir.FloatAttr)
            and ir.FloatAttr(const.attributes["value"]).value == number)


def _dims(m) -> list[int] | None:
    out = []
    for e in m.results:
        if not isinstance(e, ir.AffineDimExpr):
            return None
        out.append(ir.AffineDimExpr(e).position)
    return out


def _identity(m) -> bool:
    return m == ir.AffineMap.get_identity(m.n_dims)


def _row_reduction(op, body: list[str], init: float, source) -> bool:
    """`op`: a generic reducing `source` (identity map) along its last dim into rows, from a fill of `init`."""
    if (op.name != "linalg.generic" or len(op.operands) != 2 or len(op.results) != 1 or op.operands[0] != source
            or _body_names(op) != body or not _fill_of(op.operands[1], init)):
        return False
    its = iterator_types(op)
    maps = _maps(op)
    rank = len(its)
    return (its == ["parallel"] * (rank - 1) + ["reduction"] and _identity(maps[0])
            and _dims(maps[1]) == list(range(rank - 1)))


def _is_exp_of_difference(op) -> bool:
    """exp(in0 - in1) of a full input and a row input."""
    if op is None or op.name != "linalg.generic" or len(op.operands) != 3 or len(op.results) != 1:
        return False
    if _body_names(op) != ["arith.subf", "math.exp", "linalg.yield"] or set(iterator_types(op)) != {"parallel"}:
        return False
    body = list(op.regions[0].blocks[0].operations)
    args = op.regions[0].blocks[0].arguments
    if list(body[0].operands) != [args[0], args[1]] or list(body[1].operands) != [body[0].results[0]]:
        return False
    maps = _maps(op)
    rank = len(iterator_types(op))
    return rank >= 3 and _identity(maps[0]) and _identity(maps[2]) and _dims(maps[1]) == list(range(rank - 1))


def _match(pv):
    """(qk, score_ops, mx, e, sum_or_None) of the attention ending in contraction `pv` (P V, or E V), or None."""
    pv = pv.operation
    if not _contraction_body(pv) or not _zero_fill(pv.operands[2]):
        return None
    reader = pv
    e = _op(pv.operands[0])
    if not _is_exp_of_difference(e):
        # P = f(E, rows): E one of its inputs (lh-scale-after-contractions moves f after P V)
        reader = e
        if reader is None or reader.name != "linalg.generic" or _users(reader.results[0]) != [pv]:
            return None
        es = [_op(v) for v in list(reader.operands)[:-1] if _is_exp_of_difference(_op(v))]
        if len(es) != 1:
            return None
        e = es[0]
    rank = len(iterator_types(e))
    s, mx = e.operands[0], _op(e.operands[1])
    if mx is None or not _row_reduction(mx, ["arith.maximumf", "linalg.yield"], NEG_INF, s):
        return None
    e_users = _users(e.results[0])
    sums = [u for u in e_users if _row_reduction(u, ["arith.addf", "linalg.yield"], 0.0, e.results[0])]
    if len(sums) > 1 or len(e_users) != 1 + len(sums) or reader not in e_users:
        return None
    if len(_users(s)) != 2 or set(_users(s)) != {mx, e}:
        return None
    # the scores: the Q K^T contraction, or an elementwise op of it (the mask's addition)
    score_ops = []
    producer = _op(s)
    if producer is None or producer.name != "linalg.generic":
        return None
    if not _contraction_body(producer):
        maps = _maps(producer)
        if (set(iterator_types(producer)) != {"parallel"} or len(producer.results) != 1
                or not _identity(maps[-1]) or any(_dims(m) is None for m in maps)):
            return None
        inputs = list(producer.operands)[:-1]
        qks = [v for n, v in enumerate(inputs) if _identity(maps[n]) and _op(v) is not None
               and _op(v).name == "linalg.generic" and _contraction_body(_op(v))]
        if len(qks) != 1 or _users(qks[0]) != [producer] or inputs.count(qks[0]) != 1:
            return None
        score_ops.append(producer)
        producer = _op(qks[0])
    qk = producer
    if not _zero_fill(qk.operands[2]):
        return None
    if any(o.name == "linalg.index" or o.regions for op in score_ops
           for o in op.regions[0].blocks[0].operations):
        return None   # (the block ops are clones on slices: a body reading its loop indices would see the block's)
    # Q K^T: loops (batch..., m, n, k) writing S's dims in order; P V: operand 0 read as (batch..., m, key)
    qk_maps = _maps(qk)
    if any(_dims(m) is None for m in qk_maps) or _dims(qk_maps[2]) != list(range(rank)):
        return None
    pv_maps = _maps(pv)
    pv_its = iterator_types(pv)
    if any(_dims(m) is None for m in pv_maps):
        return None
    e_read = _dims(pv_maps[0])
    out = _dims(pv_maps[2])
    if (len(e_read) != rank or pv_its[e_read[-1]] != "reduction" or pv_its.count("reduction") != 1
            or len(out) != rank or out[:rank - 1] != e_read[:rank - 1]):
        return None
    return qk, score_ops, mx, e, (sums[0] if sums else None)


def _static(shape_type) -> list[int]:
    return list(ir.RankedTensorType(shape_type).shape)


def _index(n: int):
    return arith.ConstantOp(ir.IndexType.get(), n).result


def _slice(value, offsets: list, sizes: list[int]):
    """extract_slice of `value` (offsets: ints or index values), full rank kept."""
    source = ir.RankedTensorType(value.type)
    dyn = ir.ShapedType.get_dynamic_stride_or_offset()
    static = [o if isinstance(o, int) else dyn for o in offsets]
    dynamic = [o for o in offsets if not isinstance(o, int)]
    if static == [0] * len(sizes) and sizes == list(source.shape):
        return value
    result = ir.RankedTensorType.get(sizes, source.element_type)
    return tensor.ExtractSliceOp(result, value, dynamic, [], [], static, sizes, [1] * len(sizes)).result


def _insert(value, dest, offsets: list):
    dyn = ir.ShapedType.get_dynamic_stride_or_offset()
    static = [o if isinstance(o, int) else dyn for o in offsets]
    dynamic = [o for o in offsets if not isinstance(o, int)]
    sizes = _static(value.type)
    return tensor.InsertSliceOp(value, dest, dynamic, [], [], static, sizes, [1] * len(sizes)).result


def _operand_slices(op, loop_ranges: dict, replaced: dict | None = None) -> list:
    """`op`'s inputs sliced by its indexing maps: loop dim d read at loop_ranges[d] = (offset, size); input n
    in `replaced` is that value instead."""
    maps = _maps(op)
    n_inputs = len(op.operands) - len(op.results)
    sliced = []
    for n in range(n_inputs):
        value = op.operands[n]
        if replaced and n in replaced:
            sliced.append(replaced[n])
            continue
        full = _static(value.type)
        dims = _dims(maps[n])
        offsets = [loop_ranges[d][0] if d in loop_ranges else 0 for d in dims]
        sizes = [loop_ranges[d][1] if d in loop_ranges else full[k] for k, d in enumerate(dims)]
        sliced.append(_slice(value, offsets, sizes))
    return sliced


def _clone(op, inputs: list, inits: list):
    """A clone of generic `op` reading `inputs` into `inits` (its result types theirs)."""
    clone = op.clone()
    for n, v in enumerate(list(inputs) + list(inits)):
        clone.operands[n] = v
    for r, init in zip(clone.results, inits):
        r.set_type(init.type)
    return clone


def _parallel_insert(value, dest, offsets: list) -> None:
    dyn = ir.ShapedType.get_dynamic_stride_or_offset()
    static = [o if isinstance(o, int) else dyn for o in offsets]
    dynamic = [o for o in offsets if not isinstance(o, int)]
    sizes = _static(value.type)
    tensor.ParallelInsertSliceOp(value, dest, dynamic, [], [], static, sizes, [1] * len(sizes))


def _fill(shape: list[int], element, number: float):
    empty = tensor.EmptyOp(shape, element).result
    cst = arith.ConstantOp(element, number).result
    return linalg.fill(cst, outs=[empty])


def _fill_into(dest, number: float):
    """`dest` filled with `number`."""
    cst = arith.ConstantOp(ir.RankedTensorType(dest.type).element_type, number).result
    return linalg.fill(cst, outs=[dest])


def _update_in_place(dest, factor, factor_map, body):
    """`dest` = body(dest, factor) elementwise, `factor` read through `factor_map`, written over `dest` (its
    own buffer: a loop-carried value stays in its buffer, no copy per trip)."""
    t = ir.RankedTensorType(dest.type)
    rank = len(t.shape)
    identity = ir.AffineMap.get_identity(rank)
    op = ir.Operation.create(
        "linalg.generic", results=[dest.type], operands=[factor, dest], regions=1,
        attributes={"indexing_maps": ir.ArrayAttr.get([ir.AffineMapAttr.get(m) for m in (factor_map, identity)]),
                    "iterator_types": ir.ArrayAttr.get([ir.Attribute.parse("#linalg.iterator_type<parallel>")] * rank),
                    "operandSegmentSizes": ir.DenseI32ArrayAttr.get([1, 1])})
    block = op.regions[0].blocks.append(ir.RankedTensorType(factor.type).element_type, t.element_type)
    with ir.InsertionPoint(block):
        linalg.YieldOp([body(block.arguments[1], block.arguments[0])])
    return op.results[0]


def _elementwise(inputs: list, input_maps: list, out_shape: list[int], element, body):
    """A parallel generic over `out_shape` (identity output map) whose body is `body(block args) -> value`."""
    rank = len(out_shape)
    empty = tensor.EmptyOp(out_shape, element).result
    identity = ir.AffineMap.get_identity(rank)
    op = ir.Operation.create(
        "linalg.generic", results=[empty.type], operands=list(inputs) + [empty], regions=1,
        attributes={"indexing_maps": ir.ArrayAttr.get([ir.AffineMapAttr.get(m) for m in input_maps + [identity]]),
                    "iterator_types": ir.ArrayAttr.get([ir.Attribute.parse("#linalg.iterator_type<parallel>")] * rank),
                    "operandSegmentSizes": ir.DenseI32ArrayAttr.get([len(inputs), 1])})
    block = op.regions[0].blocks.append(*[ir.RankedTensorType(v.type).element_type for v in inputs], element)
    with ir.InsertionPoint(block):
        linalg.YieldOp([body(*block.arguments[:len(inputs)])])
    return op.results[0]


def _rewrite(c2, qk, score_ops: list, mx, e, sum_op, rows: int, keys: int, parallel: bool = False) -> None:
    rank = len(iterator_types(e))
    s_shape = _static(e.results[0].type)
    batch, m_size, n_size = s_shape[:rank - 2], s_shape[rank - 2], s_shape[rank - 1]
    f32 = ir.RankedTensorType(e.results[0].type).element_type   # (the scores' type: f32 where the selector adds it)
    c2_maps = _maps(c2)
    e_read = _dims(c2_maps[0])
    c2_out = _dims(c2_maps[2])
    o_shape = _static(c2.results[0].type)
    dv_pos = [p for p, d in enumerate(c2_out) if d not in e_read][0]
    row_shape = [1] * len(batch) + [rows]
    acc_shape = list(row_shape)
    acc_shape.insert(dv_pos, o_shape[dv_pos])
    with ir.InsertionPoint(c2), c2.location:
        m_full = tensor.EmptyOp(batch + [m_size], f32).result
        l_full = tensor.EmptyOp(batch + [m_size], f32).result
        o_full = tensor.EmptyOp(o_shape, f32).result
        c0, c1 = _index(0), _index(1)
        extents = [(b, 1) for b in batch] + [(m_size, rows)]

        def block(ivs: list, carried: list) -> list:
            """The key loop of one row block; the three results inserted into `carried`."""
            row_offsets = ivs[:len(batch)] + [ivs[-1]]
            acc_offsets = list(row_offsets)
            acc_offsets.insert(dv_pos, 0)
            # the running max, sum and output start in the block's rows of the results (no buffers of their
            # own; the loop updates them in place, the insert at the end writes them where they are)
            m0 = _fill_into(_slice(carried[0], row_offsets, row_shape), NEG_INF)
            l0 = _fill_into(_slice(carried[1], row_offsets, row_shape), 0.0)
            a0 = _fill_into(_slice(carried[2], acc_offsets, acc_shape), 0.0)
            key_loop = scf.ForOp(c0, _index(n_size), _index(keys), [m0, l0, a0])
            with ir.InsertionPoint(key_loop.body):
                m_old, l_old, acc_old = key_loop.inner_iter_args
                j = key_loop.induction_variable
                s_ranges = {d: (ivs[d], 1) for d in range(len(batch))}
                s_ranges[rank - 2] = (ivs[-1], rows)
                s_ranges[rank - 1] = (j, keys)
                s_blk_shape = row_shape + [keys]
                # Q K^T's loops: its result map is the identity on S's dims; the rest (k) read whole
                s_blk = _clone(qk, _operand_slices(qk, s_ranges), [_fill(s_blk_shape, f32, 0.0)]).results[0]
                for op in score_ops:
                    inputs = _operand_slices(op, s_ranges, {n: s_blk for n, v in enumerate(op.operands)
                                                            if v == qk.results[0]})
                    s_blk = _clone(op, inputs, [tensor.EmptyOp(s_blk_shape, f32).result]).results[0]
                # the block's row max, then the rescale from the old max; the new max written over the old one
                # last (the running max stays in its buffer)
                m_blk = _clone(mx, [s_blk], [_fill(row_shape, f32, NEG_INF)]).results[0]
                rows_id = ir.AffineMap.get_identity(len(row_shape))
                neg_inf = arith.ConstantOp(f32, NEG_INF).result
                zero = arith.ConstantOp(f32, 0.0).result

                def safe_max(a, b):
                    x = arith.maximumf(a, b)
                    return arith.select(arith.cmpf(arith.CmpFPredicate.OEQ, x, neg_inf), zero, x)

                m_safe = _elementwise([m_old, m_blk], [rows_id, rows_id], row_shape, f32, safe_max)
                alpha = _elementwise([m_old, m_safe], [rows_id, rows_id], row_shape, f32,
                                     lambda a, b: math.exp(arith.subf(a, b)))
                e_blk = _clone(e, [s_blk, m_safe], [tensor.EmptyOp(s_blk_shape, f32).result]).results[0]
                if sum_op is not None:
                    l_scaled = _update_in_place(l_old, alpha, rows_id, arith.mulf)
                    l_new = _clone(sum_op, [e_blk], [l_scaled]).results[0]
                else:
                    l_new = l_old
                acc_rank = len(acc_shape)
                row_of_acc = ir.AffineMap.get(acc_rank, 0, [ir.AffineDimExpr.get(p) for p in range(acc_rank)
                                                             if p != dv_pos])
                acc_scaled = _update_in_place(acc_old, alpha, row_of_acc, arith.mulf)
                c2_ranges = {e_read[d]: s_ranges[d] for d in range(rank)}
                acc_new = _clone(c2, _operand_slices(c2, c2_ranges, {0: e_blk}), [acc_scaled]).results[0]
                m_new = _update_in_place(m_old, m_blk, rows_id, arith.maximumf)
                scf.YieldOp([m_new, l_new, acc_new])
            m_fin, l_fin, acc_fin = key_loop.results
            if parallel:
                # (the forall's terminator: each block writes its own rows of the shared results)
                with ir.InsertionPoint(forall.terminator().region.blocks[0]):
                    for value, dest, offsets in ((m_fin, carried[0], row_offsets), (l_fin, carried[1], row_offsets),
                                                 (acc_fin, carried[2], acc_offsets)):
                        _parallel_insert(value, dest, offsets)
                return []
            return [_insert(m_fin, carried[0], row_offsets), _insert(l_fin, carried[1], row_offsets),
                    _insert(acc_fin, carried[2], acc_offsets)]

        def nest(level: int, ivs: list, carried: list) -> list:
            if level == len(extents):
                return block(ivs, carried)
            extent, step = extents[level]
            loop = scf.ForOp(c0, _index(extent), _index(step) if step != 1 else c1, carried)
            with ir.InsertionPoint(loop.body):
                scf.YieldOp(nest(level + 1, ivs + [loop.induction_variable], list(loop.inner_iter_args)))
            return list(loop.results)

        if parallel:
            # one forall over the batch dims and the row blocks (the blocks split over the cores; each its own
            # running max, sum and output rows), the key loop inside
            forall = scf.ForallOp([0] * len(extents), [e for e, _ in extents], [s for _, s in extents],
                                  [m_full, l_full, o_full])
            with ir.InsertionPoint(forall.body):
                block(list(forall.induction_variables), list(forall.inner_iter_args))
            results = list(forall.results)
        else:
            results = nest(0, [], [m_full, l_full, o_full])
    m_res, l_res, o_res = results
    # what reads the row max or sum before the loop (the guard, the reciprocals) moves after it
    for view in _dead_views(mx.results[0]) + (_dead_views(sum_op.results[0]) if sum_op is not None else []):
        view.erase()
    gone = {c2, e, mx} | ({sum_op} if sum_op is not None else set())
    tainted = {mx.results[0]} | ({sum_op.results[0]} if sum_op is not None else set())
    moved = []
    loop_op = _op(o_res)
    after = False
    for o in list(mx.block.operations):
        o = o.operation
        if o == mx:
            after = True
            continue
        if o == loop_op:
            break
        if not after or o in gone:
            continue
        if any(v in tainted for v in o.operands):
            moved.append(o)
            tainted.update(o.results)
    anchor = loop_op
    for o in moved:
        o.move_after(anchor)
        anchor = o
    mx_init = mx.operands[1]
    mx.results[0].replace_all_uses_with(m_res)
    c2_init = c2.operands[2]
    c2.results[0].replace_all_uses_with(o_res)
    c2.erase()
    inits = [c2_init]
    if sum_op is not None:
        inits.append(sum_op.operands[1])
        sum_op.results[0].replace_all_uses_with(l_res)
        sum_op.erase()
    for view in _dead_views(e.results[0]):
        view.erase()
    inits.append(e.operands[2])
    e.erase()
    inits.append(mx_init)
    mx.erase()
    for op in reversed(score_ops):
        inits += list(op.operands)[len(op.operands) - 1:]
        for view in _dead_views(op.results[0]):
            view.erase()
        op.erase()
    inits.append(qk.operands[2])
    for view in _dead_views(qk.results[0]):
        view.erase()
    qk.erase()
    _erase_unread_inits(inits)


def _erase_unread_inits(values: list) -> None:
    """Erase the fills / empties among `values`' owners (and theirs) that nothing reads any more, each once:
    the ops of one attention may share an init (nn.MultiheadAttention's export: one tensor.empty for the
    mask's addition, the exponentials and the probabilities), which erasing per value would free twice."""
    pending = []
    todo = list(values)
    while todo:
        owner = todo.pop(0).owner
        if not isinstance(owner, (ir.Operation, ir.OpView)):
            continue
        owner = owner.operation
        if owner.name in INIT_OPS and owner not in pending:
            pending.append(owner)
            todo += list(owner.operands)
    changed = True
    while changed:
        changed = False
        for op in list(pending):
            if not any(list(r.uses) for r in op.results):
                pending.remove(op)
                op.erase()
                changed = True


def flash_attention(module, rows: int, keys: int, parallel: bool = False) -> int:
    """Rewrite every attention (module docstring) whose query and key counts `rows` and `keys` divide; how many.
    `parallel`: the loops over the batch dims and the row blocks are one scf.forall (the blocks split over the
    cores), else scf.for loops."""
    done = 0
    while True:
        for pv in ops_where(module, lambda o: o.name == "linalg.generic" and "reduction" in iterator_types(o)):
            pv = pv.operation
            found = _match(pv)
            if found is not None and _shape_ok(found[3], rows, keys):
                break
        else:
            return done
        qk, score_ops, mx, e, sum_op = found
        if _op(pv.operands[0]) != e:
            # the row scaling (the division, the guard) after P V: P V reads E
            if not _scale(pv):
                return done
            c2 = [u for u in _users(e.results[0]) if u.name == "linalg.generic" and _contraction_body(u)]
            if len(c2) != 1:
                raise AssertionError("lh-flash-attention: E V not found after the scaling moved")
            pv = c2[0]
        _rewrite(pv, qk, score_ops, mx, e, sum_op, rows, keys, parallel)
        done += 1


def _shape_ok(e, rows: int, keys: int) -> bool:
    shape = _static(e.results[0].type)
    return (len(shape) >= 3 and all(d > 0 for d in shape) and shape[-2] % rows == 0 and shape[-1] % keys == 0
            and keys < shape[-1])
