"""`lh-gpu-linear-map`: the naive mapping's replacement for static parallel loops (cuda-lower).

convert-linalg-to-parallel-loops leaves one scf.parallel per linalg op that no schedule mapped.
Upstream's mapping (scf-parallel-loop-tiling 32x32 + gpu-map-parallel-loops) puts the *outermost*
loop on threadIdx.x: consecutive threads of an elementwise op over a row-major tensor then read
elements a row apart (uncoalesced), 1-D ops get blocks of 32 threads, and loops past the second
are tiled by 1. Here every top-level scf.parallel with constant bounds and no reductions becomes
one gpu.launch over its linearized iteration space: `threads` threads per block, thread i of the
grid takes iteration i in row-major order (the innermost loop fastest: consecutive threads touch
consecutive elements of identity-mapped operands), a bounds check for the last block. Large loops
whose body is loads, arithmetic and stores give each thread UNROLL iterations a block apart, all
their loads before their stores (memory-level parallelism: one load in flight per thread left an
elementwise op at a fifth of the memory bandwidth). Whatever the body holds (scf.for loops of an
unmarked reduction, ...) runs per thread as before. Loops with
dynamic bounds or results, and loops around other parallel loops (a reduction loop between parallel
ones), keep the upstream mapping that runs after this pass.
"""
from __future__ import annotations

import math

from mlir import ir

from workbench.worker.cuda.reduce_kernels import _delinearize, _index

HOST_ATTR = "lh.host_wrapper"


def _const_index(v) -> int | None:
    owner = v.owner
    if not hasattr(owner, "name") or owner.name != "arith.constant":
        return None
    try:
        return ir.IntegerAttr(owner.attributes["value"]).value
    except Exception:
        return None


def _top_level_parallels(module) -> list:
    found = []
    for f in module.body.operations:
        f = f.operation
        if f.name != "func.func" or HOST_ATTR in f.attributes or len(f.regions[0].blocks) == 0:
            continue

        def visit(op):
            if op.name in ("gpu.launch", "gpu.module"):
                return ir.WalkResult.SKIP
            if op.name == "scf.parallel":
                found.append(op)
                return ir.WalkResult.SKIP
            return ir.WalkResult.ADVANCE

        f.operation.walk(visit, ir.WalkOrder.PRE_ORDER)
    return found


def _has_nested_parallel(op) -> bool:
    found = []

    def visit(o):
        if o.name == "scf.parallel":
            found.append(o)
        return ir.WalkResult.ADVANCE

    op.walk(visit)
    return len(found) > 1  # the walk visits `op` itself too


#: iterations a thread takes where the body allows (loads before stores, no regions) and the loop
#: is large: thread t of block b takes b * threads * UNROLL + t + u * threads, u < UNROLL, so each
#: clone's accesses stay coalesced, and its loads all come before the first store: several loads in
#: flight per thread instead of one (gelu 4096^2 f32 on the H200: 0.065 ms one iteration a thread)
UNROLL = 4
#: from this many iterations on (smaller loops keep one iteration a thread: more blocks in flight)
UNROLL_FROM = 1 << 20
#: ops a body may hold to be unrolled by phases (pure but for the loads and stores)
PURE_PREFIXES = ("arith.", "math.", "index.", "affine.apply")


def _phases(body) -> tuple[list, list, list] | None:
    """The body's ops but its terminator as (the loads and the index arithmetic they need, the other
    arithmetic, the stores), each in body order, when every memref.load comes before every
    memref.store and all other ops are pure and region-free; else None."""
    before, stores = [], []
    for o in list(body.operations)[:-1]:
        o = o.operation
        if len(o.regions):
            return None
        if o.name == "memref.store":
            stores.append(o)
        elif o.name == "memref.load" or o.name.startswith(PURE_PREFIXES):
            if stores and o.name == "memref.load":
                return None
            before.append(o)
        else:
            return None
    # what the loads need: their operands' producers in the body, transitively
    producer = {r: o for o in before for r in o.results}
    needed = set()
    work = [o for o in before if o.name == "memref.load"]
    while work:
        o = work.pop()
        if o in needed:
            continue
        needed.add(o)
        work.extend(producer[v] for v in o.operands if v in producer)
    return [o for o in before if o in needed], [o for o in before if o not in needed], stores


def linear_map(module, threads: int = 256) -> int:
    """Map each static top-level scf.parallel of host code to a linearized gpu.launch; how many."""
    from mlir.dialects import arith, gpu, scf

    if threads < 32 or threads > 1024 or threads % 32:
        raise ValueError(f"threads={threads}: a multiple of 32 in [32, 1024]")
    mapped = 0
    with module.context:
        for par in _top_level_parallels(module):
            op = par.operation if hasattr(par, "operation") else par
            if len(op.results) or _has_nested_parallel(op):
                continue
            view = op.opview
            lbs = [_const_index(v) for v in view.lowerBound]
            ubs = [_const_index(v) for v in view.upperBound]
            steps = [_const_index(v) for v in view.step]
            if any(x is None for x in lbs + ubs + steps) or any(s <= 0 for s in steps):
                continue
            trips = [max(0, -(-(u - l) // s)) for l, u, s in zip(lbs, ubs, steps)]
            total = math.prod(trips)
            body = op.regions[0].blocks[0]
            phases = _phases(body) if total >= UNROLL_FROM else None
            unroll = UNROLL if phases is not None else 1
            blocks = -(-total // (threads * unroll))
            if total == 0 or blocks >= 2 ** 31:
                continue
            with ir.InsertionPoint(op), op.location:
                def ivs_of(lin):
                    digits = _delinearize(lin, trips)
                    ivs = []
                    for d, l, s in zip(digits, lbs, steps):
                        v = d if s == 1 else arith.MulIOp(d, _index(s)).result
                        ivs.append(v if l == 0 else arith.AddIOp(v, _index(l)).result)
                    return ivs

                launch = gpu.LaunchOp((_index(blocks), _index(1), _index(1)), (_index(threads), _index(1), _index(1)))
                kb = launch.regions[0].blocks[0]
                with ir.InsertionPoint(kb):
                    bx, tx = kb.arguments[0], kb.arguments[3]
                    base = arith.AddIOp(arith.MulIOp(bx, _index(threads * unroll)).result, tx).result
                    if phases is None:
                        inside = arith.CmpIOp(arith.CmpIPredicate.ult, base, _index(total)).result
                        if_op = scf.IfOp(inside)
                        with ir.InsertionPoint(if_op.then_block):
                            ivs = ivs_of(base)
                            end = scf.YieldOp([])
                    else:
                        _unrolled(body, phases, base, total, threads, unroll, ivs_of)
                    gpu.TerminatorOp()
            if phases is None:
                for arg, iv in zip(body.arguments, ivs):
                    arg.replace_all_uses_with(iv)
                ops = list(body.operations)
                for o in ops[:-1]:  # all but the scf.reduce terminator
                    o.move_before(end)
            op.erase()
            mapped += 1
    return mapped


def _unrolled(body, phases, base, total: int, threads: int, unroll: int, ivs_of) -> None:
    """The body `unroll` times at the insertion point (the kernel block), by phases: every clone's
    loads, then every clone's arithmetic, then every clone's stores. Clones past the last iteration load from
    iteration 0 (in bounds) and skip their stores."""
    from mlir.dialects import arith, scf

    from workbench.worker.ir_walk import clone_mapped

    loads, compute, stores = phases
    exact = total % (threads * unroll) == 0
    clones = []
    for u in range(unroll):  # every clone's loads first: nothing (no branch of a math body) between them
        lin = base if u == 0 else arith.AddIOp(base, _index(u * threads)).result
        inside = None
        if not exact:
            inside = arith.CmpIOp(arith.CmpIPredicate.ult, lin, _index(total)).result
            lin = arith.SelectOp(inside, lin, _index(0)).result
        mapping = dict(zip(list(body.arguments), ivs_of(lin)))
        for o in loads:
            clone_mapped(o, mapping)
        clones.append((inside, mapping))
    for _, mapping in clones:
        for o in compute:
            clone_mapped(o, mapping)
    for inside, mapping in clones:
        if inside is None:
            for o in stores:
                clone_mapped(o, mapping)
            continue
        if_op = scf.IfOp(inside)
        with ir.InsertionPoint(if_op.then_block):
            for o in stores:
                clone_mapped(o, mapping)
            scf.YieldOp([])
