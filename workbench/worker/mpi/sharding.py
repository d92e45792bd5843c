"""Shard-dialect helpers for the compile worker (MLIR objects; runs in a worker).

`strip_sharding` turns an annotated (not yet partitioned) payload back into the plain
single-process program it describes: every `shard.shard %v to %s` is replaced by `%v`, and
the then unused `shard.sharding` / `shard.grid` ops are erased. That is the unsharded
reference the `mpi` target checks against. Ops that only exist after partitioning
(collectives, process indices) cannot be stripped and are reported.
"""
from __future__ import annotations

from mlir import ir

from workbench.worker.ir_walk import ops_where

ANNOTATION_OPS = ("shard.shard", "shard.sharding")


class ShardingError(Exception):
    pass


def shard_annotations(op) -> list[str]:
    """Names of the sharding annotation ops nested in `op` (a function or a module)."""
    return [inner.name for inner in ops_where(op, lambda inner: inner.name in ANNOTATION_OPS)]


def strip_sharding(module) -> int:
    """Remove the sharding annotations of `module` in place; returns how many ops were removed."""
    shards, shardings, grids, other = [], [], [], set()

    def visit(op):
        name = op.name
        if name == "shard.shard":
            shards.append(op)
        elif name == "shard.sharding":
            shardings.append(op)
        elif name == "shard.grid":
            grids.append(op)
        elif name.startswith("shard."):
            other.add(name)
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit)
    if other:
        raise ShardingError("cannot make an unsharded reference: the payload already uses "
                            + ", ".join(sorted(other)) + " (partitioned code); check against a payload "
                            "that only carries shard.shard / shard.sharding annotations")
    for op in shards:
        op.results[0].replace_all_uses_with(op.operands[0])
    for op in shards + shardings + grids:
        op.erase()
    return len(shards) + len(shardings) + len(grids)


def _axes(text: str) -> list[list[int]]:
    """`#shard<axisarray[[0], [], [1, 2]]>` (a split_axes attribute as printed) -> grid axes per tensor dimension."""
    import ast

    text = text.strip()
    if text.startswith("#shard<axisarray"):
        text = text[len("#shard<axisarray"):-1]
    return [list(a) for a in ast.literal_eval(text)] if text else []


def _grid_shapes(module) -> dict[str, list[int]]:
    grids = {}

    def visit(op):
        if op.name == "shard.grid":
            shape = str(op.attributes["shape"])  # array<i64: 2, 2>
            grids[str(op.attributes["sym_name"]).strip('"')] = [
                int(x) for x in shape.partition(":")[2].rstrip(">").split(",") if x.strip()]
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit)
    return grids


def _sharding_of(value_op) -> tuple[str, list[list[int]]] | None:
    if value_op is None or value_op.name != "shard.sharding":
        return None
    grid = str(value_op.attributes["grid"]).lstrip("@").strip('"')
    return grid, _axes(str(value_op.attributes["split_axes"]))


def entry_shardings(module) -> dict[str, dict]:
    """Per function of `module` (annotated, not yet partitioned): the grid shape and, for every
    argument and result, the grid axes that split each of its dimensions (None: not annotated).
    The host side of the mpi target cuts inputs and reassembles outputs with it (N-D grids)."""
    grids = _grid_shapes(module)
    out: dict[str, dict] = {}

    def visit(op):
        if op.name != "func.func" or not op.regions[0].blocks:
            return ir.WalkResult.ADVANCE
        block = op.regions[0].blocks[0]
        args: list = [None] * len(block.arguments)
        grid_name = None
        for i, arg in enumerate(block.arguments):
            for use in arg.uses:
                user = use.owner
                if user.name == "shard.shard" and "annotate_for_users" not in user.attributes:
                    found = _sharding_of(user.operands[1].owner)
                    if found:
                        grid_name, args[i] = found
                    break
        results: list = []
        for inner in block.operations:
            if inner.name == "func.return":
                for v in inner.operands:
                    owner = v.owner
                    found = _sharding_of(owner.operands[1].owner) if getattr(owner, "name", "") == "shard.shard" else None
                    if found:
                        grid_name = grid_name or found[0]
                    results.append(found[1] if found else None)
        if grid_name is not None and grid_name in grids:
            name = str(op.attributes["sym_name"]).strip('"')
            out[name] = {"grid": grids[grid_name], "args": args, "results": results}
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit)
    return out
