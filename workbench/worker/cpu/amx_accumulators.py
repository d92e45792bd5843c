"""`lh-amx-tile-accumulators`: AMX result tiles stay in tile registers across the K loop.

upstream's convert-vector-to-amx turns each tile product of pipelines/cpu/matmul_amx.py into

    scf.for %k {                                   %c0 = amx.tile_load C[i, j]
      %a = amx.tile_load A[.., k]                  %c = scf.for %k iter_args(%acc = %c0) {
      %b = amx.tile_load B[k, ..]        ->          %a = ..., %b = ...
      %c = amx.tile_load C[i, j]                     %r = amx.tile_mulf %a, %b, %acc
      %r = amx.tile_mulf %a, %b, %c                  scf.yield %r
      amx.tile_store C[i, j], %r                   }
    }                                              amx.tile_store C[i, j], %c

a 1 KiB load and store of the result tile per product, about as long as the product itself. Hoisted, the
loop carries the tiles (LLVM allocates them to tmm registers; 2 x 2 result tiles, 2 A and 2 B tiles fill
the eight). Then the A and B loads that the unrolled products repeat (each A tile read by two of them) are
merged (no store is left between them).

A loop qualifies when every store in it is such a result-tile store: its buffer and indices defined
outside the loop, the tile it stores the product of a load of the same place whose only use is that
product, and nothing else in the loop writes memory.
"""
from __future__ import annotations

#: ops a qualifying loop body may hold besides the result tiles' loads and stores (none writes memory)
_PURE_PREFIXES = ("arith.", "affine.apply", "memref.subview", "memref.collapse_shape", "memref.expand_shape",
                  "memref.reinterpret_cast", "amx.tile_load", "amx.tile_mulf", "amx.tile_muli", "amx.tile_zero",
                  "scf.yield", "index.")


def _defined_outside(value, loop) -> bool:
    """`value` is defined outside `loop` (a block argument of an enclosing block, or an op result whose op
    is not nested in it)."""
    from mlir import ir

    owner = value.owner
    if isinstance(owner, ir.Block):
        op = owner.owner
    else:
        op = owner.operation if hasattr(owner, "operation") else owner
    while op is not None:
        if op == loop:
            return False
        op = op.parent if hasattr(op, "parent") else None
        op = op.operation if op is not None and hasattr(op, "operation") else op
    return True


_PRODUCTS = ("amx.tile_mulf", "amx.tile_muli")


def _owner(value):
    owner = value.owner
    return owner.operation if hasattr(owner, "operation") else owner


def _forward_stored_tiles(body) -> None:
    """In a loop body whose only writes are result-tile stores: a load of a place a store before it wrote
    reads the stored tile instead, and a store another one to its place follows is dropped. A convolution's
    window positions, unrolled, each load, multiply into and store the same result tiles: after this their
    products chain from one load to one store. (Places are told apart by their buffer and indices, as the
    carry below does: the result tiles of one tile loop do not overlap.)"""
    stored: dict = {}
    for op in list(body.operations):
        op = op.operation
        if op.name == "amx.tile_load":
            key = tuple(op.operands)
            if key in stored:
                op.results[0].replace_all_uses_with(stored[key].operands[len(key)])
                op.erase()
        elif op.name == "amx.tile_store":
            key = tuple(list(op.operands)[:-1])
            if key in stored:
                stored[key].erase()
            stored[key] = op


def _writes_only_result_tiles(body) -> bool:
    """The block's ops are result-tile stores and ops that write no memory (no nested loop, call or other
    write)."""
    return all(op.operation.name.startswith(_PURE_PREFIXES) or op.operation.name == "amx.tile_store"
               for op in body.operations)


def _accumulators(loop) -> list[tuple] | None:
    """(load, product, store) of each result tile `loop` can carry (the product stored last: a chain of
    products from the load), or None where it does not qualify."""
    body = loop.regions[0].blocks[0]
    if not _writes_only_result_tiles(body):
        return None      # (a nested loop, a call, another write: left as it is)
    found = []
    for op in body.operations:
        name = op.operation.name
        if name == "amx.tile_store":
            store = op.operation
            base, *indices, stored = list(store.operands)
            product = _owner(stored)
            if getattr(product, "name", "") not in _PRODUCTS:
                return None
            acc = product.operands[2]
            while getattr(_owner(acc), "name", "") in _PRODUCTS and len(list(acc.uses)) == 1:
                acc = _owner(acc).operands[2]     # (up the chain of products into the same tile)
            load = _owner(acc)
            if getattr(load, "name", "") != "amx.tile_load" or load.parent != loop:
                return None
            if list(load.operands) != [base, *indices] or len(list(acc.uses)) != 1:
                return None
            if not all(_defined_outside(v, loop) for v in (base, *indices)):
                return None
            found.append((load, product, store))
    return found or None


def _carry(loop, accumulators: list[tuple]):
    """Rewrite `loop` to carry the result tiles of `accumulators` (module docstring); the new loop."""
    from mlir import ir
    from mlir.dialects import scf

    old_body = loop.regions[0].blocks[0]
    lower, upper, step, *old_inits = list(loop.operands)
    n_old = len(old_inits)
    with ir.InsertionPoint(loop), loop.location:
        first = [load.clone() for load, _, _ in accumulators]     # the result tiles' loads, before the loop
        new = scf.ForOp(lower, upper, step, old_inits + [f.results[0] for f in first])
    new_args = list(new.body.arguments)
    with ir.InsertionPoint(new.body), loop.location:
        marker = scf.YieldOp([])
    for old_arg, new_arg in zip(list(old_body.arguments), new_args[:1 + n_old]):
        old_arg.replace_all_uses_with(new_arg)
    ops = [op.operation for op in old_body.operations]
    old_yield = ops[-1]
    for op in ops[:-1]:
        op.move_before(marker)
    with ir.InsertionPoint(loop), loop.location:                  # (right after the new loop)
        for (_, _, store), tile in zip(accumulators, list(new.results)[n_old:]):
            after = store.clone()
            after.operands[len(after.operands) - 1] = tile
    for (load, _, store), arg in zip(accumulators, new_args[1 + n_old:]):
        load.results[0].replace_all_uses_with(arg)
        load.erase()
        store.erase()
    with ir.InsertionPoint(marker), loop.location:
        scf.YieldOp(list(old_yield.operands) + [product.results[0] for _, product, _ in accumulators])
    marker.erase()
    for old_result, new_result in zip(list(loop.results), list(new.results)[:n_old]):
        old_result.replace_all_uses_with(new_result)
    loop.erase()
    return new.operation


def carry_tile_accumulators(module) -> int:
    """Rewrite every qualifying loop, innermost first (module docstring), then merge the repeated tile loads;
    how many loops now carry tiles."""
    from mlir.passmanager import PassManager

    from workbench.worker.ir_walk import ops_where

    # a result tile's load and store places are views the bufferization made apiece, inside the loop (the
    # products of lh.amx tiles whose unit panel loop was folded away: a rank-reducing view to read, another
    # to write): one view (cse), made before the loop where its operands are (licm; the tile loads and
    # stores declare no memory effects: they stay)
    PassManager.parse("builtin.module(cse, loop-invariant-code-motion, cse)", module.context).run(module.operation)
    for loop in ops_where(module, lambda o: o.name == "scf.for"):
        body = loop.regions[0].blocks[0]
        if _writes_only_result_tiles(body):
            _forward_stored_tiles(body)
    carried = []
    while True:
        # (post-order walk: inner loops first; a rewritten loop is erased, so walk again after each)
        candidates = [(loop, acc) for loop in ops_where(module, lambda o: o.name == "scf.for")
                      if (acc := _accumulators(loop)) is not None]
        if not candidates:
            break
        loop, accumulators = candidates[0]
        carried.append(_carry(loop, accumulators))
    if carried:
        # the views the unrolled products made each for themselves are one (cse), then so are their loads
        PassManager.parse("builtin.module(cse)", module.context).run(module.operation)
        for loop in carried:
            _merge_repeated_loads(loop)
    return len(carried)


def _merge_repeated_loads(loop) -> int:
    """In the body of `loop` (which writes no memory: `_accumulators`), replace each amx.tile_load that
    repeats an earlier one (same buffer, indices and tile type) by the earlier one; how many went. (cse
    leaves them: the op declares no memory effects.)"""
    seen: dict = {}
    merged = 0
    for op in list(loop.regions[0].blocks[0].operations):
        if op.operation.name != "amx.tile_load":
            continue
        key = (tuple(op.operation.operands), str(op.operation.results[0].type))
        if key in seen:
            op.operation.results[0].replace_all_uses_with(seen[key])
            op.operation.erase()
            merged += 1
        else:
            seen[key] = op.operation.results[0]
    return merged
