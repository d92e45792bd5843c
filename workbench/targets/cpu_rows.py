"""Row chains for the CPU selector: linalg.generic ops over the same rows that one loop over the rows
can compute together (pipelines/cpu/rows.py), so that each row is read from memory once for the whole
chain instead of once per op (a softmax written as max, exp(x - max), sum, divide: five passes over a
32 MiB score tensor in attention; a norm's mean, variance and normalization).

A chain ends in a sink: an elementwise op over [rows..., row] (static, identity output). Its members are
the ops it reads through the rows, transitively:
  - elementwise ops over the same domain, read through the identity map;
  - reductions of the row (parallel rows, then reduction loops), read through the rows' map
    (d0..d_p-1: broadcast along the row);
  - elementwise ops over the rows alone (domain [rows...], a per-row flag or scale), read likewise;
  - the fills that initialize the members' reductions.
A member read by anything outside the chain (an op, a return, a reshape) is left out (with what only it
reads), so that no op is computed twice. A chain with a reduction and two ops or more is worth a step of its own.
"""
from __future__ import annotations

import math

from typing import Any

#: rows of at least this many elements (shorter rows: the per-row loop overhead outweighs the passes saved)
MIN_ROW = 16
#: elements of a row per vector step (four AVX-512 registers of f32)
ROW_VECTOR = 64


def _static(op: dict[str, Any]) -> bool:
    domain, its = op.get("domain") or [], op.get("iterators") or []
    return bool(domain) and len(domain) == len(its) and all(isinstance(d, int) and d > 0 for d in domain)


def _role(op: dict[str, Any], rows: list[int], row: int) -> str | None:
    """How op takes part in a chain over domain rows + [row]: "full" (elementwise over it), "reduction"
    (the row reduced), "rows" (elementwise over the rows), None (no member)."""
    if op.get("op") != "linalg.generic" or not _static(op) or not op.get("loops"):
        return None
    loops = op["loops"]
    outputs = loops["operand_dims"][loops.get("num_inputs") or 0:]
    domain, its = op["domain"], op["iterators"]
    p = len(rows)
    if len(outputs) != 1 or not loops.get("projected"):
        return None
    if domain == rows + [row] and its == ["parallel"] * (p + 1) and outputs[0] == list(range(p + 1)):
        return "full"
    if domain == rows + [row] and its == ["parallel"] * p + ["reduction"] and outputs[0] == list(range(p)):
        return "reduction"
    if domain == rows and its == ["parallel"] * p and outputs[0] == list(range(p)):
        return "rows"
    return None


def _reads_through_rows(op: dict[str, Any], k: int, producer_role: str, p: int) -> bool:
    """Whether operand k of `op` (a member) reads a producer of `producer_role` row by row."""
    dims = op["loops"]["operand_dims"]
    if k >= len(dims):
        return False
    if producer_role == "full":
        return dims[k] == list(range(p + 1))
    return dims[k] == list(range(p))


def row_chain(ops: list[dict[str, Any]], sink: int) -> list[tuple[int, str]] | None:
    """The chain ending in ops[sink] (indices into ops, the sink first, then each member after all its
    consumers in the chain: reverse walk order), None when it has no reduction or fewer than two ops."""
    s = ops[sink]
    if not _static(s) or len(s["domain"]) < 2:
        return None
    rows, row = list(s["domain"][:-1]), s["domain"][-1]
    if row < MIN_ROW or _role(s, rows, row) != "full":
        return None
    p = len(rows)
    members = {sink: "full"}
    todo = [sink]
    while todo:
        j = todo.pop()
        for k, i in enumerate(ops[j].get("producers") or []):
            if i < 0 or i in members:
                continue
            if ops[i].get("op") == "linalg.fill":
                if members[j] == "reduction" and k == len(ops[j]["producers"]) - 1:
                    members[i] = "fill"
                continue
            role = _role(ops[i], rows, row)
            if role is not None and members[j] != "fill" and _reads_through_rows(ops[j], k, role, p):
                members[i] = role
                todo.append(i)
    # drop members read outside the chain (and then what only they read), until none is
    changed = True
    while changed:
        changed = False
        for i in list(members):
            if i != sink and (ops[i].get("other_uses") or any(c not in members for c in ops[i].get("consumers") or [])):
                del members[i]
                changed = True
        # members no longer reachable from the sink through members
        reach, stack = {sink}, [sink]
        while stack:
            j = stack.pop()
            for i in ops[j].get("producers") or []:
                if i in members and i not in reach:
                    reach.add(i)
                    stack.append(i)
        for i in list(members):
            if i not in reach:
                del members[i]
                changed = True
    generics = [i for i in members if members[i] != "fill"]
    if len(generics) < 2 or "reduction" not in members.values():
        return None
    return [(i, members[i]) for i in [sink] + sorted((i for i in members if i != sink), reverse=True)]


def row_chains(ops: list[dict[str, Any]]) -> list[list[tuple[int, str]]]:
    """Every chain (row_chain), sinks taken last op first; an op belongs to one chain at most."""
    taken: set[int] = set()
    chains = []
    for sink in reversed(range(len(ops))):
        if sink in taken:
            continue
        chain = row_chain(ops, sink)
        if chain is None or taken & {i for i, _ in chain}:
            continue
        taken.update(i for i, _ in chain)
        chains.append(chain)
    return chains


#: element steps (the chain's domain times its ops) that dispatching the rows as async-runtime tasks
#: costs, ~0.1 ms (`run --profile`, 2-core Zen 4: a GPT-2 block's LayerNorm chains of 2x16x64, ~20k steps in
#: 7 us alone, took 0.1 ms each as tasks; a ViT's 2x4x64x64 softmax chain, 330k steps, 0.17 ms on two
#: threads against 0.055 ms alone): the rows are split where the time that saves is larger
MIN_PARALLEL_ROW_WORK = 1 << 18


def row_vector(row: int, lanes: int = 16) -> int:
    """Elements of a row of `row` taken per vector step: ROW_VECTOR or a smaller power of two that divides it
    (at least 8), else 0 (the row whole, one vector of its length). Where that leaves part of the machine's
    `lanes` unused (a step of 8 on 16 lanes: a row of 1000) or a row past 2 ROW_VECTOR whole (a 500-token
    attention softmax: 32 registers per value, spilled; 8 ms a layer against 1.2 ms in steps of 100), the
    divisor of the row up to 2 ROW_VECTOR that fills its registers' lanes best (500: 125, 8 registers of
    which the last has 13 of 16 lanes busy; ties: the widest)."""
    vector = next((v for v in (ROW_VECTOR, 32, 16, 8) if row % v == 0 and v < row), 0)
    if vector >= lanes or (not vector and row <= 2 * ROW_VECTOR):
        return vector
    divisors = [v for v in range(8, min(row - 1, 2 * ROW_VECTOR) + 1) if row % v == 0]
    if not divisors:
        return vector

    def busy_lanes(v: int) -> float:
        return v / (-(-v // lanes) * lanes)

    return max(divisors, key=lambda v: (busy_lanes(v), v))


def chain_params(ops: list[dict[str, Any]], chain: list[tuple[int, str]], cores: int = 1,
                 min_parallel_work: int = MIN_PARALLEL_ROW_WORK, lanes: int = 16) -> dict[str, Any]:
    """pipelines/cpu/rows.py parameters: one row per iteration, `row_vector` elements of the row at a time.
    The rows loop is a forall (the async runtime blocks
    the rows into tasks) where there are several cores and what splitting saves, (1 - 1/cores) of the
    chain's element steps, is `min_parallel_work` or more; else plain loops."""
    domain = ops[chain[0][0]]["domain"]
    vector = row_vector(domain[-1], lanes)
    # (split over c cores a chain saves (1 - 1/c) of its time: it has to outweigh the dispatch)
    parallel = int(cores > 1 and math.prod(domain) * len(chain) * (cores - 1) >= min_parallel_work * cores)
    return {"op": [ops[i]["id"] for i, _ in chain], "roles": [role for _, role in chain],
            "tile": [1] * (len(domain) - 1) + [0], "vector": vector, "parallel": parallel}
