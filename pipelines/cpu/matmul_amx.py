"""Transform-dialect schedule for bf16 contractions on AMX tiles (Intel Sapphire Rapids and later: `tdpbf16ps`).

The payload op is what `lh-vnni-contractions{amx=1}` (workbench/worker/cpu/vnni_contractions.py) makes of a
bf16 matmul accumulating in f32 whose N is a multiple of 16: a linalg.generic tagged `lh.amx` over loops
(m, no, ni, ko, ki) (a batch matmul's: (b, m, no, ni, ko, ki), `batch=1`),

    C3[m, no, ni] += ext(A3[m, ko, ki]) * ext(Bp[no, ko, ni, ki])

A3 = A viewed in K pairs (M x K/2 x 2, no copy), Bp = B packed by a linalg.pack into panels of 16 columns,
each row of a panel the 16 column pairs (N/16 x K/2 x 16 x 2: an AMX B tile, 16 K pairs of one panel, is
1 KiB contiguous), C3 = C viewed in panels (M x N/16 x 16, no copy).

Schedule:
  1. The pack of B: tiled (`pack_n` / 16 panels x `pack_tile` K pairs per step) and vectorized.
  2. Cache blocking, loop order n_c, k_c, m_c (block_n columns = block_n/16 panels, block_k K values =
     block_k/2 pairs), then the K loop of tiles_m x tiles_n AMX tiles (unrolled): tile_m rows (<= 16) x one
     panel (16 columns) x tile_k pairs (<= 16: 32 bf16 = one 64-byte tile row).
  3. Each tile product's unit panel loop folded away (fold_unit_extent_dims_via_slices), vectorized to a
     vector.contract (the bf16 extensions folded into it, a batch's unit dim cast away): A3's
     tile_m x tile_k x 2, Bp's tile_k x 16 x 2, C's tile_m x 16.
  4. Bufferization; then upstream's `convert-vector-to-amx` turns each contraction, whose operands are
     read straight from buffers, into tile loads, one `amx.tile_mulf` and a tile store (the lowering's
     convert-vector-to-llvm{enable-amx} emits the tileloadd64 / tdpbf16ps / tilestored64 intrinsics; LLVM
     configures the tiles). The run worker asks Linux for the AMX state (arch_prctl) before running.
  5. (a later step, pipelines/cpu/amx-accumulators.yaml) the result tiles stay in tile registers across
     the K loop, and the A / B tiles the unrolled products share are loaded once.

With `bufferize=false` (a payload of several ops scheduled one step each) the contraction stays on tensors
and pipelines/cpu/finish.py{amx=1} bufferizes and converts.
"""
from __future__ import annotations

import matmul
from matmul_vnni import ANY, _forall, _tile, _unroll, contractions_of_vectorized_tiles
from workbench.common.transform_text import transform_module

#: the functions a session may call as generators (`file.py[gen=NAME]`); nothing else here is callable
GENERATORS = ["matmul_amx_tiling"]

#: an AMX tile: at most 16 rows of 64 bytes (16 f32 results, 16 bf16 pairs)
TILE_ROWS = 16
TILE_PAIRS = 16

PAYLOAD_OP = "linalg.generic"
PARAMS = {
    "block_m": {"divides": "M", "min": 1, "max": 4096, "help": "cache block along M (A block rows)"},
    "block_n": {"divides": "N", "min": 1, "max": 4096, "help": "cache block along N"},
    "block_k": {"divides": "K", "min": 2, "max": 8192, "help": "cache block along K (even)"},
    "tile_m": {"divides": "block_m", "min": 1, "max": 16, "space": [8, 16], "help": "AMX tile rows (<= 16)"},
    "tile_n": {"choices": [16], "help": "AMX result tile columns: one packed panel (16 f32)"},
    "tile_k": {"min": 1, "max": 16, "space": [8, 16], "help": "K pairs per tile product (<= 16: 32 bf16 a row)"},
    "tiles_m": {"choices": [1, 2], "help": "result tiles along M per K step (2 x 2 result tiles + 2 A + 2 B: the 8 tmm "
                                          "registers; lh-amx-tile-accumulators keeps them in registers)"},
    "tiles_n": {"choices": [1, 2], "help": "result tiles along N per K step"},
    "pack_tile": {"min": 1, "space": [1, 2, 4, 8, 16], "help": "K pairs of B packed per step"},
    "pack_n": {"min": 16, "space": [16, 32, 64], "help": "columns of B packed per step (whole 16-column panels; 32: "
                                                      "whole 64-byte rows of B read)"},
    "threads_m": {"min": 1, "max": 256, "help": "parallel chunks along M (tasks: threads_m x threads_n)"},
    "threads_n": {"min": 1, "max": 256, "help": "parallel chunks along N (the pack of B too)"},
    "batch": {"choices": [0, 1], "help": "1: a batch matmul's contraction (a leading batch loop, one batch per step)"},
    "op": {"help": "the id of the one lh.amx contraction to schedule; empty: every one"},
    "bufferize": {"help": "end with bufferization, the AMX conversion and vector lowering (false: stay on "
                          "tensors; pipelines/cpu/finish.py{amx=1} finishes)"},
}
CONSTRAINTS = ["block_k % 2 == 0", "(block_k // 2) % tile_k == 0", "block_m % (tiles_m * tile_m) == 0",
               "block_n % (tiles_n * tile_n) == 0"]


def matmul_amx_tiling(block_m: int = 64, block_n: int = 256, block_k: int = 512, tile_m: int = 16,
                      tile_n: int = 16, tile_k: int = 16, tiles_m: int = 1, tiles_n: int = 1, pack_tile: int = 8, pack_n: int = 16, batch: int = 0,
                      threads_m: int = 1, threads_n: int = 1, op: str = "", bufferize: bool = True) -> str:
    """The transform module (MLIR text) for the lh.amx contraction `op` (every one when empty)."""
    for name, v in (("block_m", block_m), ("block_n", block_n), ("block_k", block_k), ("tile_m", tile_m),
                    ("tile_n", tile_n), ("tile_k", tile_k), ("pack_tile", pack_tile), ("pack_n", pack_n), ("threads_m", threads_m),
                    ("threads_n", threads_n)):
        if not isinstance(v, int) or v <= 0:
            raise ValueError(f"{name} must be a positive int, got {v!r}")
    if tile_n != TILE_ROWS:
        raise ValueError(f"tile_n must be {TILE_ROWS} (one packed panel of B), got {tile_n}")
    if pack_n % TILE_ROWS:
        raise ValueError(f"pack_n must be whole {TILE_ROWS}-column panels, got {pack_n}")
    if tile_m > TILE_ROWS or tile_n > TILE_ROWS or tile_k > TILE_PAIRS:
        raise ValueError(f"an AMX tile has at most {TILE_ROWS} rows of 64 bytes: tile_m={tile_m}, tile_n={tile_n}, "
                         f"tile_k={tile_k} must each be <= 16")
    if block_k % 2:
        raise ValueError(f"block_k={block_k} must be even (K pairs)")
    if tiles_m not in (1, 2) or tiles_n not in (1, 2):
        raise ValueError(f"tiles_m and tiles_n must be 1 or 2, got {tiles_m}, {tiles_n}")
    for inner, outer, a, b in ((tiles_m * tile_m, block_m, "tiles_m*tile_m", "block_m"),
                               (tiles_n * tile_n, block_n, "tiles_n*tile_n", "block_n"),
                               (tile_k, block_k // 2, "tile_k", "block_k/2")):
        if outer % inner:
            raise ValueError(f"{a}={inner} must divide {b}={outer}")
    if batch not in (0, 1):
        raise ValueError(f"batch must be 0 or 1, got {batch!r}")
    lead, keep = [1] * batch, [0] * batch
    attrs = f'{{lh.op = "{op}"}}' if op else "{lh.amx}"
    body = (f"    %g_all = transform.structured.match ops{{[\"linalg.generic\"]}} attributes{attrs} in %root"
            f" : ({ANY}) -> {ANY}\n") + matmul.expect_one("%g_all", op)
    # 1. the pack of B (outer dims: panels, K pairs), vectorized per tile (panels split over threads_n)
    body += f"    %pk_all = transform.get_producer_of_operand %g_all[1] : ({ANY}) -> {ANY}\n"
    body += _forall("%pk_all", keep + [threads_n, 0], "%pk")
    body += _tile("%pk", lead + [pack_n // TILE_ROWS, pack_tile], "pkt")
    body += _forall("%g_all", keep + [threads_m, threads_n, 0, 0, 0], "%g")
    body += f"    transform.structured.vectorize %pkt : {ANY}\n"
    # 2. cache blocks (n_c, k_c, m_c), then AMX tiles (rows x panels x pairs)
    body += _tile("%g", lead + [block_m, block_n // TILE_ROWS, 0, block_k // 2, 0], "t1",
                  list(range(batch)) + [batch + i for i in (1, 3, 0, 2, 4)])
    body += _tile("%t1", keep + [tiles_m * tile_m, tiles_n, 0, tile_k, 0], "t2")
    # 3. tile products (tiles_m x tiles_n of them per K step), each one panel: the unit panel loop folded
    # away, then -> vector.contract over bf16 (extensions folded)
    body += _tile("%t2", keep + [tile_m, 1, 0, 0, 0], "t3")
    body += f"""    %product_loop = transform.get_parent_op %t3 {{op_name = "scf.for"}} : ({ANY}) -> {ANY}
    transform.apply_patterns to %product_loop {{
      transform.apply_patterns.linalg.fold_unit_extent_dims_via_slices
    }} : {ANY}
    %products = transform.structured.match ops{{["linalg.generic"]}} in %product_loop : ({ANY}) -> {ANY}
    transform.structured.vectorize %products : {ANY}
"""
    body += _unroll("%t3_l#1", tiles_n) + _unroll("%t3_l#0", tiles_m)
    body += amx_tile_contractions()
    if bufferize:
        body += matmul.bufferize_and_lower_vectors(amx=True)
    return transform_module(body)


def amx_tile_contractions() -> str:
    """Transform ops after the tile products are vectorized: the functions' multiply-add tiles -> vector.contract
    over the bf16 operands (matmul_vnni.contractions_of_vectorized_tiles), unit leading dims cast away (the
    shapes convert-vector-to-amx takes), empty tensors eliminated for bufferization."""
    return contractions_of_vectorized_tiles() + f"""    transform.apply_patterns to %fe {{
      transform.apply_patterns.vector.cast_away_vector_leading_one_dim
      transform.apply_patterns.canonicalization
    }} : {ANY}
    transform.apply_cse to %fe : {ANY}
    transform.bufferization.eliminate_empty_tensors %fe : {ANY}
"""


def default_params(m: int, n: int, k: int, threads: int = 1, l2_bytes: int = 1 << 20, **_machine) -> dict:
    """Parameters for an M x N x K bf16 contraction (N a multiple of 16; all divisors), split into up to
    `threads` tasks (M x N chunks: whole tiles; the blocks are a task's)."""
    threads_m, threads_n = 1, 1
    for t in range(threads, 1, -1):
        if (n // 16) % t == 0:
            threads_n = t
            break
        if m % t == 0 and m // t >= 16:
            threads_m = t
            break
    m, n = m // threads_m, n // threads_n
    tile_m = matmul.block_divisor(m, TILE_ROWS, 1)
    tile_n = matmul.block_divisor(n, 16, 1)
    pairs = k // 2
    tile_k = matmul.block_divisor(pairs, TILE_PAIRS, 1)
    # 2 x 2 result tiles per K step where the dims hold them (all eight tile registers)
    tiles_m = 2 if m % (2 * tile_m) == 0 else 1
    tiles_n = 2 if n % (2 * tile_n) == 0 else 1
    block_k = 2 * matmul.block_divisor(pairs, 512, tile_k)
    block_n = matmul.block_divisor(n, 256, tiles_n * tile_n)
    # the B block (bf16) within half of L2
    while block_n * block_k * 2 > l2_bytes // 2 and (block_k // 2) % (2 * tile_k) == 0:
        block_k //= 2
    block_m = matmul.block_divisor(m, 64, tiles_m * tile_m)
    # the pack reads whole 128-byte rows of B where the columns allow (on the 16-core Xeon, 16 threads:
    # the pack 0.56 -> 0.20 ms for 64 columns a step against 16; 4 K pairs keep the step at 8 rows)
    pack_n = next(c for c in (64, 32, 16, 8, 4, 2, 1) if n % c == 0)
    pack_tile = next(r for r in ((4, 2, 1) if pack_n >= 64 else (8, 4, 2, 1)) if pairs % r == 0)
    return dict(block_m=block_m, block_n=block_n, block_k=block_k, tile_m=tile_m, tile_n=tile_n, tile_k=tile_k,
                tiles_m=tiles_m, tiles_n=tiles_n, pack_tile=pack_tile, pack_n=pack_n, threads_m=threads_m,
                threads_n=threads_n)
