"""Transform-dialect schedule for a chain of linalg.generic ops over the same rows (a softmax written as
separate ops: max, exp(x - max), sum, divide; a norm's mean, variance and normalization) on the CPU.

``fuse_rows(op=[sink, producer, ...], tile=[...])``:
  1. tiles the chain's last op (``sink``: elementwise over [rows..., row]) by ``tile`` (a few rows, the
     whole row) with ``tile_using_forall``;
  2. fuses every other op of the chain into the forall (``fuse_into_containing_op``, consumers before
     their producers: the order of ``op``), so that one iteration computes the whole chain on its rows
     while they are in L1 (the chain's input read from memory once, its output written once, instead of
     one pass over memory per op);
  3. vectorizes the fused ops at their static tile sizes (reductions: vector.multi_reduction).
The forall becomes tasks on MLIR's async runtime in ``cpu-lower`` (async-parallel-for blocks the rows);
with ``parallel=0`` the rows are plain loops (a small chain: dispatching tasks costs more than its rows).
Every op of the chain except the sink must be used by ops of the chain alone (else it is computed twice).
"""
from __future__ import annotations

from generic import VECTOR_CLEANUP, _check_id, match_one
from workbench.common.transform_text import transform_module

#: the functions a session may call as generators (`file.py[gen=NAME]`); nothing else here is callable
GENERATORS = ["fuse_rows"]

#: how each op of a chain takes part (workbench/targets/cpu_rows.py)
ROLES = ("full", "reduction", "rows", "fill")

PARAMS = {
    "op": {"help": "the chain's op ids (`inspect`; lh.op, set by `rewrite tag-ops`): its last op first, then "
                   "the others, each after all its consumers in the chain"},
    "tile": {"help": "the last op's tile per loop: rows per forall iteration (1 or a few), 0 for the row itself"},
    "roles": {"help": "per op of `op`: full (elementwise over the rows), reduction (of the row), rows (elementwise "
                      "over the rows alone), fill (a reduction's init)"},
    "vector": {"min": 0, "max": 1024, "help": "elements of the row per vector step (dividing it); 0: the row whole"},
    "parallel": {"min": 0, "max": 1, "help": "1: the rows loop is a forall (tasks on the async runtime); 0: a "
                                             "plain loop (small chains: a task dispatch costs more than the rows)"},
}


def fuse_rows(op: list[str] = [], tile: list[int] = [], roles: list[str] = [], vector: int = 64, parallel: int = 1) -> str:
    """The transform module (MLIR text) fusing the chain `op` by rows of `tile`; inside an iteration, ops
    over the whole row (`roles`: "full", "reduction") are taken `vector` elements at a time; `parallel`:
    the rows loop a forall (else nested scf.for loops, one per tiled dim)."""
    ids = [str(i) for i in op] if isinstance(op, (list, tuple)) else [str(op)]
    if len(ids) < 2:
        raise ValueError(f"op must list a chain of two ops or more (its last op first), got {op!r}")
    for i in ids:
        _check_id(i)
    if not tile or not all(isinstance(t, int) and t >= 0 for t in tile) or not any(tile):
        raise ValueError(f"tile must be non-negative ints with a row tile, got {tile!r}")
    roles = list(roles) or ["full"] + ["rows"] * (len(ids) - 1)
    if len(roles) != len(ids) or not set(roles) <= set(ROLES):
        raise ValueError(f"roles must give one of {', '.join(ROLES)} per op, got {roles!r}")
    if not isinstance(vector, int) or vector < 0:
        raise ValueError(f"vector must be a non-negative int, got {vector!r}")
    if parallel not in (0, 1):
        raise ValueError(f"parallel must be 0 or 1, got {parallel!r}")
    a = "!transform.any_op"
    text = match_one(ids[0], "%sink")
    if parallel:
        text += (f"    %f_sink, %forall0 = transform.structured.tile_using_forall %sink tile_sizes {list(tile)}"
                 f" : ({a}) -> ({a}, {a})\n")
    else:   # the producers are fused into the innermost loop, where the sink's slices are
        loops = sum(1 for t in tile if t)
        text += (f"    %f_sink, %rows:{loops} = transform.structured.tile_using_for %sink tile_sizes {list(tile)}"
                 f" : ({a}) -> ({a}{f', {a}' * loops})\n"
                 f"    %forall0 = transform.merge_handles %rows#{loops - 1} : {a}\n")
    fused = ["%f_sink"]
    for n, producer in enumerate(ids[1:]):
        text += match_one(producer, f"%p{n}")
        # (the slices of one producer that several ops read are the same after CSE: fused once)
        text += (f"    %fn{n} = transform.get_parent_op %forall{n} {{op_name = \"func.func\"}} : ({a}) -> {a}\n"
                 f"    transform.apply_cse to %fn{n} : {a}\n"
                 f"    %f{n}, %forall{n + 1} = transform.structured.fuse_into_containing_op %p{n} into %forall{n}"
                 f" : ({a}, {a}) -> ({a}, {a})\n")
        fused.append(f"%f{n}")
    last = f"%forall{len(ids) - 1}"
    if vector:
        # along the row, `vector` elements at a time: partial results of that width for the reductions
        # (accumulators in registers, combined once per row), tiles of that width for elementwise ops
        inner = [0] * (len(tile) - 1) + [vector]
        for n, (handle, role) in enumerate(zip(fused, roles)):
            if role == "full":
                text += (f"    %t{n}, %l{n} = transform.structured.tile_using_for {handle} tile_sizes {inner}"
                         f" : ({a}) -> ({a}, {a})\n")
            elif role == "reduction":
                text += (f"    %rf{n}, %r{n}, %rc{n}, %rl{n} = transform.structured.tile_reduction_using_for {handle}"
                         f" by tile_sizes = {inner} : ({a}) -> ({a}, {a}, {a}, {a})\n")
    # (vectorize_nd_extract: a chain op that looks rows up, e.g. the embeddings summed before a LayerNorm,
    # reads them as vectors, or gathers; without it such an op failed to vectorize)
    text += (f"    %inner = transform.structured.match interface{{LinalgOp}} in {last} : ({a}) -> {a}\n"
             f"    transform.structured.vectorize %inner {{vectorize_nd_extract}} : {a}\n"
             + VECTOR_CLEANUP.replace("transform.apply_patterns.vector.lower_masks\n",
                                      "transform.apply_patterns.vector.lower_masks\n"
                                      "      transform.apply_patterns.vector.lower_gather\n").replace("%scope", last))
    return transform_module(text)
