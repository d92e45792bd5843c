"""Transform-dialect schedules for ``linalg.matmul`` on NVIDIA GPUs (the cuda target).

Every generator returns a transform module (MLIR text) that bufferizes the module (function
boundaries, identity layouts; a no-op on memrefs), maps every ``linalg.matmul`` to a
``gpu.launch`` (blocks x threads) and leaves the rest to ``pipeline: cuda-lower``.
Shapes must be static and divisible by the tiles (no remainder handling), except for matmul_wgmma.

``matmul_simt``  (any float type, CUDA cores): one block computes a block_m x block_n tile of C,
    each thread a thread_m x thread_n sub-tile, K walked in steps of block_k; the thread tile is
    vectorized (vector.contract -> FMAs) with its C tile held in registers across the K loop.
    Threads per block = (block_m / thread_m) * (block_n / thread_n) <= 1024.

``matmul_simt_smem``  (f32, CUDA cores, sm_80+): blocks of block_m x block_n walk K in steps of block_k;
    the A (block_m x block_k) and B (block_k x block_n) tiles of each step go to shared memory
    (``structured.pad`` + ``bufferize_to_allocation`` into #gpu.address_space<workgroup>) as 16-byte
    ``cp.async`` pieces spread over the block's threads, multibuffered ``stages`` deep and pipelined
    (``nvgpu.pipeline_shared_memory_copies`` depth stages-1, one barrier per step after the wait, as in
    matmul_mma_smem's pipelined form). Each thread keeps a thread_m x thread_n C tile in registers across
    K and, per thread_k slice, reads its A (thread_m x thread_k) and B (thread_k x thread_n) fragments
    with 128-bit shared loads (annotated alignment = 16) into FMAs (vector.contract -> outer products);
    the slice loop is unrolled (the pipeliner takes no region in the K loop body). Every thread must
    copy whole 16-byte pieces: block tiles whose piece count is not a multiple of the thread count are
    refused; stages x (A + B tiles) <= 48 KiB. Threads per block = (block_m / thread_m) * (block_n / thread_n).

``matmul_mma``  (f16 x f16 -> f16, tensor cores, sm_80+): blocks of block_m x block_n, warps of
    warp_m x warp_n; K walked in steps of 16 * unroll_k; the warp's contraction is vectorized, its
    C tile hoisted out of the K loop (held in registers), unrolled to 16x8x16 pieces
    (``unroll_vectors_subgroup_mma``) and turned into ``mma.sync.m16n8k16`` by
    ``convert-vector-to-gpu{use-nvgpu}``. A and B come straight from global memory (per-lane
    16-bit loads; no shared-memory staging, no ldmatrix, no cp.async pipeline): far from cuBLAS.
    Threads per block = 32 * (block_m / warp_m) * (block_n / warp_n).

``matmul_mma_smem``  (f16 x f16 -> f16, tensor cores, sm_80+): blocks of block_m x block_n walk K in
    steps of block_k; each step copies the A (block_m x block_k) and B (block_k x block_n) tiles into
    shared memory (``transform.structured.promote`` into #gpu.address_space<workgroup>, allocas
    turned into 128-byte aligned ``memref.global``s by ``transform.memref.alloca_to_global``), each
    thread moving vector_bits-wide pieces with ``cp.async`` (``transform.nvgpu.create_async_groups``,
    L1 bypassed), a barrier, then warps of warp_m x warp_n read their operands with ``ldmatrix``
    (convert-vector-to-gpu on shared-memory reads) into m16n8k16 ``mma.sync``; the warp's C tile
    stays in registers across the K loop (``hoist_redundant_vector_transfers`` after folding the
    subviews into the transfers). stages=1: one buffer, the copies of step k+1 do not overlap the mma
    of step k. stages=S>1: typed shared buffers (``structured.pad`` + ``bufferize_to_allocation``)
    multibuffered S deep (``memref.multibuffer``), ``nvgpu.pipeline_shared_memory_copies`` depth S-1
    (prologue: steps 0..S-2; loop: ``cp.async.wait_group S-2``, barrier, mma on slot k mod S, the
    predicated copies of step k+S-1), XOR-swizzled shared memory (``nvgpu-optimize-shared-memory``),
    C read and written as 32-bit pairs (its vector<2xf16> loads/stores annotated alignment = 4).
    The loop body is built without map_nested_forall_to_threads' barriers (a barrier before a copy
    makes the pipeliner assert in MLIR 22.1.8); its one barrier is inserted after the marked wait by
    ``lh-barrier-after-async-wait`` in cuda-lower. Shared memory S x (A + B tiles) <= 48 KiB.
    Threads per block = 32 * (block_m / warp_m) * (block_n / warp_n).

``matmul_tf32``  (f32 x f32 -> f32 on the tensor cores as TF32, sm_80+; opt-in: the selector never
    picks it): matmul_mma_smem's pipelined form with f32 tiles (16-byte cp.async pieces of 4 floats),
    unrolled to m16n8k8 and lowered to ``mma.sync ... .tf32`` (the nvgpu.mma.sync ops annotated
    ``tf32Enabled``). Products are rounded to TF32 (10-bit mantissa), sums stay f32.
    Shared memory stages x (A + B tiles) <= 48 KiB. Threads per block = 32 * (block_m / warp_m) * (block_n / warp_n).

``matmul_wgmma``  (f16/bf16 operands -> f16, bf16 or f32, f32 accumulation, Hopper sm_90a): configuration only. The
    schedule marks the matmul with ``lh.wgmma = {block_m, block_n, stages, consumers, specialize}``;
    after bufferization, ``rewrite: wgmma-kernels`` in cuda-lower replaces it by a generated kernel
    (workbench/worker/cuda/wgmma_matmul.py): TMA loads of 128-byte-swizzled A (block_m x 64) and B
    (64 x 64 boxes) tiles into ``stages`` shared-memory slots (dynamic shared memory, up to 227 KiB),
    mbarrier full/empty handshakes, ``consumers`` warpgroups each issuing ``wgmma`` on
    block_m / consumers rows with one group in flight, and, with specialize=1, an extra producer
    warpgroup that only issues TMA (setmaxnreg 40 / 232). A and B f16 or bf16; any M, N and K that are
    multiples of 8 (edge tiles: TMA zero fill, clamped C loads, predicated stores); also
    linalg.batch_matmul (K a multiple of 64). Block ids are rasterized in groups of 16 tile rows.
    Threads per block = 128 * (consumers + specialize). `op`: only the op tagged lh.op = op.
    fp8 and tf32 (`tf32=1`: f32 operands read as TF32) are read with B K-major only: the payload's
    x @ w^T as it is, a B stored K x N copied transposed into a new buffer first (one more kernel).
    `acc=f16` (opt-in, f16 operands only; the selector never picks it): the wgmma accumulate in f16
    (.f16.f16.f16), half the accumulator registers, so a consumer warpgroup takes 128 x 256
    (block_m=128 block_n=256, or block_m=256 block_n=256 consumers=2); sums rounded to f16 at every
    k16 step (wgmma_matmul.f16_accumulation_error_bound(K) bounds the error).

``matmul_simt_tiles``  (f32, CUDA cores, any M, N, K, one op of several): configuration only, like
    matmul_wgmma: marks the op ``lh.simt_tiles = {...}``; after bufferization ``rewrite: simt-kernels``
    replaces it by a generated kernel (workbench/worker/cuda/simt_matmul.py): tile_m x tile_n blocks of
    thread_m x thread_n register tiles, A and B tiles of tile_k staged in shared memory with 4-wide
    loads, edges guarded; linalg.batch_matmul with the batch as the grid's z. Threads per block =
    (tile_m / thread_m) * (tile_n / thread_n).

``select(m, n, k, dtype, chip, in_dtype, sms)`` -> (generator, parameters) for a shape on a compute
capability with `sms` multiprocessors (the cuda target's selector; wgmma needs sm_90);
``select_batch(b, m, n, k, ...)`` the same for linalg.batch_matmul (wgmma, matmul_simt for f32, else
None; BATCH_OPERANDS: the operand types it schedules).
"""

from workbench.common.transform_text import transform_module

#: the functions a session may call as generators (`file.py[gen=NAME]`); nothing else here is callable
GENERATORS = ["matmul_simt", "matmul_mma", "matmul_mma_smem", "matmul_simt_smem", "matmul_wgmma", "matmul_tf32",
              "matmul_simt_tiles"]

PAYLOAD_OP = "linalg.matmul"
PARAMS = {
    # matmul_wgmma (the only generator with `consumers`) covers edge tiles: no divisibility there
    "block_m": {"divides": "M", "when": "consumers < 1", "min": 1, "max": 256, "help": "rows of C per thread block"},
    "block_n": {"divides": "N", "when": "consumers < 1", "min": 1, "max": 256, "help": "columns of C per thread block"},
    "block_k": {"divides": "K", "min": 1, "max": 256, "help": "K step: SIMT thread tile loop; mma_smem shared-memory tile (multiple of 16)"},
    "thread_m": {"divides": "block_m", "min": 1, "max": 16, "help": "rows of C per thread (SIMT)"},
    "thread_n": {"divides": "block_n", "min": 1, "max": 16, "help": "columns of C per thread (SIMT)"},
    "warp_m": {"divides": "block_m", "min": 16, "max": 128, "help": "rows of C per warp (multiple of 16, mma)"},
    "warp_n": {"divides": "block_n", "min": 8, "max": 128, "help": "columns of C per warp (multiple of 8, mma)"},
    "vectorize": {"help": "SIMT: vectorize the thread tile and keep C in registers across K"},
    "unroll_k": {"min": 1, "max": 32, "help": "mma: K step = 16 * unroll_k per loop iteration (more loads in flight)"},
    "vector_bits": {"min": 16, "max": 128, "help": "mma_smem: bits per cp.async global->shared copy (16-byte = 128)"},
    "thread_k": {"divides": "block_k", "min": 1, "max": 64, "help": "simt_smem: K step of the thread's register tile (A thread_m x thread_k, B thread_k x thread_n read from shared memory)"},
    "stages": {"min": 1, "max": 8, "help": "mma_smem: shared-memory buffers per operand; > 1 = cp.async software pipeline (stages-1 K steps in flight); matmul_simt_tiles: 1 or 2 shared tile pairs (2: one barrier per K step)"},
    "consumers": {"choices": [1, 2], "help": "wgmma: warpgroups computing the block (each takes block_m / consumers rows)"},
    "specialize": {"choices": [0, 1], "help": "wgmma: 1 = an extra producer warpgroup issues the TMA loads (warp specialization)"},
    "tf32": {"choices": [0, 1], "help": "wgmma: 1 = f32 operands read as tf32 by the tensor cores (K-major B; a K x N B is copied transposed first)"},
    # (tune leaves it alone, `space` of one: f16 accumulation trades accuracy, asked for by name only)
    "acc": {"choices": ["f32", "f16"], "space": ["f32"], "help": "wgmma: accumulator type; f16 (f16 operands only: wgmma .f16.f16.f16) takes half the registers, so 128x256 tiles fit one consumer warpgroup and 256x256 two, at f16's accuracy (error grows with K); opt-in, also for tune (acc=[f32,f16])"},
    "tile_m": {"min": 4, "max": 256, "help": "matmul_simt_tiles: rows of C per block (any M: edges guarded)"},
    "tile_n": {"min": 4, "max": 256, "help": "matmul_simt_tiles: columns of C per block (any N)"},
    "tile_k": {"min": 4, "max": 64, "help": "matmul_simt_tiles: K step staged in shared memory (any K; multiple of 4)"},
    "a_pad": {"min": 0, "max": 32, "help": "matmul_simt_tiles: floats of padding per row of the transposed A tile in shared memory (multiple of 4; spreads its stores over the banks)"},
    "op": {"help": "matmul_wgmma, matmul_simt, matmul_simt_tiles: schedule only the linalg op tagged lh.op = op (empty: every matmul)"},
    "fill": {"help": "matmul_simt: the id of the linalg.fill that zeroes the matmul's output: done in the same kernel, tile by tile (empty: none)"},
    "epilogue": {"help": "matmul_simt: the id of the elementwise op over the matmul's M x N result (bias, relu, ...): done in the same kernel, tile by tile (empty: none)"},
    "batch": {"help": "matmul_simt: the op is a linalg.batch_matmul (one batch per block z)"},
}
CONSTRAINTS = [
    "(block_m / thread_m) * (block_n / thread_n) <= 1024",
]

# every schedule here starts by bufferizing the whole module (consuming %root): %b is the result
_BUFFERIZE_ROOT = """    %b = transform.bufferization.one_shot_bufferize %root {bufferize_function_boundaries = true,
        function_boundary_type_conversion = 1 : i32} : (!transform.any_op) -> !transform.any_op
"""


def _module(body: str) -> str:
    """The transform module: bufferize %root, then `body` (which works on %b)."""
    return transform_module(_BUFFERIZE_ROOT + body, consumed=True)


def _check(cond: bool, msg: str) -> None:
    if not cond:
        raise ValueError(msg)


def _only_op(op: str) -> str:
    """The `attributes{lh.op = ...}` clause of a match that takes only op `op` (one of several ops of
    the payload: per-op selection; the tiled copies of the op keep the attribute); "" for every op."""
    _check(all(ch.isalnum() or ch == "_" for ch in op), f"op={op!r}: an op id such as matmul_1")
    return f' attributes{{lh.op = "{op}"}}' if op else ""


def _contractions_to_fmas(handle: str) -> str:
    """vector.contract in the function `handle` -> outer products -> FMAs, transfers unrolled to 1-D."""
    return "\n".join([
        f"    transform.apply_patterns to %{handle} {{",
        '      transform.apply_patterns.vector.lower_contraction lowering_strategy = "outerproduct"',
        "      transform.apply_patterns.vector.transfer_permutation_patterns",
        "      transform.apply_patterns.vector.lower_transpose",
        "      transform.apply_patterns.canonicalization",
        "    } : !transform.any_op",
        f"    transform.apply_patterns to %{handle} {{",
        "      transform.apply_patterns.vector.lower_outerproduct",
        '      transform.apply_patterns.vector.lower_multi_reduction lowering_strategy = "innerparallel"',
        "      transform.apply_patterns.vector.transfer_to_scf max_transfer_rank = 1 full_unroll = true",
        "      transform.apply_patterns.vector.lower_transfer max_transfer_rank = 1",
        "      transform.apply_patterns.vector.lower_broadcast",
        "      transform.apply_patterns.vector.lower_shape_cast",
        "      transform.apply_patterns.canonicalization",
        "    } : !transform.any_op",
        ""])


def _simt_foralls(block_m: int, block_n: int, block_k: int, thread_m: int, thread_n: int, only: str,
                  fill: str, epilogue: str, batch: bool = False) -> str:
    """matmul_simt's tiling: block and thread foralls and the K loop of each thread's tile; `%fb` is the
    block forall. `fill` / `epilogue` (op ids): the linalg.fill that zeroes the matmul's output and the
    elementwise op that reads it (a bias add + relu) are tiled the same way and their foralls fused
    with the matmul's (transform.loop.fuse_sibling: same bounds, same mapping), so one kernel zeroes,
    accumulates and applies the epilogue tile by tile where three kernels ran one after the other (the
    three ops' tiles are the same M x N block: each thread depends on its own tile only). `batch`: the
    op is a linalg.batch_matmul, one batch per block z (the ops' leading dim)."""
    z = "#gpu.block<z>, " if batch else ""
    blocks = f"(mapping = [{z}#gpu.block<y>, #gpu.block<x>]) : (!transform.any_op) -> (!transform.any_op, !transform.any_op)"
    threads = "(mapping = [#gpu.thread<y>, #gpu.thread<x>]) : (!transform.any_op) -> (!transform.any_op, !transform.any_op)"
    fused = "(!transform.any_op, !transform.any_op) -> !transform.any_op"
    lead = "1, " if batch else ""     # block tiles: one batch each
    skip = "0, " if batch else ""     # thread tiles and the K loop: within the block's batch
    ops = [("mm", "linalg.batch_matmul" if batch else "linalg.matmul", only)]
    if fill:
        ops.insert(0, ("fill", "linalg.fill", _only_op(fill)))
    if epilogue:
        ops.append(("epi", "linalg.generic", _only_op(epilogue)))

    def match(name: str, kind: str, attrs: str, within: str) -> str:
        return f'    %{name} = transform.structured.match ops{{["{kind}"]}}{attrs} in %{within} : (!transform.any_op) -> !transform.any_op'

    def fuse_in_order(level: str) -> list[str]:
        """Fuse the foralls %<op>_<level> in `ops` order (fuse_sibling puts `target` first) into %<level>."""
        out, last = [], f"{ops[0][0]}_{level}"
        for name, _, _ in ops[1:]:
            out.append(f"    %{name}_{level}_fused = transform.loop.fuse_sibling %{last} into %{name}_{level} : {fused}")
            last = f"{name}_{level}_fused"
        out.append(f"    %{level} = transform.cast %{last} : !transform.any_op to !transform.any_op")
        return out

    lines = []
    for name, kind, attrs in ops:
        if name != "mm":   # (%mm: matched by the caller)
            lines.append(match(name, kind, attrs, "b"))
        lines.append(f"    %{name}_blk, %{name}_fb = transform.structured.tile_using_forall %{name} tile_sizes [{lead}{block_m}, {block_n}] {blocks}")
    lines += fuse_in_order("fb")
    # handles inside the fused foralls were consumed with them: match the ops again inside
    for name, kind, attrs in ops:
        lines += [match(f"{name}_in", kind, attrs, "fb"),
                  f"    %{name}_thr, %{name}_ft = transform.structured.tile_using_forall %{name}_in tile_sizes [{skip}{thread_m}, {thread_n}] {threads}"]
    lines += [f"    %kt, %kl = transform.structured.tile_using_for %mm_thr tile_sizes [{skip}0, 0, {block_k}]",
              "        : (!transform.any_op) -> (!transform.any_op, !transform.any_op)"]
    lines += fuse_in_order("ft")
    return "\n".join(lines)


def matmul_simt(block_m: int = 64, block_n: int = 64, block_k: int = 16, thread_m: int = 4, thread_n: int = 4,
                vectorize: bool = True, op: str = "", fill: str = "", epilogue: str = "", batch: bool = False) -> str:
    for name, v in (("block_m", block_m), ("block_n", block_n), ("block_k", block_k), ("thread_m", thread_m),
                    ("thread_n", thread_n)):
        _check(v >= 1, f"{name} must be >= 1")
    _check(block_m % thread_m == 0 and block_n % thread_n == 0, "thread tile must divide the block tile")
    tx, ty = block_n // thread_n, block_m // thread_m
    _check(tx * ty <= 1024, f"{tx * ty} threads per block (max 1024)")
    only = _only_op(op)
    kind = "linalg.batch_matmul" if batch else "linalg.matmul"
    vec = ""
    if vectorize:
        vec = f"""
    %f2 = transform.structured.match ops{{["func.func"]}} in %b : (!transform.any_op) -> !transform.any_op
    %mms = transform.structured.match ops{{["{kind}"]}}{only} in %b : (!transform.any_op) -> !transform.any_op
    transform.structured.vectorize %mms {{create_named_contraction}} : !transform.any_op
    transform.apply_patterns to %f2 {{
      transform.apply_patterns.canonicalization
    }} : !transform.any_op
    %f4 = transform.structured.hoist_redundant_vector_transfers %f2 : (!transform.any_op) -> !transform.any_op
{_contractions_to_fmas('f4')}"""
    return _module(f"""    %mm = transform.structured.match ops{{["{kind}"]}}{only} in %b : (!transform.any_op) -> !transform.any_op
{_simt_foralls(block_m, block_n, block_k, thread_m, thread_n, only, fill, epilogue, batch)}
    %f = transform.get_parent_op %fb {{op_name = "func.func", deduplicate}} : (!transform.any_op) -> !transform.any_op
    %gl = transform.gpu.map_forall_to_blocks %f generate_gpu_launch : (!transform.any_op) -> !transform.any_op
    %m2 = transform.gpu.map_nested_forall_to_threads %gl block_dims = [{tx}, {ty}, 1]
        : (!transform.any_op) -> !transform.any_op
{vec}""")


def matmul_mma(block_m: int = 128, block_n: int = 128, warp_m: int = 64, warp_n: int = 32, unroll_k: int = 1) -> str:
    _check(warp_m % 16 == 0 and warp_n % 8 == 0, "warp_m must be a multiple of 16, warp_n of 8 (m16n8k16)")
    _check(block_m % warp_m == 0 and block_n % warp_n == 0, "the warp tile must divide the block tile")
    _check(unroll_k >= 1, "unroll_k must be >= 1")
    wx, wy = block_n // warp_n, block_m // warp_m
    _check(32 * wx * wy <= 1024, f"{wx * wy} warps per block (max 32)")
    return _module(f"""    %mm = transform.structured.match ops{{["linalg.matmul"]}} in %b : (!transform.any_op) -> !transform.any_op
    %blk, %fb = transform.structured.tile_using_forall %mm tile_sizes [{block_m}, {block_n}]
        (mapping = [#gpu.block<y>, #gpu.block<x>]) : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
    %wrp, %fw = transform.structured.tile_using_forall %blk tile_sizes [{warp_m}, {warp_n}]
        (mapping = [#gpu.warp<y>, #gpu.warp<x>]) : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
    %kt, %kl = transform.structured.tile_using_for %wrp tile_sizes [0, 0, {16 * unroll_k}]
        : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
    %f = transform.get_parent_op %fb {{op_name = "func.func", deduplicate}} : (!transform.any_op) -> !transform.any_op
    %gl = transform.gpu.map_forall_to_blocks %f generate_gpu_launch : (!transform.any_op) -> !transform.any_op
    %m2 = transform.gpu.map_nested_forall_to_threads %gl block_dims = [{32 * wx}, {wy}, 1]
        : (!transform.any_op) -> !transform.any_op
    %pieces = transform.structured.match ops{{["linalg.matmul"]}} in %b : (!transform.any_op) -> !transform.any_op
    transform.structured.vectorize %pieces {{create_named_contraction}} : !transform.any_op
    %f2 = transform.structured.match ops{{["func.func"]}} in %b : (!transform.any_op) -> !transform.any_op
    transform.apply_patterns to %f2 {{
      transform.apply_patterns.canonicalization
    }} : !transform.any_op
    %f3 = transform.structured.hoist_redundant_vector_transfers %f2 : (!transform.any_op) -> !transform.any_op
    transform.apply_patterns to %f3 {{
      transform.apply_patterns.gpu.unroll_vectors_subgroup_mma [16, 8, 16]
      transform.apply_patterns.vector.cast_away_vector_leading_one_dim
      transform.apply_patterns.canonicalization
    }} : !transform.any_op
    %launches = transform.structured.match ops{{["gpu.launch"]}} in %b : (!transform.any_op) -> !transform.any_op
    %kf = transform.get_parent_op %launches {{op_name = "func.func", deduplicate}} : (!transform.any_op) -> !transform.any_op
    %f4 = transform.apply_registered_pass "convert-vector-to-gpu" with options = {{"use-nvgpu" = true}} to %kf
        : (!transform.any_op) -> !transform.any_op
""")


# Pieces of transform text shared by matmul_mma_smem and its pipelined form (_mma_smem_pipelined).

def _warp_tiles_and_thread_copies(warp_m: int, warp_n: int, ra: int, ca: int, rb: int, cb: int) -> str:
    """Warp tiles of the matmul; the A and B copies into shared memory spread over the block's threads."""
    return f"""    %mm2 = transform.structured.match ops{{["linalg.matmul"]}} in %b : (!transform.any_op) -> !transform.any_op
    %wrp, %fw = transform.structured.tile_using_forall %mm2 tile_sizes [{warp_m}, {warp_n}]
        (mapping = [#gpu.warp<y>, #gpu.warp<x>]) : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
    %cps = transform.structured.match ops{{["linalg.copy"]}} in %b : (!transform.any_op) -> !transform.any_op
    %ca, %cb = transform.split_handle %cps : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
    %cat, %caf = transform.structured.tile_using_forall %ca tile_sizes [{ra}, {ca}]
        (mapping = [#gpu.thread<linear_dim_1>, #gpu.thread<linear_dim_0>]) : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
    %cbt, %cbf = transform.structured.tile_using_forall %cb tile_sizes [{rb}, {cb}]
        (mapping = [#gpu.thread<linear_dim_1>, #gpu.thread<linear_dim_0>]) : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
"""


# Vectorize the matmul and copies, fold the alias ops, unroll to the m16n8k16 mma.sync shape.
_VECTORIZE_TO_MMA = """    %pieces = transform.structured.match ops{["linalg.matmul", "linalg.copy"]} in %b : (!transform.any_op) -> !transform.any_op
    transform.structured.vectorize %pieces {create_named_contraction} : !transform.any_op
    %f2 = transform.structured.match ops{["func.func"]} in %b : (!transform.any_op) -> !transform.any_op
    transform.apply_patterns to %f2 {
      transform.apply_patterns.canonicalization
    } : !transform.any_op
    transform.apply_patterns to %f2 {
      transform.apply_patterns.memref.fold_memref_alias_ops
      transform.apply_patterns.canonicalization
    } : !transform.any_op
    transform.apply_patterns to %f2 {
      transform.apply_patterns.gpu.unroll_vectors_subgroup_mma [16, 8, 16]
      transform.apply_patterns.vector.cast_away_vector_leading_one_dim
      transform.apply_patterns.canonicalization
    } : !transform.any_op
    transform.apply_cse to %f2 : !transform.any_op
"""

# In the kernel function: vector ops -> nvgpu (mma.sync, ldmatrix), copies -> cp.async groups.
_KERNEL_TO_NVGPU = """    %launches = transform.structured.match ops{["gpu.launch"]} in %b : (!transform.any_op) -> !transform.any_op
    %kf = transform.get_parent_op %launches {op_name = "func.func", deduplicate} : (!transform.any_op) -> !transform.any_op
    %f4 = transform.apply_registered_pass "convert-vector-to-gpu" with options = {"use-nvgpu" = true} to %kf
        : (!transform.any_op) -> !transform.any_op
    transform.apply_patterns to %f4 {
      transform.apply_patterns.vector.transfer_to_scf max_transfer_rank = 1 full_unroll = true
      transform.apply_patterns.vector.lower_transfer max_transfer_rank = 1
      transform.apply_patterns.canonicalization
    } : !transform.any_op
    %f5 = transform.nvgpu.create_async_groups %f4 {bypass_l1} : (!transform.any_op) -> !transform.any_op
"""


def _shared_allocas_to_globals(handle: str) -> str:
    """Shared-memory allocas -> 128-byte aligned memref.globals (alloca_to_global drops the alignment)."""
    return f"""    %allocas = transform.structured.match ops{{["memref.alloca"]}} in %{handle} : (!transform.any_op) -> !transform.op<"memref.alloca">
    %gets, %globals = transform.memref.alloca_to_global %allocas
        : (!transform.op<"memref.alloca">) -> (!transform.any_op, !transform.any_op)
    %align = transform.param.constant 128 : i64 -> !transform.any_param
    transform.annotate %globals "alignment" = %align : !transform.any_op, !transform.any_param
"""


def _thread_copies(block_m: int, block_n: int, block_k: int, threads: int, vec: int,
                   piece: str) -> tuple[tuple[int, int], tuple[int, int]]:
    """How the block's threads copy the A (block_m x block_k) and B (block_k x block_n) tiles in
    `vec`-element pieces: per tile (rows, vec) per thread, threads side by side along a row and the
    rest stacked; ValueError where the pieces (`piece` names their width) do not tile the threads."""
    copies = []
    for name, rows, cols in (("a", block_m, block_k), ("b", block_k, block_n)):
        chunks = rows * cols // vec
        _check(chunks % threads == 0, f"{name} tile {rows}x{cols}: {chunks} {piece} pieces, "
                                      f"not a multiple of {threads} threads")
        col_chunks = cols // vec
        _check(threads % col_chunks == 0 and rows % (threads // col_chunks) == 0,
               f"{name} tile {rows}x{cols}: {col_chunks} pieces per row do not tile {threads} threads")
        copies.append((rows // (threads // col_chunks), vec))
    return copies[0], copies[1]


def matmul_mma_smem(block_m: int = 128, block_n: int = 128, block_k: int = 32, warp_m: int = 64, warp_n: int = 64,
                    vector_bits: int = 128, stages: int = 1) -> str:
    _check(warp_m % 16 == 0 and warp_n % 8 == 0, "warp_m must be a multiple of 16, warp_n of 8 (m16n8k16)")
    _check(block_k % 16 == 0, "block_k must be a multiple of 16")
    _check(block_m % warp_m == 0 and block_n % warp_n == 0, "the warp tile must divide the block tile")
    wx, wy = block_n // warp_n, block_m // warp_m
    threads = 32 * wx * wy
    _check(threads <= 1024, f"{wx * wy} warps per block (max 32)")
    vec = vector_bits // 16
    _check(vec >= 1 and block_k % vec == 0 and block_n % vec == 0, "vector width must divide block_k and block_n")
    (ra, ca), (rb, cb) = _thread_copies(block_m, block_n, block_k, threads, vec, f"{vector_bits}-bit")
    _check(1 <= stages <= 8, "stages must be 1..8")
    if stages > 1:
        smem = stages * (block_m * block_k + block_k * block_n) * 2
        _check(smem <= 48 * 1024, f"{stages} stages of {block_m}x{block_k} + {block_k}x{block_n} f16 tiles: {smem} bytes "
                                  f"of shared memory (static limit 48 KiB)")
        return _mma_smem_pipelined(block_m, block_n, block_k, warp_m, warp_n, ra, ca, rb, cb, stages)
    return _module(f"""    %mm = transform.structured.match ops{{["linalg.matmul"]}} in %b : (!transform.any_op) -> !transform.any_op
    %blk, %fb = transform.structured.tile_using_forall %mm tile_sizes [{block_m}, {block_n}]
        (mapping = [#gpu.block<y>, #gpu.block<x>]) : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
    %kt, %kl = transform.structured.tile_using_for %blk tile_sizes [0, 0, {block_k}]
        : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
    %p = transform.structured.promote %kt {{operands_to_promote = [0, 1], use_alloca, alignment = 128,
        memory_space = #gpu.address_space<workgroup>}} : (!transform.any_op) -> !transform.any_op
    %f0 = transform.structured.match ops{{["func.func"]}} in %b : (!transform.any_op) -> !transform.any_op
    transform.apply_patterns to %f0 {{
      transform.apply_patterns.canonicalization
    }} : !transform.any_op
{_warp_tiles_and_thread_copies(warp_m, warp_n, ra, ca, rb, cb)}    %f = transform.get_parent_op %fb {{op_name = "func.func", deduplicate}} : (!transform.any_op) -> !transform.any_op
    %gl = transform.gpu.map_forall_to_blocks %f generate_gpu_launch : (!transform.any_op) -> !transform.any_op
    %m2 = transform.gpu.map_nested_forall_to_threads %gl block_dims = [{32 * wx}, {wy}, 1]
        : (!transform.any_op) -> !transform.any_op
    %f1 = transform.structured.match ops{{["func.func"]}} in %b : (!transform.any_op) -> !transform.any_op
    transform.apply_patterns to %f1 {{
      transform.apply_patterns.canonicalization
    }} : !transform.any_op
{_VECTORIZE_TO_MMA}    %f3 = transform.structured.hoist_redundant_vector_transfers %f2 : (!transform.any_op) -> !transform.any_op
{_KERNEL_TO_NVGPU}{_shared_allocas_to_globals("f5")}""")


def _staged_tiles(block_m: int, block_n: int, block_k: int, elem: str) -> str:
    """Block tiles (forall over blocks) walking K in block_k steps, the A and B tiles of each step
    padded into typed #gpu.address_space<workgroup> buffers filled by linalg.copy (`structured.pad`
    + `bufferize_to_allocation`: typed allocs that memref.multibuffer accepts), then bufferization.
    Leaves %kt/%kl (the K loop), %fb (the block forall) and %b (the bufferized module)."""
    zero = f"0.0 : {elem}"
    return f"""    %mm0 = transform.structured.match ops{{["linalg.matmul"]}} in %root : (!transform.any_op) -> !transform.any_op
    %blk, %fb = transform.structured.tile_using_forall %mm0 tile_sizes [{block_m}, {block_n}]
        (mapping = [#gpu.block<y>, #gpu.block<x>]) : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
    %kt, %kl = transform.structured.tile_using_for %blk tile_sizes [0, 0, {block_k}]
        : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
    %padded, %pad, %cpb = transform.structured.pad %kt {{padding_values = [{zero}, {zero}, {zero}],
        padding_dimensions = [2], nofold_flags = [1, 1, 0], copy_back_op = "none"}}
        : (!transform.any_op) -> (!transform.any_op, !transform.any_op, !transform.any_op)
    %pa, %pb = transform.split_handle %pad : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
    %ba, %na = transform.structured.bufferize_to_allocation %pa {{memory_space = #gpu.address_space<workgroup>, memcpy_op = "linalg.copy"}} : !transform.any_op
    %bb, %nb = transform.structured.bufferize_to_allocation %pb {{memory_space = #gpu.address_space<workgroup>, memcpy_op = "linalg.copy"}} : !transform.any_op
    %b = transform.bufferization.one_shot_bufferize %root {{bufferize_function_boundaries = true,
        function_boundary_type_conversion = 1 : i32}} : (!transform.any_op) -> !transform.any_op
    %f0 = transform.structured.match ops{{["func.func"]}} in %b : (!transform.any_op) -> !transform.any_op
    transform.apply_patterns to %f0 {{
      transform.apply_patterns.canonicalization
    }} : !transform.any_op
"""


def _launch_and_multibuffer(tx: int, ty: int, stages: int) -> str:
    """gpu.launch of tx x ty threads without map_nested_forall_to_threads' barriers (a barrier before
    a copy makes the pipeliner assert in MLIR 22.1.8), the shared allocs hoisted out of the K loop
    and multibuffered `stages` deep."""
    return f"""    %f = transform.structured.match ops{{["func.func"]}} in %b : (!transform.any_op) -> !transform.any_op
    %gl = transform.gpu.map_forall_to_blocks %f generate_gpu_launch : (!transform.any_op) -> !transform.any_op
    %m2 = transform.gpu.map_nested_forall_to_threads %gl block_dims = [{tx}, {ty}, 1] sync_after_distribute = false
        : (!transform.any_op) -> !transform.any_op
    %f1 = transform.structured.match ops{{["func.func"]}} in %b : (!transform.any_op) -> !transform.any_op
    transform.apply_patterns to %f1 {{
      transform.apply_patterns.canonicalization
    }} : !transform.any_op
    %hf = transform.apply_registered_pass "buffer-loop-hoisting" to %f1 : (!transform.any_op) -> !transform.any_op
    %al = transform.structured.match ops{{["memref.alloc"]}} in %hf : (!transform.any_op) -> !transform.op<"memref.alloc">
    %mb = transform.memref.multibuffer %al {{factor = {stages}, skip_analysis}} : (!transform.op<"memref.alloc">) -> !transform.any_op
"""


def _annotate_waits(stages: int) -> str:
    """The cp.async waits in %f5: step k's group is complete with stages-2 newer ones in flight
    (`numGroups`, kept by the pipeliner), and a barrier follows each (`lh-barrier-after-async-wait`)."""
    return f"""    %waits = transform.structured.match ops{{["nvgpu.device_async_wait"]}} in %f5 : (!transform.any_op) -> !transform.any_op
    %ng = transform.param.constant {stages - 2} : i32 -> !transform.any_param
    transform.annotate %waits "numGroups" = %ng : !transform.any_op, !transform.any_param
    transform.annotate %waits "lh.barrier_after" : !transform.any_op
"""


def _pipelined_copies_tail(stages: int) -> str:
    """The end of the cp.async-pipelined schedules (on %f5): wait annotations, the K loop's shared-memory
    copies software-pipelined `stages` deep, small allocations to the stack, shared buffers to globals."""
    return f"""{_annotate_waits(stages)}    %acp = transform.structured.match ops{{["nvgpu.device_async_copy"]}} in %f5 : (!transform.any_op) -> !transform.any_op
    %kloop = transform.get_parent_op %acp {{op_name = "scf.for", deduplicate}} : (!transform.any_op) -> !transform.op<"scf.for">
    %pl = transform.nvgpu.pipeline_shared_memory_copies failures(propagate) %kloop {{depth = {stages - 1}}}
        : (!transform.op<"scf.for">) -> !transform.any_op
    %f6 = transform.apply_registered_pass "promote-buffers-to-stack" with options = {{"max-alloc-size-in-bytes" = 1000000 : i64}}
        to %f5 : (!transform.any_op) -> !transform.any_op
{_shared_allocas_to_globals("f6")}"""


def _mma_smem_pipelined(block_m, block_n, block_k, warp_m, warp_n, ra, ca, rb, cb, stages) -> str:
    """matmul_mma_smem with `stages` shared-memory buffers and a cp.async software pipeline."""
    wx, wy = block_n // warp_n, block_m // warp_m
    return transform_module(f"""{_staged_tiles(block_m, block_n, block_k, 'f16')}{_warp_tiles_and_thread_copies(warp_m, warp_n, ra, ca, rb, cb)}{_launch_and_multibuffer(32 * wx, wy, stages)}{_VECTORIZE_TO_MMA}    transform.apply_patterns to %f2 {{
      transform.apply_patterns.canonicalization
    }} : !transform.any_op
    %f3 = transform.structured.hoist_redundant_vector_transfers %f2 : (!transform.any_op) -> !transform.any_op
{_KERNEL_TO_NVGPU}    %cio = transform.structured.match ops{{["vector.load", "vector.store"]}} in %f5 : (!transform.any_op) -> !transform.any_op
    %cal = transform.param.constant 4 : i64 -> !transform.any_param
    transform.annotate %cio "alignment" = %cal : !transform.any_op, !transform.any_param
{_annotate_waits(stages)}    %loops = transform.structured.match ops{{["scf.for"]}} in %f5 : (!transform.any_op) -> !transform.op<"scf.for">
    %pl = transform.nvgpu.pipeline_shared_memory_copies failures(propagate) %loops {{depth = {stages - 1}}}
        : (!transform.op<"scf.for">) -> !transform.any_op
    %f5s = transform.apply_registered_pass "nvgpu-optimize-shared-memory" to %f5 : (!transform.any_op) -> !transform.any_op
    %f6 = transform.apply_registered_pass "promote-buffers-to-stack" with options = {{"max-alloc-size-in-bytes" = 1000000 : i64}}
        to %f5s : (!transform.any_op) -> !transform.any_op
{_shared_allocas_to_globals("f6")}""", consumed=True)


def matmul_tf32(block_m: int = 64, block_n: int = 64, block_k: int = 32, warp_m: int = 32, warp_n: int = 32,
                stages: int = 3) -> str:
    """f32 operands on the tensor cores as TF32 (opt-in: 10-bit mantissa products, f32 accumulation):
    matmul_mma_smem's pipelined form with f32 tiles (16-byte cp.async pieces of 4 floats) unrolled to
    m16n8k8 `mma.sync ... .tf32` (convert-vector-to-gpu use-nvgpu; 32-bit operands are read with
    plain shared loads, ldmatrix is for 16-bit ones)."""
    _check(warp_m % 16 == 0 and warp_n % 8 == 0, "warp_m must be a multiple of 16, warp_n of 8 (m16n8k8)")
    _check(block_k % 8 == 0, "block_k must be a multiple of 8")
    _check(block_m % warp_m == 0 and block_n % warp_n == 0, "the warp tile must divide the block tile")
    wx, wy = block_n // warp_n, block_m // warp_m
    threads = 32 * wx * wy
    _check(threads <= 1024, f"{wx * wy} warps per block (max 32)")
    _check(2 <= stages <= 8, "stages must be 2..8")
    smem = stages * (block_m * block_k + block_k * block_n) * 4
    _check(smem <= 48 * 1024, f"{stages} stages of {block_m}x{block_k} + {block_k}x{block_n} f32 tiles: {smem} bytes "
                              f"of shared memory (static limit 48 KiB)")
    (ra, ca), (rb, cb) = _thread_copies(block_m, block_n, block_k, threads, 4, "16-byte")
    return transform_module(f"""{_staged_tiles(block_m, block_n, block_k, 'f32')}{_warp_tiles_and_thread_copies(warp_m, warp_n, ra, ca, rb, cb)}{_launch_and_multibuffer(32 * wx, wy, stages)}{_VECTORIZE_TO_MMA.replace("[16, 8, 16]", "[16, 8, 8]")}    transform.apply_patterns to %f2 {{
      transform.apply_patterns.canonicalization
    }} : !transform.any_op
    %f3 = transform.structured.hoist_redundant_vector_transfers %f2 : (!transform.any_op) -> !transform.any_op
{_KERNEL_TO_NVGPU}    %tmma = transform.structured.match ops{{["nvgpu.mma.sync"]}} in %f5 : (!transform.any_op) -> !transform.any_op
    transform.annotate %tmma "tf32Enabled" : !transform.any_op
    %cio = transform.structured.match ops{{["vector.load", "vector.store"]}} in %f5 : (!transform.any_op) -> !transform.any_op
    %cal = transform.param.constant 8 : i64 -> !transform.any_param
    transform.annotate %cio "alignment" = %cal : !transform.any_op, !transform.any_param
{_pipelined_copies_tail(stages)}""", consumed=True)


def matmul_simt_smem(block_m: int = 128, block_n: int = 128, block_k: int = 8, thread_m: int = 8, thread_n: int = 8,
                     thread_k: int = 4, stages: int = 3) -> str:
    """f32 CUDA-core matmul with A and B tiles staged in shared memory by a cp.async pipeline."""
    for name, v in (("block_m", block_m), ("block_n", block_n), ("block_k", block_k), ("thread_m", thread_m),
                    ("thread_n", thread_n), ("thread_k", thread_k)):
        _check(v >= 1, f"{name} must be >= 1")
    _check(block_m % thread_m == 0 and block_n % thread_n == 0, "thread tile must divide the block tile")
    _check(block_k % thread_k == 0, "thread_k must divide block_k")
    _check(thread_n % 4 == 0 and thread_k % 4 == 0 and block_k % 4 == 0,
           "thread_n, thread_k and block_k must be multiples of 4 (16-byte shared-memory reads and copies)")
    tx, ty = block_n // thread_n, block_m // thread_m
    threads = tx * ty
    _check(threads <= 1024, f"{threads} threads per block (max 1024)")
    _check(2 <= stages <= 8, "stages must be 2..8 (the copies of step k+stages-1 are issued during step k)")
    smem = stages * (block_m * block_k + block_k * block_n) * 4
    _check(smem <= 48 * 1024, f"{stages} stages of {block_m}x{block_k} + {block_k}x{block_n} f32 tiles: {smem} bytes "
                              f"of shared memory (static limit 48 KiB)")
    (ra, ca), (rb, cb) = _thread_copies(block_m, block_n, block_k, threads, 4, "16-byte")  # f32 x 4
    inner_tile = inner_unroll = ""
    if thread_k < block_k:  # the thread's K steps: a loop, unrolled after vectorization (the pipeliner
        # takes no op with a region in the K loop body)
        inner_tile = f"""    %ikt, %ikl = transform.structured.tile_using_for %thr tile_sizes [0, 0, {thread_k}]
        : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
"""
        inner_unroll = f"""    %ctr = transform.structured.match ops{{["vector.contract"]}} in %f3 : (!transform.any_op) -> !transform.any_op
    %ikl2 = transform.get_parent_op %ctr {{op_name = "scf.for", deduplicate}} : (!transform.any_op) -> !transform.op<"scf.for">
    transform.loop.unroll %ikl2 {{factor = {block_k // thread_k}}} : !transform.op<"scf.for">
"""
    return transform_module(f"""{_staged_tiles(block_m, block_n, block_k, 'f32')}    %mm2 = transform.structured.match ops{{["linalg.matmul"]}} in %b : (!transform.any_op) -> !transform.any_op
    %thr, %ft = transform.structured.tile_using_forall %mm2 tile_sizes [{thread_m}, {thread_n}]
        (mapping = [#gpu.thread<y>, #gpu.thread<x>]) : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
{inner_tile}    %cps = transform.structured.match ops{{["linalg.copy"]}} in %b : (!transform.any_op) -> !transform.any_op
    %ca, %cb = transform.split_handle %cps : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
    %cat, %caf = transform.structured.tile_using_forall %ca tile_sizes [{ra}, {ca}]
        (mapping = [#gpu.thread<linear_dim_1>, #gpu.thread<linear_dim_0>]) : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
    %cbt, %cbf = transform.structured.tile_using_forall %cb tile_sizes [{rb}, {cb}]
        (mapping = [#gpu.thread<linear_dim_1>, #gpu.thread<linear_dim_0>]) : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
{_launch_and_multibuffer(tx, ty, stages)}    %pieces = transform.structured.match ops{{["linalg.matmul", "linalg.copy"]}} in %b : (!transform.any_op) -> !transform.any_op
    transform.structured.vectorize %pieces {{create_named_contraction}} : !transform.any_op
    %f2 = transform.structured.match ops{{["func.func"]}} in %b : (!transform.any_op) -> !transform.any_op
    transform.apply_patterns to %f2 {{
      transform.apply_patterns.canonicalization
    }} : !transform.any_op
    transform.apply_patterns to %f2 {{
      transform.apply_patterns.memref.fold_memref_alias_ops
      transform.apply_patterns.canonicalization
    }} : !transform.any_op
    transform.apply_cse to %f2 : !transform.any_op
    transform.apply_patterns to %f2 {{
      transform.apply_patterns.canonicalization
    }} : !transform.any_op
    %f3 = transform.structured.hoist_redundant_vector_transfers %f2 : (!transform.any_op) -> !transform.any_op
{inner_unroll}{_contractions_to_fmas('f3')}    %launches = transform.structured.match ops{{["gpu.launch"]}} in %b : (!transform.any_op) -> !transform.any_op
    %kf = transform.get_parent_op %launches {{op_name = "func.func", deduplicate}} : (!transform.any_op) -> !transform.any_op
    %f5 = transform.nvgpu.create_async_groups %kf {{bypass_l1}} : (!transform.any_op) -> !transform.any_op
    transform.apply_patterns to %f5 {{
      transform.apply_patterns.canonicalization
    }} : !transform.any_op
    %vio = transform.structured.match ops{{["vector.load", "vector.store"]}} in %f5 : (!transform.any_op) -> !transform.any_op
    %v16 = transform.param.constant 16 : i64 -> !transform.any_param
    transform.annotate %vio "alignment" = %v16 : !transform.any_op, !transform.any_param
{_pipelined_copies_tail(stages)}""", consumed=True)


def matmul_wgmma(block_m: int = 128, block_n: int = 128, stages: int = 4, consumers: int = 1,
                 specialize: int = 0, tf32: int = 0, op: str = "", acc: str = "f32") -> str:
    from workbench.worker.cuda.wgmma_matmul import MARK, KernelConfigError, check_config

    try:  # the tile checks that do not need the payload's shape (that is checked by the rewrite)
        check_config(block_m, block_n, 64, block_m, block_n, stages, consumers, specialize, acc=acc)
    except KernelConfigError as e:
        raise ValueError(str(e))
    _check(not (tf32 and acc == "f16"), "acc=f16 needs f16 operands: tf32=1 reads f32 operands as tf32")
    only = _only_op(op)
    config = (f"{{block_m = {block_m} : i64, block_n = {block_n} : i64, stages = {stages} : i64, "
              f"consumers = {consumers} : i64, specialize = {specialize} : i64"
              + (f", tf32 = {tf32} : i64" if tf32 else "") + (f', acc = "{acc}"' if acc != "f32" else "") + "}")
    return transform_module(f"""    %mm = transform.structured.match ops{{["linalg.matmul", "linalg.batch_matmul"]}}{only} in %root : (!transform.any_op) -> !transform.any_op
    %config = transform.param.constant {config} -> !transform.any_param
    transform.annotate %mm "{MARK}" = %config : !transform.any_op, !transform.any_param
""")


def matmul_simt_tiles(tile_m: int = 128, tile_n: int = 128, tile_k: int = 8, thread_m: int = 8, thread_n: int = 8,
                      op: str = "", a_pad: int = 0, stages: int = 1) -> str:
    from workbench.worker.cuda.simt_matmul import MARK, KernelConfigError, check_config

    block_m, block_n, block_k = tile_m, tile_n, tile_k
    try:
        check_config(block_m, block_n, block_k, thread_m, thread_n, a_pad, stages)
    except KernelConfigError as e:
        raise ValueError(str(e))
    config = (f"{{block_m = {block_m} : i64, block_n = {block_n} : i64, block_k = {block_k} : i64, "
              f"thread_m = {thread_m} : i64, thread_n = {thread_n} : i64"
              + (f", a_pad = {a_pad} : i64" if a_pad else "") + (f", stages = {stages} : i64" if stages != 1 else "") + "}")
    return transform_module(f"""    %mm = transform.structured.match ops{{["linalg.matmul", "linalg.batch_matmul"]}}{_only_op(op)} in %root : (!transform.any_op) -> !transform.any_op
    %config = transform.param.constant {config} -> !transform.any_param
    transform.annotate %mm "{MARK}" = %config : !transform.any_op, !transform.any_param
""")


def _largest_divisor(n: int, candidates) -> int:
    for c in candidates:
        if n % c == 0:
            return c
    return 1


def _sm(chip: str) -> int:
    """sm_90a -> 90 (0 if not an sm_NN name)."""
    digits = "".join(ch for ch in chip[3:] if ch.isdigit()) if chip.startswith("sm_") else ""
    return int(digits) if digits else 0


# wgmma tile configurations (block_m, block_n, consumers, specialize) and their throughput per SM
# relative to the best, measured on the H100 at 4096^3 f16 (bench/gpu_matmul.py): 128x256 with two
# consumer warpgroups 601-638 TFLOP/s, 128x128 one consumer 519; the smaller tiles are estimates
# (half the work per K step for the same TMA and barrier overhead), refined by measurement.
WGMMA_TILES = (
    (128, 256, 2, 1, 1.0),
    (128, 128, 1, 1, 0.82),
    (64, 256, 1, 0, 0.72),
    (64, 128, 1, 0, 0.6),
)
WGMMA_OPERANDS = ("f16", "bf16")
# fp8 operands: wgmma reads them only with B K-major (the payload's x @ w^T), 64 rows per consumer
# warpgroup. Measured on the H100 (bench/gpu_matmul.py, e4m3 -> bf16 against torch._scaled_mm):
# 128x256 two consumers 4 stages 0.85x at 4096^3, 0.98x at 8192^3, 0.80x at 2048x4096x1024; with a
# producer warpgroup 0.77 / 0.97 / 0.73; 128x128 two consumers 6 stages 0.50 / 0.53 / 0.63
FP8_OPERANDS = ("f8E4M3FN", "f8E5M2")
KMAJOR_TILES = (
    (128, 256, 2, 0, 1.0),
    (64, 256, 1, 0, 0.72),
    (64, 128, 1, 0, 0.6),
)
WGMMA_RESULTS = ("f16", "bf16", "f32")


def _wgmma_stages(block_m: int, block_n: int, k: int) -> int:
    """As many stages as fit 227 KiB of shared memory, at most 6 and no more than the K steps."""
    per_stage = (block_m + block_n) * 64 * 2
    fit = (227 * 1024 - 1024) // per_stage
    return max(2, min(6, fit, -(-k // 64)))


#: shared memory of one multiprocessor (sm_90), for the blocks that fit on one at once
SHARED_PER_SM = 228 * 1024


def _blocks_per_sm(block_m: int, block_n: int, stages: int, consumers: int) -> int:
    """How many blocks of a wgmma tile fit one multiprocessor's shared memory (their pipeline slots or
    their f32 epilogue tile, whichever is larger, as wgmma_matmul.check_config sizes them)."""
    from workbench.worker.cuda.wgmma_matmul import check_config

    shared = check_config(block_m, block_n, 64, block_m, block_n, stages, consumers, 0)["shared"]
    return SHARED_PER_SM // shared


def wgmma_config(m: int, n: int, k: int, sms: int = 132, batch: int = 1, tiles=WGMMA_TILES) -> dict:
    """The wgmma tile for an m x n x k matmul on `sms` multiprocessors: the best estimated rate,
    i.e. relative tile throughput x wave efficiency (tiles / (waves x SMs)) x the useful part of
    the edge tiles (m n / covered area). With one or two K steps there is hardly a main loop to
    pipeline: a block's time is its loads and its write-back, which overlap another block's only
    where two fit a multiprocessor, so tiles that allow two count double (attention's Q K^T, K = 64,
    16 x 1024 x 1024 on the H200: 128x256 blocks, one per SM, 0.033 ms; 64x256, 64x128 or 128x128
    two consumers 0.028 ms)."""
    best, best_score = None, -1.0
    for block_m, block_n, consumers, specialize, rate in tiles:
        gm, gn = -(-m // block_m), -(-n // block_n)
        tiles = gm * gn * batch
        waves = -(-tiles // sms)
        score = rate * tiles / (waves * sms) * (m * n) / (gm * block_m * gn * block_n)
        if -(-k // 64) <= 2:
            score *= min(2, _blocks_per_sm(block_m, block_n, _wgmma_stages(block_m, block_n, k), consumers)) / 2
        if score > best_score + 1e-9:
            best_score = score
            # the producer warpgroup pays off only over long K: measured on the H100, 128x256 two
            # consumers at 4096x4096x512 0.061 ms without it / 0.073 with it, 2048x4096x1024 0.047 /
            # 0.050; at 4096^3 (two runs, same machine) f16 0.205 / 0.212 ms, bf16 0.194 / 0.204 and
            # 0.197 / 0.204, f16 + bias + relu 0.211 / 0.226; at 8192^3 (e4m3) 0.776 / 0.748
            best = {"block_m": block_m, "block_n": block_n, "stages": _wgmma_stages(block_m, block_n, k),
                    "consumers": consumers, "specialize": specialize if k > 4096 else 0}
    return best


#: the operand element types select_batch has a schedule for
BATCH_OPERANDS = WGMMA_OPERANDS + ("f32",)


def select_batch(b: int, m: int, n: int, k: int, dtype: str = "f32", chip: str = "sm_90", in_dtype: str = "",
                 sms: int = 132, layout: str = "normal") -> tuple[str, dict] | None:
    """A schedule for a b x (m x n x k) linalg.batch_matmul, or None (left to the naive mapping): the
    wgmma kernel with the batch as the grid's z (K a multiple of 64: see wgmma_matmul.kernel_text;
    with B transposed, `layout="transpose_b"`, read K-major: 64 rows per consumer warpgroup); f32:
    matmul_simt with the batch as the grid's z."""
    in_dtype = in_dtype or dtype
    kmajor = layout == "transpose_b"
    if layout not in ("normal", "transpose_b", ""):
        return None
    if (in_dtype in WGMMA_OPERANDS and dtype in WGMMA_RESULTS and chip.startswith("sm_90")
            and n % 8 == 0 and (k % 8 == 0 if kmajor else k % 64 == 0)):
        return "matmul_wgmma", wgmma_config(m, n, k, sms, batch=b, tiles=KMAJOR_TILES if kmajor else WGMMA_TILES)
    if in_dtype == "f32" and dtype == "f32" and layout in ("normal", ""):
        if b * m * n * k >= SIMT_TILES_MIN_WORK:   # the generated kernel, the batch as the grid's z
            return "matmul_simt_tiles", simt_tiles_params(m, n, sms, b)
        # matmul_simt's tiles with the batch as the grid's z (tiles sized for the blocks of all batches)
        return "matmul_simt", {**_simt_params(m, n, k, max(1, sms // b)), "batch": True}
    return None


#: generators that can schedule one op of several (`op` parameter); the others bufferize and map the
#: whole module around the one matmul they expect
PER_OP = ("matmul_wgmma", "matmul_simt", "matmul_simt_tiles")

#: multiply-adds from which an f32 matmul takes the generated shared-memory kernel (matmul_simt_tiles)
#: where matmul_simt_smem does not apply (several matmuls, dims no multiple of 64, batches); below,
#: matmul_simt, which also does the zeroing fill and the elementwise epilogue in its kernel. Measured
#: on the H200: 1000^3 0.227 ms (matmul_simt, 50 x 40 tiles) -> 0.077 (128 x 64 tiles); 2048^3 1.457 ->
#: 0.482 (matmul_simt_smem 0.458); examples/mlp.mlir's 128 x 512 layers (2^25) 0.056 ms with
#: matmul_simt's fused epilogues, 0.081 with 32 x 32 tiles
SIMT_TILES_MIN_WORK = 1 << 28


def simt_tiles_params(m: int, n: int, sms: int = 132, batch: int = 1) -> dict:
    """matmul_simt_tiles' configuration: 128 x 64 blocks of 8 x 4 register tiles, K steps of 16, two shared
    tile pairs (one barrier per K step) and A's tile rows padded by 4 floats (its column-wise stores
    spread over the banks), where they give at least half the multiprocessors a block, else 64 x 64 of
    4 x 4 (four times the blocks). Measured on the H200 (ms, 2048^3 / 1000^3): 128x64 k16 8x4 0.482 /
    0.077, k8 0.493 / 0.075; 128x128 8x8 k8 0.513 / 0.117, k32 0.482 / 0.133; 64x64 4x4 k16 0.590 /
    0.081; 64x128 4x8 0.710 / 0.104. Then, same call, vs cuBLAS without TF32 (0.361 / 0.058): 128x64 k16
    8x4 0.485 / 0.079, with a_pad=4 0.458 / 0.075, with a_pad=4 stages=2 0.439 / 0.068 (0.82x / 0.86x);
    64x64 4x4 with both 0.551 / 0.086 (not taken there)."""
    if -(-m // 128) * -(-n // 64) * batch >= sms // 2:
        return {"tile_m": 128, "tile_n": 64, "tile_k": 16, "thread_m": 8, "thread_n": 4, "a_pad": 4, "stages": 2}
    return {"tile_m": 64, "tile_n": 64, "tile_k": 16, "thread_m": 4, "thread_n": 4}


def _f32_fallback(m: int, n: int, k: int, sms: int, batch: int = 1) -> tuple[str, dict]:
    """An f32 matmul no whole-module schedule takes: the generated tiled kernel when large, else matmul_simt."""
    if batch * m * n * k >= SIMT_TILES_MIN_WORK:
        return "matmul_simt_tiles", simt_tiles_params(m, n, sms, batch)
    return "matmul_simt", _simt_params(m, n, k, sms)


def select_one_of_many(m: int, n: int, k: int, dtype: str = "f32", chip: str = "sm_90", in_dtype: str = "",
                       sms: int = 132, layout: str = "normal") -> tuple[str, dict]:
    """`select` for one matmul of a payload with several: a generator of PER_OP (matmul_simt where
    `select` would pick a whole-module schedule)."""
    gen, params = select(m, n, k, dtype, chip, in_dtype, sms, layout)
    if gen in PER_OP:
        return gen, params
    if (in_dtype or dtype) == "f32" and dtype == "f32":
        return _f32_fallback(m, n, k, sms)
    return "matmul_simt", _simt_params(m, n, k, sms)


#: matmul_simt's block tile caps, largest first (each tile the largest divisor of M and N under its cap)
SIMT_TILES = ((64, 64), (32, 64), (64, 32), (32, 32), (16, 32), (32, 16), (16, 16))
#: floats of A and B a thread reads per K step ((thread_m + thread_n) x block_k) before its fragments
#: spill: measured on the H200 (1000^3 f32), 50x40 blocks of 5x4 threads: block_k 40 (360 floats)
#: 0.229 ms; 40x40 4x4: block_k 20 / 40 / 100 / 200 0.335 / 0.279 / 0.472 / 3.55 ms
SIMT_FRAGMENT_FLOATS = 360


def _divisors(n: int, cap: int) -> list[int]:
    """The divisors of n up to cap, largest first."""
    return [d for d in range(min(n, cap), 0, -1) if n % d == 0]


def _simt_params(m: int, n: int, k: int, sms: int = 132) -> dict:
    """matmul_simt's tiles for an m x n x k matmul: the largest block tile that still gives every
    multiprocessor a block, else the one that gives the most blocks (any divisors of M and N, not only
    powers of two: 1000 = 50 x 20 = 40 x 25; N's a multiple of 4 where one fits, for 4-wide thread
    rows); thread tiles of up to 5 x 4 in blocks of 32 and more, 2 x 1 below (a small matmul is latency
    bound: more threads, each with a shorter chain); the deepest K step whose A and B fragments stay in
    registers. Measured on the H200: examples/mlp.mlir (128 x 512 layers, 16 x 16 blocks) 0.112 ms
    with 2 x 2 threads and block_k 32, 0.071 with block_k 64, 0.057 with 2 x 1 threads and block_k 64
    (4 x 4 threads and block_k 64: 0.24, spilled); 1000^3 0.607 ms with 8 x 8 x 8 blocks of 2 x 2
    threads (the power-of-two divisors), 0.229 with 50 x 40 x 40 blocks of 5 x 4."""
    best = None
    for cap_m, cap_n in SIMT_TILES:
        bm = _divisors(m, cap_m)[0]
        bn_all = _divisors(n, cap_n)
        bn = next((d for d in bn_all if d % 4 == 0 and 2 * d >= bn_all[0]), bn_all[0])
        blocks = -(-m // bm) * -(-n // bn)
        if best is None or blocks > best[2]:
            best = (bm, bn, blocks)
        if blocks >= sms:
            break
    bm, bn, _ = best
    if bm >= 32 and bn >= 32:
        tm = _divisors(bm, 5)[0]
        tn = next(d for d in (4, 2, 1) if bn % d == 0)
    else:
        tm, tn = _divisors(bm, 2)[0], 1
    bk = _divisors(k, max(1, min(64, SIMT_FRAGMENT_FLOATS // (tm + tn))))[0]
    return {"block_m": bm, "block_n": bn, "block_k": bk, "thread_m": tm, "thread_n": tn, "vectorize": True}


def select(m: int, n: int, k: int, dtype: str = "f32", chip: str = "sm_90", in_dtype: str = "",
           sms: int = 132, layout: str = "normal") -> tuple[str, dict]:
    """A schedule and its parameters for an m x n x k matmul with a `dtype` result (`in_dtype`
    operands, default the same) on compute capability `chip` with `sms` multiprocessors; `layout`
    "transpose_b" (B stored N x K) takes the K-major wgmma kernel for 16-bit operands too."""
    in_dtype = in_dtype or dtype
    kmajor = ((in_dtype in FP8_OPERANDS and k % 16 == 0)   # fp8: only K-major (the rewrite refuses, saying
              or (layout == "transpose_b" and in_dtype in WGMMA_OPERANDS and k % 8 == 0))  # so, another B)
    if kmajor and dtype in WGMMA_RESULTS and chip.startswith("sm_90") and n % 8 == 0:
        return "matmul_wgmma", wgmma_config(m, n, k, sms, tiles=KMAJOR_TILES)
    if (in_dtype in WGMMA_OPERANDS and dtype in WGMMA_RESULTS and chip.startswith("sm_90")
            and n % 8 == 0 and k % 8 == 0):
        # TMA + wgmma, any M and any N, K multiple of 8 (edge tiles by TMA zero fill and predicated
        # stores). Measured on the H100 (bench/gpu_matmul.py, 4096^3): 128x256 blocks, 2 consumer
        # warpgroups, 4 stages: with a warp-specialized producer 601 / 608 TFLOP/s in two runs, without
        # it 569 / 638 (0.74x-0.83x cuBLAS): equal within the run-to-run spread; 3 stages 513;
        # 128x128 one warpgroup warp-specialized 519; matmul_mma_smem best 289
        return "matmul_wgmma", wgmma_config(m, n, k, sms)
    if dtype == "f16" and m % 128 == 0 and n % 256 == 0 and k % 16 == 0:
        # measured on the H100 (bench/gpu_matmul.py, 4096^3, 32-bit C loads/stores): 128x256x16 blocks
        # of 8 warps of 64x64, 3 stages (36 KiB): 226 TFLOP/s (0.296x cuBLAS), 4 stages 220,
        # 128x128x32 3 stages 213 (same run); 128x256x32 / 256x128x32 2 stages 163 / 168
        return "matmul_mma_smem", {"block_m": 128, "block_n": 256, "block_k": 16, "warp_m": 64, "warp_n": 64,
                                   "stages": 3}
    if dtype == "f16" and m % 128 == 0 and n % 128 == 0 and k % 32 == 0:
        # measured on the H100 (bench/gpu_matmul.py, 4096^3): A/B tiles staged in shared memory by
        # cp.async, ldmatrix, 128x128x32 blocks of 4 warps of 64x64, 3-stage cp.async pipeline with
        # swizzled shared memory: 216 TFLOP/s (0.281x cuBLAS); stages=2 215, one stage 110;
        # 128x128x16 4 stages 194, 128x256x16 4 stages 209; matmul_mma at best 48
        return "matmul_mma_smem", {"block_m": 128, "block_n": 128, "block_k": 32, "warp_m": 64, "warp_n": 64,
                                   "stages": 3}
    if dtype == "f16" and m % 16 == 0 and n % 8 == 0 and k % 16 == 0:
        # measured on the H100 (bench/gpu_matmul.py, 4096^3): 64x64 warp tiles in 128x128 blocks and
        # a deep K step (unroll_k=16: 47 TFLOP/s, 8: 36, 1: 7) win; the kernel is bound by load latency
        bm = _largest_divisor(m, (128, 64, 32, 16))
        bn = _largest_divisor(n, (128, 64, 32, 16, 8))
        wm = _largest_divisor(bm, (64, 32, 16))
        wn = _largest_divisor(bn, (64, 32, 16, 8))
        uk = _largest_divisor(k // 16, (16, 8, 4, 2, 1))
        return "matmul_mma", {"block_m": bm, "block_n": bn, "warp_m": wm, "warp_n": wn, "unroll_k": uk}
    if in_dtype == "f32" and dtype == "f32" and _sm(chip) >= 80 and m % 64 == 0 and n % 64 == 0 and k % 16 == 0:
        # measured on the H100 (bench/gpu_matmul.py, f32 2048^3, cuBLAS without TF32 50 TFLOP/s): A/B in
        # shared memory by cp.async, 8x4 register tiles, 128x64x32 blocks, 2 stages: 36.9 TFLOP/s
        # (0.736x cuBLAS); 64x128x16 8x8 tiles 4 stages 36.2, 128x128x16 8x8 3 stages 35.4-35.8,
        # 64x64x16 4x4 3 stages 30.6; matmul_simt at best 11.9. At 256^3 / 512^3 / 1024^3 64x64x16
        # 4x4 3 stages took 1.18 / 6.5 / 23.3 TFLOP/s against matmul_simt's 0.70 / 3.7 / 10.4 and
        # 128x128 blocks' 0.69 / 3.4 / 15.5 (too few blocks): the large tile only from 256 blocks up
        # From 256 blocks of 128 x 64 up the generated tiled kernel (its two shared tile pairs and padded A
        # rows) is faster: H200, f32 2048^3, same call, alternated twice, 0.438 ms (0.82x cuBLAS without
        # TF32) against this schedule's 128x64x32 8x4 2 stages 0.455-0.456 ms (0.79x)
        if m % 128 == 0 and k % 32 == 0 and (m // 128) * (n // 64) >= 256:
            return "matmul_simt_tiles", simt_tiles_params(m, n, sms)
        return "matmul_simt_smem", {"block_m": 64, "block_n": 64, "block_k": 16, "thread_m": 4, "thread_n": 4,
                                    "thread_k": 4, "stages": 3}
    if in_dtype == "f32" and dtype == "f32":
        return _f32_fallback(m, n, k, sms)
    return "matmul_simt", _simt_params(m, n, k, sms)
