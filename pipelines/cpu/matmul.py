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
  block_m | M, block_n | N, block_k | K     (no remainder handling), except
  main_m > 0: M = main_m + tail_m, block_m | main_m, tail_reg_m | tail_m: the matmul is split
  along M and its last tail_m rows take tail_reg_m-row tiles in one block of their own
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
from workbench.common.transform_text import STEP_REGION_MATCHERS, step_region, transform_module


# Parameter schema (read with `ast` by the workbench; see workbench/steps/params.py).
#: the functions a session may call as generators (`file.py[gen=NAME]`); nothing else here is callable
GENERATORS = ["matmul_tiling"]

PAYLOAD_OP = "linalg.matmul"
PARAMS = {
    "block_m": {"when": "impl == 'codegen' and main_m == 0", "divides": "M", "min": 1, "max": 512, "help": "cache block along M (A block rows)"},
    "block_n": {"when": "impl == 'codegen'", "divides": "N", "min": 1, "max": 2048, "help": "cache block along N (packed B block columns)"},
    "block_k": {"when": "impl == 'codegen'", "divides": "K", "min": 1, "max": 1024, "help": "cache block along K"},
    "reg_m": {"when": "impl == 'codegen'", "divides": "block_m", "min": 1, "space": [1, 2, 4, 6, 8], "help": "register tile rows"},
    "main_m": {"when": "impl == 'codegen'", "min": 0,
               "help": "0: no split; else the first main_m rows (whole block_m blocks) take reg_m-row tiles and the "
                       "last tail_m rows tail_reg_m-row ones (a row tile that divides no block of M: 6 on AVX2)"},
    "tail_m": {"when": "impl == 'codegen'", "min": 0, "help": "rows after main_m (main_m + tail_m = M; 0 with main_m 0)"},
    "tail_reg_m": {"when": "impl == 'codegen'", "divides": "tail_m", "min": 1, "space": [1, 2, 4, 8],
                   "help": "register tile rows of the tail_m rows"},
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
    "impl != 'codegen' or main_m == 0 or (main_m + tail_m == M and main_m % block_m == 0)",
    "impl != 'codegen' or reg_n <= block_n",
    "impl != 'codegen' or reg_m * reg_n <= 512",               # accumulators fit the 32 zmm registers
    "impl != 'codegen' or block_n * block_k * 4 <= 1048576",   # packed B block stays a stack alloca
    "impl != 'codegen' or block_m * block_k * 4 <= 1048576",   # packed A block too (<= 1 MiB)
]

# the whole module bufferized (function boundaries, identity layouts, copies as linalg.copy), then
# canonicalized and CSE'd: %b is the module, %f2 its functions (codegen and ukernel paths)
_BUFFERIZE = """    %mod = transform.structured.match ops{["builtin.module"]} in %root : (!transform.any_op) -> !transform.any_op
    %b = transform.bufferization.one_shot_bufferize %mod {bufferize_function_boundaries = true, allow_return_allocs_from_loops = true,
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


def forall_chunks(handle: str, chunk: str, forall: str, counts: list[int], fill_init: bool = False) -> str:
    """Transform ops splitting the contraction(s) in `handle` into `counts` parallel chunks (one count per
    parallel dim, 0 = not split; tile_using_forall) bound to `chunk` (the chunks' ops) and `forall`.
    `fill_init`: the producer of the output's init (operand 2: a fill) is fused into the forall, so each task
    zeroes its own chunk, in cache and in parallel, instead of one core writing the whole output before
    (`handle` must hold one op: the producer is fused into one forall)."""
    name = forall.lstrip("%")
    text = f"    %{name}_init = transform.get_producer_of_operand {handle}[2] : (!transform.any_op) -> !transform.any_op\n" \
        if fill_init else ""
    text += (f"    {chunk}, {forall} = transform.structured.tile_using_forall {handle} num_threads "
             f"[{', '.join(str(int(c)) for c in counts)}] : (!transform.any_op) -> (!transform.any_op, !transform.any_op)\n")
    if fill_init:
        text += (f"    %{name}_fill, %{name}_filled = transform.structured.fuse_into_containing_op %{name}_init into {forall}"
                 f" : (!transform.any_op, !transform.any_op) -> (!transform.any_op, !transform.any_op)\n")
    return text


def matmul_tiling(block_m: int = 64, block_n: int = 512, block_k: int = 256,
                  reg_m: int = 8, reg_n: int = 32, reg_k: int = 4,
                  pack_tile_a: int = 32, pack_tile_b: int = 8, impl: str = "codegen",
                  op: str = "", bufferize: bool = True, pack_b: int = 1,
                  main_m: int = 0, tail_m: int = 0, tail_reg_m: int = 4) -> str:
    """Return the transform module (MLIR text) scheduling every linalg.matmul (or the one with id `op`).
    `main_m` > 0: the matmul's first main_m rows (whole block_m blocks of reg_m-row tiles) and its last
    tail_m rows (one block of tail_reg_m-row tiles) are split apart (transform.structured.split) and
    scheduled each on its own: a register tile whose rows divide no block of M (6 on AVX2) with a
    narrower one for the rows left."""
    if impl == "ukernel":
        return _ukernel_schedule(op, bufferize)
    if impl != "codegen":
        raise ValueError(f"impl must be codegen or ukernel, got {impl!r}")
    return tiling_module(block_m=block_m, block_n=block_n, block_k=block_k, reg_m=reg_m, reg_n=reg_n, reg_k=reg_k,
                         pack_tile_a=pack_tile_a, pack_tile_b=pack_tile_b, op=op, bufferize=bufferize, pack_b=pack_b,
                         main_m=main_m, tail_m=tail_m, tail_reg_m=tail_reg_m, in_region=not bufferize)


def tiling_module(*, op: str, bufferize: bool, in_region: bool, **tiles: int) -> str:
    """matmul_tiling's codegen module; `in_region`: row_parts' (matmul_parallel.py: False, its chunks' forall)."""
    steps = row_parts("%mm", **tiles, mark=op or "all", in_region=in_region)
    return transform_module(f"""    %mm = {match_op("linalg.matmul", op)}
{expect_one("%mm", op)}{steps}{bufferize_and_lower_vectors() if bufferize else ""}""",
                            extra_sequences=STEP_REGION_MATCHERS if in_region else "")


def _check_tiles(block_m: int, block_n: int, block_k: int, reg_m: int, reg_n: int, reg_k: int, pack_tile_a: int,
                 pack_tile_b: int, main_m: int, tail_m: int, tail_reg_m: int) -> None:
    """ValueError naming the first tile size that is no positive int or does not divide the block it tiles
    (the split's: block_m divides main_m, tail_reg_m divides tail_m; main_m and tail_m set together)."""
    for name, v in (("block_m", block_m), ("block_n", block_n), ("block_k", block_k),
                    ("reg_m", reg_m), ("reg_n", reg_n), ("reg_k", reg_k),
                    ("pack_tile_a", pack_tile_a), ("pack_tile_b", pack_tile_b), ("tail_reg_m", tail_reg_m)):
        if not isinstance(v, int) or v <= 0:
            raise ValueError(f"{name} must be a positive int, got {v!r}")
    if not isinstance(main_m, int) or not isinstance(tail_m, int) or main_m < 0 or tail_m < 0:
        raise ValueError(f"main_m and tail_m must be ints >= 0, got {main_m!r}, {tail_m!r}")
    if bool(main_m) != bool(tail_m):
        raise ValueError(f"main_m={main_m} and tail_m={tail_m}: a split needs both (0 and 0: no split)")
    checks = [(reg_m, block_m, "reg_m", "block_m"), (reg_n, block_n, "reg_n", "block_n"),
              (reg_k, block_k, "reg_k", "block_k"), (pack_tile_a, block_k, "pack_tile_a", "block_k"),
              (pack_tile_b, block_k, "pack_tile_b", "block_k")]
    if main_m:
        checks += [(block_m, main_m, "block_m", "main_m"), (tail_reg_m, tail_m, "tail_reg_m", "tail_m")]
    for inner, outer, a, b in checks:
        if outer % inner:
            raise ValueError(f"{a}={inner} must divide {b}={outer}")


def row_parts(handle: str, *, block_m: int, block_n: int, block_k: int, reg_m: int, reg_n: int, reg_k: int,
              pack_tile_a: int, pack_tile_b: int, pack_b: int, main_m: int = 0, tail_m: int = 0,
              tail_reg_m: int = 4, mark: str = "all", transpose_b: bool = False, leading_ones: bool = False,
              in_region: bool = False, then: str = "") -> str:
    """Steps 1-4 (module doc) of the matmuls in `handle`; with `main_m`, of the two parts each is split
    into along M (its first main_m rows in block_m blocks of reg_m-row tiles, its last tail_m rows in one
    block of tail_reg_m-row tiles; the tail packs B where pack_b_pays says so, or always for a transposed
    B), then empty tensors eliminated. Raises ValueError for tile sizes that do not fit (`_check_tiles`).
    Binds %fe (the functions; %fe_main and %fe_tail with a split). Each part is found again by a
    mark (ROW_PART = "<part>_<mark>") just before its schedule: the first part's canonicalizations can
    replace the other's op (inside an scf.forall chunk its handle was left empty: the tail stayed a
    plain linalg.matmul, scalar loops). `in_region` (a step of a payload of several ops, K in several
    reg_k steps): empty tensors are eliminated in the region this schedule made (`step_region`: the
    function-level loops around its K loops and what they read; the module needs STEP_REGION_MATCHERS), not
    in the whole function, whose One-Shot analysis made each step cost more the more of the model it held
    (the same IR: the rest of the function is other steps' work, where it eliminated nothing more).
    `then`: transform ops on other handles the caller holds (matmul_family's epilogue chain), placed before the
    elimination: the region it finds takes the loops that hold the matmul, and where an earlier step put the
    matmul and its consumers in one loop (a batch forall) the region's handles, consumed, invalidated them."""
    _check_tiles(block_m, block_n, block_k, reg_m, reg_n, reg_k, pack_tile_a, pack_tile_b, main_m, tail_m, tail_reg_m)
    any_op = "!transform.any_op"
    shared = dict(block_n=block_n, block_k=block_k, reg_n=reg_n, reg_k=reg_k, pack_tile_a=pack_tile_a,
                  pack_tile_b=pack_tile_b, transpose_b=transpose_b, leading_ones=leading_ones)
    # the micro-kernel's K loop (several trips: still there after the schedule's canonicalizations) marks the
    # region the elimination looks at (`step_region`)
    def own_loops(s: str) -> list[str]:
        return [f"%l3{s}"] if in_region and reg_k < block_k else []
    if not main_m:
        return (_block_schedule(handle, "", block_m=block_m, reg_m=reg_m, pack_b=pack_b, scoped=in_region, **shared)
                + then
                + _eliminate_empty_tensors("%fe", own_loops("")))
    if not all(c.isalnum() or c in "_-." for c in mark):
        raise ValueError(f"mark must be an op id like matmul_0, got {mark!r}")
    steps = f"""    // 0. The rows in whole blocks of {reg_m}-row tiles, and the {tail_m} rows after them.
    %mm_main0, %mm_tail0 = transform.foreach {handle} : {any_op} -> {any_op}, {any_op} {{
    ^bb0(%one: {any_op}):
      %parts = transform.structured.split %one after {main_m} {{dimension = 0}} : {any_op}
      %first, %second = transform.split_handle %parts : ({any_op}) -> ({any_op}, {any_op})
      transform.yield %first, %second : {any_op}, {any_op}
    }}
    %part_main = transform.param.constant "main_{mark}" -> !transform.any_param
    %part_tail = transform.param.constant "tail_{mark}" -> !transform.any_param
    transform.annotate %mm_main0 "{ROW_PART}" = %part_main : {any_op}, !transform.any_param
    transform.annotate %mm_tail0 "{ROW_PART}" = %part_tail : {any_op}, !transform.any_param
"""
    tail_pack = 1 if transpose_b else pack_b_pays(tail_m, tail_reg_m)
    for part, rows, tile_rows, pack in (("main", block_m, reg_m, pack_b), ("tail", tail_m, tail_reg_m, tail_pack)):
        steps += (f"""    %mm_{part} = transform.structured.match ops{{["linalg.matmul"]}} attributes {{{ROW_PART} = "{part}_{mark}"}}
        in %root : ({any_op}) -> {any_op}
"""
                  + _block_schedule(f"%mm_{part}", f"_{part}", block_m=rows, reg_m=tile_rows, pack_b=pack,
                                    scoped=in_region, **shared))
    return steps + then + _eliminate_empty_tensors("%fe_tail", own_loops("_main") + own_loops("_tail"))


def _eliminate_empty_tensors(funcs: str, loops: list[str]) -> str:
    """Empty tensor elimination in the region of the function that holds `loops` (`step_region`: handles that
    outlive the schedule's canonicalizations), else (no `loops`) in the functions `funcs`."""
    any_op = "!transform.any_op"
    if not loops:
        return f"    transform.bufferization.eliminate_empty_tensors {funcs} : {any_op}\n"
    text = f"    %own_loops = transform.merge_handles {', '.join(loops)} : {any_op}\n"
    return (text + step_region("%own_loops", "%step_loops")
            + f"    transform.bufferization.eliminate_empty_tensors %step_loops : {any_op}\n")


def _block_schedule(handle: str, s: str, block_m: int, block_n: int, block_k: int, reg_m: int, reg_n: int,
                    reg_k: int, pack_tile_a: int, pack_tile_b: int, pack_b: int, transpose_b: bool = False,
                    leading_ones: bool = False, scoped: bool = False) -> str:
    """Steps 1-4 (module doc) of the matmuls in `handle`, on tensors; `s` suffixes every handle it binds
    (binds %fe{s}: the functions). `transpose_b`: B is read (n, k) and packed transposed;
    `leading_ones`: the vector patterns also cast away leading unit dims (matmul_family's schedules).
    `scoped` (a per-op step of a payload of several ops): the loop-invariant code motion, canonicalizations and
    CSE look at the loop nest the cache blocking made (its outermost loop, %l1{s}#0, holds every op the
    schedule makes), not at the whole function: the rest of it is other steps' work, and a cleanup of the
    whole function costs as much as the function (most of such a step on a large model). That loop itself
    is not canonicalized (a one-trip one stays, for the final lowering to fold)."""
    any_op = "!transform.any_op"
    cleaned = f"%l1{s}#0" if scoped else f"%fe{s}"
    # (scoped: the nest's loops, the outermost one among them)
    loops_in = f"%l1{s}#0" if scoped else "%root"
    return f"""    // 1. Cache blocking, loop order n_c, k_c, m_c.
    %t1{s}, %l1{s}:3 = transform.structured.tile_using_for {handle} tile_sizes [{block_m}, {block_n}, {block_k}] interchange = [1, 2, 0]
        : ({any_op}) -> ({any_op}, {any_op}, {any_op}, {any_op})
    // 2. Register blocking, loop order m_r, n_r.
    %t2{s}, %l2{s}:2 = transform.structured.tile_using_for %t1{s} tile_sizes [{reg_m}, {reg_n}, 0]
        : ({any_op}) -> ({any_op}, {any_op}, {any_op})

    // 3. Packing of A and B through nofold pads hoisted out of the loops.
    %padded{s}, %pad{s}, %copy{s} = transform.structured.pad %t2{s} {{
        padding_values = [0.0 : f32, 0.0 : f32, 0.0 : f32], padding_dimensions = [0, 1, 2],
        nofold_flags = [1, {1 if pack_b else 0}, 0], copy_back_op = "none"}}
        : ({any_op}) -> ({any_op}, {any_op}, {any_op})
    %loops{s} = transform.structured.match ops{{["scf.for"]}} in {loops_in} : ({any_op}) -> {any_op}
    transform.apply_licm to %loops{s} : {any_op}
    %padA{s} = transform.get_producer_of_operand %padded{s}[0] : ({any_op}) -> {any_op}
    %hA{s} = transform.structured.hoist_pad %padA{s} by 1 loops : ({any_op}) -> {any_op}
{_pack_b(reg_n, pack_tile_b, s, transpose_b) if pack_b else ""}\
    %cA{s}, %lcA{s} = transform.structured.tile_using_for %hA{s} tile_sizes [0, {pack_tile_a}] : ({any_op}) -> ({any_op}, {any_op})
    transform.structured.vectorize %cA{s} vector_sizes [{reg_m}, {pack_tile_a}] : {any_op}

    // 4. Micro-kernel: K loop of reg_k steps, vector.contract -> outer products.
{micro_kernel_k_loop(f"0, 0, {reg_k}", reg_k < block_k, s, cleaned)}
    transform.apply_patterns to {cleaned} {{
{"      transform.apply_patterns.vector.cast_away_vector_leading_one_dim" + chr(10) if leading_ones else ""}\
      transform.apply_patterns.vector.lower_contraction lowering_strategy = "outerproduct"
      transform.apply_patterns.vector.transfer_permutation_patterns
      transform.apply_patterns.vector.lower_transpose
      transform.apply_patterns.canonicalization
    }} : {any_op}
"""


def _pack_b(reg_n: int, pack_tile_b: int, s: str = "", transpose_b: bool = False) -> str:
    """Step 3's B pack: the nofold pad of the micro-kernel's B hoisted out of the m loops (one pack per
    (n_c, k_c) block), copied in pack_tile_b x reg_n vectorized chunks (`transpose_b`: B is read (n, k),
    packed transposed)."""
    any_op = "!transform.any_op"
    return f"""    %padB{s} = transform.get_producer_of_operand %padded{s}[1] : ({any_op}) -> {any_op}
    %hB{s} = transform.structured.hoist_pad %padB{s} by 3 loops{", transpose by [1, 0]" if transpose_b else ""} : ({any_op}) -> {any_op}
    %cB{s}, %lcB{s} = transform.structured.tile_using_for %hB{s} tile_sizes [{f"0, {pack_tile_b}" if transpose_b else f"{pack_tile_b}, 0"}] : ({any_op}) -> ({any_op}, {any_op})
    transform.structured.vectorize %cB{s} vector_sizes [{f"{reg_n}, {pack_tile_b}" if transpose_b else f"{pack_tile_b}, {reg_n}"}] : {any_op}
"""


#: B is packed when more register-tile rows than this read each of its elements: with fewer, the pack
#: (a strided read, a write and a read of all of B) costs more than the micro-kernel's strided B rows
#: (16 x 256 x 1024 + bias on this Zen 4: 0.12 -> 0.077 ms unpacked; 64 rows 0.35 -> 0.31 ms, 128 even,
#: 2048 11.4 -> 12.8 ms: packed)
PACK_B_MIN_ROW_TILES = 9


def pack_b_pays(m: int, reg_m: int) -> int:
    """1 when a matmul (or chunk) of `m` rows in register tiles of `reg_m` should pack B, else 0."""
    return int(m >= PACK_B_MIN_ROW_TILES * reg_m)


def micro_kernel_k_loop(tile_sizes: str, several_steps: bool, s: str = "", cleaned: str = "") -> str:
    """Step 4's K loop over the padded micro-kernel contraction `%padded` (tiled by `tile_sizes`),
    vectorized, with the C tile hoisted into registers across the loop; binds %fe (the functions).
    One step (reg_k = block_k) has no loop: canonicalization would fold a one-trip loop away under
    the handle that the hoisting needs, so the contraction is vectorized as it is. `cleaned`: the ops whose
    bodies the canonicalization and CSE look at (default %fe{s}, the functions)."""
    cleaned = cleaned or f"%fe{s}"
    any_op = "!transform.any_op"
    tiled = f"%padded{s}"
    text = ""
    if several_steps:
        text = (f"    %t3{s}, %l3{s} = transform.structured.tile_using_for %padded{s} tile_sizes [{tile_sizes}]\n"
                f"        : ({any_op}) -> ({any_op}, {any_op})\n")
        tiled = f"%t3{s}"
    text += f"""    transform.structured.vectorize {tiled} {{create_named_contraction}} : {any_op}
    %fe{s} = transform.structured.match ops{{["func.func"]}} in %root : ({any_op}) -> {any_op}
    transform.apply_patterns to {cleaned} {{
      transform.apply_patterns.canonicalization
    }} : {any_op}
    transform.apply_cse to {cleaned} : {any_op}"""
    if cleaned != f"%fe{s}":
        # (a canonicalization of a loop's body leaves the constants it makes in the loops, where the function's
        # put them at its entry: moved out, the C tile's reads and writes are invariant in the K loop again)
        text += (f"\n    %cleaned_loops{s} = transform.structured.match ops{{[\"scf.for\"]}} in {cleaned}"
                 f" : ({any_op}) -> {any_op}\n    transform.apply_licm to %cleaned_loops{s} : {any_op}")
    if several_steps:
        text += f"\n    transform.loop.hoist_loop_invariant_subsets %l3{s} : {any_op}"
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
    // tensor: vectorized without sizes it would be one vector of its size). A copy of a size the loop
    // computes (`memref<2x?x3xf32>`: a row block below the pivot of torch-mlir's determinant) has no
    // static vector shape: the vectorizer refuses it, and it stays a copy (loops in the lowering)
    %cps = transform.structured.match ops{{["linalg.copy"]}} in %b : ({any_op}) -> {any_op}
    transform.foreach %cps : {any_op} {{
    ^bb0(%cp: {any_op}):
      %in_loop = transform.get_parent_op %cp {{op_name = "scf.for", allow_empty_results}} : ({any_op}) -> {any_op}
      transform.foreach %in_loop : {any_op} {{
      ^bb1(%unused: {any_op}):
        transform.sequence %cp : {any_op} failures(suppress) {{
        ^bb2(%one: {any_op}):
          transform.structured.vectorize %one : {any_op}
        }}
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


def column_tiles(lanes: int) -> tuple[int, ...]:
    """Register tile widths along N, widest first: two vectors, one, then part of one (8, 4, 2, 1 lanes)."""
    return (2 * lanes, lanes, 8, 4, 2, 1)


def register_tile(m: int, n: int, lanes: int, vector_registers: int) -> tuple[int, int]:
    """(reg_m, reg_n): the widest tile of two vectors (else one) whose accumulators, the B row and one
    broadcast fit the SIMD registers: 8x32 on AVX-512 (16 of 32 zmm), 4x16 on AVX2 (8 ymm accumulators +
    2 B vectors + 1 broadcast of 16 ymm; 8x16 would need 19 and spill). Both must divide the dims
    (`split_rows` takes a wider row tile that does not divide M)."""
    for reg_n in column_tiles(lanes):
        if n % reg_n:
            continue
        vectors = max(reg_n // lanes, 1)
        for reg_m in (8, 4, 2, 1):
            if m % reg_m == 0 and reg_m * vectors + vectors + 1 <= vector_registers:
                return reg_m, reg_n
    return 1, 1


#: register tile rows besides the powers of two: 6 x 2 vectors is 12 accumulators + 2 B vectors + 1
#: broadcast, the 16 ymm of AVX2 (OpenBLAS's Haswell SGEMM kernel has 12 accumulators too); 4 x 2 leaves
#: 8 chains of 4-cycle FMAs for 2 FMA ports, no slack. On the device's Xeon, AVX2 code, 1 thread:
#: 960 x 1024 x 1024 in 6 x 16 tiles 75-77 GFLOP/s, 1024^3 in 4 x 16 tiles 55-59 (OpenBLAS's Haswell
#: kernels 76)
WIDE_ROW_TILES = (6,)
#: the mark on the two parts of a matmul split along M (matmul_tiling's main_m / tail_m)
ROW_PART = "lh.row_part"
#: rows of M at least, for the wider row tile and its split (a tail of a few rows in narrower tiles)
MIN_SPLIT_ROWS = 48
#: row tiles of two vectors narrower than this leave the FMA units idle (1 row: 2 accumulator chains of
#: 4-cycle FMAs on 2 ports, a quarter of the peak; lh-pad-contraction-dims' FULL_SPEED_ROWS). An M with no
#: wider divisor (a thread's chunk of a padded M: ViT's 200 tokens in 8 chunks of 25 on 16 cores) is split
#: into whole blocks of the widest tile that fits the registers (NARROW_SPLIT_TILES) and a tail of the
#: narrow rows, from 2 blocks of rows on (MIN_SPLIT_ROWS is for the wider-than-full-speed tile)
FULL_SPEED_ROWS = 4
NARROW_SPLIT_TILES = (8, 6, 4)


def split_rows(m: int, reg_m: int, vectors: int, vector_registers: int, cap: int) -> tuple[int, int, int, int] | None:
    """(reg_m, block_m, main_m, tail_m) of a row tile wider than `reg_m` (WIDE_ROW_TILES; where `reg_m` is
    narrower than FULL_SPEED_ROWS, the widest of NARROW_SPLIT_TILES) that fits the registers with `vectors`
    vectors per row and whose blocks (<= cap rows) leave the fewest rows to a tail in whole `reg_m` tiles
    (main_m + tail_m = m; tail_m 0 when a block divides m); None when no wider tile fits or m is small."""
    narrow = reg_m < FULL_SPEED_ROWS
    if m < (2 * min(NARROW_SPLIT_TILES) if narrow else MIN_SPLIT_ROWS):
        return None
    for wide in NARROW_SPLIT_TILES if narrow else WIDE_ROW_TILES:
        if wide <= reg_m or wide * vectors + vectors + 1 > vector_registers:
            continue
        best = None
        # blocks of cap/2..cap rows; fewer rows in a block (down to one tile) only where M has no such block
        for low in (max(cap // 2, wide), wide):
            for block in range(cap - cap % wide, low - 1, -wide):
                tail = m % block
                if tail % reg_m or m - tail == 0:
                    continue
                if best is None or tail < best[3]:
                    best = (wide, block, m - tail, tail)
            if best is not None:
                return best
    return None


def default_params(m: int, n: int, k: int, vector_bits: int = 512, l2_bytes: int = 1 << 20,
                   vector_registers: int = 32, l1_bytes: int = 32 << 10, row_split: bool = False) -> dict:
    """Pick matmul_tiling parameters for an MxNxK f32 matmul (all divisors of the dims) on a machine
    (the CPU machine model, workbench/targets/cpu_host.py: SIMD width and register count, caches).

    `vector_bits`/`vector_registers` set the register tile (`register_tile`); `l2_bytes` bounds the
    packed B block (and the 1 MiB stack-alloca limit always applies); `l1_bytes` bounds block_k so that
    the A micro-panel and a B micro-panel stay in L1. AVX-512 (512 bits, 32 registers) gets exactly
    the parameters measured on the AVX-512 CI host (8x32, reg_k=4); AVX2 gets 4x16 with reg_k=8, or with
    `row_split` (matmul_tiling's main_m / tail_m) 6x16 tiles over whole blocks of M and 4x16 ones for
    the rows left (`split_rows`)."""
    lanes = max(vector_bits // 32, 1)
    reg_m, reg_n = register_tile(m, n, lanes, vector_registers)
    # Large problems: 128x1024 blocks (A repacked half as often; measured 1-10% faster than 64x512 at
    # 1024^3 and 2048^3 on the AVX-512 CI host, and chosen by `tune` there); smaller ones: 64x512.
    big = m >= 1024 and n >= 1024
    block_m = _largest_divisor(m, 128 if big else 64, reg_m) or reg_m
    split = split_rows(m, reg_m, max(reg_n // lanes, 1), vector_registers, 128 if big else 64) if row_split else None
    tail_reg_m = reg_m
    if split:
        reg_m, block_m, main_m, tail_m = split
    cap_n = 1024 if big else 512
    block_n = _largest_divisor(n, cap_n, reg_n) or reg_n
    if block_n * 4 < min(n, cap_n) and n <= 4 * cap_n:
        # N with a large prime factor (a LLaMA MLP's 688 = 16 x 43): its only blocks of whole register tiles
        # are a few of them wide, and A would be packed again for every one (688 columns in blocks of 16: 43
        # times); one block of all N instead (block_k below keeps it within L2)
        block_n = n
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
    params = dict(block_m=block_m, block_n=block_n, block_k=block_k,
                  reg_m=reg_m, reg_n=reg_n, reg_k=reg_k,
                  pack_tile_a=pack_tile_a, pack_tile_b=pack_tile_b,
                  pack_b=pack_b_pays(main_m if split else m, reg_m), impl="codegen")
    if split and tail_m:
        params.update(main_m=main_m, tail_m=tail_m, tail_reg_m=tail_reg_m)
    return params
