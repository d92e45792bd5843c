"""Fused row kernels: a chain of linalg.generic ops over the same rows (row reductions, elementwise ops
reading the row and the reductions' results broadcast along it) as ONE kernel (the `gpu-reductions`
rewrite, before the single-reduction kernels; pipelines/cuda/rows.py marks, the cuda selector finds
the chains: softmax, log_softmax, layer_norm, rms_norm, ...).

The ops of a group (`lh.gpu_rows = {group, threads = T, rows = B, vector = W}`, on memrefs after
bufferization) must be consecutive in their block (allocs, constants, get_global and linalg.fill
between them are fine) and share one iteration domain [r_1..r_p, c_1..c_q]: the reductions reduce the
c dims (iterators p x parallel then q x reduction, output map (d0..d_p-1)), the elementwise ops are
all-parallel, over the whole domain or over the rows [r_1..r_p] alone (row ops: a mean's division,
logsumexp's log(sum) + max, computed once per row by every thread of it). A buffer the group writes
is accessed only through the identity map (a full row value) or the row map (a per-row scalar), so
that each row depends on its own row alone.

The kernel: rows over blocks, B rows per block (threadIdx.y), T threads per row (threadIdx.x); thread
t holds the elements (s*T + t)*W .. +W-1 of the row (s < S = ceil(C / (T*W)) slots), loaded with one
W-wide vector load where an input's innermost index is the innermost row dim (16-byte loads for f32 and
W = 4). The group's ops run in order on these registers: an elementwise op's body per element, a
reduction's body per element combined into a partial, then a warp butterfly (gpu.shuffle xor) and, for
T > 32, the warps' partials through shared memory, so that every thread of the row has the total (the
combiner must be associative and commutative, as for the single-reduction kernel). Buffers written by
the group are values in registers; only those read after the group (function outputs, buffers used
elsewhere) are stored, with W-wide stores; buffers private to the group (allocs used by its ops only)
are never allocated.
"""
from __future__ import annotations

import math

from mlir import ir

from workbench.worker.cuda.reduce_kernels import (COMBINERS, ReduceKernelError, _apply, _combine, _delinearize,
                                                  _identity, _index, _maps, _shared_buffer, plan)
from workbench.worker.ir_walk import inside_loop, iterator_types

MARK = "lh.gpu_rows"
#: ops allowed between a group's ops (no side effect on the group's buffers)
BETWEEN = {"memref.alloc", "arith.constant", "memref.get_global", "linalg.fill"}
#: views (unit dims folded by the preparation): allowed between, unless a group op reads a view of a
#: buffer the group writes (an alias the kernel would not see)
VIEWS = {"memref.collapse_shape", "memref.expand_shape"}


#: constants up to this size that the kernel reads are initialized device globals (see device_constant)
MAX_CONSTANT_BYTES = 64 * 1024


def elem_of(v):
    return ir.ShapedType(v.type).element_type


def _is_constant_global(get_global) -> bool:
    from workbench.worker.cuda.gpu_wrapper import _is_constant_global as is_constant

    return is_constant(get_global.operation if hasattr(get_global, "operation") else get_global)


class RowKernelError(ValueError):
    pass


def _ranges(op, maps) -> list[int]:
    view = op.opview
    vals = list(view.inputs) + list(view.outputs)
    ranges: list[int | None] = [None] * len(iterator_types(op))
    for v, m in zip(vals, maps):
        shape = ir.ShapedType(v.type).shape if isinstance(v.type, ir.ShapedType) else []
        for k, e in enumerate(m.results):
            if isinstance(e, ir.AffineDimExpr):
                ranges[e.position] = shape[k]
    if any(r is None for r in ranges):
        raise RowKernelError("a loop range is not an operand dimension")
    return ranges


def _is_prefix_map(m, n: int) -> bool:
    """m is (d0, ..., d_{n-1}) (over any number of dims)."""
    res = list(m.results)
    return len(res) == n and all(isinstance(e, ir.AffineDimExpr) and ir.AffineDimExpr(e).position == k
                                 for k, e in enumerate(res))


def _identity_layout(t) -> bool:
    if not isinstance(t, ir.MemRefType):
        return False
    t = ir.MemRefType(t)
    try:
        return ir.AffineMapAttr(t.layout).value == ir.AffineMap.get_identity(t.rank)
    except (ValueError, TypeError):
        return False


def plan_group(ops: list) -> dict:
    """What the fused kernel needs from the group's ops (block order), or RowKernelError."""
    ops = [o.operation for o in ops]
    block = ops[0].block
    if any(o.block != block for o in ops):
        raise RowKernelError("the group's ops are in different blocks")
    all_ops = [o.operation for o in block.operations]
    pos = sorted(all_ops.index(o) for o in ops)
    members = set(ops)
    start = pos[0]
    while start > 0 and (all_ops[start - 1].name in BETWEEN or all_ops[start - 1].name in VIEWS):  # the fills that initialize the group's outputs
        start -= 1
    span = all_ops[start:pos[-1] + 1]
    for o in span:
        if o not in members and o.name not in BETWEEN and o.name not in VIEWS:
            raise RowKernelError(f"{o.name} between the group's ops")
    generics = [o for o in span if o in members]
    if any(o.name != "linalg.generic" for o in generics):
        raise RowKernelError("not a linalg.generic")
    p = None
    reductions = {}
    domains = {}
    for o in generics:
        view = o.opview
        vals = list(view.inputs) + list(view.outputs)
        if any(isinstance(v.type, ir.ShapedType) and not isinstance(v.type, ir.MemRefType) for v in vals):
            raise RowKernelError("not bufferized")
        if any(isinstance(v.type, ir.ShapedType) and not ir.ShapedType(v.type).has_static_shape for v in vals):
            raise RowKernelError("dynamic shapes")
        domains[o] = _ranges(o, _maps(o))
    # the group's domain [rows..., cols...] is its widest op's; elementwise ops over the rows alone (a
    # mean's division, logsumexp's log(sum) + max) compute one value per row
    ranges = max(domains.values(), key=len)
    row_ops = set()
    for o in generics:
        its = iterator_types(o)
        if "reduction" in its:
            k = its.index("reduction")
            if its != ["parallel"] * k + ["reduction"] * (len(its) - k):
                raise RowKernelError("a reduction over dims that are not the innermost")
            if p is None:
                p = k
            elif p != k:
                raise RowKernelError("reductions over different dims")
            try:
                reductions[o] = plan(o)
            except ReduceKernelError as e:
                raise RowKernelError(str(e))
        elif any(i != "parallel" for i in its):
            raise RowKernelError("an iterator that is neither parallel nor reduction")
    if p is None:
        raise RowKernelError("no reduction in the group")
    if p == len(ranges):
        raise RowKernelError("nothing reduced")
    for o in generics:
        if domains[o] == ranges[:p] and o not in reductions:
            row_ops.add(o)
        elif domains[o] != ranges:
            raise RowKernelError(f"iteration domains differ: {ranges} vs {domains[o]}")
    row_shape, full_shape = ranges[:p], ranges
    # buffers the group writes, and how (row / full); every access to them must be the same rows
    kinds: dict = {}

    def kind_of(v, m=None):
        shape = list(ir.ShapedType(v.type).shape)
        if shape == full_shape and (m is None or _is_prefix_map(m, len(ranges))):
            return "full"
        if shape == row_shape and (m is None or _is_prefix_map(m, p)):
            return "row"
        return None

    for o in span:
        if o.name == "linalg.fill":
            out = list(o.opview.outputs)[0]
            scalar = list(o.opview.inputs)[0]
            if isinstance(scalar.type, ir.ShapedType):
                raise RowKernelError("a fill from a buffer")
            k = kind_of(out) if isinstance(out.type, ir.MemRefType) else None
            if k is None:
                continue  # a fill of a buffer the group does not touch (checked below)
            kinds.setdefault(out, k)
        elif o in members:
            view = o.opview
            n_in = len(view.inputs)
            for v, m in zip(list(view.outputs), _maps(o)[n_in:]):
                k = kind_of(v, m)
                if k is None or (k == "row") != (o in reductions or o in row_ops):
                    raise RowKernelError("an output that is not the op's rows")
                if kinds.setdefault(v, k) != k:
                    raise RowKernelError("a buffer written as rows and as row values")
    for o in span:
        if o.name == "linalg.fill":
            out = list(o.opview.outputs)[0]
            if out not in kinds:
                for g in generics:
                    if any(v == out for v in g.operands):
                        raise RowKernelError("a fill of a buffer the group reads in another shape")
            continue
        if o not in members:
            continue
        for v, m in zip(list(o.operands), _maps(o)):
            if v in kinds and kind_of(v, m) != kinds[v]:
                raise RowKernelError("a buffer the group writes is read at other rows")
    for o in span:
        if o.name in VIEWS and o.operands[0] in kinds and any(
                u.owner.operation in members for u in o.results[0].uses):
            raise RowKernelError("a group op reads a view of a buffer the group writes")
    # buffers stored at the end: the written ones that something may read after the group; allocs
    # that only the group's ops (and fills, deallocs) use are not even allocated
    fills = {o for o in span if o.name == "linalg.fill"}
    stored = []
    private = []
    for v in kinds:
        is_alloc = getattr(v.owner, "name", None) == "memref.alloc"
        users = [u.owner.operation for u in v.uses]
        if is_alloc and all(u in members or u in fills or u.name == "memref.dealloc" for u in users):
            private.append(v)
        elif not is_alloc or _read_after(v, all_ops, pos[-1], members | fills):
            stored.append(v)
    return {"span": span, "after": all_ops[pos[-1] + 1], "members": members, "reductions": reductions, "ranges": ranges, "p": p,
            "kinds": kinds, "stored": stored, "private": private, "row_ops": row_ops}


def _read_after(buf, block_ops: list, last: int, group: set) -> bool:
    """Whether a use of `buf` (or of a view of it) outside `group` may read what the group writes: one
    placed after the group's last op (`block_ops[last]`), or anywhere when the group's block is inside
    a loop. A use before the group (a matmul whose C buffer bufferization then reuses for the group's
    temporaries) reads only older contents."""
    if inside_loop(block_ops[last]):   # (a use earlier in a loop's body can read a later write)
        return True
    for use in buf.uses:
        op = use.owner.operation
        if op in group or op.name == "memref.dealloc":
            continue
        anchor = op
        while anchor is not None and anchor not in block_ops:
            anchor = anchor.parent.operation if anchor.parent is not None else None
        if anchor is None or block_ops.index(anchor) > last:
            return True
        # a view taken before the group aliases the buffer: its uses count too
        if any(isinstance(r.type, ir.MemRefType) and _read_after(r, block_ops, last, group) for r in op.results):
            return True
    return False


def _shuffle_xor(v, offset: int, width: int):
    """gpu.shuffle xor of any scalar of up to 64 bits (split / widened to i32 as needed)."""
    from mlir.dialects import arith, gpu

    i32 = ir.IntegerType.get_signless(32)
    off = arith.ConstantOp(i32, offset).result
    wid = arith.ConstantOp(i32, width).result
    t = v.type
    if t == i32 or t == ir.F32Type.get():
        return gpu.ShuffleOp(v, off, wid, gpu.ShuffleMode.XOR).results[0]
    bits = ir.IntegerType(t).width if isinstance(t, ir.IntegerType) else (
        64 if t == ir.F64Type.get() else 16 if t in (ir.F16Type.get(), ir.BF16Type.get()) else None)
    if bits is None:
        raise RowKernelError(f"cannot shuffle {t}")
    it = ir.IntegerType.get_signless(bits)
    x = v if isinstance(t, ir.IntegerType) else arith.BitcastOp(it, v).result
    if bits <= 32:
        w = x if bits == 32 else arith.ExtUIOp(i32, x).result
        s = gpu.ShuffleOp(w, off, wid, gpu.ShuffleMode.XOR).results[0]
        y = s if bits == 32 else arith.TruncIOp(it, s).result
    elif bits == 64:
        lo = arith.TruncIOp(i32, x).result
        hi = arith.TruncIOp(i32, arith.ShRUIOp(x, arith.ConstantOp(it, 32).result).result).result
        slo = gpu.ShuffleOp(lo, off, wid, gpu.ShuffleMode.XOR).results[0]
        shi = gpu.ShuffleOp(hi, off, wid, gpu.ShuffleMode.XOR).results[0]
        y = arith.OrIOp(arith.ExtUIOp(it, slo).result,
                        arith.ShLIOp(arith.ExtUIOp(it, shi).result, arith.ConstantOp(it, 32).result).result).result
    else:
        raise RowKernelError(f"cannot shuffle {t}")
    return y if isinstance(t, ir.IntegerType) else arith.BitcastOp(t, y).result


def build(module, ops: list, threads: int, rows: int, vector: int) -> None:
    """Replace the group's ops by one fused row kernel (see the module docstring)."""
    from mlir.dialects import arith, gpu, memref, scf
    from mlir.dialects import vector as vec

    g = plan_group(ops)
    T, B, W = threads, rows, vector
    if T < 1 or T & (T - 1) or T > 1024 or B < 1 or T * B > 1024:
        raise RowKernelError(f"threads={T} rows={B}: a power of two, threads x rows <= 1024")
    ranges, p = g["ranges"], g["p"]
    rdims, cdims = ranges[:p], ranges[p:]
    n_rows, C = math.prod(rdims), math.prod(cdims)
    if W < 1 or W & (W - 1) or cdims[-1] % W:
        W = 1
    S = -(-C // (T * W))
    if S * W > 64:
        raise RowKernelError(f"{S * W} elements per thread (rows of {C}, {T} threads): too many registers")
    width = min(32, T * B)
    n = len(ranges)
    span, members = g["span"], g["members"]
    anchor = g["after"]  # after the group: the values its bodies use (constants, globals) are defined
    with ir.InsertionPoint(anchor), span[-1].location:
        grid = _index(max(1, -(-n_rows // B)))
        launch = gpu.LaunchOp((grid, _index(1), _index(1)), (_index(T), _index(B), _index(1)))
        kb = launch.regions[0].blocks[0]
        with ir.InsertionPoint(kb):
            bx, tx, ty = kb.arguments[0], kb.arguments[3], kb.arguments[4]
            zero = _index(0)
            row = arith.AddIOp(arith.MulIOp(bx, _index(B)).result, ty).result
            row_ok = arith.CmpIOp(arith.CmpIPredicate.ult, row, _index(n_rows)).result
            ridx = _delinearize(arith.SelectOp(row_ok, row, zero).result, rdims)
            # slot s: elements (s*T + tx)*W + w; slots past the row end (only the last one can be) clamped
            slots = []
            for s in range(S):
                base = arith.MulIOp(arith.AddIOp(tx, _index(s * T)).result, _index(W)).result
                sure = (s + 1) * T * W <= C
                ok = None if sure else arith.CmpIOp(arith.CmpIPredicate.ult, base, _index(C)).result
                safe = base if sure else arith.SelectOp(ok, base, zero).result
                cidx = _delinearize(safe, cdims)
                per_w = []
                for w in range(W):
                    cw = cidx if w == 0 else cidx[:-1] + [arith.AddIOp(cidx[-1], _index(w)).result]
                    per_w.append(ridx + cw)
                slots.append((ok, per_w))
            state: dict = {}
            cache: dict = {}

            globals_in_kernel: dict = {}

            def device_constant(buf):
                """A small constant global (a norm's weights) read in the kernel: the kernel takes it
                with its own memref.get_global, which outlining clones into the gpu.module (initialized
                device memory), instead of the host's value that lh-gpu-device-memory would copy to a
                fresh device buffer (gpu.alloc + memcpy + dealloc) in every call."""
                if buf in globals_in_kernel:
                    return globals_in_kernel[buf]
                new = buf
                owner = buf.owner.operation if hasattr(buf.owner, "operation") else None
                if (owner is not None and owner.name == "memref.get_global" and _is_constant_global(owner)
                        and ir.MemRefType(buf.type).memory_space is None and _identity_layout(buf.type)
                        and math.prod(ir.ShapedType(buf.type).shape) * max(1, _bits(elem_of(buf)) // 8)
                        <= MAX_CONSTANT_BYTES):
                    with ir.InsertionPoint.at_block_begin(kb):
                        new = memref.GetGlobalOp(buf.type, ir.FlatSymbolRefAttr(owner.attributes["name"]).value).result
                globals_in_kernel[buf] = new
                return new

            def read(buf, m, s, w):
                """The value of operand `buf` (map m) at element (s, w) of this thread's row."""
                if not isinstance(buf.type, ir.ShapedType):
                    return buf
                if buf not in g["kinds"]:
                    buf = device_constant(buf)
                if buf in state:
                    kind, val = state[buf]
                    return val if kind == "row" else val[s][w]
                if buf in g["kinds"] and g["kinds"][buf] == "row" or _row_only(m, p):
                    key = (buf, str(m), "row")
                    if key not in cache:  # (a row op's maps have the p row dims only)
                        cache[key] = memref.LoadOp(buf, _apply(m, (ridx + [zero] * (n - p))[:m.n_dims])).result
                    return cache[key]
                res = list(m.results)
                elem = ir.MemRefType(buf.type).element_type
                if (W > 1 and _identity_layout(buf.type) and res and isinstance(res[-1], ir.AffineDimExpr)
                        and ir.AffineDimExpr(res[-1]).position == n - 1
                        and all(isinstance(e, ir.AffineDimExpr) and ir.AffineDimExpr(e).position != n - 1
                                for e in res[:-1])):
                    key = (buf, str(m), s, "vec")
                    if key not in cache:
                        vt = ir.VectorType.get([W], elem)
                        nbytes = W * max(1, _bits(elem) // 8)
                        cache[key] = vec.LoadOp(vt, buf, _apply(m, slots[s][1][0]),
                                                alignment=nbytes if nbytes & (nbytes - 1) == 0 else None).result
                    key2 = (buf, str(m), s, w)
                    if key2 not in cache:
                        cache[key2] = vec.ExtractOp(cache[key], [], [w]).result
                    return cache[key2]
                key = (buf, str(m), s, w)
                if key not in cache:
                    cache[key] = memref.LoadOp(buf, _apply(m, slots[s][1][w])).result
                return cache[key]

            def body_values(o, s, w, skip=()):
                """The generic's body at element (s, w): a mapping of its block's values."""
                view = o.opview
                n_in = len(view.inputs)
                blk = o.regions[0].blocks[0]
                args = list(blk.arguments)
                mapping = {}
                for a, v, m in zip(args, list(view.inputs) + list(view.outputs), _maps(o)):
                    if len(list(a.uses)) and a not in skip:
                        mapping[a] = read(v, m, s, w)
                del n_in
                for bop in [x.operation for x in blk.operations][:-1]:
                    if bop.name == "linalg.index":
                        mapping[bop.results[0]] = slots[s][1][w][ir.IntegerAttr(bop.attributes["dim"]).value]
                        continue
                    if bop in skip:
                        continue
                    new = bop.clone()
                    for i, v in enumerate(list(new.operands)):
                        if v in mapping:
                            new.operands[i] = mapping[v]
                    for old, res in zip(bop.results, new.results):
                        mapping[old] = res
                return mapping, list(list(blk.operations)[-1].operands)

            n_smem = 0
            for o in span:
                if o.name == "linalg.fill":
                    out = list(o.opview.outputs)[0]
                    if out in g["kinds"]:
                        scalar = list(o.opview.inputs)[0]
                        state[out] = ("row", scalar) if g["kinds"][out] == "row" else (
                            "full", [[scalar] * W for _ in range(S)])
                    continue
                if o not in members:
                    continue
                outs = list(o.opview.outputs)
                if o in g["row_ops"]:  # one value per row, the same in every thread of the row
                    mapping, yielded = body_values(o, 0, 0)
                    for out, y in zip(outs, yielded):
                        state[out] = ("row", mapping.get(y, y))
                    continue
                if o not in g["reductions"]:
                    new = [[[None] * W for _ in range(S)] for _ in outs]
                    for s in range(S):
                        for w in range(W):
                            mapping, yielded = body_values(o, s, w)
                            for k, y in enumerate(yielded):
                                new[k][s][w] = mapping.get(y, y)
                    for out, val in zip(outs, new):
                        state[out] = ("full", val)
                    continue
                rp = g["reductions"][o]
                combiners = rp["combiners"]
                out_args = list(o.regions[0].blocks[0].arguments)[len(rp["ins"]):]
                elems = [ir.MemRefType(v.type).element_type for v in outs]
                accs = [_identity(COMBINERS[c.name], e) for (c, _), e in zip(combiners, elems)]
                skip = set(c for c, _ in combiners) | set(out_args)
                for s in range(S):
                    for w in range(W):
                        mapping, _ = body_values(o, s, w, skip)
                        for k, (c, cpos) in enumerate(combiners):
                            value = c.operands[1 - cpos]
                            value = mapping.get(value, value)
                            if slots[s][0] is not None:
                                value = arith.SelectOp(slots[s][0], value,
                                                       _identity(COMBINERS[c.name], elems[k])).result
                            accs[k] = _combine(c, cpos, accs[k], value)
                # across the row's threads: a butterfly in the warp, then the warps through shared memory
                for k, (c, cpos) in enumerate(combiners):
                    off = min(T, 32) // 2
                    while off >= 1:
                        accs[k] = _combine(c, cpos, accs[k], _shuffle_xor(accs[k], off, width))
                        off //= 2
                    if T > 32:
                        nw = T // 32
                        name, t = _shared_buffer(module, B, nw, elems[k])
                        n_smem += 1
                        sh = memref.GetGlobalOp(t, name).result
                        lane = arith.RemUIOp(tx, _index(32)).result
                        warp = arith.DivUIOp(tx, _index(32)).result
                        if_op = scf.IfOp(arith.CmpIOp(arith.CmpIPredicate.eq, lane, zero).result)
                        with ir.InsertionPoint(if_op.then_block):
                            memref.StoreOp(accs[k], sh, [ty, warp])
                            scf.YieldOp([])
                        gpu.BarrierOp()
                        total = memref.LoadOp(sh, [ty, zero]).result
                        for j in range(1, nw):
                            total = _combine(c, cpos, total, memref.LoadOp(sh, [ty, _index(j)]).result)
                        accs[k] = total
                for k, ((c, cpos), out) in enumerate(zip(combiners, outs)):
                    old = read(out, _maps(o)[len(rp["ins"]) + k], 0, 0)
                    state[out] = ("row", _combine(c, cpos, old, accs[k]))
            # the buffers read after the group
            first = arith.CmpIOp(arith.CmpIPredicate.eq, tx, zero).result
            for buf in g["stored"]:
                kind, val = state[buf]
                if kind == "row":
                    if_op = scf.IfOp(arith.AndIOp(first, row_ok).result)
                    with ir.InsertionPoint(if_op.then_block):
                        memref.StoreOp(val, buf, ridx)
                        scf.YieldOp([])
                    continue
                elem = ir.MemRefType(buf.type).element_type
                for s in range(S):
                    cond = row_ok if slots[s][0] is None else arith.AndIOp(row_ok, slots[s][0]).result
                    if_op = scf.IfOp(cond)
                    with ir.InsertionPoint(if_op.then_block):
                        if W > 1 and _identity_layout(buf.type):
                            vt = ir.VectorType.get([W], elem)
                            v = vec.FromElementsOp(vt, val[s]).result
                            nbytes = W * max(1, _bits(elem) // 8)
                            vec.StoreOp(v, buf, slots[s][1][0], alignment=nbytes if nbytes & (nbytes - 1) == 0 else None)
                        else:
                            for w in range(W):
                                memref.StoreOp(val[s][w], buf, slots[s][1][w])
                        scf.YieldOp([])
            gpu.TerminatorOp()
    for o in reversed(span):
        if o in members or (o.name == "linalg.fill" and list(o.opview.outputs)[0] in g["kinds"]):
            o.erase()
    for v in g["private"]:
        for u in list(v.uses):
            if u.owner.name == "memref.dealloc":
                u.owner.erase()
        if not list(v.uses):
            v.owner.erase()


def _bits(t) -> int:
    if isinstance(t, ir.IntegerType):
        return ir.IntegerType(t).width
    for ft, b in ((ir.F64Type, 64), (ir.F32Type, 32), (ir.F16Type, 16), (ir.BF16Type, 16)):
        if isinstance(t, ft):
            return b
    return 0


def _row_only(m, p: int) -> bool:
    """Every result of m is a constant or one of the row dims d0..d_{p-1}."""
    for e in m.results:
        if isinstance(e, ir.AffineDimExpr):
            if ir.AffineDimExpr(e).position >= p:
                return False
        elif not isinstance(e, ir.AffineConstantExpr):
            return False
    return True


def rewrite_marked(module) -> int:
    """Every group of ops marked lh.gpu_rows -> its fused kernel; groups the kernel cannot take lose
    their marks (their reductions keep any lh.gpu_reduce mark). Returns how many kernels it built."""
    from workbench.worker.ir_walk import ops_where

    built = 0
    with module.context:
        groups: dict = {}
        for op in ops_where(module, lambda o: MARK in o.attributes):
            op = op.operation
            cfg = ir.DictAttr(op.attributes[MARK])
            key = (ir.IntegerAttr(cfg["group"]).value, ir.IntegerAttr(cfg["threads"]).value,
                   ir.IntegerAttr(cfg["rows"]).value, ir.IntegerAttr(cfg["vector"]).value)
            groups.setdefault(key, []).append(op)
        for (gid, threads, rows, vector), ops in groups.items():
            try:
                plan_group(ops)
                ok = True
            except RowKernelError:
                ok = False
            if not ok:
                for op in ops:
                    del op.attributes[MARK]
                continue
            build(module, ops, threads, rows, vector)
            built += 1
    return built
