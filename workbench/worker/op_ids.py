"""Stable ids of a payload's linalg ops (worker side), the handle per-op schedules target.

An op's id is its discardable attribute `lh.op` when it has one (set by the `tag-ops` rewrite, it
survives later transformations); otherwise `<kind>_<index>`: the op name without `linalg.` (dots
as underscores) and its index among the ops of that kind in walk order, skipping ids already
taken by tagged ops. `payload_inspect` reports these ids and `tag-ops` writes them, so the ids
`inspect` shows before tagging are the ids the tagged ops get.
"""
from __future__ import annotations

import re

from mlir import ir

from workbench.worker.ir_walk import ops_where

ID_ATTR = "lh.op"


def is_payload_linalg_op(op) -> bool:
    name = op.name
    return name.startswith("linalg.") and name not in ("linalg.yield", "linalg.index")


def op_kind(name: str) -> str:
    return name.split(".", 1)[-1].replace(".", "_")


def existing_id(op) -> str | None:
    if ID_ATTR in op.attributes:
        attr = op.attributes[ID_ATTR]
        return ir.StringAttr(attr).value if isinstance(attr, ir.StringAttr) else str(attr)
    return None


def assign_ids(ops: list) -> list[tuple[object, str, bool]]:
    """[(op, id, tagged)] for `ops` (linalg ops in walk order)."""
    taken = {i for i in (existing_id(op) for op in ops) if i is not None}
    counters: dict[str, int] = {}
    out = []
    for op in ops:
        tag = existing_id(op)
        if tag is not None:
            out.append((op, tag, True))
            continue
        kind = op_kind(op.name)
        n = counters.get(kind, 0)
        while f"{kind}_{n}" in taken:
            n += 1
        counters[kind] = n + 1
        new = f"{kind}_{n}"
        taken.add(new)
        out.append((op, new, False))
    return out


def linalg_ops(module) -> list:
    return ops_where(module, lambda op: is_payload_linalg_op(op.operation))


def tag_ops(module) -> int:
    """The `tag-ops` rewrite: set `lh.op = "<id>"` on every linalg op that has none; returns how many.
    Each op's location is named after its id too (`loc("generic_0"("model.mlir":12:5))`): the loops and
    vector ops a schedule makes of it inherit its location, not its attributes, so `run --profile` names
    a loop nest after the ops it came from (a decomposed convolution's nests all came from one payload line)."""
    ops = [op.operation for op in linalg_ops(module)]
    count = 0
    with module.context:
        for op, op_id, tagged in assign_ids(ops):
            if not tagged:
                op.attributes[ID_ATTR] = ir.StringAttr.get(op_id)
                count += 1
            if location_id(op.location) != op_id:
                op.location = ir.Location.name(op_id, childLoc=op.location)
    return count


#: the name `tag_ops` gives an op's location, as printed: `loc("generic_0"(...` (ids are `kind_N` or the user's),
#: also of each part of a fused location and of a call site's callee (`fused["add_0"(..), "mul_0"(..)]`,
#: `callsite("x_0"(..) at ..)`); a name nested inside another (a front end's own, `"add_0"("aten::add"(..))`)
#: is no id
_NAMED = re.compile(r'(?:^loc\(|\[|, |callsite\()"([A-Za-z_][\w.$-]*)"\(')


def location_ids(location) -> list[str]:
    """The outermost names of `location` (an ir.Location or its text): the ids tag_ops gave."""
    return _NAMED.findall(str(location))


def location_id(location) -> str | None:
    names = location_ids(location)
    return names[0] if names else None
