"""Multi-threaded f32 matmul: the single-core schedule of `matmul.py` inside an `scf.forall`.

The matmul is first split along N into `threads` chunks with `tile_using_forall`; each chunk is
then scheduled exactly like `matmul.py` (packing, 8x32 register tile, outer-product FMAs), with
its own pack buffers (they are allocated inside the forall body, so every task has its own).
Lower with `pipeline: cpu-matmul-parallel-lower`, which turns the forall into `scf.parallel`
and runs it on MLIR's async runtime (`async-parallel-for`). Block sizes apply to a chunk: pick
them for N / threads (`default_params` does).
"""
from __future__ import annotations

import matmul

PAYLOAD_OP = "linalg.matmul"
PARAMS = {
    "threads": {"min": 1, "max": 256, "help": "parallel chunks along N (one task each)"},
}


def matmul_parallel(threads: int = 2, block_m: int = 64, block_n: int = 512, block_k: int = 256,
                    reg_m: int = 8, reg_n: int = 32, reg_k: int = 4,
                    pack_tile_a: int = 32, pack_tile_b: int = 8, op: str = "", bufferize: bool = True) -> str:
    """The transform module (MLIR text): forall over N chunks, then matmul.matmul_tiling in each
    (`op`, `bufferize`: as in matmul.py)."""
    if not isinstance(threads, int) or threads < 1:
        raise ValueError(f"threads must be a positive int, got {threads!r}")
    text = matmul.matmul_tiling(block_m=block_m, block_n=block_n, block_k=block_k, reg_m=reg_m,
                                reg_n=reg_n, reg_k=reg_k, pack_tile_a=pack_tile_a, pack_tile_b=pack_tile_b,
                                op=op, bufferize=bufferize)
    anchor = "%mm = " + matmul.match_op("linalg.matmul", op)
    if anchor not in text:
        raise ValueError("matmul.py changed: cannot find where to insert the forall tiling")
    split = ("%mm_all = " + matmul.match_op("linalg.matmul", op) + "\n"
             f'    %mm, %chunks = transform.structured.tile_using_forall %mm_all num_threads [1, {threads}]'
             ' : (!transform.any_op) -> (!transform.any_op, !transform.any_op)')
    return text.replace(anchor, split)


def default_params(m: int, n: int, k: int, threads: int = 2, **machine) -> dict:
    """Split N into `threads` chunks (fewer if N does not divide) and block each chunk like matmul.py;
    `machine`: the machine model's numbers matmul.default_params takes (vector_bits, vector_registers,
    l1_bytes, l2_bytes)."""
    while threads > 1 and n % threads:
        threads -= 1
    params = {"threads": threads}
    params.update({key: v for key, v in matmul.default_params(m, n // threads, k, **machine).items() if key != "impl"})
    return params
