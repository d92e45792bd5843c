"""Transform-dialect schedule for bf16 contractions in the VNNI layout (AVX512-BF16's `vdpbf16ps`).

The payload op is what `lh-vnni-contractions` (workbench/worker/cpu/vnni_contractions.py) makes of a bf16
matmul accumulating in f32: a linalg.generic tagged `lh.vnni` over loops (m, no, ni, ko, ki) (a batch
matmul's: (b, m, no, ni, ko, ki), `batch=1`),

    C3[m, no, ni] += ext(A3[m, ko, ki]) * ext(Bp[no, ko, ni, ki])

A3 = A viewed in K pairs (M x K/2 x 2), Bp = B packed by a linalg.pack into column panels of `panel`
(16, 8 or 4) columns, each row of a panel the column pairs (N/panel x K/2 x panel x 2), C3 = C viewed
in panels (M x N/panel x panel).

Schedule:
  1. The pack of B: tiled over its outer dims (`pack_tile` K pairs of one panel per step) and vectorized
     (reads of 2 rows of B (or `panel` rows of W for x @ W.T), the transpose lowered to shuffles, one
     contiguous write: lh-flatten-contiguous-transfers flattens it).
  2. Cache blocking of the contraction, loop order n_c, k_c, m_c (block_n columns = block_n/panel panels,
     block_k K values = block_k/2 pairs), then the register tile (reg_m rows x reg_n columns), then the
     K loop of reg_k pairs per step.
  3. The micro-kernel: unit tiles (one row, one panel, one K pair: a (1, 1, panel, 1, 2) contraction),
     vectorized to vector.contract (the bf16 extensions folded into it) and unrolled; the C tile is
     hoisted into registers across the K loop.
  4. upstream's `x86vector.vector_contract_to_packed_type_dot_product`: each unit contraction becomes a
     broadcast of A's pair (32 bits) and one `x86vector.avx512.dot` (vdpbf16ps) on the panel's 2 x panel
     bf16 values; the B read is one contiguous vector of 2 x panel bf16 (flattened transfer).
  5. Bufferization and vector lowering (pipelines/cpu/matmul.py's step 5); the LLVM lowering
     (convert-vector-to-llvm with enable-x86vector) emits llvm.x86.avx512bf16.dpbf16ps.
"""
from __future__ import annotations

import matmul
from workbench.common.transform_text import transform_module

#: the functions a session may call as generators (`file.py[gen=NAME]`); nothing else here is callable
GENERATORS = ["matmul_vnni_tiling"]

PAYLOAD_OP = "linalg.generic"
PARAMS = {
    "panel": {"choices": [16, 8, 4], "help": "columns per packed B panel (the op's; set by the selector)"},
    "block_m": {"divides": "M", "min": 1, "max": 1024, "help": "cache block along M (A block rows)"},
    "block_n": {"divides": "N", "min": 4, "max": 4096, "help": "cache block along N (a multiple of panel)"},
    "block_k": {"divides": "K", "min": 2, "max": 4096, "help": "cache block along K (even)"},
    "reg_m": {"divides": "block_m", "min": 1, "space": [1, 2, 4, 8], "help": "register tile rows"},
    "reg_n": {"divides": "block_n", "min": 4, "space": [16, 32, 64], "help": "register tile columns (a multiple of panel)"},
    "reg_k": {"divides": "block_k", "min": 1, "space": [1, 2, 4, 8], "help": "K pairs per K-loop step (unroll)"},
    "pack_tile": {"min": 1, "space": [1, 2, 4, 8, 16], "help": "K pairs of one panel packed per step"},
    "threads_m": {"min": 1, "max": 256, "help": "parallel chunks along M (tasks: threads_m x threads_n)"},
    "threads_n": {"min": 1, "max": 256, "help": "parallel chunks along N (whole panels; the pack of B too)"},
    "batch": {"choices": [0, 1], "help": "1: a batch matmul's contraction (a leading batch loop, one batch per step)"},
    "op": {"help": "the id of the one lh.vnni contraction to schedule; empty: every one"},
    "bufferize": {"help": "end with bufferization and vector lowering (false: stay on tensors; "
                          "pipelines/cpu/finish.py finishes)"},
}
CONSTRAINTS = [
    "block_n % panel == 0", "reg_n % panel == 0", "block_k % 2 == 0",
    "reg_m * (reg_n // panel) <= 24",   # accumulators (one vector each) leave registers for B and A
]

ANY = "!transform.any_op"


def _tile(handle: str, sizes: list[int], name: str, interchange: list[int] | None = None) -> str:
    """`%name, %name_l:N = tile_using_for handle` (N: the non-zero sizes)."""
    loops = sum(1 for s in sizes if s)
    inter = f" interchange = {interchange}" if interchange else ""
    results = ", ".join([ANY] * (loops + 1))
    return (f"    %{name}, %{name}_l:{loops} = transform.structured.tile_using_for {handle} tile_sizes {sizes}{inter}\n"
            f"        : ({ANY}) -> ({results})\n") if loops > 1 else (
            f"    %{name}, %{name}_l = transform.structured.tile_using_for {handle} tile_sizes {sizes}{inter}\n"
            f"        : ({ANY}) -> ({results})\n")


def _forall(handle: str, num_threads: list[int], result: str) -> str:
    """`result` = `handle` split into scf.forall chunks (tasks on the async runtime after cpu-lower), or
    `handle` itself when every count is 1 or 0."""
    if all(n <= 1 for n in num_threads):
        return f"    {result} = transform.merge_handles {handle} : {ANY}\n"
    return (f"    {result}, {result}_forall = transform.structured.tile_using_forall {handle} num_threads {num_threads}"
            f" : ({ANY}) -> ({ANY}, {ANY})\n")


def contractions_of_vectorized_tiles() -> str:
    """%fe = the functions, whose vectorized multiply-add tiles (broadcasts, products, multi_reductions over
    widened bf16) become vector.contract ops over the narrow operands (the extensions folded into them)."""
    return f"""    %fe = transform.structured.match ops{{["func.func"]}} in %root : ({ANY}) -> {ANY}
    transform.apply_patterns to %fe {{
      transform.apply_patterns.vector.transfer_permutation_patterns
      transform.apply_patterns.vector.reduction_to_contract
      transform.apply_patterns.vector.fold_arith_extension
      transform.apply_patterns.canonicalization
    }} : {ANY}
"""


def _unroll(loop: str, trips: int) -> str:
    """Fully unroll `loop` (`trips` iterations; nothing for one)."""
    return f"    transform.loop.unroll {loop} {{factor = {trips}}} : {ANY}\n" if trips > 1 else ""


def matmul_vnni_tiling(panel: int = 16, block_m: int = 64, block_n: int = 256, block_k: int = 256,
                       reg_m: int = 4, reg_n: int = 64, reg_k: int = 2, pack_tile: int = 8,
                       batch: int = 0, threads_m: int = 1, threads_n: int = 1, op: str = "",
                       bufferize: bool = True) -> str:
    """The transform module (MLIR text) for the lh.vnni contraction `op` (every one when empty)."""
    for name, v in (("threads_m", threads_m), ("threads_n", threads_n), ("panel", panel), ("block_m", block_m), ("block_n", block_n), ("block_k", block_k),
                    ("reg_m", reg_m), ("reg_n", reg_n), ("reg_k", reg_k), ("pack_tile", pack_tile)):
        if not isinstance(v, int) or v <= 0:
            raise ValueError(f"{name} must be a positive int, got {v!r}")
    if panel not in (16, 8, 4):
        raise ValueError(f"panel must be 16, 8 or 4, got {panel}")
    for name, v in (("block_n", block_n), ("reg_n", reg_n)):
        if v % panel:
            raise ValueError(f"{name}={v} must be a multiple of panel={panel}")
    if block_k % 2:
        raise ValueError(f"block_k={block_k} must be even (K pairs)")
    for inner, outer, a, b in ((reg_m, block_m, "reg_m", "block_m"), (reg_n, block_n, "reg_n", "block_n"),
                               (reg_k, block_k // 2, "reg_k", "block_k/2")):
        if outer % inner:
            raise ValueError(f"{a}={inner} must divide {b}={outer}")
    if batch not in (0, 1):
        raise ValueError(f"batch must be 0 or 1, got {batch!r}")
    lead = [1] * batch                  # the batch loop: one batch per step
    keep = [0] * batch                  # (untiled: already one)
    attrs = f'{{lh.op = "{op}"}}' if op else "{lh.vnni}"
    match = (f"    %g_all = transform.structured.match ops{{[\"linalg.generic\"]}} attributes{attrs} in %root"
             f" : ({ANY}) -> {ANY}\n")
    body = match + matmul.expect_one("%g_all", op)
    # 1. the pack of B (outer dims: panels, K pairs), vectorized per tile (panels split over threads_n)
    body += f"    %pk_all = transform.get_producer_of_operand %g_all[1] : ({ANY}) -> {ANY}\n"
    body += _forall("%pk_all", keep + [threads_n, 0], "%pk")
    body += _tile("%pk", lead + [1, pack_tile], "pkt")
    # tasks: threads_m x threads_n chunks of the contraction (rows x panels)
    body += _forall("%g_all", keep + [threads_m, threads_n, 0, 0, 0], "%g")
    body += f"    transform.structured.vectorize %pkt : {ANY}\n"
    # 2. cache blocks (n_c, k_c, m_c), register tile (m_r, n_r), K loop
    body += _tile("%g", lead + [block_m, block_n // panel, 0, block_k // 2, 0], "t1",
                  list(range(batch)) + [batch + i for i in (1, 3, 0, 2, 4)])
    body += _tile("%t1", keep + [reg_m, reg_n // panel, 0, 0, 0], "t2")
    body += _tile("%t2", keep + [0, 0, 0, reg_k, 0], "t3")
    # 3. unit contractions, vectorized, unrolled
    body += _tile("%t3", keep + [1, 1, 0, 1, 0], "t4")
    body += f"    transform.structured.vectorize %t4 : {ANY}\n"
    for i, trips in ((2, reg_k), (1, reg_n // panel), (0, reg_m)):
        body += _unroll(f"%t4_l#{i}", trips)
    body += contractions_of_vectorized_tiles() + f"""    transform.apply_cse to %fe : {ANY}
    %k_loops = transform.structured.match ops{{["scf.for"]}} in %fe : ({ANY}) -> {ANY}
    transform.foreach %k_loops : {ANY} {{
    ^bb0(%k_loop: {ANY}):
      transform.loop.hoist_loop_invariant_subsets %k_loop : {ANY}
    }}
    transform.apply_patterns to %fe {{
      transform.apply_patterns.x86vector.vector_contract_to_packed_type_dot_product
      transform.apply_patterns.canonicalization
    }} : {ANY}
    transform.bufferization.eliminate_empty_tensors %fe : {ANY}
"""
    if bufferize:
        body += matmul.bufferize_and_lower_vectors()
    return transform_module(body)


def thread_grid(m: int, panels: int, threads: int) -> tuple[int, int]:
    """(threads_m, threads_n): `threads` tasks (fewer where nothing divides), whole panels per task where
    the panels divide (B and its pack split, A read by every task), else rows."""
    for t in range(threads, 1, -1):
        if panels % t == 0:
            return 1, t
        if m % t == 0:
            return t, 1
    return 1, 1


def default_params(m: int, n: int, k: int, panel: int = 16, threads: int = 1, vector_registers: int = 32,
                   l1_bytes: int = 32 << 10, l2_bytes: int = 1 << 20, **_machine) -> dict:
    """Parameters for an M x N x K bf16 contraction with B in panels of `panel` columns (all divisors),
    split into up to `threads` tasks (`thread_grid`; the blocks are a task's)."""
    threads_m, threads_n = thread_grid(m, n // panel, threads)
    m, n = m // threads_m, n // threads_n
    # register tile: up to 4 panels x reg_m rows of accumulators, within the registers (B panel and A
    # broadcasts need a few)
    reg_n = matmul.block_divisor(n, 4 * panel, panel)
    panels = reg_n // panel
    reg_m = next(r for r in (6, 4, 3, 2, 1) if m % r == 0 and r * panels <= max(vector_registers - 8, 1))
    block_k = matmul.block_divisor(k, 512, 2)
    block_n = matmul.block_divisor(n, 256 if n >= 256 else n, reg_n)
    # B block (bf16) within half of L2
    while block_n * block_k * 2 > l2_bytes // 2 and block_k % 4 == 0:
        block_k //= 2
    block_m = matmul.block_divisor(m, 64, reg_m)
    reg_k = next(r for r in (4, 2, 1) if (block_k // 2) % r == 0)
    # (8 panel rows per step: 16 rows of 32 bytes of W, or 16 of B, read whole and transposed by one shuffle)
    pack_tile = next(r for r in (8, 4, 2, 1) if (k // 2) % r == 0)
    return dict(panel=panel, block_m=block_m, block_n=block_n, block_k=block_k, reg_m=reg_m, reg_n=reg_n,
                reg_k=reg_k, pack_tile=pack_tile, threads_m=threads_m, threads_n=threads_n)
