"""A fill of a fresh tensor that several ops accumulate into becomes one fill per op (`lh-unshare-fills`).

torch-mlir's importer CSEs the identical zero fills (`linalg.fill` of 0.0 into a `tensor.empty` of one
shape) that initialize different contractions' outputs: the two MLP linears of a transformer block,
Q/K/V projections, each block's fc1 in SwinT's stage (3136x384: one fill, two matmuls). One fill read
by two ops that write into it cannot bufferize in place for the first (the second still needs the
zeros): bufferization writes a separate fill of the whole output and copies it (SwinTStage12: a 4.8 MB
fill, 0.95 ms, and a 4.8 MB copy, 1.07 ms, before fc1), and the selector's per-op fill fusion
(`fill_init`: zeroed per tile, in cache) only takes a fill that its op alone reads. Here each op that
reads the fill as an `outs` init (a destination it writes) beyond the first gets its own clone of the
fill and of its `tensor.empty`; ops that read the zeros as an input keep the original.
"""
from __future__ import annotations

from mlir import ir

from workbench.worker.ir_walk import ops_where


def _owner(value):
    owner = value.owner
    return owner.operation if isinstance(owner, (ir.Operation, ir.OpView)) else None


def _init_uses(fill) -> list:
    """(op, operand number) of every linalg op that reads `fill`'s result as an `outs` init."""
    uses = []
    for use in fill.results[0].uses:
        user = use.owner.operation if isinstance(use.owner, ir.OpView) else use.owner
        if not user.name.startswith("linalg."):
            continue
        n_inits = len(user.results)
        if n_inits and use.operand_number >= len(user.operands) - n_inits:
            uses.append((user, use.operand_number))
    return uses


def unshare_fills(module) -> int:
    """Give every `outs` reader but the first of a multi-use fill of a tensor.empty its own fill and empty
    (module docstring); how many clones were made."""
    made = 0
    for fill in ops_where(module, lambda o: o.name == "linalg.fill"):
        fill = fill.operation
        if len(fill.results) != 1 or len(fill.operands) != 2:
            continue
        empty = _owner(fill.operands[1])
        if empty is None or empty.name != "tensor.empty":
            continue
        uses = _init_uses(fill)
        n_uses = sum(1 for _ in fill.results[0].uses)
        # (the first init reader keeps the original where nothing else reads it)
        clones = uses[1:] if len(uses) == n_uses else uses
        for user, number in clones:
            new_empty = empty.clone(ip=ir.InsertionPoint(fill))
            new_fill = fill.clone(ip=ir.InsertionPoint(fill))
            new_fill.operands[1] = new_empty.results[0]
            user.operands[number] = new_fill.results[0]
            made += 1
    return made
