"""`lh-gpu-linear-map`: the naive mapping's replacement for static parallel loops (cuda-lower).

convert-linalg-to-parallel-loops leaves one scf.parallel per linalg op that no schedule mapped.
Upstream's mapping (scf-parallel-loop-tiling 32x32 + gpu-map-parallel-loops) puts the *outermost*
loop on threadIdx.x: consecutive threads of an elementwise op over a row-major tensor then read
elements a row apart (uncoalesced), 1-D ops get blocks of 32 threads, and loops past the second
are tiled by 1. Here every top-level scf.parallel with constant bounds and no reductions becomes
one gpu.launch over its linearized iteration space: `threads` threads per block, thread i of the
grid takes iteration i in row-major order (the innermost loop fastest: consecutive threads touch
consecutive elements of identity-mapped operands), a bounds check for the last block. Whatever the
body holds (scf.for loops of an unmarked reduction, ...) runs per thread as before. Loops with
dynamic bounds or results, and loops around other parallel loops (a reduction loop between parallel
ones), keep the upstream mapping that runs after this pass.
"""
from __future__ import annotations

import math

from mlir import ir

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
            blocks = -(-total // threads)
            if total == 0 or blocks >= 2 ** 31:
                continue
            body = op.regions[0].blocks[0]
            with ir.InsertionPoint(op), op.location:
                idx = ir.IndexType.get()

                def c(v: int):
                    return arith.ConstantOp(idx, v).result

                launch = gpu.LaunchOp((c(blocks), c(1), c(1)), (c(threads), c(1), c(1)))
                kb = launch.regions[0].blocks[0]
                with ir.InsertionPoint(kb):
                    bx, tx = kb.arguments[0], kb.arguments[3]
                    lin = arith.AddIOp(arith.MulIOp(bx, c(threads)).result, tx).result
                    inside = arith.CmpIOp(arith.CmpIPredicate.ult, lin, c(total)).result
                    if_op = scf.IfOp(inside)
                    with ir.InsertionPoint(if_op.then_block):
                        rest, digits = lin, []
                        for k in range(len(trips) - 1, -1, -1):
                            if k == 0:
                                digits.append(rest)
                            else:
                                digits.append(arith.RemUIOp(rest, c(trips[k])).result)
                                rest = arith.DivUIOp(rest, c(trips[k])).result
                        digits.reverse()
                        ivs = []
                        for d, l, s in zip(digits, lbs, steps):
                            v = d if s == 1 else arith.MulIOp(d, c(s)).result
                            ivs.append(v if l == 0 else arith.AddIOp(v, c(l)).result)
                        end = scf.YieldOp([])
                    gpu.TerminatorOp()
            for arg, iv in zip(body.arguments, ivs):
                arg.replace_all_uses_with(iv)
            ops = list(body.operations)
            for o in ops[:-1]:  # all but the scf.reduce terminator
                o.move_before(end)
            op.erase()
            mapped += 1
    return mapped
