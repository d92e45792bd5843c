"""Tile-and-fuse: tile the *last* elementwise consumer of each matmul (e.g. bias + relu of
an MLP layer) with scf.forall and fuse the epilogue, the matmul and its zero fill into the
tiles; then tile the matmul's reduction and optionally vectorize.

    apply pipelines/lib/fuse.py[gen=tile_and_fuse]{tile_m=32 tile_n=64 tile_k=16}
"""
from __future__ import annotations

from workbench.common.transform_text import transform_module

#: the functions a session may call as generators (`file.py[gen=NAME]`); nothing else here is callable
GENERATORS = ["tile_and_fuse"]

PARAMS = {
    "tile_m": {"min": 1, "help": "rows per forall tile"},
    "tile_n": {"min": 1, "help": "columns per forall tile"},
    "tile_k": {"min": 0, "help": "reduction chunk of the fused matmul (0: keep whole)"},
    "epilogue": {"min": 0, "max": 4, "help": "elementwise consumers to fuse after each matmul (bias, relu: 2)"},
    "vectorize": {"help": "vectorize the function afterwards"},
    "lowering": {"choices": ["outerproduct", "dot", "matmulintrinsics", "parallelarith"],
                 "help": "vector.contract lowering used after vectorization"},
}

_T = "!transform.any_op"


def tile_and_fuse(tile_m: int = 32, tile_n: int = 64, tile_k: int = 16, epilogue: int = 2,
                  vectorize: bool = True, lowering: str = "outerproduct") -> str:
    body = []
    prev = "%mm"
    chain = []
    for i in range(epilogue):
        body.append(f"      %c{i} = transform.get_consumers_of_result {prev}[0] : ({_T}) -> {_T}")
        prev = f"%c{i}"
        chain.append(prev)
    body.append(f"      %fill = transform.get_producer_of_operand %mm[2] : ({_T}) -> {_T}")
    consumer = prev
    body.append(f"      %tiled, %forall = transform.structured.tile_using_forall {consumer} "
                f"tile_sizes [{tile_m}, {tile_n}] : ({_T}) -> ({_T}, {_T})")
    loop = "%forall"
    # fuse producers from the closest to the farthest: c_{n-2} ... c0, matmul, fill
    producers = list(reversed(chain[:-1])) + ["%mm"] if chain else []
    fused_mm = "%tiled"
    for j, p in enumerate(producers):
        body.append(f"      %f{j}, %l{j} = transform.structured.fuse_into_containing_op {p} into {loop} "
                    f": ({_T}, {_T}) -> ({_T}, {_T})")
        loop = f"%l{j}"
        if p == "%mm":
            fused_mm = f"%f{j}"
    body.append(f"      %ffill, %lfill = transform.structured.fuse_into_containing_op %fill into {loop} "
                f": ({_T}, {_T}) -> ({_T}, {_T})")
    if tile_k:
        body.append(f"      %tk, %lk = transform.structured.tile_using_for {fused_mm} tile_sizes [0, 0, {tile_k}] "
                    f": ({_T}) -> ({_T}, {_T})")
    vec = ""
    if vectorize:
        vec = f"""
    %f = transform.structured.match ops{{["func.func"]}} in %root : ({_T}) -> {_T}
    %v = transform.structured.vectorize_children_and_apply_patterns %f : ({_T}) -> {_T}
    transform.apply_patterns to %v {{
      transform.apply_patterns.vector.lower_contraction lowering_strategy = "{lowering}"
      transform.apply_patterns.vector.transfer_permutation_patterns
      transform.apply_patterns.vector.lower_transpose
      transform.apply_patterns.vector.lower_outerproduct
      transform.apply_patterns.canonicalization
    }} : {_T}
    transform.apply_cse to %v : {_T}"""
    nl = "\n"
    return transform_module(f"""    %mms = transform.structured.match ops{{["linalg.matmul"]}} in %root : ({_T}) -> {_T}
    transform.foreach %mms : {_T} {{
    ^bb0(%mm: {_T}):
{nl.join(body)}
    }}{vec}
""")
