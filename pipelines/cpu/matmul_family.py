"""The f32 matmul family on CPU: batch_matmul, matmuls with a transposed operand (`x @ w.T`, linear),
matvec/vecmat, and matmuls followed by elementwise epilogues (bias, relu, gelu).

Every generator is the packed, register-tiled schedule of `matmul.py` (cache blocks, an
reg_m x reg_n register tile of outer-product FMAs, A and B packed through hoisted nofold pads)
adapted to its op:
- `batch_matmul_tiling`: a leading batch loop (tile 1), then the matmul schedule on each batch
  (the packed buffers get the leading unit dimension).
- `matmul_epilogue`: the matmul schedule on the matmul, and its elementwise consumers (bias add,
  relu, gelu: whatever linalg.generic reads the matmul's result) tiled by reg_m x reg_n and
  vectorized.
- `matvec_tiling`: memory bound: rows in blocks of `rows`, K in vectors of `vec_k` lanes
  (vector.contract -> FMAs along K, one horizontal reduction per row block), no packing.
Parameters come from each generator's `default_params`, which takes the CPU machine model's
numbers (vector_bits, vector_registers, l1_bytes, l2_bytes; workbench/targets/cpu_host.py).
`op` (an op id set by `rewrite tag-ops`) restricts a generator to that op.
Lower with `apply cpu-matmul-lower`.
"""
from __future__ import annotations

import matmul
from generic import SERIAL_FORALL
from matmul_parallel import machine_lanes, thread_grid
from workbench.common.transform_text import STEP_REGION_MATCHERS, step_region, transform_module

# no PAYLOAD_OP: the constraints name the dims of the payload's contractions (M, N, K)
#: the functions a session may call as generators (`file.py[gen=NAME]`); nothing else here is callable
GENERATORS = ["batch_matmul_tiling", "matmul_transpose_b_tiling", "matmul_epilogue", "matvec_tiling"]

PARAMS = {
    "block_m": {"when": "main_m == 0", "divides": "M", "min": 1, "max": 512, "help": "cache block along M"},
    "block_n": {"divides": "N", "min": 1, "max": 2048, "help": "cache block along N (packed B block columns)"},
    "block_k": {"divides": "K", "min": 1, "max": 1024, "help": "cache block along K"},
    "reg_m": {"divides": "block_m", "min": 1, "space": [1, 2, 4, 6, 8], "help": "register tile rows"},
    "main_m": {"min": 0, "help": "0: no split; else a chunk's first main_m rows (whole block_m blocks) take "
                                 "reg_m-row tiles and its last tail_m rows tail_reg_m-row ones (matmul.py)"},
    "tail_m": {"min": 0, "help": "a chunk's rows after main_m (0 with main_m 0)"},
    "tail_reg_m": {"divides": "tail_m", "min": 1, "space": [1, 2, 4, 8], "help": "register tile rows of the tail_m rows"},
    "reg_n": {"divides": "block_n", "min": 1, "space": [8, 16, 32, 64], "help": "register tile columns"},
    "reg_k": {"divides": "block_k", "min": 1, "space": [1, 2, 4, 8], "help": "outer products per K step"},
    "pack_tile_a": {"divides": "block_k", "min": 1, "space": [8, 16, 32], "help": "A pack copy chunk along K"},
    "pack_tile_b": {"divides": "block_k", "min": 1, "space": [4, 8, 16], "help": "B pack copy chunk along K"},
    "op": {"help": "the id (`inspect`, set by `rewrite tag-ops` as lh.op) of the one op to schedule; "
                   "empty: every op of the kind"},
    "threads": {"min": 1, "max": 256, "help": "parallel chunks along N (tasks on the async runtime)"},
    "threads_m": {"min": 1, "max": 256, "help": "parallel chunks along M"},
    "threads_b": {"min": 1, "max": 256, "help": "parallel chunks along the batch (batch_matmul)"},
    "threads_b2": {"min": 1, "max": 256, "help": "parallel chunks along the second batch loop (batch_dims >= 2: "
                                               "attention's heads; threads_b x threads_b2 tasks)"},
    "batch_dims": {"min": 1, "max": 8, "help": "leading batch loops of a generic batch matmul (generic=true; "
                                              "b0, b1, m, n, k: 2)"},
    "fill_init": {"help": "the producer of the output's init (a fill) is fused into the parallel chunks (each task "
                          "zeroes its own chunk, in cache); batch_matmul_tiling: into the threads_b (threads_b2) "
                          "chunks, then into the batch loops"},
    "pack_b": {"choices": [0, 1], "help": "matmul_epilogue: 1 = B packed into [k][reg_n] panels per block; 0 = the "
                                         "micro-kernel reads B in place (few row tiles read each B element: "
                                         "matmul.pack_b_pays)"},
    "in_registers": {"choices": [0, 1], "help": "matmul_epilogue: 1 = the chain's last op tiled down to register tiles "
                                               "with the links, the matmul (its whole K: block_k unused) and its "
                                               "init's fill (fill_init) fused in: the epilogue runs on the "
                                               "accumulators, one store per tile (epilogue_params: K one cache block); "
                                               "0 = a pass over the matmul's result after it"},
    "bufferize": {"help": "end with bufferization and vector lowering (false: stay on tensors, for a "
                          "payload of several ops scheduled one step each; pipelines/cpu/finish.py finishes)"},
}
CONSTRAINTS = [
    "reg_m <= block_m",
    "reg_n <= block_n",
    "block_n * block_k * 4 <= 1048576",
    "block_m * block_k * 4 <= 1048576",
]
_ANY = "!transform.any_op"


def _match(name: str, op: str = "", root: str = "%root") -> str:
    """matmul.match_op: the ops named `name`, only the one whose lh.op is `op` when it is set."""
    return matmul.match_op(name, op, root)


def _match_contraction(name: str, op: str, generic: bool) -> str:
    """%mm bound to the one `name` op (with id `op` when set), or (`generic`) to the linalg.generic with
    id `op` made a `name` op first (transform.structured.specialize: torch-mlir writes bmm and x @ w.T
    as generics)."""
    if not generic:
        return f"\n    %mm = {_match(name, op)}\n{matmul.expect_one('%mm', op)}"
    _check_generic_id(op)
    return (f"\n    %g = {_match('linalg.generic', op)}\n{matmul.expect_one('%g', op)}"
            f"    %mm = transform.structured.specialize %g : ({_ANY}) -> {_ANY}\n")


def _check(**values: int) -> None:
    for name, v in values.items():
        if not isinstance(v, int) or v <= 0:
            raise ValueError(f"{name} must be a positive int, got {v!r}")


def _packed_contraction(handle: str, block_m: int, block_n: int, block_k: int, reg_m: int, reg_n: int,
                        reg_k: int, pack_tile_a: int, pack_tile_b: int, transpose_b: bool = False,
                        chunks: list[int] | None = None, pack_b: bool = True, main_m: int = 0, tail_m: int = 0,
                        tail_reg_m: int = 4, mark: str = "all", in_region: bool = False, then: str = "",
                        fill_init: bool = False) -> str:
    """The matmul.py schedule (steps 1-4, on tensors: matmul.row_parts, with its split along M where
    main_m is set) of the (m, n, k) contraction ops in `handle`. `chunks` (m and n counts): the op is
    first split into that many chunks per dim (tile_using_forall: tasks on the async runtime after
    lowering), each scheduled the same way with pack buffers of its own; the block sizes and main_m /
    tail_m apply to a chunk (`fill_init`: the init's producer fused into them: matmul.forall_chunks). `then`:
    transform ops before the empty-tensor elimination (matmul.row_parts)."""
    split = ""
    chunked = bool(chunks) and any(c > 1 for c in chunks)
    # (in parallel chunks the elimination stays whole-function: analyzed from the chunks' scf.forall it left
    # packing buffers that the function's analysis replaces: GPT-2's linear layers on 2 threads)
    in_region = in_region and not chunked
    if chunked:
        split = matmul.forall_chunks(handle, "%chunk", "%chunks", list(chunks) + [0], fill_init=fill_init)
        handle = "%chunk"
    return "\n" + split + matmul.row_parts(
        handle, block_m=block_m, block_n=block_n, block_k=block_k, reg_m=reg_m, reg_n=reg_n, reg_k=reg_k,
        pack_tile_a=pack_tile_a, pack_tile_b=pack_tile_b, pack_b=int(pack_b), main_m=main_m, tail_m=tail_m,
        tail_reg_m=tail_reg_m, mark=mark, transpose_b=transpose_b, leading_ones=True, in_region=in_region, then=then)


def _module(body: str, bufferize: bool = True, extra_sequences: str = "", serial_foralls: bool = False) -> str:
    """The transform module: `body`, then (bufferize) matmul.py's bufferization and vector lowering; without
    it the ops stay on tensors, for a payload of several ops scheduled one step each (pipelines/cpu/finish.py
    finishes). `extra_sequences`: matchers `body` uses (@lh_keep comes with STEP_REGION_MATCHERS).
    `serial_foralls`: `body` made one-loop SERIAL_FORALL foralls, made scf.for loops after the bufferization (as
    finish.py does for a step that does not bufferize itself)."""
    tail = matmul.bufferize_and_lower_vectors() if bufferize else ""
    if bufferize and serial_foralls:
        tail += f"""    %serial = transform.structured.match ops{{["scf.forall"]}} attributes{{{SERIAL_FORALL}1}} in %b
        : ({_ANY}) -> {_ANY}
    transform.foreach %serial : {_ANY} {{
    ^bb0(%one: {_ANY}):
      %serial_for = transform.loop.forall_to_for %one : ({_ANY}) -> {_ANY}
      transform.yield
    }}
"""
    matchers = extra_sequences + (STEP_REGION_MATCHERS if extra_sequences or not bufferize else "")
    return transform_module(body.lstrip("\n") + tail, extra_sequences=matchers)


#: a matcher for foreach_match keeping the linalg ops of a handle (with @lh_keep, STEP_REGION_MATCHERS)
LINALG_OP_MATCHER = f"""  transform.named_sequence @lh_linalg_op(%op: {_ANY} {{transform.readonly}}) -> {_ANY} {{
    %linalg = transform.match.structured failures(propagate) %op : ({_ANY}) -> {_ANY} {{
    ^bb0(%s: {_ANY}):
      transform.match.structured.yield %s : {_ANY}
    }}
    transform.yield %linalg : {_ANY}
  }}
"""


def batch_matmul_tiling(block_m: int = 64, block_n: int = 256, block_k: int = 256, reg_m: int = 4,
                        reg_n: int = 16, reg_k: int = 8, pack_tile_a: int = 32, pack_tile_b: int = 8,
                        op: str = "", bufferize: bool = True, threads_b: int = 1, threads_m: int = 1,
                        threads: int = 1, generic: bool = False, batch_dims: int = 1, fill_init: bool = False,
                        threads_b2: int = 1, main_m: int = 0, tail_m: int = 0, tail_reg_m: int = 4) -> str:
    """Every linalg.batch_matmul (or the one with id `op`): the batch loops tiled by 1, each batch's
    (m, n, k) tile the packed matmul schedule (threads_b x threads_b2 x threads_m x threads chunks of
    the first two batch loops, M, N run as parallel tasks). `generic`: the op is a linalg.generic with a batch matmul's maps and body
    (torch-mlir's bmm; `op` names it), with `batch_dims` leading batch loops (b0, b1, m, n, k: 2; no
    named op has more than one). The producer of the output's init (a fill) is fused into the batch
    loops: one batch's output is zeroed while it is in cache, not the whole tensor before (attention's
    scores are K=64 products, where the separate fill was a third of the output traffic); `fill_init`:
    it is fused into the threads_b chunks first (the init must have a producer, such as a linalg.fill)."""
    _check(threads_b=threads_b, threads_m=threads_m, threads=threads, batch_dims=batch_dims, threads_b2=threads_b2)
    if threads_b2 > 1 and batch_dims < 2:
        raise ValueError(f"threads_b2={threads_b2} splits a second batch loop: needs batch_dims >= 2")
    if batch_dims > 1 and not generic:
        raise ValueError("batch_dims > 1 needs generic=true (a named batch_matmul has one batch dim)")
    if generic:
        _check_generic_id(op)
        match = f"\n    %g = {_match('linalg.generic', op)}\n{matmul.expect_one('%g', op)}"
    else:
        match = (f"\n    %named = {_match('linalg.batch_matmul', op)}\n{matmul.expect_one('%named', op)}"
                 f"    %g = transform.structured.generalize %named : ({_ANY}) -> {_ANY}\n")
    return _module(_batch_loops_to_matmul(match, batch_dims, [threads_b, threads_b2], fill_init) + _packed_contraction(
        "%mm", block_m, block_n, block_k, reg_m, reg_n, reg_k, pack_tile_a, pack_tile_b,
        chunks=[threads_m, threads], main_m=main_m, tail_m=tail_m, tail_reg_m=tail_reg_m, mark=op or "all",
        in_region=not bufferize and threads_b * threads_b2 == 1), bufferize)


def _batch_loops_to_matmul(match: str, batch_dims: int, threads_b: list, fill_init: bool = False) -> str:
    """%mm bound to the linalg.matmul left in the innermost batch loop of the batch matmul generic that
    `match` binds to %g (b0, .., m, n, k): the batch loops tiled by 1 with the producers of its operands
    fused in (transform.structured.fuse: the init's fill; the first loops split into `threads_b` (one
    count per loop) parallel chunks before, the init's producer fused into them with `fill_init`), the
    tile's unit dims folded
    (fold_unit_extent_dims_via_slices) and the (m, n, k) generic left specialized."""
    handle, text = "%g", match
    counts = (list(threads_b) + [1] * batch_dims)[:batch_dims]
    counts = ", ".join(str(c if c > 1 else 0) for c in counts) + ", 0, 0, 0"
    if any(c > 1 for c in threads_b):
        if fill_init:
            text += f"    %ginit = transform.get_producer_of_operand %g[2] : ({_ANY}) -> {_ANY}\n"
        text += (f"    %gchunk, %gforall = transform.structured.tile_using_forall %g num_threads [{counts}]"
                 f" : ({_ANY}) -> ({_ANY}, {_ANY})\n")
        if fill_init:
            text += (f"    %gfill, %gfilled = transform.structured.fuse_into_containing_op %ginit into %gforall"
                     f" : ({_ANY}, {_ANY}) -> ({_ANY}, {_ANY})\n")
        handle = "%gchunk"
    sizes = ", ".join(["1"] * batch_dims + ["0", "0", "0"])
    return text + f"""    %gb, %gl:{batch_dims} = transform.structured.fuse {handle} tile_sizes [{sizes}]
        : ({_ANY}) -> ({_ANY}{f", {_ANY}" * batch_dims})
    transform.apply_patterns to %gl#{batch_dims - 1} {{
      transform.apply_patterns.linalg.fold_unit_extent_dims_via_slices
      transform.apply_patterns.canonicalization
    }} : {_ANY}
    %gf = transform.structured.match ops{{["linalg.generic"]}} in %gl#{batch_dims - 1} : ({_ANY}) -> {_ANY}
    %mm = transform.structured.specialize %gf : ({_ANY}) -> {_ANY}
"""


def _check_generic_id(op: str) -> None:
    if not op:
        raise ValueError("generic=true needs op= (the id of the linalg.generic to schedule)")


def default_params(b: int, m: int, n: int, k: int, threads: int = 1, b2: int = 1, row_split: bool = True,
                   **machine) -> dict:
    """batch_matmul_tiling parameters for a BxMxNxK f32 batch_matmul (matmul.default_params per chunk);
    `b2`: the second batch loop's extent (a generic with two: attention's batch x heads).
    `threads` > 1: chunks run in parallel (`thread_chunks`); the block sizes are a chunk's. `row_split`:
    matmul.default_params' (a wider row tile over whole blocks of M, narrower ones for the rows left)."""
    threads_b, threads_b2, threads_m, threads_n = thread_chunks(b, m, n, threads, b2, machine_lanes(machine))
    params = matmul.default_params(m // threads_m, n // threads_n, k, row_split=row_split, **machine)
    params.pop("impl", None)
    params.pop("pack_b", None)   # (batch and transposed-B contractions always pack; epilogue_params decides)
    chunks = {"threads_b": threads_b, "threads_b2": threads_b2, "threads_m": threads_m, "threads": threads_n}
    return dict(params, **{key: v for key, v in chunks.items() if v > 1})


def thread_chunks(b: int, m: int, n: int, threads: int, b2: int = 1, lanes: int = 0) -> tuple[int, int, int, int]:
    """(batch, second batch loop, M, N) chunk counts for `threads` tasks that divide the dims: over the
    batch loops where as many batches divide them (each task packs its own operands, no redundant
    packing; the second loop takes the tasks the first cannot: 4 x 8 heads on 16 cores, 4 x 4), else an
    M x N grid (matmul_parallel.thread_grid), whichever has more tasks."""
    if threads <= 1:
        return 1, 1, 1, 1
    by_batch = max(t for t in range(1, threads + 1) if b % t == 0)
    by_b2 = max(t for t in range(1, threads // by_batch + 1) if b2 % t == 0)
    tm, tn = thread_grid(m, n, threads, lanes)
    return (by_batch, by_b2, 1, 1) if by_batch * by_b2 >= tm * tn else (1, 1, tm, tn)


def matmul_transpose_b_tiling(block_m: int = 64, block_n: int = 256, block_k: int = 256, reg_m: int = 4,
                              reg_n: int = 16, reg_k: int = 8, pack_tile_a: int = 32, pack_tile_b: int = 8,
                              op: str = "", generic: bool = False, bufferize: bool = True, threads_m: int = 1,
                              threads: int = 1, main_m: int = 0, tail_m: int = 0, tail_reg_m: int = 4,
                              fill_init: bool = False) -> str:
    """`x @ w.T`: a linalg.matmul whose B is indexed (n, k) (or the one with id `op`); B is packed
    transposed into [k][reg_n] panels, so the micro-kernel is matmul.py's. `generic`: the op is the
    linalg.generic torch-mlir emits for it (`op` names it), made a linalg.matmul first (specialize)."""
    match = _match_contraction("linalg.matmul", op, generic)
    _check(threads_m=threads_m, threads=threads)
    return _module(match + _packed_contraction(
        "%mm", block_m, block_n, block_k, reg_m, reg_n, reg_k, pack_tile_a, pack_tile_b, transpose_b=True,
        chunks=[threads_m, threads], main_m=main_m, tail_m=tail_m, tail_reg_m=tail_reg_m, mark=op or "all",
        in_region=not bufferize, fill_init=fill_init), bufferize)


def matmul_epilogue(block_m: int = 64, block_n: int = 256, block_k: int = 256, reg_m: int = 4, reg_n: int = 16,
                    reg_k: int = 8, pack_tile_a: int = 32, pack_tile_b: int = 8, epilogue: int = 1,
                    epi_m: int = 4, epi_n: int = 64, op: str = "", bufferize: bool = True, threads_m: int = 1,
                    threads: int = 1, pack_b: int = 1, main_m: int = 0, tail_m: int = 0, tail_reg_m: int = 4,
                    fill_init: bool = False, in_registers: int = 0) -> str:
    """A linalg.matmul (or the one with id `op`) followed by a chain of `epilogue` elementwise ops
    (bias add, relu, gelu, ...: each the only consumer of the previous result): the packed matmul
    schedule, then the chain tiled by epi_m x epi_n with the earlier links fused into the last one's
    loops, and vectorized (one pass over the matmul's result instead of one per op). `in_registers`: the chain
    on the register tiles instead (`_epilogue_in_registers`: no pass over the result; block_k, epi_m, epi_n
    unused)."""
    _check(epi_m=epi_m, epi_n=epi_n, threads_m=threads_m, threads=threads)
    if not isinstance(epilogue, int) or epilogue < 0 or (epilogue == 0 and not (in_registers and fill_init)):
        raise ValueError(f"epilogue must be an int >= 1 (0: a plain matmul's fill on its register tiles, with "
                         f"in_registers=1 and fill_init), got {epilogue!r}")
    if in_registers:
        if main_m:
            raise ValueError("in_registers=1 takes no main_m / tail_m split")
        return _epilogue_in_registers(block_m, block_n, block_k, reg_m, reg_n, reg_k, pack_tile_a, pack_tile_b,
                                      epilogue, op, bufferize, threads_m, threads, pack_b, fill_init)
    chain = [f"\n    %mm = {_match('linalg.matmul', op)}\n{matmul.expect_one('%mm', op)}"]
    previous = "%mm"
    for i in range(epilogue):
        # (the linalg consumers: a per-op step cleans up its own loops only, so a dead reshape of the result that an
        # earlier step left, which a whole-function canonicalization had erased before, can be a consumer too)
        chain.append(f"    %e{i}_all = transform.get_consumers_of_result {previous}[0] : ({_ANY}) -> {_ANY}\n"
                     f"    %e{i}_walked, %e{i} = transform.foreach_match restrict_root flatten_results in %e{i}_all"
                     f" @lh_linalg_op -> @lh_keep : ({_ANY}) -> ({_ANY}, {_ANY})\n")
        previous = f"%e{i}"
    # the chain's schedule goes before the matmul's empty-tensor elimination (row_parts' `then`), which holds no
    # handle to it: the matmul and its chain in one loop of an earlier step (a batch forall) had the elimination's
    # region handles, consumed, invalidate %e0 ("op uses a handle invalidated by a previously executed transform op")
    last = f"%e{epilogue - 1}"
    epilogue_ops = ""
    if threads_m * threads > 1:   # the chain in the same chunks, each a parallel task
        epilogue_ops += (f"    %echunk, %eforall = transform.structured.tile_using_forall {last} num_threads "
                         f"[{threads_m}, {threads}] : ({_ANY}) -> ({_ANY}, {_ANY})\n")
        last = "%echunk"
    epilogue_ops += (f"    %et, %el:2 = transform.structured.tile_using_for {last} tile_sizes [{epi_m}, {epi_n}]"
                     f" : ({_ANY}) -> ({_ANY}, {_ANY}, {_ANY})\n")
    fused = []
    for i in reversed(range(epilogue - 1)):
        epilogue_ops += (f"    %ef{i}, %efl{i} = transform.structured.fuse_into_containing_op %e{i} into %el#1"
                         f" : ({_ANY}, {_ANY}) -> ({_ANY}, {_ANY})\n")
        fused.append(f"%ef{i}")
    for handle in ["%et"] + fused:
        epilogue_ops += f"    transform.structured.vectorize {handle} : {_ANY}\n"
    body = "".join(chain) + _packed_contraction("%mm", block_m, block_n, block_k, reg_m, reg_n, reg_k,
                                                pack_tile_a, pack_tile_b, chunks=[threads_m, threads], pack_b=bool(pack_b),
                                                main_m=main_m, tail_m=tail_m, tail_reg_m=tail_reg_m, mark=op or "all",
                                                in_region=not bufferize, then=epilogue_ops, fill_init=fill_init)
    # the fused links' originals are dead now: erase them before bufferization gives them a buffer to write
    body += (f"    %fd = transform.structured.match ops{{[\"func.func\"]}} in %root : ({_ANY}) -> {_ANY}\n"
             f"    transform.apply_dce to %fd : {_ANY}\n")
    return _module(body, bufferize, extra_sequences=LINALG_OP_MATCHER)


def _epilogue_in_registers(block_m: int, block_n: int, block_k: int, reg_m: int, reg_n: int, reg_k: int,
                           pack_tile_a: int, pack_tile_b: int, epilogue: int, op: str, bufferize: bool,
                           threads_m: int, threads: int, pack_b: int, fill_init: bool) -> str:
    """matmul_epilogue with in_registers=1: the chain's last op is tiled (N blocks, M blocks, then reg_m x reg_n
    register tiles; in the threads_m x threads chunks of a forall first) with the earlier links, the matmul and
    (`fill_init`) its init's fill fused into every level, so that a register tile's accumulators start at zero
    (the fill's vector write folds into the read of the C tile), take the whole K, and go through the epilogue
    before the one store of its result: no fill pass, no C in memory, no epilogue pass over it (a transformer's
    K = d_model projections: 3 passes over the output in 1). For a K of one cache block (epilogue_params): the
    A panel (reg_m x K) and the packed B block (K x block_n) are the packed schedule's with block_k = K. One K step
    (reg_k >= block_k, the selector's block_k being K) has no K loop: canonicalization would fold a one-trip loop
    away under the handle the hoisting needs (an LSTM step's K = 8 on AVX2, reg_k 8)."""
    any_op = _ANY
    several_steps = reg_k < block_k
    k_loop = (f"    %t3_r, %l3_r = transform.structured.tile_using_for %padded_r tile_sizes [0, 0, {reg_k}] : ({any_op}) -> "
              f"({any_op}, {any_op})\n") if several_steps else ""
    k_step = "%t3_r" if several_steps else "%padded_r"
    text = f"\n    %mm = {_match('linalg.matmul', op)}\n{matmul.expect_one('%mm', op)}"
    mm = "%mm"
    if fill_init:
        text += f"    %mminit = transform.get_producer_of_operand {mm}[2] : ({any_op}) -> {any_op}\n"
    previous = mm
    for i in range(epilogue):
        text += (f"    %e{i}_all = transform.get_consumers_of_result {previous}[0] : ({any_op}) -> {any_op}\n"
                 f"    %e{i}_walked, %e{i} = transform.foreach_match restrict_root flatten_results in %e{i}_all"
                 f" @lh_linalg_op -> @lh_keep : ({any_op}) -> ({any_op}, {any_op})\n")
        previous = f"%e{i}"
    # (no chain, epilogue = 0: the matmul is the last op, whose fill fuse_into_containing_op cannot take into an
    # scf.for, its iter_args' init: the N blocks are a serial forall (SERIAL_FORALL, an scf.for after
    # bufferization), which fuses it through its shared output, and the inner levels transform.structured.fuse,
    # which fuses the producer of an iter_args' init, here only the fill: A and B are slices of the forall's)
    plain = epilogue == 0
    state = {"last": f"%e{epilogue - 1}" if epilogue else mm, "links": [f"%e{i}" for i in range(epilogue - 1)],
             "mm": "" if plain else mm, "fill": "%mminit" if fill_init else ""}

    def level(tag: str, sizes: str, forall: bool = False) -> str:
        """The chain's last op tiled by `sizes` (a forall of that many chunks), its earlier links (last first),
        the matmul and its fill fused into the loop; the handles name the tiles. The loop is %{tag}loop (an
        scf.for, also where a plain matmul tiles it as a serial forall)."""
        if forall:
            out = (f"    %{tag}t, %{tag}loop = transform.structured.tile_using_forall {state['last']} num_threads "
                   f"[{sizes}] : ({any_op}) -> ({any_op}, {any_op})\n")
        elif plain and tag == "bn":
            out = (f"    %{tag}t, %{tag}loop = transform.structured.tile_using_forall {state['last']} tile_sizes "
                   f"[{sizes}] : ({any_op}) -> ({any_op}, {any_op})\n"
                   f"    transform.annotate %{tag}loop \"{SERIAL_FORALL}1\" : {any_op}\n")
        elif plain:
            out = (f"    %{tag}t, %{tag}loop = transform.structured.fuse {state['last']} tile_sizes [{sizes}, 0]"
                   f" : ({any_op}) -> ({any_op}, {any_op})\n")
            state["last"] = f"%{tag}t"
            # (fuse returns no handle to the fill it fused: found again in the register tile's loop)
            state["fill"] = f"%{tag}fill"
            return out + (f"    %{tag}fill = transform.structured.match ops{{[\"linalg.fill\"]}} in %{tag}loop"
                          f" : ({any_op}) -> {any_op}\n")
        else:
            out = (f"    %{tag}t, %{tag}loop = transform.structured.tile_using_for {state['last']} tile_sizes [{sizes}]"
                   f" : ({any_op}) -> ({any_op}, {any_op})\n")
        loop = f"%{tag}loop"
        state["last"] = f"%{tag}t"
        fused = [("l", i) for i in reversed(range(len(state["links"])))] + ([] if plain else [("mm", None)]) + (
            [("fill", None)] if state["fill"] else [])
        for kind, i in fused:
            name = f"%{tag}{kind}{'' if i is None else i}"
            source = state["links"][i] if kind == "l" else state[kind]
            out += (f"    {name}, {name}_loop = transform.structured.fuse_into_containing_op {source} into {loop}"
                    f" : ({any_op}, {any_op}) -> ({any_op}, {any_op})\n")
            loop = f"{name}_loop"
            if kind == "l":
                state["links"][i] = name
            else:
                state[kind] = name
        return out

    if threads_m * threads > 1:   # the chain, the matmul and its fill in the same chunks, each a parallel task
        text += level("c", f"{threads_m}, {threads}", forall=True)
    # cache blocks (N, then M: the packed B block is reused across the M blocks), then register tiles
    text += level("bn", f"0, {block_n}")
    outer = "%bnloop"
    text += level("bm", f"{block_m}, 0")
    text += level("rm", f"{reg_m}, 0")
    text += level("rn", f"0, {reg_n}")
    # the micro-kernel: A and B packed through hoisted nofold pads (matmul.py's step 3; the fused levels' nested
    # slices merged first, and the pads' constants moved out of the loops; no canonicalization, which would fold
    # a one-trip loop of a block the size of its dim, and the loops the hoisting counts with it), K in reg_k steps
    if plain:
        state["mm"] = state["last"]
    text += f"""    %padded_r, %pad_r, %copy_r = transform.structured.pad {state['mm']} {{
        padding_values = [0.0 : f32, 0.0 : f32, 0.0 : f32], padding_dimensions = [0, 1, 2],
        nofold_flags = [1, {1 if pack_b else 0}, 0], copy_back_op = "none"}}
        : ({any_op}) -> ({any_op}, {any_op}, {any_op})
    transform.apply_patterns to {outer} {{
      transform.apply_patterns.tensor.merge_consecutive_insert_extract_slice
    }} : {any_op}
    %loops_r = transform.structured.match ops{{["scf.for"]}} in {outer} : ({any_op}) -> {any_op}
    transform.apply_licm to %loops_r : {any_op}
    %padA_r = transform.get_producer_of_operand %padded_r[0] : ({any_op}) -> {any_op}
    %hA_r = transform.structured.hoist_pad %padA_r by 1 loops : ({any_op}) -> {any_op}
{matmul._pack_b(reg_n, pack_tile_b, "_r") if pack_b else ""}\
    %cA_r, %lcA_r = transform.structured.tile_using_for %hA_r tile_sizes [0, {pack_tile_a}] : ({any_op}) -> ({any_op}, {any_op})
    transform.structured.vectorize %cA_r vector_sizes [{reg_m}, {pack_tile_a}] : {any_op}
{k_loop}    transform.structured.vectorize {k_step} {{create_named_contraction}} : {any_op}
"""
    for handle in [h for h in ([] if plain else [state["last"]]) + state["links"] + [state["fill"]] if h]:
        text += f"    transform.structured.vectorize {handle} : {any_op}\n"
    hoist = f"    transform.loop.hoist_loop_invariant_subsets %l3_r : {any_op}\n" if several_steps else ""
    text += f"""    transform.apply_patterns to {outer} {{
      transform.apply_patterns.canonicalization
    }} : {any_op}
    transform.apply_cse to {outer} : {any_op}
    %cleaned_loops_r = transform.structured.match ops{{["scf.for"]}} in {outer} : ({any_op}) -> {any_op}
    transform.apply_licm to %cleaned_loops_r : {any_op}
{hoist}    transform.apply_patterns to {outer} {{
      transform.apply_patterns.vector.cast_away_vector_leading_one_dim
      transform.apply_patterns.vector.lower_contraction lowering_strategy = "outerproduct"
      transform.apply_patterns.vector.transfer_permutation_patterns
      transform.apply_patterns.vector.lower_transpose
      transform.apply_patterns.canonicalization
    }} : {any_op}
"""
    text += (f"    %fe_r = transform.structured.match ops{{[\"func.func\"]}} in %root : ({any_op}) -> {any_op}\n"
             f"    transform.apply_dce to %fe_r : {any_op}\n")
    if bufferize or not several_steps:   # (no K loop to find the step's region by: the whole function, as row_parts)
        text += f"    transform.bufferization.eliminate_empty_tensors %fe_r : {any_op}\n"
    else:
        text += (f"    %own_loops_r = transform.merge_handles %l3_r : {any_op}\n"
                 + step_region("%own_loops_r", "%step_loops_r")
                 + f"    transform.bufferization.eliminate_empty_tensors %step_loops_r : {any_op}\n")
    return _module(text, bufferize, extra_sequences=LINALG_OP_MATCHER, serial_foralls=plain)


#: of L1, what the A panel of a register tile's rows over all of K may fill (_whole_k_block)
WHOLE_K_L1_FRACTION = 0.75
#: register tiles of N a B block over all of K has at the least (_whole_k_block)
WHOLE_K_MIN_TILES = 8


def _whole_k_block(params: dict, n: int, k: int, l1_bytes: int, l2_bytes: int) -> dict:
    """block_k = K and the widest block_n (whole register tiles, dividing `n`) whose packed B block over all of K
    stays within L2 (and the 1 MiB stack-buffer limit), where the A panel (reg_m x K) fits WHOLE_K_L1_FRACTION
    of L1 and the block has WHOLE_K_MIN_TILES register tiles (or all of N); {} where not."""
    reg_m, reg_n = params["reg_m"], params["reg_n"]
    if reg_m * k * 4 > WHOLE_K_L1_FRACTION * l1_bytes or params["reg_k"] > k or k % params["reg_k"]:
        return {}
    block_n = matmul._largest_divisor(n, max(min(1 << 20, l2_bytes) // (4 * k), 0), reg_n)
    if not block_n or block_n < min(n, WHOLE_K_MIN_TILES * reg_n):
        return {}
    return {"block_k": k, "block_n": block_n}


def epilogue_params(m: int, n: int, k: int, epilogue: int, threads: int = 1, in_registers: bool = True,
                    reads_whole_output: bool = False, **machine) -> dict:
    """matmul_epilogue parameters: the matmul's (matmul.default_params, per chunk with `threads`) and an
    epilogue tile of rows x 4 vectors (divisors of a chunk's M and N); in_registers=1 where K is one cache block
    (transformer layers' d_model = 256 projections, 1 thread on the AVX-512 host: 3.76 -> 3.16 ms for 1024 x
    1024 x 256 + bias + relu, the layer 16.6 -> 14.5 ms; K of several blocks measured even with the last block's
    epilogue in registers: docs/models-round13-linear.md). in_registers takes no row split: where M would get one
    (AVX2's 6-row tiles: M = 128, 256, 1024), it takes the narrower tile that divides M instead, the epilogue on
    its accumulators (AVX2 code, 1 thread, + bias + relu: 1024 x 1024 x 256 7.99 -> 5.79 ms, 256 x 1024 x 256
    2.11 -> 1.50: docs/models-round16-matmul.md). `in_registers` False: never (the split where it applies).
    `reads_whole_output`: the chain reads another tensor of the output's M x N (addmm's C, a residual): on one
    thread, for an output larger than L2 (the pass over it reads C and that tensor from memory), K of several
    cache blocks becomes one block where its B block and A panel fit the caches (`_whole_k_block`) and the
    epilogue goes on the accumulators too: the pass and the fill pass are gone (addmm 1024^3, AVX-512, 1 thread,
    CPU time: 22.9 -> 18.7, 26.9 -> 22.7, 30.6 -> 27.6, 28.5 -> 25.1 ms in alternated runs; an FFN2 + residual
    1024 x 256 x 1024, whose 1 MiB output stays in L2, was even, 5.95 / 5.87, and so was a bias-only chain)."""
    params = default_params(1, m, n, k, threads=threads, **machine)
    if in_registers and params["block_k"] == k and params.get("main_m"):
        params = default_params(1, m, n, k, threads=threads, row_split=False, **machine)
    lanes = max(machine.get("vector_bits", 512) // 32, 1)
    cm, cn = m // params.get("threads_m", 1), n // params.get("threads", 1)
    epi_n = next(t for t in (4 * lanes, 2 * lanes, lanes, 8, 4, 2, 1) if cn % t == 0)
    epi_m = next(t for t in (4, 2, 1) if cm % t == 0)
    params = dict(params, epilogue=epilogue, epi_m=epi_m, epi_n=epi_n, pack_b=matmul.pack_b_pays(cm, params["reg_m"]))
    if (in_registers and reads_whole_output and threads == 1 and params["block_k"] < k and not params.get("main_m")
            and 4 * m * n > machine.get("l2_bytes", 1 << 20)):
        params.update(_whole_k_block(params, cn, k, machine.get("l1_bytes", 32 << 10), machine.get("l2_bytes", 1 << 20)))
    if in_registers and params["block_k"] == k and not params.get("main_m"):
        # K in one cache block: the epilogue on the accumulators (no pass over the result; with fill_init, no fill)
        params["in_registers"] = 1
    return params


def matvec_tiling(rows: int = 8, vec_k: int = 64, op: str = "", bufferize: bool = True, threads: int = 1) -> str:
    """Every linalg.matvec (or the one with id `op`), y += A x: memory bound, no packing. K is split
    (tile_reduction_using_for) into a rows x vec_k partial-sum tile kept in vector registers along the
    whole K loop (elementwise FMAs on contiguous A rows), reduced horizontally once per row block.
    `threads` > 1: the rows first split into that many chunks (tasks on the async runtime)."""
    _check(rows=rows, vec_k=vec_k, threads=threads)
    split = (f"    %mvc, %mvf = transform.structured.tile_using_forall %mv num_threads [{threads}, 0]"
             f" : ({_ANY}) -> ({_ANY}, {_ANY})\n") if threads > 1 else f"    %mvc = transform.merge_handles %mv : {_ANY}\n"
    return _module(f"""
    %mv = {_match('linalg.matvec', op)}
{matmul.expect_one('%mv', op)}{split}    %rt, %rl = transform.structured.tile_using_for %mvc tile_sizes [{rows}, 0] : ({_ANY}) -> ({_ANY}, {_ANY})
    %fill, %partial, %merge, %kl = transform.structured.tile_reduction_using_for %rt by tile_sizes = [0, {vec_k}]
        : ({_ANY}) -> ({_ANY}, {_ANY}, {_ANY}, {_ANY})
    transform.structured.vectorize %fill : {_ANY}
    transform.structured.vectorize %partial : {_ANY}
    transform.structured.vectorize %merge : {_ANY}
    %fe = transform.structured.match ops{{["func.func"]}} in %root : ({_ANY}) -> {_ANY}
    transform.apply_cse to %fe : {_ANY}
    transform.loop.hoist_loop_invariant_subsets %kl : {_ANY}
    transform.apply_patterns to %fe {{
      transform.apply_patterns.canonicalization
    }} : {_ANY}
    transform.apply_patterns to %fe {{
      transform.apply_patterns.vector.lower_contraction lowering_strategy = "parallelarith"
      transform.apply_patterns.vector.lower_multi_reduction lowering_strategy = "innerreduction"
      transform.apply_patterns.vector.transfer_permutation_patterns
      transform.apply_patterns.canonicalization
    }} : {_ANY}
    transform.bufferization.eliminate_empty_tensors %fe : {_ANY}
""", bufferize)


def matvec_params(m: int, k: int, threads: int = 1, **machine) -> dict:
    """matvec_tiling parameters: 8 rows (4 if 8 does not divide M) x 4 vectors along K (divisors); with
    `threads` > 1, the most row chunks (at most that many) that divide M, the row block dividing a chunk."""
    lanes = max(machine.get("vector_bits", 512) // 32, 1)
    chunks = next(c for c in range(max(threads, 1), 0, -1) if m % c == 0)
    rows = next(r for r in (8, 4, 2, 1) if (m // chunks) % r == 0)
    # (a K loop of at least two steps where K allows: one step folds away under the schedule's
    # canonicalization, and its handle with it)
    vec_k = next((v for v in (4 * lanes, 2 * lanes, lanes, 8, 4, 2, 1) if k % v == 0 and v < k), k)
    return {"rows": rows, "vec_k": vec_k, **({"threads": chunks} if chunks > 1 else {})}
