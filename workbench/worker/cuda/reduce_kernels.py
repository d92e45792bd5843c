"""Row-reduction kernels for linalg.generic reductions marked by a cuda schedule (the `gpu-reductions`
rewrite; pipelines/cuda/reduce.py marks, cuda-lower rewrites after bufferization).

A marked op (`lh.gpu_reduce = {threads = T, rows = B}`) on static memrefs whose every result is
`combine(value, out)` for an associative and commutative combiner (addf, mulf, maximumf, minimumf,
maxnumf, minnumf, addi, muli, max/min s/u, andi, ori, xori; `out` read nowhere else) becomes one
`gpu.launch`: the op's parallel iterations ("rows", R of them, any number of parallel dims, any
position) are spread over blocks, B rows per block (threadIdx.y); the T threads of a row
(threadIdx.x) stride its reduction iterations (N of them, any number of reduction dims) in steps
of T, so that consecutive threads read consecutive elements where the innermost loop is the
reduction; each keeps partial results in registers (the combiner's identity to start), computing
the op's body (the inputs loaded through its indexing maps, `linalg.index` included) for each
iteration. The partials meet in shared memory (a B x T buffer per result, a tree of log2(T)
steps with a barrier each), and thread 0 of the row combines the total with the output's old value
and stores it (the output's fill value instead where a linalg.fill just before initializes the output
for this op alone: the fill is then dropped, one kernel launch less). Ops the kernel cannot take (several results combined with one another as argmax
does, a body that reads `out` elsewhere, dynamic shapes) keep the naive mapping; their mark is
dropped.
"""
from __future__ import annotations

import math

from mlir import ir

from workbench.worker.ir_walk import iterator_types

MARK = "lh.gpu_reduce"

#: combiner op -> its identity (as a name _identity understands)
COMBINERS = {
    "arith.addf": "zero", "arith.mulf": "one", "arith.maximumf": "-inf", "arith.minimumf": "inf",
    "arith.maxnumf": "-inf", "arith.minnumf": "inf", "arith.addi": "zero", "arith.muli": "one",
    "arith.maxsi": "smin", "arith.minsi": "smax", "arith.maxui": "zero", "arith.minui": "ones",
    "arith.andi": "ones", "arith.ori": "zero", "arith.xori": "zero",
}


class ReduceKernelError(ValueError):
    pass


def _identity(kind: str, t: ir.Type):
    from mlir.dialects import arith

    if isinstance(t, ir.IntegerType):
        w = ir.IntegerType(t).width
        value = {"zero": 0, "one": 1, "smin": -(1 << (w - 1)), "smax": (1 << (w - 1)) - 1,
                 "ones": -1}[kind]
        if w == 1:
            value = {"zero": 0, "one": 1, "smin": 1, "smax": 0, "ones": 1}[kind]
        return arith.ConstantOp(t, ir.IntegerAttr.get(t, value)).result
    value = {"zero": 0.0, "one": 1.0, "-inf": -math.inf, "inf": math.inf}[kind]
    return arith.ConstantOp(t, ir.FloatAttr.get(t, value)).result


def _maps(op) -> list:
    return [ir.AffineMapAttr(a).value for a in ir.ArrayAttr(op.attributes["indexing_maps"])]


def plan(op) -> dict:
    """What the kernel needs from a linalg.generic, or ReduceKernelError saying why it cannot be one."""
    if op.name != "linalg.generic":
        raise ReduceKernelError(f"{op.name} is not a linalg.generic")
    view = op.opview
    ins, outs = list(view.inputs), list(view.outputs)
    if any(not isinstance(v.type, ir.MemRefType) for v in ins + outs if isinstance(v.type, ir.ShapedType)):
        raise ReduceKernelError("not bufferized")
    if any(isinstance(v.type, ir.ShapedType) and not ir.ShapedType(v.type).has_static_shape for v in ins + outs):
        raise ReduceKernelError("dynamic shapes")
    if any(not isinstance(v.type, ir.ShapedType) for v in outs):
        raise ReduceKernelError("scalar output")
    its = iterator_types(op)
    maps = _maps(op)
    if "reduction" not in its or any(i not in ("parallel", "reduction") for i in its):
        raise ReduceKernelError("no reduction loop")
    ranges: list[int | None] = [None] * len(its)
    for v, m in zip(ins + outs, maps):
        shape = ir.ShapedType(v.type).shape if isinstance(v.type, ir.ShapedType) else []
        for k, e in enumerate(m.results):
            if isinstance(e, ir.AffineDimExpr):
                ranges[e.position] = shape[k]
    if any(r is None for r in ranges):
        raise ReduceKernelError("a loop range is not an operand dimension")
    for m in maps[len(ins):]:
        for e in m.results:
            if isinstance(e, ir.AffineDimExpr) and its[e.position] != "parallel":
                raise ReduceKernelError("an output indexed by a reduction loop")
            if not (isinstance(e, ir.AffineDimExpr) or isinstance(e, ir.AffineConstantExpr)):
                raise ReduceKernelError("an output map that is not a projection")
    block = op.regions[0].blocks[0]
    args = list(block.arguments)
    out_args = args[len(ins):]
    body = list(block.operations)
    yielded = list(body[-1].operands)
    combiners = []
    for k, (y, out) in enumerate(zip(yielded, out_args)):
        owner = y.owner
        if not isinstance(owner, ir.Operation) and not hasattr(owner, "name"):
            raise ReduceKernelError(f"result {k} is a block argument")
        owner = owner.operation if hasattr(owner, "operation") else owner
        if owner.name not in COMBINERS or len(owner.operands) != 2:
            raise ReduceKernelError(f"result {k} is not combined by an associative op ({owner.name})")
        pos = [i for i, v in enumerate(owner.operands) if v == out]
        if len(pos) != 1 or len(list(out.uses)) != 1:
            raise ReduceKernelError(f"result {k}: the output is read outside its combiner")
        if [u.owner.name for u in y.uses] != ["linalg.yield"]:
            raise ReduceKernelError(f"result {k}: the combined value is used in the body")
        combiners.append((owner, pos[0]))
    return {"ins": ins, "outs": outs, "iterators": its, "ranges": ranges, "maps": maps, "block": block,
            "body": body, "combiners": combiners}


def _index(v: int):
    from mlir.dialects import arith

    return arith.ConstantOp(ir.IndexType.get(), v).result


def _delinearize(x, sizes: list[int]) -> list:
    from mlir.dialects import arith

    out = []
    for k in range(len(sizes) - 1, -1, -1):
        if k == 0:
            out.append(x)
        else:
            out.append(arith.RemUIOp(x, _index(sizes[k])).result)
            x = arith.DivUIOp(x, _index(sizes[k])).result
    return list(reversed(out))


def _apply(m, dims: list) -> list:
    from mlir.dialects import affine

    idx = []
    for e in m.results:
        if isinstance(e, ir.AffineDimExpr):
            idx.append(dims[e.position])
        elif isinstance(e, ir.AffineConstantExpr):
            idx.append(_index(e.value))
        else:
            one = ir.AffineMap.get(m.n_dims, 0, [e])
            idx.append(affine.AffineApplyOp(one, dims).result)
    return idx


def _clone(op, mapping: dict):
    """Clone `op` at the insertion point with its operands remapped; its results enter the mapping."""
    new = op.clone()
    for i, v in enumerate(list(new.operands)):
        if v in mapping:
            new.operands[i] = mapping[v]
    for old, res in zip(op.results, new.results):
        mapping[old] = res
    return new


def _combine(combiner, pos: int, acc, value):
    """The combiner applied to (value, acc): acc takes the output's operand position."""
    new = combiner.clone()
    new.operands[pos] = acc
    new.operands[1 - pos] = value
    return new.results[0]


def _shared_buffer(module, rows: int, threads: int, elem: ir.Type) -> str:
    """A module-level memref.global in workgroup memory (rows x threads of elem); its name."""
    from mlir.dialects import memref

    body = module.body
    names = {ir.StringAttr(o.attributes["sym_name"]).value for o in body.operations if "sym_name" in o.attributes}
    n = 0
    while f"__lh_reduce_smem_{n}" in names:
        n += 1
    name = f"__lh_reduce_smem_{n}"
    t = ir.MemRefType.get([rows, threads], elem, memory_space=ir.Attribute.parse("#gpu.address_space<workgroup>"))
    with ir.InsertionPoint.at_block_begin(body):
        memref.GlobalOp(sym_name=name, type_=ir.TypeAttr.get(t), sym_visibility="private", initial_value=None,
                        alignment=ir.IntegerAttr.get(ir.IntegerType.get_signless(64), 16))
    return name, t


def _init_fill(op, out):
    """The linalg.fill that initializes `out` just for `op` (same block, before it, the buffer unused
    in between): the kernel starts from its value instead of reading the buffer, and the fill goes."""
    block_ops = list(op.operation.block.operations)
    at = block_ops.index(op.operation)
    for k in range(at - 1, -1, -1):
        o = block_ops[k]
        uses = any(v == out for v in o.operands)
        if o.name == "linalg.fill" and uses:
            fill_out = list(o.opview.outputs)[0]
            scalar = list(o.opview.inputs)[0]
            if fill_out == out and not isinstance(scalar.type, ir.ShapedType):
                return o, scalar
            return None
        if uses or o.name in ("func.call", "memref.copy", "gpu.memcpy") or len(o.regions):
            return None
    return None


def build(module, op, threads: int, rows: int) -> None:
    """Replace the marked generic `op` by its reduction kernel (see the module docstring)."""
    from mlir.dialects import arith, gpu, memref, scf

    p = plan(op)
    if threads < 1 or threads & (threads - 1) or threads > 1024:
        raise ReduceKernelError(f"threads={threads}: a power of two up to 1024")
    if rows < 1 or rows * threads > 1024:
        raise ReduceKernelError(f"rows={rows}: rows x threads must be at most 1024")
    its, ranges = p["iterators"], p["ranges"]
    par = [d for d, i in enumerate(its) if i == "parallel"]
    red = [d for d, i in enumerate(its) if i == "reduction"]
    n_rows = math.prod(ranges[d] for d in par)
    n_red = math.prod(ranges[d] for d in red)
    n_in = len(p["ins"])
    args = list(p["block"].arguments)
    elems = [ir.MemRefType(v.type).element_type for v in p["outs"]]
    buffers = [_shared_buffer(module, rows, threads, e) for e in elems]
    fills = [_init_fill(op, out) for out in p["outs"]]
    loc = op.location
    with ir.InsertionPoint(op), loc:
        grid = _index(max(1, (n_rows + rows - 1) // rows))
        launch = gpu.LaunchOp((grid, _index(1), _index(1)), (_index(threads), _index(rows), _index(1)))
        kb = launch.regions[0].blocks[0]
        with ir.InsertionPoint(kb):
            bx, tx, ty = kb.arguments[0], kb.arguments[3], kb.arguments[4]
            row = arith.AddIOp(arith.MulIOp(bx, _index(rows)).result, ty).result
            valid = arith.CmpIOp(arith.CmpIPredicate.ult, row, _index(n_rows)).result
            safe_row = arith.SelectOp(valid, row, _index(0)).result
            pidx = _delinearize(safe_row, [ranges[d] for d in par]) if par else []
            zero = _index(0)
            inits = [_identity(COMBINERS[c.name], e) for (c, _), e in zip(p["combiners"], elems)]
            loop = scf.ForOp(tx, _index(n_red), _index(threads), inits)
            with ir.InsertionPoint(loop.body):
                ridx = _delinearize(loop.induction_variable, [ranges[d] for d in red])
                dims = [None] * len(its)
                for d, v in zip(par, pidx):
                    dims[d] = v
                for d, v in zip(red, ridx):
                    dims[d] = v
                mapping = {}
                for a, v, m in zip(args[:n_in], p["ins"], p["maps"][:n_in]):
                    mapping[a] = memref.LoadOp(v, _apply(m, dims)).result if isinstance(v.type, ir.ShapedType) else v
                skip = {c for c, _ in p["combiners"]}
                for bop in p["body"][:-1]:
                    if bop.name == "linalg.index":
                        mapping[bop.results[0]] = dims[ir.IntegerAttr(bop.attributes["dim"]).value]
                        continue
                    if bop in skip:
                        continue
                    _clone(bop, mapping)
                new_accs = []
                for (c, pos), acc in zip(p["combiners"], loop.inner_iter_args):
                    value = c.operands[1 - pos]
                    new_accs.append(_combine(c, pos, acc, mapping.get(value, value)))
                scf.YieldOp(new_accs)
            shared = []
            for (name, t), part in zip(buffers, loop.results):
                sh = memref.GetGlobalOp(t, name).result
                memref.StoreOp(part, sh, [ty, tx])
                shared.append(sh)
            gpu.BarrierOp()
            step = threads // 2
            while step >= 1:
                cond = arith.CmpIOp(arith.CmpIPredicate.ult, tx, _index(step)).result
                if_op = scf.IfOp(cond)
                with ir.InsertionPoint(if_op.then_block):
                    other = arith.AddIOp(tx, _index(step)).result
                    for (c, pos), sh in zip(p["combiners"], shared):
                        a = memref.LoadOp(sh, [ty, tx]).result
                        b = memref.LoadOp(sh, [ty, other]).result
                        memref.StoreOp(_combine(c, pos, a, b), sh, [ty, tx])
                    scf.YieldOp([])
                gpu.BarrierOp()
                step //= 2
            first = arith.CmpIOp(arith.CmpIPredicate.eq, tx, zero).result
            if_op = scf.IfOp(arith.AndIOp(first, valid).result)
            with ir.InsertionPoint(if_op.then_block):
                pdims = [v if v is not None else zero for v in dims_for_outputs(its, par, pidx)]
                for (c, pos), sh, out, m, fill in zip(p["combiners"], shared, p["outs"], p["maps"][n_in:], fills):
                    total = memref.LoadOp(sh, [ty, zero]).result
                    idx = _apply(m, pdims)
                    old = fill[1] if fill else memref.LoadOp(out, idx).result
                    memref.StoreOp(_combine(c, pos, old, total), out, idx)
                scf.YieldOp([])
            gpu.TerminatorOp()
    op.erase()
    for fill in fills:
        if fill is not None:
            fill[0].erase()


def dims_for_outputs(its: list[str], par: list[int], pidx: list) -> list:
    dims = [None] * len(its)
    for d, v in zip(par, pidx):
        dims[d] = v
    return dims


def rewrite_marked(module) -> int:
    """Every linalg.generic marked lh.gpu_reduce -> its kernel; marks of ops the kernel cannot take are
    dropped (they keep the naive mapping). Returns how many it built. (The `gpu-reductions` rewrite,
    workbench/worker/cuda/reductions.py, runs the fused row chains first.)"""
    from workbench.worker.ir_walk import ops_where

    built = 0
    with module.context:
        for op in ops_where(module, lambda o: MARK in o.attributes):
            op = op.operation
            cfg = ir.DictAttr(op.attributes[MARK])
            threads = ir.IntegerAttr(cfg["threads"]).value
            rows = ir.IntegerAttr(cfg["rows"]).value if "rows" in cfg else 1
            try:
                plan(op)
            except ReduceKernelError:
                del op.attributes[MARK]
                continue
            build(module, op, threads, rows)
            built += 1
    return built
