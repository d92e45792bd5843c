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
