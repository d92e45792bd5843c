"""The CPU selector's per-op choice for ops outside the matmul family: classify the op by its loop
structure (iterator types, indexing maps, body ops, as `inspect` reports them under `loops`) and
size pipelines/cpu/generic.py's tiles for its shape and the host's vector width.

Classes (by structure, not by op name):
  elementwise  all loops parallel, projected-permutation maps (identity, broadcast, transpose, fill)
  reduction    reduction loops, one result whose body combines with a recognised combiner
               (add, mul, max, min, and, or, xor): inner (the output lacks the innermost loop) or
               outer (the output keeps it: vectors along the output, a loop over the reduced dims)
  scalar       anything else the vectorizer does not take (non-projected maps: convolutions, pooling
               windows; reductions with several results such as argmax with its index; bodies with
               asserts or gathers; i1 operands): loops, split over threads
"""
from __future__ import annotations

from typing import Any

GENERIC_SCHEDULE = "cpu/generic.py"
GENERIC_GENERATOR = "tile_vectorize"

#: body ops the vectorizer recognises as reduction combiners
COMBINERS = {"arith.addf", "arith.mulf", "arith.maximumf", "arith.minimumf", "arith.maxnumf", "arith.minnumf",
             "arith.addi", "arith.muli", "arith.andi", "arith.ori", "arith.xori", "arith.maxsi", "arith.minsi",
             "arith.maxui", "arith.minui"}
#: ops that belong to their consumer's group (the init of a matmul or reduction): no step of their own
#: (tiling a fill apart from the matmul it initializes defeats the matmul schedule's packing)
GROUPED_WITH_CONSUMER = {"linalg.fill"}
#: body ops that keep an op scalar: asserts (the vectorizer refuses them), gathers (`tensor.extract`
#: with computed indices), integer powers (`math.fpowi` on vectors has no LLVM lowering here)
SCALAR_BODY_OPS = {"cf.assert", "tensor.extract", "math.fpowi", "math.ipowi"}
#: element types that keep an op scalar when an operand has them: i1 (vector transfers of bool
#: buffers do not survive lh-widen-i1-memrefs)
SCALAR_ELEMENT_TYPES = {"i1"}
#: work (iterations) below which a thread split costs more than it saves
MIN_PARALLEL_WORK = 1 << 15


def _element_type(type_text: str) -> str:
    return type_text.rsplit("x", 1)[-1].rstrip(">") if "<" in type_text else type_text


def classify(loops: dict, element_types: set[str] = frozenset()) -> str:
    iterators = loops["iterators"]
    if not loops["projected"] or SCALAR_BODY_OPS & set(loops["body"]) or SCALAR_ELEMENT_TYPES & element_types:
        return "scalar"
    if all(it == "parallel" for it in iterators):
        return "elementwise"
    n_out = len(loops["operand_dims"]) - (loops.get("num_inputs") or 0)
    if n_out != 1 or not COMBINERS & set(loops["body"]):
        return "scalar"
    out_dims = loops["operand_dims"][-1]
    innermost = len(iterators) - 1
    return "reduction-outer" if out_dims and out_dims[-1] == innermost else "reduction-inner"


def vector_loop(loops: dict) -> int:
    """The loop vectorized: the output's innermost dim when it is parallel (contiguous stores), else
    the innermost loop (an inner reduction)."""
    out_dims = loops["operand_dims"][-1]
    if out_dims and out_dims[-1] >= 0 and loops["iterators"][out_dims[-1]] == "parallel":
        return out_dims[-1]
    return len(loops["iterators"]) - 1


def generic_params(op: dict[str, Any], vector_bits: int, cores: int) -> dict[str, Any] | None:
    """pipelines/cpu/generic.py parameters for one op (None: no loop structure known)."""
    loops = op.get("loops")
    if not loops or not loops.get("iterators"):
        return None
    kind = classify(loops, {_element_type(t) for t in op.get("operand_types", [])})
    domain = loops.get("domain") or []
    iterators = loops["iterators"]
    work = 1
    for d in domain:
        work *= d if d > 0 else 1024
    threads, split = 1, 0
    # split the outermost parallel loop with more than one iteration (batch dims are often 1)
    outer = next((i for i, it in enumerate(iterators) if it == "parallel" and i < len(domain) and domain[i] > 1), None)
    if cores > 1 and outer is not None and work >= MIN_PARALLEL_WORK:
        threads, split = min(cores, domain[outer]), outer
    params: dict[str, Any] = {"op": op["id"], "threads": threads, "split": split}
    if kind == "scalar":
        return {**params, "tile": [], "vector": 0, "class": kind}
    lanes = max(vector_bits // 32, 4)
    vdim = vector_loop(loops)
    extent = domain[vdim] if vdim < len(domain) else -1
    width = 2 * lanes
    if 0 < extent < width:
        width = extent
    tile = [1] * len(iterators)
    tile[vdim] = width
    return {**params, "tile": tile, "vector": 1, "class": kind}
