"""Transform-dialect schedule generator for f32 ``linalg.matmul`` on CPU (AVX-512).

``matmul_tiling(...)`` returns, as MLIR text, a transform module
(``module attributes {transform.with_named_sequence} { transform.named_sequence
@__transform_main(...) }``) that is applied with the transform interpreter to a
payload containing one or more ``linalg.matmul`` ops on static tensors
(``C += A @ B``, A: MxK, B: KxN, C: MxN, C is the accumulator/init).  All
matmuls of the module are scheduled (matched by op name, not by function).

Schedule (GotoBLAS/BLIS style):
  1. Cache blocking: tile (M, N, K) by (block_m, block_n, block_k) with loop
     order n_c -> k_c -> m_c.
  2. Register blocking: tile the block by (reg_m, reg_n, 0), loop order
     m_r -> n_r (the reg_m x block_k A micro-panel stays in L1, the packed
     block_k x block_n B block streams from L2).
  3. Packing: the micro-kernel operands are padded with ``nofold`` and the pads
     hoisted (``hoist_pad``): B is packed once per (n_c, k_c) into a contiguous
     ``[block_n/reg_n][block_k][reg_n]`` buffer, A once per (n_c, k_c, m_c) into
     ``[block_m/reg_m][reg_m][block_k]``.  Pack copies are tiled into
     ``pack_tile_b x reg_n`` / ``reg_m x pack_tile_a`` chunks and vectorized
     (after bufferization, as ``linalg.copy`` on memrefs).
  4. Micro-kernel: K tiled by reg_k, the reg_m x reg_n x reg_k contraction is
     vectorized to ``vector.contract`` and lowered to outer products -> FMAs
     (reg_k outer products per iteration = K unroll).  The C tile is hoisted
     into registers across the K loop (``hoist_loop_invariant_subsets``).
  5. One-shot bufferization (function boundaries, identity layouts, linalg.copy
     as memcpy op), buffer loop hoisting (the pack buffers are allocated once
     per call; the lowering's promote-buffers-to-stack turns them into stack allocas), hoisting of
     redundant transfers, and lowering of outer products / transfers to 1-D
     vector ops.

Parameters / constraints (shapes must be static):
  block_m | M, block_n | N, block_k | K     (no remainder handling)
  reg_m | block_m, reg_n | block_n, reg_k | block_k
  pack_tile_b | block_k, pack_tile_a | block_k
  reg_n should be a multiple of 16 (one zmm = 16 f32); reg_m * reg_n / 16
  accumulators must fit the 32 zmm registers with room for the B row and
  broadcasts (8x32 -> 16 accumulators is the sweet spot; 4x64 also works).
  Pack buffers block_n*block_k*4 and block_m*block_k*4 bytes must each stay
  <= 1 MiB so that promote-buffers-to-stack turns them into allocas (larger
  buffers would stay heap allocations that are never freed).
``default_params(m, n, k)`` picks divisor-respecting values for a shape.

After the schedule, `apply cpu-matmul-lower` (pipelines/cpu/matmul-lower.yaml) reaches the LLVM
dialect for ExecutionEngine.
"""
from workbench.common.transform_text import transform_module


# Parameter schema (read with `ast` by the workbench; see workbench/steps/params.py).
#: the functions a session may call as generators (`file.py[gen=NAME]`); nothing else here is callable
GENERATORS = ["matmul_tiling"]

PAYLOAD_OP = "linalg.matmul"
PARAMS = {
    "block_m": {"when": "impl == 'codegen'", "divides": "M", "min": 1, "max": 512, "help": "cache block along M (A block rows)"},
    "block_n": {"when": "impl == 'codegen'", "divides": "N", "min": 1, "max": 2048, "help": "cache block along N (packed B block columns)"},
    "block_k": {"when": "impl == 'codegen'", "divides": "K", "min": 1, "max": 1024, "help": "cache block along K"},
    "reg_m": {"when": "impl == 'codegen'", "divides": "block_m", "min": 1, "space": [1, 2, 4, 8], "help": "register tile rows"},
    "reg_n": {"when": "impl == 'codegen'", "divides": "block_n", "min": 1, "space": [8, 16, 32, 64], "help": "register tile columns (16 f32 per zmm)"},
    "reg_k": {"when": "impl == 'codegen'", "divides": "block_k", "min": 1, "space": [1, 2, 4, 8], "help": "outer products per K step (unroll)"},
    "pack_tile_a": {"when": "impl == 'codegen'", "divides": "block_k", "min": 1, "space": [8, 16, 32, 64], "help": "A pack copy chunk along K"},
    "pack_tile_b": {"when": "impl == 'codegen'", "divides": "block_k", "min": 1, "space": [4, 8, 16], "help": "B pack copy chunk along K"},
    "pack_b": {"when": "impl == 'codegen'", "choices": [0, 1],
               "help": "1: B packed into [k][reg_n] panels per cache block; 0: the micro-kernel reads B in place "
                       "(few row tiles read each B element: the pack would cost more than it saves)"},
    "op": {"help": "the id (`inspect`, set by `rewrite tag-ops` as lh.op) of the one matmul to schedule; "
                   "empty: every linalg.matmul"},
    "bufferize": {"help": "end with bufferization and vector lowering (false: stay on tensors, for a "
                          "payload of several ops scheduled one step each; pipelines/cpu/finish.py finishes)"},
    "impl": {"choices": ["codegen", "ukernel"],
             "help": "codegen: this schedule; ukernel: mark the matmul lh.ukernel=\"sgemm\" and bufferize; "
                     "`rewrite: ukernel-calls` (in cpu-matmul-lower) turns it into a BLAS call"},
}
CONSTRAINTS = [
    "impl != 'codegen' or reg_m <= block_m",
    "impl != 'codegen' or reg_n <= block_n",
    "impl != 'codegen' or reg_m * reg_n <= 512",               # accumulators fit the 32 zmm registers
    "impl != 'codegen' or block_n * block_k * 4 <= 1048576",   # packed B block stays a stack alloca
    "impl != 'codegen' or block_m * block_k * 4 <= 1048576",   # packed A block too (<= 1 MiB)
]

# the whole module bufferized (function boundaries, identity layouts, copies as linalg.copy), then
# canonicalized and CSE'd: %b is the module, %f2 its functions (codegen and ukernel paths)
_BUFFERIZE = """    %mod = transform.structured.match ops{["builtin.module"]} in %root : (!transform.any_op) -> !transform.any_op
    %b = transform.bufferization.one_shot_bufferize %mod {bufferize_function_boundaries = true,
        function_boundary_type_conversion = 1 : i32, memcpy_op = "linalg.copy"} : (!transform.any_op) -> !transform.any_op
    %f2 = transform.structured.match ops{["func.func"]} in %b : (!transform.any_op) -> !transform.any_op
    transform.apply_patterns to %f2 {
      transform.apply_patterns.canonicalization
    } : !transform.any_op
    transform.apply_cse to %f2 : !transform.any_op
"""


def match_op(name: str, op: str = "", root: str = "%root") -> str:
    """`transform.structured.match` of the ops named `name` in `root`; only the one whose lh.op
    attribute is `op` when `op` is set (ids: workbench/worker/op_ids.py)."""
    if op and not all(c.isalnum() or c in "_-." for c in op):
        raise ValueError(f"op must be an op id like matmul_0, got {op!r}")
    attrs = f' attributes{{lh.op = "{op}"}}' if op else ""
    return f'transform.structured.match ops{{["{name}"]}}{attrs} in {root} : (!transform.any_op) -> !transform.any_op'


def expect_one(handle: str, op: str) -> str:
    """Transform ops that fail the schedule unless `handle` holds exactly one op (a per-op schedule
    whose `op` id names nothing is an error, not a silent no-op); nothing when `op` is empty."""
    if not op:
        return ""
    name = handle.lstrip("%")
    return (f"    %{name}_count = transform.num_associations {handle} : (!transform.any_op) -> !transform.param<i64>\n"
            f"    %{name}_one = transform.param.constant 1 : i64 -> !transform.param<i64>\n"
            f"    // op {op} must exist (`inspect` lists the ids)\n"
            f"    transform.match.param.cmpi eq %{name}_count, %{name}_one : !transform.param<i64>\n")


def matmul_tiling(block_m: int = 64, block_n: int = 512, block_k: int = 256,
                  reg_m: int = 8, reg_n: int = 32, reg_k: int = 4,
                  pack_tile_a: int = 32, pack_tile_b: int = 8, impl: str = "codegen",
                  op: str = "", bufferize: bool = True, pack_b: int = 1) -> str:
    """Return the transform module (MLIR text) scheduling every linalg.matmul (or the one with id `op`)."""
    if impl == "ukernel":
        return _ukernel_schedule(op, bufferize)
    if impl != "codegen":
        raise ValueError(f"impl must be codegen or ukernel, got {impl!r}")
    for name, v in (("block_m", block_m), ("block_n", block_n), ("block_k", block_k),
                    ("reg_m", reg_m), ("reg_n", reg_n), ("reg_k", reg_k),
                    ("pack_tile_a", pack_tile_a), ("pack_tile_b", pack_tile_b)):
        if not isinstance(v, int) or v <= 0:
            raise ValueError(f"{name} must be a positive int, got {v!r}")
    for inner, outer, a, b in ((reg_m, block_m, "reg_m", "block_m"),
                               (reg_n, block_n, "reg_n", "block_n"),
                               (reg_k, block_k, "reg_k", "block_k"),
                               (pack_tile_a, block_k, "pack_tile_a", "block_k"),
                               (pack_tile_b, block_k, "pack_tile_b", "block_k")):
        if outer % inner:
            raise ValueError(f"{a}={inner} must divide {b}={outer}")
    any_op = "!transform.any_op"
    return transform_module(f"""    %mm = {match_op("linalg.matmul", op)}
{expect_one("%mm", op)}
    // 1. Cache blocking, loop order n_c, k_c, m_c.
    %t1, %l1:3 = transform.structured.tile_using_for %mm tile_sizes [{block_m}, {block_n}, {block_k}] interchange = [1, 2, 0]
        : ({any_op}) -> ({any_op}, {any_op}, {any_op}, {any_op})
    // 2. Register blocking, loop order m_r, n_r.
    %t2, %l2:2 = transform.structured.tile_using_for %t1 tile_sizes [{reg_m}, {reg_n}, 0]
        : ({any_op}) -> ({any_op}, {any_op}, {any_op})

    // 3. Packing of A and B through nofold pads hoisted out of the loops.
    %padded, %pad, %copy = transform.structured.pad %t2 {{
        padding_values = [0.0 : f32, 0.0 : f32, 0.0 : f32], padding_dimensions = [0, 1, 2],
        nofold_flags = [1, {1 if pack_b else 0}, 0], copy_back_op = "none"}}
        : ({any_op}) -> ({any_op}, {any_op}, {any_op})
    %loops = transform.structured.match ops{{["scf.for"]}} in %root : ({any_op}) -> {any_op}
    transform.apply_licm to %loops : {any_op}
    %padA = transform.get_producer_of_operand %padded[0] : ({any_op}) -> {any_op}
    %hA = transform.structured.hoist_pad %padA by 1 loops : ({any_op}) -> {any_op}
{_pack_b(reg_n, pack_tile_b) if pack_b else ""}\
    %cA, %lcA = transform.structured.tile_using_for %hA tile_sizes [0, {pack_tile_a}] : ({any_op}) -> ({any_op}, {any_op})
    transform.structured.vectorize %cA vector_sizes [{reg_m}, {pack_tile_a}] : {any_op}

    // 4. Micro-kernel: K loop of reg_k steps, vector.contract -> outer products.
{micro_kernel_k_loop(f"0, 0, {reg_k}", reg_k < block_k)}
    transform.apply_patterns to %fe {{
      transform.apply_patterns.vector.lower_contraction lowering_strategy = "outerproduct"
      transform.apply_patterns.vector.transfer_permutation_patterns
      transform.apply_patterns.vector.lower_transpose
      transform.apply_patterns.canonicalization
    }} : {any_op}
    transform.bufferization.eliminate_empty_tensors %fe : {any_op}
{bufferize_and_lower_vectors() if bufferize else ""}""")


def _pack_b(reg_n: int, pack_tile_b: int) -> str:
    """Step 3's B pack: the nofold pad of the micro-kernel's B hoisted out of the m loops (one pack per
    (n_c, k_c) block), copied in pack_tile_b x reg_n vectorized chunks."""
    any_op = "!transform.any_op"
    return f"""    %padB = transform.get_producer_of_operand %padded[1] : ({any_op}) -> {any_op}
    %hB = transform.structured.hoist_pad %padB by 3 loops : ({any_op}) -> {any_op}
    %cB, %lcB = transform.structured.tile_using_for %hB tile_sizes [{pack_tile_b}, 0] : ({any_op}) -> ({any_op}, {any_op})
    transform.structured.vectorize %cB vector_sizes [{pack_tile_b}, {reg_n}] : {any_op}
"""


#: B is packed when more register-tile rows than this read each of its elements: with fewer, the pack
#: (a strided read, a write and a read of all of B) costs more than the micro-kernel's strided B rows
#: (16 x 256 x 1024 + bias on this Zen 4: 0.12 -> 0.077 ms unpacked; 64 rows 0.35 -> 0.31 ms, 128 even,
#: 2048 11.4 -> 12.8 ms: packed)
PACK_B_MIN_ROW_TILES = 9


def pack_b_pays(m: int, reg_m: int) -> int:
    """1 when a matmul (or chunk) of `m` rows in register tiles of `reg_m` should pack B, else 0."""
    return int(m >= PACK_B_MIN_ROW_TILES * reg_m)


def micro_kernel_k_loop(tile_sizes: str, several_steps: bool) -> str:
    """Step 4's K loop over the padded micro-kernel contraction `%padded` (tiled by `tile_sizes`),
    vectorized, with the C tile hoisted into registers across the loop; binds %fe (the functions).
    One step (reg_k = block_k) has no loop: canonicalization would fold a one-trip loop away under
    the handle that the hoisting needs, so the contraction is vectorized as it is."""
    any_op = "!transform.any_op"
    tiled = "%padded"
    text = ""
    if several_steps:
        text = (f"    %t3, %l3 = transform.structured.tile_using_for %padded tile_sizes [{tile_sizes}]\n"
                f"        : ({any_op}) -> ({any_op}, {any_op})\n")
        tiled = "%t3"
    text += f"""    transform.structured.vectorize {tiled} {{create_named_contraction}} : {any_op}
    %fe = transform.structured.match ops{{["func.func"]}} in %root : ({any_op}) -> {any_op}
    transform.apply_patterns to %fe {{
      transform.apply_patterns.canonicalization
    }} : {any_op}
    transform.apply_cse to %fe : {any_op}"""
    if several_steps:
        text += f"\n    transform.loop.hoist_loop_invariant_subsets %l3 : {any_op}"
    return text


def bufferize_and_lower_vectors(amx: bool = False) -> str:
    """Step 5 of the schedule (whole module): bufferize, hoist buffers and transfers, lower vector ops.
    `amx`: bf16 contractions of AMX tile shapes become AMX tile operations first (upstream's
    convert-vector-to-amx, on buffers: tile loads and stores straight from them; pipelines/cpu/matmul_amx.py)."""
    any_op = "!transform.any_op"
    funcs = "%f2"
    to_amx = ""
    if amx:
        funcs = "%f2a"
        to_amx = f"""    %f2amx = transform.apply_registered_pass "convert-vector-to-amx" to %f2 : ({any_op}) -> {any_op}
    %f2a = transform.structured.match ops{{["func.func"]}} in %b : ({any_op}) -> {any_op}
"""
    return f"""
    // 5. Bufferization and vector lowering.
{_BUFFERIZE}    transform.apply_patterns to %f2 {{
      transform.apply_patterns.canonicalization
    }} : {any_op}
    transform.bufferization.buffer_loop_hoisting %f2 : {any_op}
{to_amx}    // the packing copies (in loops; a copy outside every loop, e.g. of a padded input, can be a whole
    // tensor: vectorized without sizes it would be one vector of its size)
    %cps = transform.structured.match ops{{["linalg.copy"]}} in %b : ({any_op}) -> {any_op}
    transform.foreach %cps : {any_op} {{
    ^bb0(%cp: {any_op}):
      %in_loop = transform.get_parent_op %cp {{op_name = "scf.for", allow_empty_results}} : ({any_op}) -> {any_op}
      transform.foreach %in_loop : {any_op} {{
      ^bb1(%unused: {any_op}):
        transform.structured.vectorize %cp : {any_op}
      }}
    }}
    %h = transform.structured.hoist_redundant_vector_transfers {funcs} : ({any_op}) -> {any_op}
    transform.apply_patterns to %h {{
      transform.apply_patterns.vector.lower_outerproduct
      transform.apply_patterns.vector.lower_transfer max_transfer_rank = 1
      transform.apply_patterns.vector.lower_broadcast
      transform.apply_patterns.vector.lower_shape_cast
    }} : {any_op}
"""


def _ukernel_schedule(op: str = "", bufferize: bool = True) -> str:
    """impl=ukernel: the configuration decides "this matmul is a library call" (IREE's model).
    No tiling (a BLAS call wants the whole problem, K untiled); bufferize like the codegen path,
    then mark the (now memref) matmuls with lh.ukernel = "sgemm" for the later rewrite."""
    any_op = "!transform.any_op"
    if not bufferize:  # mark the op on tensors (the mark survives the later bufferization)
        return transform_module(f"""    %mm = {match_op("linalg.matmul", op)}
{expect_one("%mm", op)}    %kind = transform.param.constant "sgemm" -> !transform.any_param
    transform.annotate %mm "lh.ukernel" = %kind : {any_op}, !transform.any_param
""")
    return transform_module(f"""    %fe = transform.structured.match ops{{["func.func"]}} in %root : ({any_op}) -> {any_op}
    transform.bufferization.eliminate_empty_tensors %fe : {any_op}
{_BUFFERIZE}    %mm = {match_op("linalg.matmul", op, "%b")}
    %kind = transform.param.constant "sgemm" -> !transform.any_param
    transform.annotate %mm "lh.ukernel" = %kind : {any_op}, !transform.any_param
""")


def block_divisor(n: int, cap: int, step: int) -> int:
    """The largest multiple of `step` <= cap that divides `n` (`step` itself when none does): a block size."""
    return _largest_divisor(n, cap, step) or step


def _largest_divisor(n: int, cap: int, multiple_of: int = 1) -> int:
    """Largest d <= cap with d | n and multiple_of | d (falls back to n's smallest such)."""
    best = 0
    d = multiple_of
    while d <= min(n, cap):
        if n % d == 0:
            best = d
        d += multiple_of
    return best


def register_tile(m: int, n: int, lanes: int, vector_registers: int) -> tuple[int, int]:
    """(reg_m, reg_n): the widest tile of two vectors (else one) whose accumulators, the B row and one
    broadcast fit the SIMD registers: 8x32 on AVX-512 (16 of 32 zmm), 4x16 on AVX2 (8 ymm accumulators +
    2 B vectors + 1 broadcast of 16 ymm; 8x16 would need 19 and spill). Both must divide the dims."""
    for reg_n in (2 * lanes, lanes, 8, 4, 2, 1):
        if n % reg_n:
            continue
        vectors = max(reg_n // lanes, 1)
        for reg_m in (8, 4, 2, 1):
            if m % reg_m == 0 and reg_m * vectors + vectors + 1 <= vector_registers:
                return reg_m, reg_n
    return 1, 1


def default_params(m: int, n: int, k: int, vector_bits: int = 512, l2_bytes: int = 1 << 20,
                   vector_registers: int = 32, l1_bytes: int = 32 << 10) -> dict:
    """Pick matmul_tiling parameters for an MxNxK f32 matmul (all divisors of the dims) on a machine
    (the CPU machine model, workbench/targets/cpu_host.py: SIMD width and register count, caches).

    `vector_bits`/`vector_registers` set the register tile (`register_tile`); `l2_bytes` bounds the
    packed B block (and the 1 MiB stack-alloca limit always applies); `l1_bytes` bounds block_k so that
    the A micro-panel and a B micro-panel stay in L1. AVX-512 (512 bits, 32 registers) gets exactly
    the parameters measured on the AVX-512 CI host (8x32, reg_k=4); AVX2 gets 4x16 with reg_k=8."""
    lanes = max(vector_bits // 32, 1)
    reg_m, reg_n = register_tile(m, n, lanes, vector_registers)
    # Large problems: 128x1024 blocks (A repacked half as often; measured 1-10% faster than 64x512 at
    # 1024^3 and 2048^3 on the AVX-512 CI host, and chosen by `tune` there); smaller ones: 64x512.
    big = m >= 1024 and n >= 1024
    block_m = _largest_divisor(m, 128 if big else 64, reg_m) or reg_m
    block_n = _largest_divisor(n, 1024 if big else 512, reg_n) or reg_n
    block_k = _largest_divisor(k, 256) or k
    # Keep pack buffers <= 1 MiB each (stack allocas) and the B block within L2.
    while block_n * block_k * 4 > min(1 << 20, max(l2_bytes, 1 << 16)) and block_k % 2 == 0:
        block_k //= 2
    # the A micro-panel (reg_m x block_k, reused across the whole B block) within half of L1
    while reg_m * block_k * 4 > l1_bytes // 2 and block_k % 2 == 0:
        block_k //= 2
    # K unrolling: more outer products per step where fewer accumulators hide the FMA latency
    unroll = (8, 4, 2, 1) if vector_registers < 32 else (4, 2, 1)
    reg_k = next(r for r in unroll if block_k % r == 0)
    pack_tile_a = next(r for r in (32, 16, 8, 4, 2, 1) if block_k % r == 0)
    pack_tile_b = next(r for r in (8, 4, 2, 1) if block_k % r == 0)
    return dict(block_m=block_m, block_n=block_n, block_k=block_k,
                reg_m=reg_m, reg_n=reg_n, reg_k=reg_k,
                pack_tile_a=pack_tile_a, pack_tile_b=pack_tile_b, pack_b=pack_b_pays(m, reg_m), impl="codegen")
