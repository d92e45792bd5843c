"""Multi-threaded f32 matmul: the single-core schedule of `matmul.py` inside an `scf.forall`.

The matmul is first split into `threads_m` x `threads` chunks (M x N) with `tile_using_forall`; each chunk is
then scheduled exactly like `matmul.py` (packing, 8x32 register tile, outer-product FMAs), with
its own pack buffers (they are allocated inside the forall body, so every task has its own).
Lower with `pipeline: cpu-matmul-parallel-lower`, which turns the forall into `scf.parallel`
and runs it on MLIR's async runtime (`async-parallel-for`). Block sizes apply to a chunk: pick
them for M / threads_m x N / threads (`default_params` does). A 2-D grid (threads_m > 1) packs less
redundantly on many cores: with an N-only split every task packs all of A (16x over on 16 cores);
with 4 x 4, every task packs a quarter of A and of B.
"""
from __future__ import annotations

import matmul

#: the functions a session may call as generators (`file.py[gen=NAME]`); nothing else here is callable
GENERATORS = ["matmul_parallel"]

PAYLOAD_OP = "linalg.matmul"
PARAMS = {
    "threads": {"min": 1, "max": 256, "help": "parallel chunks along N (one task each)"},
    "threads_m": {"min": 1, "max": 256, "help": "parallel chunks along M (tasks: threads_m x threads)"},
    "fill_init": {"help": "the producer of the output's init (a fill; `op` names one matmul) "
                           "is fused into the chunks: each task zeroes its own chunk, in parallel and "
                           "in cache, not the whole output on one core before"},
}


def matmul_parallel(threads: int = 2, block_m: int = 64, block_n: int = 512, block_k: int = 256,
                    reg_m: int = 8, reg_n: int = 32, reg_k: int = 4,
                    pack_tile_a: int = 32, pack_tile_b: int = 8, op: str = "", bufferize: bool = True,
                    threads_m: int = 1, pack_b: int = 1, main_m: int = 0, tail_m: int = 0,
                    tail_reg_m: int = 4, fill_init: bool = False) -> str:
    """The transform module (MLIR text): forall over threads_m x threads (M x N) chunks, then
    matmul.matmul_tiling in each (`op`, `bufferize`, `main_m`/`tail_m`/`tail_reg_m`: as in matmul.py, for a
    chunk's rows; `fill_init`: the init's producer fused into the chunks)."""
    for name, value in (("threads", threads), ("threads_m", threads_m)):
        if not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be a positive int, got {value!r}")
    # (empty tensors eliminated in the whole function: analyzed from the chunks' scf.forall, the elimination
    # left packing buffers that the function's analysis replaces; matmul_family.py's chunks too)
    text = matmul.tiling_module(block_m=block_m, block_n=block_n, block_k=block_k, reg_m=reg_m,
                                reg_n=reg_n, reg_k=reg_k, pack_tile_a=pack_tile_a, pack_tile_b=pack_tile_b,
                                op=op, bufferize=bufferize, pack_b=pack_b, main_m=main_m, tail_m=tail_m,
                                tail_reg_m=tail_reg_m, in_region=False)
    anchor = "%mm = " + matmul.match_op("linalg.matmul", op)
    if anchor not in text:
        raise ValueError("matmul.py changed: cannot find where to insert the forall tiling")
    split = ("%mm_all = " + matmul.match_op("linalg.matmul", op) + "\n"
             + matmul.forall_chunks("%mm_all", "%mm", "%chunks", [threads_m, threads], fill_init=bool(fill_init)).strip())
    return text.replace(anchor, split)


#: the narrowest N chunk a task gets before M is split too (columns)
MIN_CHUNK_N = 128
#: from this many tasks on, M is split in two where that packs less (see thread_grid)
MANY_TASKS = 8


def lane_use(columns: int, lanes: int) -> float:
    """The share of the SIMD lanes a chunk `columns` wide keeps busy: its widest register tile's columns
    (matmul.column_tiles, whichever divides it first) over a vector."""
    widest = next(r for r in matmul.column_tiles(lanes) if columns % r == 0)
    return min(widest, lanes) / lanes


def thread_grid(m: int, n: int, threads: int, lanes: int = 0) -> tuple[int, int]:
    """(threads_m, threads_n): `threads` tasks as M x N chunks that divide the dims (fewer threads if
    nothing divides). N is split first: each task packs all of A but only its own columns of B, which
    stay in its core's L2 across all of M; M is split as little as keeps chunks MIN_CHUNK_N columns
    wide. From MANY_TASKS tasks on, M is split in two where that packs less in all (tasks_n x M + tasks_m
    x N elements per K step): with 16 N-only chunks every task packs all of A.
    Measured on the 16-core Xeon of the GPU machine (medians of 2 to 5 runs alternating with numpy, three
    calls on one day; GFLOP/s 1 x 16 / 2 x 8): AVX-512 2048^3 1043 / 1122 and 962 / 986, 4096^3 976 / 1046;
    AVX2 code 2048^3 605 / 631 and 566 / 594, 4096^3 602 / 654; 1024^3 (2 x 8 before too) 859 / 853.
    4 x 4 (the least packing) swung from best to worst between runs (2048^3: 1127, then 804). An earlier
    single run had 1 x 16 ahead at 2048^3 (1290 / 1200); on the 2-core hosts N only.
    With `lanes` (the machine's f32 lanes), only the grids whose N chunks keep the most lanes busy
    (`lane_use`) are candidates: EfficientNet's 96 x 3136 pointwise convolution in 1 x 16 chunks of 196
    columns ran 8 x 4 register tiles (a quarter of each zmm); 4 x 4 chunks of 784 take whole vectors."""
    while threads > 1:
        grids = [(tm, threads // tm) for tm in range(1, threads + 1)
                 if threads % tm == 0 and m % tm == 0 and n % (threads // tm) == 0]
        if grids and lanes:
            best = max(lane_use(n // tn, lanes) for _, tn in grids)
            grids = [g for g in grids if lane_use(n // g[1], lanes) == best]
        if grids:
            wide = [g for g in grids if n // g[1] >= MIN_CHUNK_N]
            if wide and threads >= MANY_TASKS:
                halves = [g for g in wide if g[0] <= 2]
                if halves:
                    return min(halves, key=lambda g: (g[1] * m + g[0] * n, g[0]))
            # the fewest M splits with wide chunks; else the widest chunks there are
            return min(wide) if wide else max(grids, key=lambda g: (n // g[1], -g[0]))
        threads -= 1
    return 1, 1


def machine_lanes(machine: dict) -> int:
    """f32 lanes of the machine model's numbers (matmul.default_params' `vector_bits`; 0 without them)."""
    return machine["vector_bits"] // 32 if machine.get("vector_bits") else 0


def default_params(m: int, n: int, k: int, threads: int = 2, **machine) -> dict:
    """Split M x N into `threads` chunks (`thread_grid`) and block each chunk like matmul.py;
    `machine`: the machine model's numbers matmul.default_params takes (vector_bits, vector_registers,
    l1_bytes, l2_bytes)."""
    threads_m, threads_n = thread_grid(m, n, threads, machine_lanes(machine))
    params = {"threads": threads_n, "threads_m": threads_m}
    params.update({key: v for key, v in matmul.default_params(m // threads_m, n // threads_n, k, row_split=True,
                                                              **machine).items()
                   if key != "impl"})
    return params
