"""A schedule for any one linalg op (CPU): tile its loops, optionally split the outermost parallel loop
over threads, and vectorize the tiles with masks (remainders of shapes that are no tile multiple).

``tile_vectorize(op=..., tile=[...], vector=1, threads=1)``:
  1. matches the one op whose ``lh.op`` id is ``op`` (``rewrite tag-ops`` sets the ids; ``inspect``
     shows them), whatever its kind (elementwise, broadcast, reduction, transpose, contraction, conv, ...);
  2. ``threads > 1``: ``tile_using_forall`` splits loop ``split`` (a parallel loop) into ``threads`` chunks
     (and loop ``split_also[0]`` into ``split_also[1]``: a 2-D forall),
     run as tasks on MLIR's async runtime after ``cpu-lower`` (``scf.forall`` -> ``scf.parallel`` ->
     ``async-parallel-for``);
  3. ``tile_using_for`` with ``tile`` (one size per loop, 0 = untiled): the selector tiles every loop
     by 1 except the vector loop, tiled by the vector width;
  4. ``vector=1``: ``structured.vectorize`` with ``vector_sizes`` = the tile sizes, so partial tiles at the end of a dimension run masked; the masks, masked
     transfers, multi-reductions and transposes are lowered to plain vector ops right away.
     ``vector=0`` leaves scalar loops (for ops the vectorizer does not take: non-projected
     indexing maps such as convolutions and pooling windows, reductions with several results).

Window ops (convolutions, pooling: an input indexed by sums such as ``oh * stride + kh``) take
``fold_unit_dims=1``: the tiles of their window loops and of all but two (or one) output loops are 1,
``interchange`` puts the window loops outside the spatial ones (the filter tile of one window
position is read once for all output positions), and the unit loops are folded away
(``fold_unit_extent_dims_via_slices``), which leaves a plain contraction (``contraction=1``: a
convolution's tile is a matmul ``out[f, w] += W[f, c] in[c, w]``, specialized to ``linalg.matmul``
and lowered to outer-product FMAs) or an elementwise op (depthwise convolution, pooling), vectorized
at its static size: the tile sizes must divide the loops (and the thread chunks), else the step
fails (a partial tile has a dynamic size).

Correct for any op with static or dynamic shapes (tiles at the boundary are partial); it stays on
tensors (pipelines/cpu/finish.py bufferizes the module once, after all per-op steps).
"""
from __future__ import annotations

from workbench.common.transform_text import transform_module

#: the functions a session may call as generators (`file.py[gen=NAME]`); nothing else here is callable
GENERATORS = ["tile_vectorize"]

PARAMS = {
    "op": {"help": "the id of the op to schedule (`inspect`; lh.op set by `rewrite tag-ops`), or a list of ids that all take these parameters"},
    "tile": {"help": "tile size per loop of the op (0: untiled)"},
    "vector": {"choices": [0, 1], "help": "1: vectorize the tiles (masked at the boundaries); 0: scalar loops"},
    "threads": {"min": 1, "max": 256, "help": "chunks of loop `split` run as parallel tasks (1: one thread)"},
    "split": {"min": 0, "help": "the (parallel) loop split over threads"},
    "split_also": {"help": "[loop, chunks]: a second parallel loop split too (threads x chunks tasks; a "
                           "convolution's batch: each task reads its share of the input, not all of it); empty: none"},
    "interchange": {"help": "the order of the tiled loops (loop dims, outermost first; empty: the op's order)"},
    "fold_unit_dims": {"choices": [0, 1], "help": "1: fold the unit loops of the tile away before vectorizing (window ops)"},
    "contraction": {"choices": [0, 1], "help": "1: the folded tile is a contraction: specialize it (linalg.matmul) and lower it to outer products"},
    "decompose": {"choices": [0, 1], "help": "1: the tile (kh and oh tiled by 1) becomes a 1-D convolution or pooling (transform.structured.decompose; named 2-D nchw/nhwc ops) vectorized by the convolution vectorizer (strides along w)"},
    "remainder": {"help": "with fold_unit_dims=1: [loop, at, size]: the op is split along `loop` at `at` (transform.structured.split) and the part after it, `size` long, tiled by `size` along it: both parts have static tiles where the tile does not divide the loop (empty: no split)"},
    "partial_reduction": {"min": -1, "help": "an inner reduction's loop (its index; -1: none) taken tile by tile into a vector of partial results (tile_reduction_using_for), reduced once per output at the end instead of once per tile"},
    "partial_outputs": {"min": 1, "help": "with partial_reduction: the op's number of results (a multi-result reduction: sibling sums of one input merged by lh-merge-sibling-reductions), each with its own fill and combining op"},
    "partial_peel": {"choices": [0, 1], "help": "with partial_reduction and vector=1: the reduction loop's last, partial tile peeled (transform.loop.peel): the main loop's tiles whole vectors (no mask, the partials a register value), the last tile alone under a mask; 0: every tile masked where the tile does not divide the loop"},
    "partial_chunk": {"min": 0, "help": "with partial_reduction: the reduction loop cut into chunks of this many iterations first, each summed into fresh partials (a two-level sum: rounding error ~ chunk/vector + extent/chunk, not extent/vector); 0: one running vector"},
    "folded_order": {"help": "with fold_unit_dims=1: the order of the folded tile's loops (empty: as they are), so that the output's innermost loop is the vector loop"},
    "partial_steps": {"help": "with partial_reduction: other reduction loops (outer rows of the same sum: an instance norm's H of H x W) walked one step at a time inside the accumulation into the partial vector, reduced once per output instead of once per row (empty: each row summed into fresh partials)"},
    "split_reduction": {"choices": [0, 1], "help": "1: loop `split` is a reduction loop, split over the `threads` chunks with partial results per chunk (tile_reduction_using_forall: a fill, the chunks' op, a combining op over the chunks' results): a reduction without a parallel loop (a whole-tensor sum) on every thread"},
    "cache_tile": {"help": "block sizes per loop (0: unblocked) of a first tiling, before `tile`: loops over cache-sized blocks (a reduction over rows read a block of rows at a time; a transpose by square blocks); empty: none"},
    "chain": {"min": 0, "help": "with a list of ops that accumulate one into the next (each op's init, operand "
                      "`chain_operand`, the result of the one before: a strided convolution's phases): the last op "
                      "tiled along loop 0 by this many (an scf.forall run serially) and every op before it fused into "
                      "that loop, each tile then scheduled as the parameters say: one image's output stays in cache "
                      "across the ops instead of being read and written back in memory by each (0: no chain)"},
    "chain_operand": {"min": -1, "help": "with chain: the operand of each op that is the result of the op before (its init; -1: none)"},
    "fuse_init": {"help": "with fold_unit_dims=1: the loops (outermost first, parallel ones in increasing order) of an "
                          "scf.forall (run serially: pipelines/cpu/finish.py makes it scf.for loops) whose tiles each "
                          "compute their slice of the init's producer (operand `init_operand`: a fill or a broadcast), "
                          "fused into it (and into the thread chunks): no pass over the whole output before the op; "
                          "empty: the init as it is (with threads > 1 and init_operand >= 0: fused into the chunks only)"},
    "init_operand": {"min": -1, "help": "the operand whose producer fuse_init fuses (-1: none)"},
    "init_tile": {"help": "with fuse_init: tile sizes (per dim of the fused init op) of a loop nest around its tile, "
                          "vectorized with masks at these sizes (a tile of the init larger than a register tile); "
                          "empty: the fused tile vectorized as it is (static: every output loop in fuse_init)"},
    "init_registers": {"choices": [0, 1], "help": "with fold_unit_dims=1, init_operand and fuse_init listing the output's "
                               "loops (the remainder's one too): the op tiled over those loops by `tile` with the init's "
                               "producer (a fill or a broadcast) fused into every tile (transform.structured.fuse), the "
                               "remainder's loop peeled (a last tile of `remainder`'s size): each register tile's "
                               "accumulators start from the init's vectors (no pass over the output before the op, no "
                               "write and read back of the init); 0: fuse_init's forall of the leading loops"},
    "gather": {"choices": [0, 1], "help": "1: `tensor.extract` in the body is vectorized too (vectorize_nd_extract): a contiguous load where the index is affine in the vector loop, else a vector.gather (lowered to 1-D gathers)"},
}


def _check_id(op: str) -> None:
    if not op or not all(c.isalnum() or c in "_-." for c in op):
        raise ValueError(f"op must be an op id like generic_0 (`inspect` lists them), got {op!r}")


def match_one(op: str, handle: str = "%target") -> str:
    """Transform ops binding `handle` to the linalg op with id `op`, failing unless there is exactly one."""
    _check_id(op)
    n = handle.lstrip("%")
    return (f'    {handle} = transform.structured.match interface{{LinalgOp}} attributes{{lh.op = "{op}"}} in %root'
            f' : (!transform.any_op) -> !transform.any_op\n'
            f"    %{n}_count = transform.num_associations {handle} : (!transform.any_op) -> !transform.param<i64>\n"
            f"    %{n}_one = transform.param.constant 1 : i64 -> !transform.param<i64>\n"
            f"    // op {op} must exist (`inspect` lists the ids)\n"
            f"    transform.match.param.cmpi eq %{n}_count, %{n}_one : !transform.param<i64>\n")


#: the attribute (+ its number of loops) of a fuse_init forall: run serially (finish.py makes it scf.for
#: loops once bufferized; an scf.forall of tensors has no conversion to scf.for)
SERIAL_FORALL = "lh.serial_forall"


# applied to the op's own loop nest only (other ops' vector code, e.g. a matmul's, is left alone); a
# 16x16 f32 transpose (a transposing copy tiled by 16x16 blocks) becomes two-source shuffles (others:
# element by element)
VECTOR_CLEANUP = """    transform.apply_patterns to %scope {
      transform.apply_patterns.vector.lower_masked_transfers
      transform.apply_patterns.vector.transfer_permutation_patterns
      transform.apply_patterns.vector.reduction_to_contract
      transform.apply_patterns.vector.lower_contraction lowering_strategy = "outerproduct"
      transform.apply_patterns.vector.lower_multi_reduction lowering_strategy = "innerreduction"
      transform.apply_patterns.vector.lower_transpose lowering_strategy = "shuffle_16x16"
      transform.apply_patterns.vector.lower_masks
      transform.apply_patterns.canonicalization
    } : !transform.any_op
"""


def tile_vectorize(op: str | list[str] = "", tile: list[int] = [], vector: int = 1, threads: int = 1, split: int = 0,
                   interchange: list[int] = [], fold_unit_dims: int = 0, contraction: int = 0,
                   folded_order: list[int] = [], decompose: int = 0, remainder: list[int] = [],
                   partial_reduction: int = -1, partial_chunk: int = 0, gather: int = 0,
                   cache_tile: list[int] = [], split_reduction: int = 0, partial_steps: list[int] = [],
                   split_also: list[int] = [], fuse_init: list[int] = [], init_operand: int = -1,
                   init_tile: list[int] = [], chain: int = 0, chain_operand: int = -1, init_registers: int = 0,
                   partial_outputs: int = 1, partial_peel: int = 0) -> str:
    """The transform module (MLIR text) scheduling op `op`: one id, or a list of ids (ops of the same
    shape and kind, e.g. the same layer at every time step of an unrolled RNN) that all take these
    parameters: one step instead of one per op. `chain`: the ops accumulate one into the next (in the
    list's order), fused into one loop along loop 0 first (_chain)."""
    ids = [str(i) for i in op] if isinstance(op, (list, tuple)) else [op]
    if not ids:
        raise ValueError("op must name at least one op")
    for i in ids:
        _check_id(i)
    chain, chain_operand = int(chain), int(chain_operand)
    # with a chain on threads, the thread chunks are the chain's outer forall (each core runs every op on its
    # images): each op's own schedule has none
    chunked = not (chain and threads > 1)
    body = _schedule_body(tile, vector, threads if chunked else 1, split if chunked else 0, interchange,
                          fold_unit_dims, contraction, folded_order, decompose, remainder, partial_reduction,
                          partial_chunk, gather, cache_tile, split_reduction if chunked else 0, partial_steps,
                          split_also if chunked else [], fuse_init, init_operand, init_tile, int(init_registers),
                          int(partial_outputs), int(partial_peel))
    if chain < 0 or (chain and (len(ids) < 2 or chain_operand < 0 or (threads > 1 and (split or split_also
                                                                                     or split_reduction))
                                or init_operand >= 0 or not tile or not tile[0] or chain % int(tile[0]))):
        raise ValueError("chain needs a list of ops, chain_operand, threads split along loop 0 (split=0) if any, "
                         f"no init_operand, and a multiple of tile[0]; got chain={chain} with {len(ids)} ops, "
                         f"chain_operand={chain_operand}")
    if len(ids) == 1:
        return transform_module(match_one(ids[0]) + body)
    # the schedule once, as a sequence applied to each op in turn
    one = (f"  transform.named_sequence @schedule_one(%target: !transform.any_op {{transform.consumed}}) {{\n"
           f"{body.rstrip(chr(10))}\n    transform.yield\n  }}\n")
    if chain:
        return transform_module(_chain(ids, chain, chain_operand, len(tile), threads), extra_sequences=one)
    main = "".join(match_one(i, f"%op{n}") + f"    transform.include @schedule_one failures(propagate) (%op{n})"
                   f" : (!transform.any_op) -> ()\n" for n, i in enumerate(ids))
    return transform_module(main, extra_sequences=one)


def _chain(ids: list[str], size: int, operand: int, rank: int, threads: int = 1) -> str:
    """Ops that accumulate one into the next (op k's operand `operand`, its init, is op k-1's result: the phases
    of lh-strided-conv-planes), the last tiled along loop 0 by `size` in an scf.forall (run serially:
    finish.py makes it an scf.for) and the ones before it fused into that loop from the last back (each through
    the forall's output: its tile computes the slice the next one's tile starts from), then each tile
    scheduled by @schedule_one. Per image the accumulated output (a 3x3 stride-2 conv's 64 x 56 x 57 plane:
    0.8 MB) stays in L2 from one op to the next instead of going to memory and back once per op. With
    threads > 1 the same first into `threads` chunks of loop 0 (a parallel forall), then by `size` inside."""
    a = "!transform.any_op"
    last = len(ids) - 1
    text = "".join(match_one(i, f"%op{n}") for n, i in enumerate(ids))
    for n in range(1, len(ids)):
        # each op reads a generic's result as its init (the one before it in the list: fused in that order)
        text += (f"    %init{n} = transform.get_producer_of_operand %op{n}[{operand}] : ({a}) -> {a}\n"
                 f"    transform.match.operation_name %init{n} [\"linalg.generic\"] : {a}\n")
    handles = [f"%op{n}" for n in range(len(ids))]
    levels = [("num_threads", threads, "t"), ("tile_sizes", size, "s")] if threads > 1 else [("tile_sizes", size, "s")]
    for kind, count, tag in levels:
        sizes = [count] + [0] * (rank - 1)
        text += (f"    %{tag}tile{last}, %{tag}forall{last} = transform.structured.tile_using_forall {handles[last]} "
                 f"{kind} {sizes} : ({a}) -> ({a}, {a})\n")
        for n in range(last - 1, -1, -1):
            text += (f"    %{tag}tile{n}, %{tag}forall{n} = transform.structured.fuse_into_containing_op {handles[n]} "
                     f"into %{tag}forall{n + 1} : ({a}, {a}) -> ({a}, {a})\n")
        handles = [f"%{tag}tile{n}" for n in range(len(ids))]
    text += f"    transform.annotate %sforall0 \"{SERIAL_FORALL}1\" : {a}\n"
    return text + "".join(f"    transform.include @schedule_one failures(propagate) ({h}) : ({a}) -> ()\n"
                          for h in handles)


def _schedule_body(tile, vector, threads, split, interchange, fold_unit_dims, contraction, folded_order,
                   decompose, remainder, partial_reduction, partial_chunk, gather=0, cache_tile=(),
                   split_reduction=0, partial_steps=(), split_also=(), fuse_init=(), init_operand=-1,
                   init_tile=(), init_registers=0, partial_outputs=1, partial_peel=0) -> str:
    """The schedule of the op bound to %target (transform ops, one per line)."""
    tile = [int(t) for t in tile]
    interchange = [int(i) for i in interchange]
    if any(t < 0 for t in tile):
        raise ValueError(f"tile sizes must be >= 0, got {tile}")
    if vector not in (0, 1):
        raise ValueError(f"vector must be 0 or 1, got {vector!r}")
    if not isinstance(threads, int) or threads < 1:
        raise ValueError(f"threads must be a positive int, got {threads!r}")
    if interchange and sorted(interchange) != list(range(len(tile))):
        raise ValueError(f"interchange must be a permutation of the {len(tile)} loops, got {interchange}")
    if fold_unit_dims not in (0, 1) or contraction not in (0, 1):
        raise ValueError("fold_unit_dims and contraction are 0 or 1")
    if decompose not in (0, 1) or (decompose and fold_unit_dims):
        raise ValueError("decompose is 0 or 1, and not with fold_unit_dims=1")
    if fold_unit_dims and not any(tile):
        raise ValueError("fold_unit_dims=1 needs tile sizes (the unit tiles are what is folded)")
    a = "!transform.any_op"
    text = ""
    handle = "%target"
    scope = None
    if split_reduction not in (0, 1) or (split_reduction and threads < 2):
        raise ValueError("split_reduction is 0 or 1, and needs threads > 1")
    split_also = [int(v) for v in split_also]
    if split_also and (len(split_also) != 2 or split_also[0] == split or split_also[0] < 0
                       or split_also[0] >= max(len(tile), 1) or split_also[1] < 1 or split_reduction or threads < 2):
        raise ValueError(f"split_also is [loop, chunks]: a parallel loop other than split={split} and its chunk "
                         f"count, with threads > 1 and no split_reduction; got {split_also}")
    init_operand = int(init_operand)
    fuse_init = [int(d) for d in fuse_init]
    init_tile = [int(t) for t in init_tile]
    if (fuse_init or init_tile) and init_operand < 0:
        raise ValueError("fuse_init and init_tile need init_operand (the operand whose producer is fused)")
    if init_operand >= 0 and (not fold_unit_dims or split_reduction or cache_tile):
        raise ValueError("init_operand (fusing the init's producer) needs fold_unit_dims=1, without split_reduction "
                         "or cache_tile")
    if init_registers not in (0, 1) or (init_registers and (not fuse_init or init_tile or decompose)):
        raise ValueError("init_registers is 0 or 1; 1 needs fuse_init (the output's loops) and no init_tile")
    if fuse_init and (len(set(fuse_init)) != len(fuse_init) or any(not 0 <= d < len(tile) or not tile[d] for d in fuse_init)
                      or (remainder and int(remainder[0]) in fuse_init and not init_registers)
                      or fuse_init != sorted(fuse_init)):
        raise ValueError(f"fuse_init must list tiled loops in increasing order, not the remainder's; got {fuse_init}")
    if threads > 1:
        counts = [0] * (max(split, split_also[0] if split_also else 0) + 1)
        counts[split] = threads
        if split_also:
            counts[split_also[0]] = split_also[1]
        if split_reduction:
            text += (f"    %chunks_fill, %chunk, %chunks_combine, %forall = transform.structured.tile_reduction_using_forall"
                     f"" f" %target by num_threads = {counts} : ({a}) -> ({a}, {a}, {a}, {a})\n")
        else:
            if init_operand >= 0:
                text += f"    %init_c = transform.get_producer_of_operand %target[{init_operand}] : ({a}) -> {a}\n"
            text += (f"    %chunk, %forall = transform.structured.tile_using_forall %target num_threads {counts}"
                     f" : ({a}) -> ({a}, {a})\n")
            if init_operand >= 0:
                # each chunk writes its own init (in its cache, on its core), not one core the whole output
                text += (f"    %init_cf, %forall_f = transform.structured.fuse_into_containing_op %init_c into %forall"
                         f" : ({a}, {a}) -> ({a}, {a})\n")
        handle = "%chunk"
        scope = "%forall"
    cache_tile = [int(t) for t in cache_tile]
    if cache_tile:
        if len(cache_tile) != len(tile) or any(t < 0 for t in cache_tile):
            raise ValueError(f"cache_tile needs one size >= 0 per loop ({len(tile)}), got {cache_tile}")
        blocking, blocks = _tile(handle, cache_tile, [], "_block")
        text += blocking
        handle = "%tiled_block"
        scope = scope or ("%loops_block#0" if blocks > 1 else "%loop_block" if blocks else None)
    if decompose:
        return text + _tile(handle, tile, interchange)[0] + _decompose_and_vectorize("%tiled", vector)
    if init_registers:
        return text + _init_in_registers(handle, tile, interchange, fuse_init, init_operand, remainder, vector,
                                         contraction, [int(i) for i in folded_order])
    if fold_unit_dims and init_operand >= 0 and (fuse_init or threads > 1):
        fused = "%init_cf"
        if fuse_init:
            # the tiles of the fuse_init loops, each with its slice of the init computed in it (in cache,
            # right before the op's tile reads it: a register tile's init is written and read back in L1)
            outer = [tile[d] if d in fuse_init else 0 for d in range(len(tile))]
            text += (f"    %init_p = transform.get_producer_of_operand {handle}[{init_operand}] : ({a}) -> {a}\n"
                     f"    %tiled_p, %forall_p = transform.structured.tile_using_forall {handle} tile_sizes {outer}"
                     f" : ({a}) -> ({a}, {a})\n"
                     f"    %init_pf, %forall_pf = transform.structured.fuse_into_containing_op %init_p into %forall_p"
                     f" : ({a}, {a}) -> ({a}, {a})\n"
                     f"    transform.annotate %forall_pf \"{SERIAL_FORALL}{len(fuse_init)}\" : {a}\n")
            handle, fused = "%tiled_p", "%init_pf"
            tile = [0 if d in fuse_init else t for d, t in enumerate(tile)]
        if not fuse_init and not init_tile:
            raise ValueError("an init fused into the thread chunks alone needs init_tile (its chunk is no register tile)")
        if init_tile and (len(init_tile) < 1 or any(t < 1 for t in init_tile)):
            raise ValueError(f"init_tile needs a size >= 1 per dim of the init, got {init_tile}")
        if init_tile:
            loops = sum(1 for t in init_tile if t)
            names = f"%init_loops:{loops}" if loops > 1 else "%init_loop"
            text += (f"    %init_t, {names} = transform.structured.tile_using_for {fused} tile_sizes {init_tile}"
                     f" : ({a}) -> ({', '.join([a] * (loops + 1))})\n"
                     f"    transform.structured.vectorize %init_t vector_sizes {init_tile} : {a}\n")
        elif vector:
            text += f"    transform.structured.vectorize {fused} : {a}\n"
    if fold_unit_dims:
        folded_order = [int(i) for i in folded_order]
        if folded_order and sorted(folded_order) != list(range(len(folded_order))):
            raise ValueError(f"folded_order must be a permutation, got {folded_order}")
        if not remainder:
            tiling, _ = _tile(handle, tile, interchange)
            return text + tiling + _fold_and_vectorize("%tiled", vector, contraction, folded_order)
        dim, at, size = (int(v) for v in remainder)
        if not 0 <= dim < len(tile) or at < 1 or size < 1:
            raise ValueError(f"remainder must be [loop, at, size] with a loop of the {len(tile)} and at, size >= 1")
        text += (f"    %parts = transform.structured.split {handle} after {at} {{dimension = {dim}}} : {a}\n"
                 f"    %main, %rest = transform.split_handle %parts : ({a}) -> ({a}, {a})\n")
        rest_tile = list(tile)
        rest_tile[dim] = size
        rest_order = _order_without_unit_loops(folded_order, tile, rest_tile)
        for part, part_tile, order in (("main", tile, folded_order), ("rest", rest_tile, rest_order)):
            tiling, _ = _tile(f"%{part}", part_tile, interchange, f"_{part}")
            text += tiling + _fold_and_vectorize(f"%tiled_{part}", vector, contraction, order, f"_{part}",
                                                 cleanup=False)
        return text + (_window_cleanup("%func_rest", contraction) if vector else "")
    if partial_reduction >= 0:
        return text + _partial_reduction(handle, tile, partial_reduction, vector, int(partial_chunk),
                                         [int(d) for d in partial_steps], int(partial_outputs), int(partial_peel))
    if partial_chunk or partial_steps or partial_peel:
        raise ValueError("partial_chunk, partial_steps and partial_peel need partial_reduction")
    tiling, loops = _tile(handle, tile, interchange)
    if loops:
        text += tiling
        handle = "%tiled"
        scope = scope or ("%loops#0" if loops > 1 else "%loop")
    if gather not in (0, 1) or (gather and not vector):
        raise ValueError("gather is 0 or 1, and needs vector=1")
    if vector:
        if not tile or 0 in tile:
            raise ValueError("vector=1 needs a tile size for every loop (they are the vector sizes)")
        extract = " {vectorize_nd_extract}" if gather else ""
        text += f"    transform.structured.vectorize {handle} vector_sizes {tile}{extract} : {a}\n"
        cleanup = VECTOR_CLEANUP.replace("transform.apply_patterns.vector.lower_masks\n",
                                         "transform.apply_patterns.vector.lower_masks\n"
                                         "      transform.apply_patterns.vector.lower_gather\n") if gather else VECTOR_CLEANUP
        text += cleanup.replace("%scope", scope) if scope else ""
    return text


#: attributes that mark the op's register tiles and its fused init's tiles across the peeling (which clones them)
REGISTER_TILE, REGISTER_INIT = "lh.register_tile", "lh.register_init"


def _init_in_registers(handle: str, tile: list, interchange: list, loops: list, init_operand: int, remainder: list,
                       vector: int, contraction: int, folded_order: list) -> str:
    """init_registers=1: the op's output loops (`loops`) tiled by `tile` in the interchange's order with the
    producer of its init (operand `init_operand`) fused into the innermost tile (transform.structured.fuse follows
    the loops' iter_args to it), the remainder's loop (if any) peeled so that both its parts have static tiles,
    then in every register tile the other loops tiled, unit dims folded and vectorized as _fold_and_vectorize
    does: the init's vector write of a tile and the read of the accumulators before the reduction loops fold
    into one value (the accumulators start from the bias)."""
    a = "!transform.any_op"
    order = interchange or list(range(len(tile)))
    outer = [tile[d] if d in loops else 0 for d in range(len(tile))]
    inner = [0 if d in loops else t for d, t in enumerate(tile)]
    tiled = [d for d in order if outer[d]]
    count = len(tiled)
    names = f"%rloops:{count}" if count > 1 else "%rloop"
    text = (f"    %rinit = transform.get_producer_of_operand {handle}[{init_operand}] : ({a}) -> {a}\n"
            f"    transform.annotate %rinit \"{REGISTER_INIT}\" : {a}\n"
            f"    transform.annotate {handle} \"{REGISTER_TILE}\" : {a}\n"
            f"    %rtile, {names} = transform.structured.fuse {handle} tile_sizes {outer} interchange {order}"
            f" : ({a}) -> ({', '.join([a] * (count + 1))})\n"
            f"    %rfunc = transform.get_parent_op %rtile {{op_name = \"func.func\"}} : ({a}) -> {a}\n")
    if remainder:
        dim = int(remainder[0])
        if dim not in tiled:
            raise ValueError(f"init_registers: the remainder's loop {dim} must be one of fuse_init's {loops}")
        loop = f"%rloops#{tiled.index(dim)}" if count > 1 else "%rloop"
        text += (f"    %rpeel = transform.cast {loop} : {a} to !transform.op<\"scf.for\">\n"
                 f"    %rmain, %rrest = transform.loop.peel %rpeel : (!transform.op<\"scf.for\">) -> ({a}, {a})\n")
    # (the peeled tile's sizes folded to constants: static tiles to vectorize; one-trip loops folded too)
    text += (f"    transform.apply_patterns to %rfunc {{\n      transform.apply_patterns.canonicalization\n    }} : {a}\n"
             f"    %rinits = transform.structured.match attributes{{{REGISTER_INIT}}} in %rfunc : ({a}) -> {a}\n"
             f"    %rops = transform.structured.match attributes{{{REGISTER_TILE}}} in %rfunc : ({a}) -> {a}\n")
    if vector:
        text += f"    transform.structured.vectorize %rinits : {a}\n"
    # (then the init's vector write of a tile (vector<1x..>: its unit dims kept) and the accumulators' read of the
    # folded tile as one vector value: the write's leading unit dims cast away, the read's rank-reducing slice
    # folded into it, read-after-write folded)
    forward = (f"    transform.apply_patterns to %rfunc {{\n"
               f"      transform.apply_patterns.vector.cast_away_vector_leading_one_dim\n"
               f"      transform.apply_patterns.tensor.fold_tensor_subset_ops_into_vector_transfers\n"
               f"      transform.apply_patterns.canonicalization\n    }} : {a}\n") if vector else ""
    if not remainder:
        tiling, _ = _tile("%rops", inner, interchange, "_r")
        return text + tiling + _fold_and_vectorize("%tiled_r", vector, contraction, folded_order, "_r") + forward
    # the main tiles' op, then the peeled one's (in the function's order)
    text += f"    %rops_main, %rops_rest = transform.split_handle %rops : ({a}) -> ({a}, {a})\n"
    rest_tile = list(tile)
    rest_tile[int(remainder[0])] = int(remainder[2])
    for part, order in (("main", folded_order), ("rest", _order_without_unit_loops(folded_order, tile, rest_tile))):
        tiling, _ = _tile(f"%rops_{part}", inner, interchange, f"_r{part}")
        text += tiling + _fold_and_vectorize(f"%tiled_r{part}", vector, contraction, order, f"_r{part}", cleanup=False)
    return text + (_window_cleanup("%func_rrest", contraction) if vector else "") + forward


#: the partial op of a peeled reduction loop (both its copies: the main loop's and the last tile's)
PARTIAL_TILE = "lh.partial_tile"


def _partial_reduction(handle: str, tile: list, loop: int, vector: int, chunk: int = 0,
                       steps: list = (), outputs: int = 1, peel: int = 0) -> str:
    """An inner reduction: every loop but `loop` tiled as `tile` says (1: one output at a time), then
    `loop` by tile[loop] into a vector of partial results (transform.structured.tile_reduction_using_for:
    a fill, the partial op, the combining op), each vectorized: one horizontal reduction per output.
    `outputs` > 1: an op of several results (sibling sums of one input): a fill and a combining op per
    result, the partial op one for all (one read of the input).

    ``chunk > 0``: `loop` is first cut into chunks of `chunk` iterations, each summed into fresh partials
    and added to the output once: a two-level sum, whose rounding error grows with chunk/vector +
    extent/chunk instead of extent/vector (a 16M-element f32 loss sum stays within 1e-5 of an exact
    one, where one running vector drifts by percents)."""
    a = "!transform.any_op"
    if not 0 <= loop < len(tile) or tile[loop] < 2:
        raise ValueError(f"partial_reduction={loop}: needs the index of a loop whose tile size is the vector width")
    if chunk and (chunk < 2 * tile[loop] or chunk % tile[loop]):
        raise ValueError(f"partial_chunk={chunk}: must be a multiple of the vector tile {tile[loop]}, at least twice it")
    if loop in steps or any(not 0 <= d < len(tile) for d in steps):
        raise ValueError(f"partial_steps={list(steps)}: loops of the op other than partial_reduction={loop}")
    if peel not in (0, 1) or (peel and (chunk or steps or not vector)):
        raise ValueError(f"partial_peel={peel}: 0 or 1, and 1 only with vector=1 and no partial_chunk or partial_steps")
    outer = list(tile)
    outer[loop] = chunk
    for d in steps:
        outer[d] = 0   # walked inside the accumulation (below), not around it
    text, loops = _tile(handle, outer, [], "_rows")
    rows = "%tiled_rows" if loops else handle
    sizes = [0] * len(tile)
    sizes[loop] = tile[loop]
    vector_sizes = [t if i == loop else (t or 1) for i, t in enumerate(tile)]
    if outputs < 1:
        raise ValueError(f"partial_outputs={outputs}: the op's number of results, at least 1")
    if outputs == 1:
        text += (f"    %partial_fill, %partial_op, %combine, %k_loop = transform.structured.tile_reduction_using_for"
                 f" {rows} by tile_sizes = {sizes} : ({a}) -> ({a}, {a}, {a}, {a})\n")
        fills, combines = ["%partial_fill"], ["%combine"]
    else:   # (results: a fill per result, the partial op, a combining op per result, the loop)
        fills = [f"%partial_fill{i}" for i in range(outputs)]
        combines = [f"%combine{i}" for i in range(outputs)]
        names = ", ".join(fills + ["%partial_op"] + combines + ["%k_loop"])
        text += (f"    {names} = transform.structured.tile_reduction_using_for {rows} by tile_sizes = {sizes}"
                 f" : ({a}) -> ({', '.join([a] * (2 * outputs + 2))})\n")
    partial = "%partial_op"
    if steps:
        # the other reduction loops one step at a time around each vector step of the partial op
        step_tile = [1 if d in steps else 0 for d in range(len(tile))]
        step_loops = len(steps)
        names = f"%steps:{step_loops}" if step_loops > 1 else "%step"
        text += (f"    %partial_step, {names} = transform.structured.tile_using_for %partial_op tile_sizes {step_tile}"
                 f" : ({a}) -> ({', '.join([a] * (step_loops + 1))})\n")
        partial = "%partial_step"
        for d in steps:
            vector_sizes[d] = 1
    if not vector:
        return text
    if loops:
        scope = "%loops_rows#0" if loops > 1 else "%loop_rows"
    else:  # no loop around the whole: the combining op (after the K loop) and a K loop of one trip,
        # which canonicalization folds away, are lowered in the function
        scope = "%partial_func"
        text += f"    %partial_func = transform.get_parent_op {fills[0]} {{op_name = \"func.func\"}} : ({a}) -> {a}\n"
    if peel:
        # the last tile apart; the main loop's sizes fold to constants (static, whole-vector tiles)
        text += (f"    transform.annotate {partial} \"{PARTIAL_TILE}\" : {a}\n"
                 f"    %k_for = transform.cast %k_loop : {a} to !transform.op<\"scf.for\">\n"
                 f"    %k_main, %k_last = transform.loop.peel %k_for : (!transform.op<\"scf.for\">) -> ({a}, {a})\n"
                 f"    transform.apply_patterns to {scope} {{\n      transform.apply_patterns.canonicalization\n"
                 f"    }} : {a}\n"
                 f"    %partial_tiles = transform.structured.match attributes{{{PARTIAL_TILE}}} in {scope}"
                 f" : ({a}) -> {a}\n")
        partial = "%partial_tiles"
    text += f"    transform.structured.vectorize {partial} vector_sizes {vector_sizes} : {a}\n"
    # the fills and the combining ops have static shapes (every other loop tiled by 1): no sizes
    text += "".join(f"    transform.structured.vectorize {h} : {a}\n" for h in fills + combines)
    if steps:  # the step loops' unit dims reduced first (a plain vector add), before the lowering would
        # take the unit-dim reduction apart lane by lane
        text += f"    transform.apply_patterns to {scope} {{\n      transform.apply_patterns.canonicalization\n    }} : {a}\n"
    if peel:
        # the main loop's read and write of its whole partials tile (their constants moved out first): a
        # vector the loop carries, in registers, instead of a store and a load of the partials every step
        text += (f"    %k_loops = transform.structured.match ops{{[\"scf.for\"]}} in {scope} : ({a}) -> {a}\n"
                 f"    transform.apply_licm to %k_loops : {a}\n"
                 f"    transform.loop.hoist_loop_invariant_subsets %k_loops : {a}\n")
    return text + VECTOR_CLEANUP.replace("%scope", scope)


def _order_without_unit_loops(folded_order: list, tile: list, part_tile: list) -> list:
    """`folded_order` (the order of the loops that folding a `tile` leaves: those not tiled by 1) for a part
    whose tile `part_tile` is 1 along more loops (a remainder of size 1): those loops fold away too, so their
    entries leave the order and the rest keep their relative order (empty where one loop or none is left).
    On AVX2 a depthwise window's remainder row of 1 left the folded op one loop for an order of two."""
    kept = [d for d, t in enumerate(tile) if t != 1]
    if not folded_order or len(folded_order) != len(kept):
        return folded_order
    left = [i for i, d in enumerate(kept) if part_tile[d] != 1]
    order = [i for i in folded_order if i in left]
    order = [left.index(i) for i in order]
    return order if len(order) > 1 else []


def _tile(handle: str, tile: list, interchange: list, suffix: str = "") -> tuple[str, int]:
    """tile_using_for of `handle` (results %tiled{suffix}, %loops{suffix} or %loop{suffix}); the number of loops."""
    a = "!transform.any_op"
    loops = sum(1 for t in tile if t)
    if not loops:
        return f"    %tiled{suffix} = transform.merge_handles {handle} : {a}\n", 0
    results = ", ".join([a] * (loops + 1))
    order = f" interchange = {interchange}" if interchange else ""
    names = f"%loops{suffix}:{loops}" if loops > 1 else f"%loop{suffix}"
    return (f"    %tiled{suffix}, {names} = transform.structured.tile_using_for {handle} tile_sizes {tile}{order}"
            f" : ({a}) -> ({results})\n"), loops


def _decompose_and_vectorize(handle: str, vector: int) -> str:
    """The tile as a 1-D convolution or pooling, vectorized by the convolution vectorizer (strided reads
    of a contiguous input vector), the filter tile hoisted out of the spatial loops."""
    a = "!transform.any_op"
    text = (f"    %decomposed = transform.structured.decompose {handle} : ({a}) -> {a}\n"
            f"    %func = transform.get_parent_op %decomposed {{op_name = \"func.func\"}} : ({a}) -> {a}\n")
    if not vector:
        return text
    return text + f"""    transform.structured.vectorize %decomposed : {a}
    transform.apply_patterns to %func {{
      transform.apply_patterns.canonicalization
    }} : {a}
    %all_loops = transform.structured.match ops{{["scf.for"]}} in %func : ({a}) -> {a}
    transform.apply_licm to %all_loops : {a}
""" + VECTOR_CLEANUP.replace("%scope", "%func")


def _fold_and_vectorize(handle: str, vector: int, contraction: int, folded_order: list, suffix: str = "",
                        cleanup: bool = True) -> str:
    """Generalize the tile, fold its unit loops inside its innermost loop (patterns applied there only,
    so the loop stays and the folded op can be found in it again), vectorize; then, over the function,
    hoist what does not depend on the inner loops (the filter tile) and lower the vectors (`cleanup`;
    `_window_cleanup`). `suffix` makes the handle names unique (a peeled loop's two tiles)."""
    a = "!transform.any_op"
    inner, func, folded = f"%inner{suffix}", f"%func{suffix}", f"%folded{suffix}"
    text = (f"    %general{suffix} = transform.structured.generalize {handle} : ({a}) -> {a}\n"
            f"    {inner} = transform.get_parent_op %general{suffix} {{op_name = \"scf.for\"}} : ({a}) -> {a}\n"
            f"    transform.apply_patterns to {inner} {{\n"
            f"      transform.apply_patterns.linalg.fold_unit_extent_dims_via_slices\n"
            f"      transform.apply_patterns.canonicalization\n"
            f"    }} : {a}\n"
            f"    {folded} = transform.structured.match ops{{[\"linalg.generic\"]}} in {inner} : ({a}) -> {a}\n"
            f"    {func} = transform.get_parent_op {inner} {{op_name = \"func.func\"}} : ({a}) -> {a}\n")
    if folded_order:   # the output's innermost loop last: the vector loop, no transposed reads
        text += (f"    %reordered{suffix} = transform.structured.interchange {folded} iterator_interchange = {folded_order}"
                 f" : ({a}) -> {a}\n")
        folded = f"%reordered{suffix}"
    if not vector:
        return text
    if contraction:
        text += (f"    %contraction{suffix} = transform.structured.specialize {folded} : ({a}) -> {a}\n"
                 f"    transform.structured.vectorize %contraction{suffix} {{create_named_contraction}} : {a}\n")
    else:
        text += f"    transform.structured.vectorize {folded} : {a}\n"
    return text + (_window_cleanup(func, contraction) if cleanup else "")


def _window_cleanup(func: str, contraction: int) -> str:
    """Over the function `func`: contraction patterns (a convolution's tile), loop-invariant code motion
    (the filter tile out of the spatial loops), loop-invariant subsets hoisted (the output tile read once
    before the input-channel and window loops and written once after them, a vector the loops carry: it
    was read and written back in every block; 1 thread of the 16-core Xeon, conv2d 3x3 64->64 at 8x56x56
    26.9 -> 15.3 ms, conv_block 20-28 -> 16-22, conv3d 20-26 -> 18), vector lowering. Function-wide canonicalization: it
    comes after every other transform of the step, whose handles it could leave dangling."""
    a = "!transform.any_op"
    # an elementwise tile (depthwise, pooling) keeps its elementwise vector ops: the reduction-to-contract
    # patterns would fold its broadcast filter into a vector.contract without reduction, lowered element
    # by element
    cleanup = VECTOR_CLEANUP if contraction else "\n".join(
        line for line in VECTOR_CLEANUP.splitlines() if "contract" not in line) + "\n"
    return (f"""    transform.apply_patterns to {func} {{
      transform.apply_patterns.vector.reduction_to_contract
      transform.apply_patterns.canonicalization
    }} : {a}
""" if contraction else "") + f"""    %all_loops = transform.structured.match ops{{["scf.for"]}} in {func} : ({a}) -> {a}
    transform.apply_licm to %all_loops : {a}
    transform.loop.hoist_loop_invariant_subsets %all_loops : {a}
""" + cleanup.replace("%scope", func)
