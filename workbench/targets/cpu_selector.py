"""The CPU selector's per-op choice for ops outside the matmul family: classify the op by its loop
structure (iterator types, indexing maps, body ops, as `inspect` reports them under `loops`) and
size pipelines/cpu/generic.py's tiles for its shape and the host's vector width.

Classes (by structure, not by op name):
  elementwise  all loops parallel, projected-permutation maps (identity, broadcast, transpose, fill)
  reduction    reduction loops, one result whose body combines with a recognised combiner
               (add, mul, max, min, and, or, xor): inner (the output lacks the innermost loop) or
               outer (the output keeps it: vectors along the output, a loop over the reduced dims)
  window       convolutions and pooling (an input indexed by sums of loops, `oh * stride + kh`; every
               map linear, the output's a projected permutation): the window loops and all but the
               output's innermost loop and one channel loop tiled by 1 and folded away, which leaves a
               matmul tile (`out[f, w] += W[f, c] in[c, w]`: outer-product FMAs, vectors along w) or an
               elementwise one (depthwise, pooling); with a stride along w, vectors go along the
               channels instead (w tiled by 1)
  reduction-by-steps  reductions the vectorizer does not take as one (several results: a max with
               its index): the reduction loops tiled by 1 and folded, vectors along the outputs
  gather       all loops parallel, loads at computed indices (`tensor.extract`) with index arithmetic
               around them (reflect pads, unfold, interpolation): vectorized like an elementwise op, the
               loads as vector.gather (contiguous loads where the vectorizer sees the index affine in the
               vector loop); plain gathers (flips) stay scalar loops unless their loads are contiguous
               (`contiguous_loads`: index_select, embeddings, pads after lh-gather-indices)
  scalar       anything else the vectorizer does not take (maps with floordiv/mod; bodies with asserts):
               loops, split over threads
"""
from __future__ import annotations

import math

from typing import Any, NamedTuple

from workbench.common.dtypes import element_type_of as _element_type

GENERIC_SCHEDULE = "cpu/generic.py"
GENERIC_GENERATOR = "tile_vectorize"

#: body ops the vectorizer recognises as reduction combiners
COMBINERS = {"arith.addf", "arith.mulf", "arith.maximumf", "arith.minimumf", "arith.maxnumf", "arith.minnumf",
             "arith.addi", "arith.muli", "arith.andi", "arith.ori", "arith.xori", "arith.maxsi", "arith.minsi",
             "arith.maxui", "arith.minui"}
#: ops that belong to their consumer's group (the init of a matmul or reduction): no step of their own
#: (tiling a fill apart from the matmul it initializes defeats the matmul schedule's packing)
GROUPED_WITH_CONSUMER = {"linalg.fill"}
#: body ops that keep an op scalar: asserts (the vectorizer refuses them), gathers (`tensor.extract`
#: with computed indices), integer powers (`math.fpowi` on vectors has no LLVM lowering here)
SCALAR_BODY_OPS = {"cf.assert", "tensor.extract", "math.fpowi", "math.ipowi"}
#: element types that keep an op scalar when an operand has them: complex numbers (a vector holds
#: integers, floats and indices only: upstream's complex matmul tests failed to vectorize). Bool buffers,
#: widened to bytes by lh-widen-i1-memrefs, take vector transfers.
SCALAR_ELEMENT_TYPES: set[str] = {"complex<f16>", "complex<bf16>", "complex<f32>", "complex<f64>"}
#: element types whose reductions stay scalar loops (the vector lowering leaves their multi_reduction)
BOOL_TYPES = {"i1"}   # (of the outputs: a reduction over bools; an i1 mask input is no obstacle)
#: work (iterations) below which a thread split costs more than it saves
MIN_PARALLEL_WORK = 1 << 15
#: a gathered element counts this many iterations of work: it may read a cache line of its own (a reflect
#: pad's border column reads one element per input row: 29k of them took 0.8 ms on one core of the 16-core
#: Xeon, left on one core below MIN_PARALLEL_WORK)
GATHER_WORK = 8
#: inner reductions longer than twice this are summed chunk by chunk into fresh partial vectors (a
#: two-level sum: f32 rounding error ~ chunk/lanes + extent/chunk instead of extent/lanes)
REDUCTION_CHUNK = 4096
#: a reduction taken step by step with vectors along its outputs walks blocks of this many reduced rows ...
REDUCTION_BLOCK = 128
#: ... by this many outputs (a block of rows stays in L2, the walk down them within a few pages)
OUTPUT_BLOCK = 512


#: named ops that transform.structured.decompose turns into 1-D ones once their height loops are tiled by
#: 1 (the convolution vectorizer then takes strides along w, which the folded tiles cannot vectorize)
DECOMPOSABLE = {"linalg.conv_2d_nchw_fchw", "linalg.pooling_nchw_max", "linalg.pooling_nchw_sum"}

#: reduction-channel extent above which the window schedule tiles the channels (the vector contraction
#: over the whole tile is unrolled: code size) and the tile it takes
MAX_CHANNEL_TILE = 64
#: a convolution's register tile with vectors along w: this many output channels by one vector, over
#: blocks of this many input channels. The folded tile's filter block (channels x input channels
#: scalars) is hoisted out of the spatial loops: it must stay in registers (a 16 x 64 block, 1024
#: broadcasts spilled to the stack, ran at 2.5x the time of 8 x 8 on a 3x3 conv, 64 channels)
CONV_OUTPUT_CHANNEL_BLOCK = 8
CONV_INPUT_CHANNEL_BLOCK = 8
#: a strided convolution (the 1-D convolution vectorizer's vectors along the output channels): output
#: positions per register tile
STRIDED_CONV_OUTPUT_RUN = 4
#: a convolution whose w tile is whole vectors accumulates its register tile (output channels x vectors
#: along w) over the window and the input channels inside the spatial loops: the accumulators stay in
#: registers, the filter scalars are broadcast from L1 (the output tile is not streamed through the
#: caches once per window position and channel block: JIT cycles under perf, one thread, conv3d
#: 4x16x30^3 -36%, 3x5 no-bias -31%, grouped/dilated -35%, conv1d -18%, transposed -25%, 1x1 -12%); two
#: vectors along w where they divide it and the tile takes at most this fraction of the vector registers
#: (conv3d 290 -> 226 Mcycles, 25.3 -> 19.6 ms)
CONV_ACCUMULATOR_FRACTION = 0.5
#: where the register file holds no tile of CONV_OUTPUT_CHANNEL_BLOCK channels x two vectors within
#: CONV_ACCUMULATOR_FRACTION (AVX2: 16 registers), a convolution over rows of at least two whole vectors takes
#: half the channels (at least this many) x two vectors: per input channel and tap one load and 8 broadcasts
#: fed 8 multiply-adds, now 2 loads and 4 broadcasts. conv2d_3x3 (8 x 64 x 56 x 56, 64 -> 64) on one core of
#: a Zen 3, bench/ab_lowered.py cpu ms per call: 42.6 -> 39.8, 42.3 -> 38.0. Only with window taps: a 1x1
#: convolution (lh-pointwise-convs' conv_1d over 784 positions, 256 -> 256 channels) ran 16.6 -> 20.9 with it
FEW_REGISTERS_MIN_CHANNELS = 4
#: A pointwise convolution on few registers takes that tile too, with its spatial loops
#: outside the output-channel blocks (the tile alone, channel blocks outermost, was slower: the 16.6 -> 20.9
#: above). conv2d_1x1 (8 x 256 x 28 x 28, 256 -> 256, lh-pointwise-convs' conv_1d over 784 positions) on one
#: core of this Zen 3, bench/ab_lowered.py cpu ms per call (docs/models-round18-avx2.md): 18.9 -> 12.6,
#: 24.8 -> 17.9 (8 channels x 1 vector, channel blocks outermost -> 4 x 2, w outermost); with a filter larger
#: than the L2 (2 x 512 x 28 x 28, 512 -> 512: 1 MB, streamed from L3 once per w tile) 18.8 -> 14.6
#: a row of at least this many vectors takes tiles of two vectors and a remainder tile where two do not
#: divide it (the remainder is one tile per row: little of a long one)
LONG_ROW_VECTORS = 8


def _window_roles(loops: dict) -> dict | None:
    """The loops of a window op by role, None when the op is no window op: `window` (reduction loops
    added to an output loop in an input index), `spatial` (output loops such indices add to), `channels`
    (the other reductions: a convolution's input channels), `w` (the output's innermost loop) and its
    `stride` (its coefficient in the input indices)."""
    terms, iterators = loops.get("operand_terms"), loops["iterators"]
    n_inputs = loops.get("num_inputs")
    if not terms or n_inputs is None or len(terms) != n_inputs + 1 or n_inputs < 1:
        return None
    if any(t is None for operand in terms for t in operand):
        return None
    out_dims = loops["operand_dims"][-1]
    if not out_dims or -1 in out_dims or len(set(out_dims)) != len(out_dims):
        return None
    window, spatial, stride = set(), set(), {}
    for operand in terms[:-1]:
        for expr in operand:
            if len(expr) < 2:
                continue
            for dim, coefficient in expr:
                if iterators[dim] == "reduction":
                    window.add(dim)
                else:
                    spatial.add(dim)
                    stride[dim] = max(stride.get(dim, 1), abs(coefficient))
    if not window or not spatial <= set(out_dims):
        return None
    w = out_dims[-1]
    domain = loops.get("domain") or []
    if len(domain) == len(iterators) and domain[w] == 1:
        # a unit innermost output loop (torch-mlir's grouped Conv1d: a 2-D convolution over a trailing
        # width of 1): vectors go along the innermost spatial loop that has more than one position, as
        # for the 1-D convolution (along the output channels they ran at 2.8 GFLOP/s: Wav2Vec2's
        # positional convolution, 28% of the model's time)
        longer = [d for d in out_dims if d in spatial and (domain[d] or 0) > 1]
        if longer:
            w = longer[-1]
    if iterators[w] != "parallel":
        return None
    channels = [d for d, it in enumerate(iterators) if it == "reduction" and d not in window]
    return {"window": sorted(window), "spatial": sorted(spatial), "channels": channels, "w": w,
            "stride": stride.get(w, 1)}


#: the body ops of a plain multiply-accumulate (with element casts), which `specialize` matches as a named contraction
MULTIPLY_ADD_BODY = frozenset({"arith.mulf", "arith.addf", "arith.muli", "arith.addi", "arith.extf", "arith.extsi",
                               "arith.extui", "arith.sitofp", "arith.uitofp", "arith.truncf", "arith.trunci",
                               "linalg.yield"})


def window_params(loops: dict, lanes: int, element_types: set[str] = frozenset(), split: int | None = None,
                  threads: int = 1, name: str = "", vector_registers: int = 32) -> dict | None:
    """pipelines/cpu/generic.py parameters (tile, interchange, fold_unit_dims, contraction) for a window
    op, each tile a divisor of its loop (of the thread chunk for loop `split`): the folded tile is
    vectorized at its static size. None when the op is no window op or its body no multiply-add or
    combiner."""
    roles = _window_roles(loops)
    if roles is None or SCALAR_BODY_OPS & set(loops["body"]) or SCALAR_ELEMENT_TYPES & element_types:
        return None
    body = set(loops["body"])
    contraction = bool(roles["channels"])
    if contraction and not ({"arith.mulf", "arith.addf"} <= body or {"arith.muli", "arith.addi"} <= body):
        return None
    if not contraction and not (COMBINERS | {"arith.mulf", "arith.muli"}) & body:
        return None
    domain, iterators = loops["domain"], loops["iterators"]
    if any(d is None or d < 1 for d in domain):
        return None   # dynamic sizes: the vector sizes must be static
    out_dims = loops["operand_dims"][-1]
    w = roles["w"]
    # the channel loop blocked: an output loop that is neither spatial nor w, the one the first input
    # does not use (a convolution's output channels) first, then the largest
    first_input = {d for expr in loops["operand_terms"][0] for d, _ in expr}
    candidates = [d for d in out_dims[:-1] if d not in roles["spatial"] and domain[d] > 1]
    block = max(candidates, key=lambda d: (d not in first_input, domain[d]), default=None)
    extent = [d // threads if i == split else d for i, d in enumerate(domain)]
    if roles["stride"] > 1 and name in DECOMPOSABLE:
        return _decomposed_params(loops, roles, block, extent, lanes, contraction)
    tile = [1] * len(domain)
    remainder = []
    if roles["stride"] == 1:
        # vectors along w, `block` blocked (register tile block x w); a w that is no multiple of the
        # vector width is split: whole vectors, then one tile of the rest (both static)
        tile[w] = min(extent[w], lanes)
        if (contraction and lanes < extent[w] < LONG_ROW_VECTORS * lanes and extent[w] % lanes
                and extent[w] % (lanes // 2) == 0):
            # half vectors that divide w: one tile shape, no remainder part (a 3x3 conv, w = 56 with
            # 16 lanes: 20 ms against 25 for 3 x 16 + 8). Not for long rows (a plane of lh-conv-planes: a
            # stride-2 phase's 56 x 57 = 3192 positions): whole vectors and a remainder tile there, whose
            # output tile stays in registers across the window and the channels (generic.py hoists it);
            # half vectors put the channels outside the spatial loops, the output tile read and written
            # back once per window position and channel block. (Measured 0.78-0.95x as fast on the Zen 4
            # host before that hoisting, when the whole-vector tile re-read its output every step too.)
            tile[w] = lanes // 2
        elif extent[w] > lanes and extent[w] % lanes:
            remainder = [w, extent[w] - extent[w] % lanes, extent[w] % lanes]
            if contraction and remainder[2] == 1:
                # a rest of one column folds to a matrix-vector tile, which no named contraction matches:
                # the last whole vector goes with it (513 = 31 x 16 + 17)
                remainder = [w, remainder[1] - lanes, lanes + 1]
        if block is not None:
            tile[block] = _divisor_at_most(extent[block], CONV_OUTPUT_CHANNEL_BLOCK if contraction else 4)
    elif block is not None:
        # a stride along w: vectors along the blocked channels, w one by one
        tile[block] = _divisor_at_most(extent[block], 2 * lanes)
    else:
        return None
    channel_tile = CONV_INPUT_CHANNEL_BLOCK if roles["stride"] == 1 else MAX_CHANNEL_TILE
    for d in roles["channels"]:
        tile[d] = 0 if domain[d] <= channel_tile else _divisor_at_most(domain[d], channel_tile)
    if all(tile[d] == 1 for d in range(len(domain)) if d not in roles["channels"]) and not any(
            tile[d] == 0 and domain[d] > 1 for d in roles["channels"]):
        return None   # nothing left to vectorize
    # loop order: for a convolution the other output loops, the window, the channels, then the spatial
    # loops (the filter tile of one window position is read once for all the output positions); for an
    # elementwise tile (depthwise, pooling: the filter tile is a vector at most) the window loops go
    # innermost, so that the output tile stays in registers across them
    spatial = [d for d in out_dims if d in roles["spatial"] or d == w]
    others = [d for d in range(len(domain)) if d not in spatial and d not in roles["window"] and d not in roles["channels"]]
    interchange = (others + roles["window"] + roles["channels"] + spatial if contraction
                   else others + spatial + roles["window"])
    if contraction and roles["stride"] == 1 and tile[w] == lanes:
        # whole vectors along w: the register tile accumulates over the window and the channels inside the
        # spatial loops (a tile of half vectors keeps the order above: a 3x3 conv, w = 56, 20 -> 26 ms)
        interchange = others + spatial + roles["window"] + roles["channels"]
        f_block = tile[block] if block is not None else 1
        taps = math.prod(domain[d] for d in roles["window"])
        long_row = extent[w] >= LONG_ROW_VECTORS * lanes
        if (2 * f_block > vector_registers * CONV_ACCUMULATOR_FRACTION and f_block % 2 == 0
                and f_block // 2 >= FEW_REGISTERS_MIN_CHANNELS and extent[w] >= 2 * lanes
                and (long_row or (not remainder and extent[w] % (2 * lanes) in (0, lanes)))):
            # few vector registers (AVX2's 16): half the output channels and two vectors along w (the
            # same 8 accumulators), a last tile of one vector where two do not divide w. A long row (a
            # flattened plane) takes two vectors whatever is left over: its last tile is the rest (a
            # conformer's stride-2 phases, planes of 19 x 100 = 1900 = 118 x 16 + 12: 8 channels x one
            # vector, a broadcast load per FMA, 36.0 cpu ms a call; 4 x 2 vectors and a tile of 12: 25.7)
            tile[block] = f_block // 2
            tile[w] = 2 * lanes
            rest = extent[w] % (2 * lanes)
            if rest:
                remainder = [w, extent[w] - rest, rest]
                if rest == 1:   # (a one-column rest folds to a matrix-vector tile: the last pair goes with it)
                    remainder = [w, extent[w] - rest - 2 * lanes, 2 * lanes + 1]
            if taps == 1:
                # a pointwise convolution (a matmul: filter x input plane) walks w outside the output-channel
                # blocks: one tile of input columns (all the input channels) stays in L1 for every channel
                # block, instead of the whole input plane streamed from L2/L3 once per block (the note after
                # FEW_REGISTERS_MIN_CHANNELS)
                interchange = ([d for d in others if d != block] + spatial + [block] + roles["window"]
                               + roles["channels"])
        elif 2 * f_block <= vector_registers * CONV_ACCUMULATOR_FRACTION:
            if not remainder and extent[w] % (2 * lanes) == 0:
                tile[w] = 2 * lanes
            elif extent[w] >= LONG_ROW_VECTORS * lanes and extent[w] % (2 * lanes) > 1:
                # a long row (a plane: lh-conv-planes) of an odd number of vectors: two per tile and one
                # tile of the rest (one vector of outputs per tile makes every multiply-add wait for a
                # broadcast load of its filter scalar: two loads per FMA on a core with two FMA units)
                tile[w] = 2 * lanes
                remainder = [w, extent[w] - extent[w] % (2 * lanes), extent[w] % (2 * lanes)]
    # the folded tile of a convolution is a matmul (specialized, outer products) with vectors along w;
    # with w one by one it is a matrix-vector product that no named op matches: vectorized as it is
    # (dot products along the channels)
    # (so is one with a single output channel per tile: a thread chunk of one channel, conv3d's 16 channels
    # on 16 cores)
    # (and only where the tile keeps a reduction: channels whose count has no divisor up to the channel block,
    # 11 = a ConvLSTM's 3 input + 8 hidden channels, are taken one by one, and a tile of one channel and one
    # window position folds to an outer product, which `specialize` does not match: vectorized as it is)
    # Nor without an output-channel block: a 1x1 conv to one output channel (lh-pointwise-convs' conv_1d of a
    # ConvLSTM's head) makes out[w] += in[c, w] W[c] (the matrix first: no vecmat), or, with its batch as the
    # block, out[n, w] += in[n, c, w] W[c], which no named contraction matches either.
    reduces = any(tile[d] > 1 or (tile[d] == 0 and domain[d] > 1) for d in roles["channels"] + roles["window"])
    # (nor a body with more than a multiply-add and casts: a quantized conv's zero points, `(x - zp_in) *
    # (w - zp_w)`, fold to no named contraction: `transform.structured.specialize failed to apply`, and
    # select --apply failed on linalg.conv_2d_nchw_fchw_q)
    specialize = (contraction and roles["stride"] == 1 and tile[w] > 1 and reduces
                  and block is not None and tile[block] > 1 and block not in first_input
                  and body <= MULTIPLY_ADD_BODY)
    # the loops the folding leaves (in the op's order), reordered: the output's loops in its order (its
    # innermost last among them, the vector loop), then the channels (a named op such as depthwise's
    # nchw form iterates (n, oh, ow, c, ...): its folded tile would vectorize with transposed reads)
    left = [d for d in range(len(domain)) if tile[d] > 1 or (tile[d] == 0 and domain[d] > 1)]
    wanted = sorted(left, key=lambda d: (out_dims.index(d) if d in out_dims else len(out_dims), d))
    folded_order = [left.index(d) for d in wanted]
    params = {"tile": tile, "interchange": interchange, "fold_unit_dims": 1, "contraction": int(specialize)}
    if folded_order != sorted(folded_order):
        params["folded_order"] = folded_order
    if remainder:
        params["remainder"] = remainder
    return params


def _decomposed_params(loops: dict, roles: dict, block: int | None, extent: list, lanes: int,
                       contraction: bool) -> dict | None:
    """A window op with a stride along w, as a 1-D convolution / pooling: the window loop paired with w
    untiled (the 1-D op's), the other window and spatial loops by 1; a convolution blocks its output
    channels (vectors along them, measured best with w one by one), a pooling takes a run of w."""
    w = roles["w"]
    paired = [d for expr in loops["operand_terms"][0] if len(expr) > 1 and w in (dd for dd, _ in expr)
              for d, _ in expr if d in roles["window"]]
    if len(paired) != 1 or block is None:
        return None
    tile = [1] * len(extent)
    tile[paired[0]] = 0
    for d in roles["channels"]:
        tile[d] = 0
    out_dims = loops["operand_dims"][-1]
    spatial = [d for d in out_dims if d in roles["spatial"] or d == w]
    window = [d for d in roles["window"] if d != paired[0]]
    others = [d for d in range(len(extent)) if d not in spatial and d not in roles["window"] and d not in roles["channels"]]
    if contraction:
        # a register tile of one vector of output channels x a few output positions over a block of
        # input channels, the channel blocks outside the spatial loops (the hoisted filter block stays
        # in registers: 64 x 64 channels, 4 vectors of outputs over all inputs, took 1.6x the time)
        tile[block] = _divisor_at_most(extent[block], lanes)
        tile[w] = _divisor_at_most(extent[w], STRIDED_CONV_OUTPUT_RUN)
        for d in roles["channels"]:
            tile[d] = 0 if extent[d] <= CONV_INPUT_CHANNEL_BLOCK else _divisor_at_most(extent[d], CONV_INPUT_CHANNEL_BLOCK)
        interchange = others + window + roles["channels"] + spatial + paired
    else:
        tile[block] = _divisor_at_most(extent[block], 4)
        tile[w] = _divisor_at_most(extent[w], 4 * lanes)
        interchange = others + window + spatial + roles["channels"] + paired
    return {"tile": tile, "interchange": interchange, "decompose": 1}


def _whole_tile(extent: int, lanes: int) -> int:
    """`lanes`, or half of it where that divides `extent` and `lanes` does not; the extent if smaller."""
    if extent <= lanes:
        return extent
    return lanes // 2 if extent % lanes and extent % (lanes // 2) == 0 else lanes


def _reduced_row_vector(extent: int, width: int, lanes: int, mask_registers: bool = False) -> int:
    """The partial vector of an inner reduction along a row of `extent`: `width` (a vector pair) where it divides
    the row, else the widest of a vector and a half vector that does. A row that no tile divides is read under a
    mask at every step, with the partials in memory (cross_entropy's 4096 x 1000 row max and sum of exps on
    AVX2, 16 lanes a tile, 1000 = 62 x 16 + 8: 8.9 ms against 3.7 with 8); `width` where none does (the
    selector then peels the last tile: partial_peel).
    With `mask_registers` (AVX-512: a masked load is one instruction) a half vector is not worth a quarter of
    the pair: cross_entropy and nll_loss (rows of 1000) on the 16-core Xeon, old (32 lanes, masked) vs half
    vector (8), three alternated rounds: 1 thread 2.4-3.0 vs 2.7-3.4 and 2.4-3.1 vs 3.4-3.6 ms, 16 threads
    0.28 vs 0.37-0.40 and 0.27-0.29 vs 0.36-0.48 ms (docs/models-round21.md)."""
    for candidate in (width, lanes) if mask_registers else (width, lanes, lanes // 2):
        if candidate > 1 and extent % candidate == 0:
            return candidate
    return width


def _divisor_at_most(n: int, limit: int) -> int:
    return max(d for d in range(1, limit + 1) if n % d == 0)


def contiguous_output_loop(loops: dict, lanes: int) -> bool:
    """Whether an inner reduction is better taken step by step with vectors along the output's innermost
    loop: it is parallel, at least a vector long, and the innermost index of every input that uses it
    (a matmul's B[k, n]: contiguous loads; a row sum's x[r, k] is not)."""
    out_dims = loops["operand_dims"][-1]
    if not out_dims or out_dims[-1] < 0:
        return False
    v = out_dims[-1]
    domain = loops.get("domain") or []
    if loops["iterators"][v] != "parallel" or v >= len(domain) or domain[v] < lanes:
        return False
    inputs = loops["operand_dims"][:loops.get("num_inputs") or 0]
    return any(v in dims for dims in inputs) and all(dims[-1] == v for dims in inputs if v in dims)


def reduction_by_steps_params(loops: dict, lanes: int, split: int | None = None, threads: int = 1) -> dict | None:
    """pipelines/cpu/generic.py parameters for a reduction the vectorizer does not take as one (several
    results, such as a min or max with its index; a body without a plain combiner): its reduction loops
    tiled by 1 and folded away, which leaves an elementwise step along the outputs' innermost loop,
    vectorized (the loops innermost: the partial results stay in registers across them). None when the
    outputs do not share one projected map with a parallel innermost loop."""
    n_inputs = loops.get("num_inputs")
    outputs = loops["operand_dims"][n_inputs:] if n_inputs is not None else []
    domain, iterators = loops["domain"], loops["iterators"]
    if not outputs or any(o != outputs[0] for o in outputs) or not outputs[0] or -1 in outputs[0]:
        return None
    if any(d is None or d < 1 for d in domain):
        return None
    v = outputs[0][-1]
    if iterators[v] != "parallel":
        return None
    extent = domain[v] // threads if v == split else domain[v]
    tile = [1] * len(domain)
    tile[v] = min(extent, lanes)
    if tile[v] < 2:
        return None
    # a block of the output's next loop too (a register tile of rows x vector: a contraction's A element
    # is broadcast once per row)
    if len(outputs[0]) > 1 and outputs[0][-2] >= 0 and iterators[outputs[0][-2]] == "parallel":
        row = outputs[0][-2]
        tile[row] = _divisor_at_most(domain[row] // threads if row == split else domain[row], 4)
    reductions = [d for d, it in enumerate(iterators) if it == "reduction"]
    interchange = [d for d in range(len(domain)) if d not in reductions and d != v] + [v] + reductions
    params = {"tile": tile, "interchange": interchange, "fold_unit_dims": 1, "contraction": 0}
    if extent > lanes and extent % lanes:
        params["remainder"] = [v, extent - extent % lanes, extent % lanes]
    # long reductions over long rows: blocks of REDUCTION_BLOCK reduced rows x OUTPUT_BLOCK outputs, so
    # that a vector strip's walk down the rows stays within a few pages and the block's rows in cache
    # (else every step of the walk is a new page: an amin over 4096 rows of 4096, 3x slower)
    outer = next((d for d in reductions if domain[d] >= 2 * REDUCTION_BLOCK), None)
    if outer is not None and extent >= OUTPUT_BLOCK and extent % OUTPUT_BLOCK == 0 and OUTPUT_BLOCK % tile[v] == 0:
        params["cache_tile"] = [REDUCTION_BLOCK if d == outer else OUTPUT_BLOCK if d == v else 0
                                for d in range(len(domain))]
    return params


#: a single-row contraction (x @ W) streams W row by row in strips of this many vectors
STREAM_VECTORS = 4


def streaming_rows(loops: dict, steps: dict, lanes: int, split: int | None = None, threads: int = 1) -> dict:
    """A contraction step by step whose output is one row (every parallel loop but the vector loop of
    extent 1: x @ W, a vector times a matrix read along its rows) and whose reduction is long: the
    reduced rows outermost, each read whole and contiguously (strips of STREAM_VECTORS vectors, the
    output strip in L1 across them), instead of a strip's walk down the rows (a new page every step,
    which the hardware prefetchers follow poorly: vecmat 4096 measured 5-14 ms against 3.7-5 ms, one
    thread, on a shared 2-core EPYC). `steps` (reduction_by_steps_params) as it is for other ops."""
    domain, iterators = loops["domain"], loops["iterators"]
    v = next((d for d in steps["interchange"] if steps["tile"][d] > 1 and iterators[d] == "parallel"), None)
    reductions = [d for d, it in enumerate(iterators) if it == "reduction"]
    reduced = 1
    for d in reductions:
        reduced *= domain[d]
    if (v is None or any(domain[d] > 1 for d, it in enumerate(iterators) if it == "parallel" and d != v)
            or reduced < 2 * REDUCTION_BLOCK):
        return steps
    extent = domain[v] // threads if v == split else domain[v]
    strip = STREAM_VECTORS * lanes
    if extent % strip:
        return steps
    tile = list(steps["tile"])
    tile[v] = strip
    others = [d for d in range(len(domain)) if d not in reductions and d != v]
    return {**{k: x for k, x in steps.items() if k not in ("cache_tile", "remainder")},
            "tile": tile, "interchange": others + reductions + [v]}


#: body ops a gather may have on top of its loads (`tensor.extract`); any other op of SCALAR_BODY_OPS keeps it scalar
GATHER_LOADS = {"tensor.extract"}
#: body ops that are no work of their own around a load (index plumbing)
LOAD_PLUMBING = {"tensor.extract", "linalg.index", "arith.index_cast", "linalg.yield"}
#: a vector.gather costs more than as many scalar loads on some hosts (microcoded on AMD Zen: a flip as
#: gathers ran 5x slower than its scalar loop); vectorizing pays when the work around each load (index
#: clamps and wraps, interpolation weights) is at least this many ops
GATHER_MIN_WORK_PER_LOAD = 4


def _work_per_load(body: list[str]) -> float:
    """The body's ops other than index plumbing, per `tensor.extract`."""
    loads = sum(1 for o in body if o in GATHER_LOADS)
    return sum(1 for o in body if o not in LOAD_PLUMBING) / max(loads, 1)


def classify(loops: dict, element_types: set[str] = frozenset()) -> str:
    iterators = loops["iterators"]
    if not loops["projected"] and window_params(loops, 8, element_types) is not None:
        return "window"
    if (loops["projected"] and SCALAR_BODY_OPS & set(loops["body"]) <= GATHER_LOADS
            and GATHER_LOADS & set(loops["body"]) and all(it == "parallel" for it in iterators)
            and not SCALAR_ELEMENT_TYPES & element_types
            and (loops.get("contiguous_loads") or _work_per_load(loops["body"]) >= GATHER_MIN_WORK_PER_LOAD)):
        return "gather"   # loads at computed indices: vector.gather, or contiguous loads where affine
    if not loops["projected"] or SCALAR_BODY_OPS & set(loops["body"]) or SCALAR_ELEMENT_TYPES & element_types:
        return "scalar"
    if all(it == "parallel" for it in iterators):
        return "elementwise"
    n_out = len(loops["operand_dims"]) - (loops.get("num_inputs") or 0)
    outputs = loops["operand_dims"][len(loops["operand_dims"]) - n_out:] if n_out > 0 else []
    # several results over the same output dims (sibling sums of one input: lh-merge-sibling-reductions), each
    # folded by a combiner, are a plain reduction too: tile_reduction_using_for takes one fill and one
    # combining op per result (generic.py partial_outputs); a body that selects (a value and its index) is not
    siblings = (n_out > 1 and all(o == outputs[0] for o in outputs) and "arith.select" not in loops["body"]
                and sum(1 for o in loops["body"] if o in COMBINERS) >= n_out)
    if (n_out != 1 and not siblings) or not COMBINERS & set(loops["body"]):
        return "reduction-by-steps" if reduction_by_steps_params(loops, 8) is not None else "scalar"
    out_dims = loops["operand_dims"][-1]
    innermost = len(iterators) - 1
    return "reduction-outer" if out_dims and out_dims[-1] == innermost else "reduction-inner"


def vector_loop(loops: dict) -> int:
    """The loop vectorized: the output's innermost dim when it is parallel (contiguous stores) and not a
    unit dim, else the innermost loop (an inner reduction)."""
    out_dims = loops["operand_dims"][-1]
    domain = loops.get("domain") or []
    if out_dims and out_dims[-1] >= 0 and loops["iterators"][out_dims[-1]] == "parallel" and not (
            out_dims[-1] < len(domain) and domain[out_dims[-1]] == 1):   # a kept unit dim is no vector loop
        return out_dims[-1]
    return len(loops["iterators"]) - 1


#: classes whose chunks may split a reduction loop (tile_reduction_using_forall: one result, one combiner)
SPLIT_REDUCTION_CLASSES = ("reduction-inner", "reduction-outer")


def thread_split(loops: dict, kind: str, cores: int, reduction_splits: bool = True) -> tuple[int, int, int]:
    """(threads, split, split_reduction): the loop split over the cores. The outermost parallel loop with
    at least one iteration per core (batch dims are often 1 or 2: a smaller outer loop would leave cores
    idle); without one, a reduction splits its outermost reduction loop with that many iterations into
    partial results per chunk combined afterwards (a whole-tensor sum: no parallel loop at all), else the
    outermost parallel loop with more than one iteration. Classes whose folded tiles must divide the
    chunks get equal chunks. `reduction_splits=False`: never a reduction loop (an op of several results,
    such as a max with its index, or one that selects, has no single combiner for the partial results)."""
    domain, iterators = loops.get("domain") or [], loops["iterators"]
    if cores < 2 or len(domain) != len(iterators) or any(d is None for d in domain):
        return 1, 0, 0
    equal = kind in ("window", "reduction-by-steps", "reduction-inner")

    def chunks(loop: int) -> int:
        return _divisor_at_most(domain[loop], cores) if equal else min(cores, domain[loop])

    parallel = [i for i, it in enumerate(iterators) if it == "parallel" and domain[i] > 1]
    wide = next((i for i in parallel if domain[i] >= cores), None)
    if wide is not None and chunks(wide) > 1:
        return chunks(wide), wide, 0
    reduction = next((i for i, it in enumerate(iterators) if it == "reduction" and domain[i] >= cores), None)
    if kind in SPLIT_REDUCTION_CLASSES and reduction is not None and reduction_splits:
        n = _divisor_at_most(domain[reduction], cores)
        if n > 1:
            return n, reduction, 1
    if parallel and chunks(parallel[0]) > 1:
        return chunks(parallel[0]), parallel[0], 0
    return 1, 0, 0


#: a transposing copy walks square blocks of this many elements a side (both arrays' lines stay in cache)
TRANSPOSE_BLOCK = 128


def transposed_input_loop(loops: dict, vdim: int) -> int | None:
    """The innermost loop of an input read transposed by an all-parallel op (it uses the vector loop
    `vdim`, but another loop is its innermost, contiguous dim), None without one: such an op is tiled
    by 2-D blocks (contiguous loads along that loop, a vector.transpose, contiguous stores along `vdim`)."""
    domain = loops.get("domain") or []
    for dims in loops["operand_dims"][:loops.get("num_inputs") or 0]:
        if dims and vdim in dims and dims[-1] not in (vdim, -1) and loops["iterators"][dims[-1]] == "parallel":
            u = dims[-1]
            if u < len(domain) and domain[u] > 1:
                return u
    return None


#: rows per tile of an elementwise op with a vector broadcast along its rows
ROW_BLOCK = 4
#: rows per tile of an inner reduction taken into a vector of partials along its rows (rows of at least two
#: vector pairs, fewer than 2 x REDUCTION_CHUNK)
REDUCED_ROWS = 4


def broadcast_row_loop(loops: dict, vdim: int) -> int | None:
    """The output's next-to-innermost loop when an input reads along the vector loop `vdim` but not along
    it (a row vector broadcast over the rows) and it has at least ROW_BLOCK iterations; else None."""
    out_dims = loops["operand_dims"][-1]
    domain = loops.get("domain") or []
    if len(out_dims) < 2 or out_dims[-1] != vdim or out_dims[-2] < 0:
        return None
    row = out_dims[-2]
    if loops["iterators"][row] != "parallel" or not row < len(domain) or domain[row] < ROW_BLOCK:
        return None
    inputs = loops["operand_dims"][:loops.get("num_inputs") or 0]
    return row if any(vdim in dims and row not in dims for dims in inputs) else None


def _batch_and_channel_split(loops: dict, params: dict, window: dict, cores: int, lanes: int, types: set[str],
                             name: str, vector_registers: int) -> tuple[dict, dict]:
    """A convolution split over its output channels while an outer parallel loop (the batch) has fewer
    iterations than cores: split that loop too (a 2-D forall: `split_also`), the channels into the cores
    it leaves. Every task then reads its batch's share of the input instead of all of it, and keeps wider
    channel blocks for its register tile (16 cores over 64 channels left 4 per task, half the 8-channel
    tile; on the 16-core Xeon batch x channels 8 x 2 measured 3x3 4.9 -> 3.5 ms, strided 16.8 -> 13.2).
    (params, window) unchanged where there is no such loop."""
    domain, iterators = loops["domain"], loops["iterators"]
    split = params["split"]
    outer = next((i for i, it in enumerate(iterators) if it == "parallel" and domain[i] > 1), None)
    if outer is None or outer >= split or domain[outer] >= cores:
        return params, window
    outer_chunks = _divisor_at_most(domain[outer], cores)
    chunks = _divisor_at_most(domain[split], cores // outer_chunks)
    if chunks < 2 or outer_chunks * chunks < params["threads"]:
        return params, window     # (no fewer tasks than the channel split had)
    alt = window_params(loops, lanes, types, split, chunks, name, vector_registers)
    if alt is None or any(alt.get(k) != window.get(k) for k in ("contraction", "decompose")):
        return params, window
    if (alt.get("tile") or [0] * len(domain))[outer] != 1:
        return params, window     # (the outer loop is one the tile blocks: a batch of 1 left the channels outer)
    return {**params, "threads": chunks, "split_also": [outer, outer_chunks]}, alt


def _split_without_halo(loops: dict, params: dict, window: dict, cores: int, lanes: int, types: set[str],
                        name: str, vector_registers: int) -> tuple[dict, dict]:
    """A window op split along a spatial loop (an output loop its window adds to: every chunk also reads the
    rows of its neighbours' chunks, a halo) while a parallel loop that no window reaches and that is not the
    vector loop (the batch, a depthwise convolution's channels) has at least as many equal chunks: split
    that one instead, the one with the most chunks (the outermost of equals). A depthwise 3x3 over 8 x 128
    x 56 x 56 on 16 cores had split its 56 output rows into 14 chunks of 4, each reading 6 input rows (1.5x
    the input) with 2 of the 16 cores idle; its 128 channels give 16 chunks of 8 and no halo. (params,
    window) unchanged where the split is no spatial loop, no such loop has enough chunks, or its chunks would
    take another register tile."""
    roles = _window_roles(loops)
    split, threads = params["split"], params["threads"]
    if roles is None or split not in roles["spatial"] or params.get("split_also") or params.get("split_reduction"):
        return params, window
    domain, iterators = loops["domain"], loops["iterators"]
    best = None
    for loop, (size, it) in enumerate(zip(domain, iterators)):
        if it != "parallel" or loop in roles["spatial"] or loop == roles["w"] or loop == split:
            continue
        chunks = _divisor_at_most(size, cores)
        if chunks >= threads and chunks > 1 and (best is None or chunks > best[1]):
            best = (loop, chunks)
    if best is None:
        return params, window
    alt = window_params(loops, lanes, types, best[0], best[1], name, vector_registers)
    if alt is None or any(alt.get(k) != window.get(k) for k in ("contraction", "decompose", "tile")):
        return params, window     # (a smaller register tile for the chunks: not worth the halo it saves)
    return {**params, "threads": best[1], "split": best[0]}, alt


#: plane_order only where a register tile spans at least this many plane positions: the whole filter is read from L2
#: once per block of positions (AVX2's tiles of 2 x 8 would read it twice as often as AVX-512's 2 x 16; resnet18
#: under --cpu avx2 on the 2-core host: JIT time 23.2-23.8 ms before, 24.0-24.2 with them reordered)
PLANE_ORDER_MIN_POSITIONS = 32
#: plane_order only for a convolution split into at least this many thread chunks. On the 16-core Xeon of the
#: H200 machine (one alternated round, medians of 30 calls, against the order before): 16 threads conv2d_3x3
#: 3.21 -> 2.25 ms, resnet18 7.44 -> 4.98, conv2d_strided 4.86 -> 4.31, unet 7.08 -> 5.96; one thread
#: conv2d_3x3 21.4 -> 28.3 (min 19.0 -> 20.3), resnet18 24.3 -> 31.2 (min 23.8 -> 29.7), conv_block 19.1 -> 24.7
#: (docs/models-round14.md), where the 2-core host had measured conv2d_strided 25.7 -> 21.6 on one thread
PLANE_ORDER_MIN_THREADS = 2


class _PlaneSweep(NamedTuple):
    """The loops of a window contraction's schedule as plane_order and plane_blocks read them."""
    roles: dict            # _window_roles
    order: list            # the schedule's interchange
    domain: list
    tile: list
    w: int                 # the innermost spatial loop (the plane's positions where lh-conv-planes flattened it)
    spatial: list          # the output's spatial loops
    others: list           # the loops outside the plane, the window and the input channels (batch, output channels)
    blocks: list           # of those, the tiled ones the first input does not index (the output-channel blocks)


def _plane_sweep(loops: dict, window: dict, l2_bytes: int) -> _PlaneSweep | None:
    """The loops of a folded window contraction's schedule (None: no such schedule, or no L2 size known)."""
    roles = _window_roles(loops)
    order = window.get("interchange")
    if (roles is None or not window.get("fold_unit_dims") or not window.get("contraction") or not order
            or window.get("decompose") or not l2_bytes):
        return None
    domain, tile = loops["domain"], window["tile"]
    w = roles["w"]
    spatial = [d for d in loops["operand_dims"][-1] if d in roles["spatial"] or d == w]
    others = [d for d in order if d not in spatial and d not in roles["window"] and d not in roles["channels"]]
    first_input = {d for expr in loops["operand_terms"][0] for d, _ in expr}
    blocks = [d for d in others if d not in first_input and tile[d] and domain[d] > tile[d]]
    return _PlaneSweep(roles, order, domain, tile, w, spatial, others, blocks)


def plane_order(loops: dict, window: dict, lanes: int, l2_bytes: int) -> dict:
    """A convolution's window schedule over long rows (a plane of lh-conv-planes / lh-strided-conv-planes:
    3192 positions of a stride-2 phase) with its register tiles' output-channel blocks outside the spatial
    loops (n, f, p, taps, c) takes the spatial loops outside the blocks (n, p, f, taps, c) where the whole
    filter fits in half of L2: each block of plane positions is read from memory once and stays in L1 for every
    block of output channels, the filter (f x c x taps) re-read from L2 for each, where before each block of
    output channels swept the whole input plane (64 channels x 3306 positions, 0.85 MB a phase and image) from
    L2 again, the output streamed once either way. conv2d_strided (8 x 64 x 112 x 112, 3x3 s2, 64 -> 64), one
    thread on the 2-core Icelake host: 25.7-26.0 -> 20.6-22.3 ms (docs/models-round14-conv.md). The window
    params unchanged where it does not apply."""
    sweep = _plane_sweep(loops, window, l2_bytes)
    if sweep is None:
        return window
    roles, order, domain, tile, w, spatial, others, blocks = sweep
    filter_terms = loops["operand_terms"][1] if len(loops["operand_terms"]) > 2 else []
    filter_dims = {d for expr in filter_terms for d, _ in expr}
    filter_bytes = 4
    for d in filter_dims:
        filter_bytes *= domain[d]
    if (len(blocks) != 1 or order != others + spatial + roles["window"] + roles["channels"]
            or domain[w] < LONG_ROW_VECTORS * lanes or 2 * filter_bytes > l2_bytes
            or tile[w] < PLANE_ORDER_MIN_POSITIONS):
        return window
    outer = [d for d in others if d != blocks[0]]
    return dict(window, interchange=outer + spatial + blocks + roles["window"] + roles["channels"])


#: plane_blocks: a block of plane positions (its input rows of every input channel and its output of every output
#: channel) takes at most this fraction of a core's L2
PLANE_BLOCK_L2_FRACTION = 0.5


def plane_blocks(loops: dict, window: dict, lanes: int, l2_bytes: int, split_loops: list = ()) -> dict:
    """A convolution's window schedule over a long plane (lh-conv-planes / lh-strided-conv-planes: a stride-2
    phase's 3192 positions) whose register tiles' output-channel blocks sweep the whole plane one block after
    another (n, f, p, taps, c), where an image's input plane does not stay in L2 across those sweeps (its input
    channels x positions over PLANE_BLOCK_L2_FRACTION of the L2): the plane cut into blocks of positions first
    (generic.py's cache_tile), the channel blocks then sweeping one block of positions (its input rows and its
    output in L2) before the next: the input is read from L3 / memory once, not once per channel block. The block:
    the largest divisor of the plane that is a whole number of vectors and whose input and output fit
    (PLANE_BLOCK_L2_FRACTION), at least LONG_ROW_VECTORS vectors (its last tile of one vector where the register
    tile's two do not divide it: little of a long block); none where no such block divides the plane.
    conv2d_strided (8 x 64 x 112 x 112, 3x3 stride 2, 64 -> 64: four phases over planes of 64 x 3192 positions,
    0.84 MB an image and phase) on one core of the 2-core Zen 3 (L2 512 KiB), bench/ab_lowered.py cpu ms per call:
    see docs/models-round20-conv.md. The window params unchanged where it does not apply (a plane split over
    threads, whose chunk the block would have to divide; the init fused into the register tiles is then its own
    pass: generic.py's init_registers does not take cache_tile). Not for grouped ones (a group loop besides the batch
    and the channel blocks): conv2d_grouped_dilated (8 x 64 x 56 x 56, 2 groups, a plane of 2912 positions) ran even
    with blocks of 728 (18.1 / 18.5 cpu ms, one A/B of 6 rounds)."""
    sweep = None if window.get("cache_tile") else _plane_sweep(loops, window, l2_bytes)
    if sweep is None:
        return window
    roles, order, domain, tile, w, spatial, others, blocks = sweep
    if (spatial != [w] or w in split_loops or len(blocks) != 1 or len(others) != 2
            or order != others + spatial + roles["window"] + roles["channels"] or domain[w] < LONG_ROW_VECTORS * lanes or not tile[w] or tile[w] % lanes):
        return window
    in_channels = math.prod(domain[d] for d in roles["channels"])
    out_channels = domain[blocks[0]]
    budget = PLANE_BLOCK_L2_FRACTION * l2_bytes
    if 4 * in_channels * domain[w] <= budget:
        return window     # (the input plane stays in L2 across the channel blocks)
    fits = [b for b in range(lanes, domain[w], lanes)
            if domain[w] % b == 0 and 4 * (in_channels + out_channels) * b <= budget
            and b >= LONG_ROW_VECTORS * lanes]
    if not fits:
        return window
    block = fits[-1]
    cache_tile = [0] * len(tile)
    for d in others:
        if d != blocks[0]:
            cache_tile[d] = tile[d]
    cache_tile[w] = block
    rest = block % tile[w]
    remainder = [w, block - rest, rest] if rest else []
    return dict(window, cache_tile=cache_tile, remainder=remainder)


def generic_params(op: dict[str, Any], vector_bits: int, cores: int, vector_registers: int = 32,
                   l2_bytes: int = 0) -> dict[str, Any] | None:
    """pipelines/cpu/generic.py parameters for one op (None: no loop structure known). `l2_bytes`: the L2 of a
    core (0: unknown; plane_order)."""
    loops = op.get("loops")
    if not loops or not loops.get("iterators"):
        return None
    kind = classify(loops, {_element_type(t) for t in op.get("operand_types", [])})
    domain = loops.get("domain") or []
    iterators = loops["iterators"]
    work = 1
    for d in domain:
        work *= d if d > 0 else 1024
    element_types = {_element_type(t) for t in op.get("operand_types", [])}
    # the accumulators' types (an i1 mask input of an f32 sum, as in a scan, vectorizes: a select)
    n_inputs = loops.get("num_inputs")
    result_types = ({_element_type(t) for t in op.get("operand_types", [])[n_inputs:]} if n_inputs is not None
                    else element_types)
    if (kind.startswith("reduction") and BOOL_TYPES & result_types
            and not (kind == "reduction-inner" and contiguous_output_loop(loops, max(vector_bits // 32, 4)))):
        kind = "scalar"   # a reduction over bools (vector.multi_reduction on i1 is not lowered here)
    lanes = max(vector_bits // 32, 4)
    # a contraction (below: step by step, folded tiles) splits a parallel loop only
    contraction = kind == "reduction-inner" and contiguous_output_loop(loops, lanes)
    # partial results per chunk combine correctly for one result folded by its combiner alone; a body that
    # selects (top-k's masked first index of the max, an argmax) is left whole
    plain_fold = len(loops["operand_dims"]) - (n_inputs or 0) == 1 and "arith.select" not in loops.get("body", [])
    if kind == "gather":
        work *= GATHER_WORK
    threads, split, split_reduction = thread_split(loops, "reduction-by-steps" if contraction else kind,
                                                   cores if work >= MIN_PARALLEL_WORK else 1, plain_fold)
    params: dict[str, Any] = {"op": op["id"], "threads": threads, "split": split}
    if split_reduction:
        params["split_reduction"] = 1
    if kind == "scalar":
        return {**params, "tile": [], "vector": 0, "class": kind}
    if kind == "reduction-by-steps":
        return {**params, **reduction_by_steps_params(loops, lanes, split if threads > 1 else None, threads),
                "vector": 1, "class": kind}
    if kind == "window":
        types = {_element_type(t) for t in op.get("operand_types", [])}
        window = window_params(loops, lanes, types, split if threads > 1 else None, threads, op.get("op", ""),
                               vector_registers)
        if threads > 1 and window is not None and not window.get("contraction"):
            # a split that leaves a convolution's chunks too few output channels for its register tile
            # (conv3d's 16 channels on 16 cores: one each, no outer-product tile; 63 ms on 16 cores of
            # the H200 host, torch 1.9): split another parallel loop with about as many chunks instead
            for loop, (size, it) in enumerate(zip(domain, iterators)):
                chunks = _divisor_at_most(size, cores) if it == "parallel" and loop != split else 1
                if 2 * chunks < threads:
                    continue
                alt = window_params(loops, lanes, types, loop, chunks, op.get("op", ""), vector_registers)
                if alt is not None and alt.get("contraction"):
                    params.update(threads=chunks, split=loop)
                    window = alt
                    break
        if threads > 1 and window is not None:
            params, window = _split_without_halo(loops, params, window, cores, lanes, types, op.get("op", ""),
                                                 vector_registers)
        if threads > 1 and window is not None and (window.get("contraction") or window.get("decompose")):
            params, window = _batch_and_channel_split(loops, params, window, cores, lanes, types,
                                                      op.get("op", ""), vector_registers)
        if window is not None and params.get("threads", 1) >= PLANE_ORDER_MIN_THREADS:
            window = plane_order(loops, window, lanes, l2_bytes)
        if window is not None:
            split_loops = ([params.get("split")] + (params.get("split_also") or [None])[:1]
                           if params.get("threads", 1) > 1 else [])
            window = plane_blocks(loops, window, lanes, l2_bytes, split_loops)
        return {**params, **window, "vector": 1, "class": kind}
    if contraction:
        # a contraction (matmul-like, any element type): the reduction step by step, an output tile of
        # rows x vectors in registers across it
        steps = reduction_by_steps_params(loops, lanes, split if threads > 1 else None, threads)
        if steps is not None:
            steps = streaming_rows(loops, steps, lanes, split if threads > 1 else None, threads)
            return {**params, **steps, "vector": 1, "class": "contraction-by-steps"}
    # an inner reduction reads along its reduction loop: that is the vector loop (contiguous loads)
    vdim = len(iterators) - 1 if kind == "reduction-inner" else vector_loop(loops)
    extent = domain[vdim] if vdim < len(domain) else -1
    if kind in ("elementwise", "gather") and 0 < extent < 4:
        # the output's innermost dim is a unit or tiny one (a reflect pad's one- and two-column borders,
        # 8x64x57x1): vectors along its innermost longer dim instead of an element or two per step (29k
        # single-element gathers took 0.8 ms, two thirds of pad_reflect's time on the 16-core Xeon)
        longer = [d for d in reversed(loops["operand_dims"][-1]) if 0 <= d < len(domain)
                  and domain[d] >= 4 * extent and iterators[d] == "parallel"]
        if longer:
            vdim, extent = longer[0], domain[longer[0]]
    width = 2 * lanes
    if 0 < extent < width:
        width = extent
    elif kind == "elementwise" and extent > 0 and extent % width:
        # rows no vector pair divides (a 56-wide image row on AVX-512: a pair, then a masked 24-element
        # tail on every row): one vector where whole vectors divide the row (112: 7 of 16), else the row as
        # one vector of whole and half registers where it is short (56: 3 zmm + 1 ymm), no mask either way
        if extent % lanes == 0:
            width = lanes
        elif extent % (lanes // 2) == 0 and extent <= 4 * lanes:
            width = extent
    tile = [1] * len(iterators)
    tile[vdim] = width
    params = {**params, "tile": tile, "vector": 1, "class": kind}
    if kind == "gather":
        params["gather"] = 1
    across = transposed_input_loop(loops, vdim) if kind == "elementwise" and extent > 1 else None
    if across is not None:
        # a transpose: lanes x lanes blocks (a transposed tile read by rows, shuffled, written by rows)
        # inside TRANSPOSE_BLOCK-square blocks
        # (a tile that divides its loop where one of at least half the lanes does: a masked 2-D tail costs
        # more than the smaller transposes, as permute_4d's 56-wide rows showed)
        tile[vdim] = _whole_tile(extent, lanes)
        tile[across] = _whole_tile(domain[across], lanes)
        blocks = [TRANSPOSE_BLOCK if d in (vdim, across) and domain[d] > TRANSPOSE_BLOCK else 0
                  for d in range(len(domain))]
        if any(blocks):
            params["cache_tile"] = blocks
    row = broadcast_row_loop(loops, vdim) if kind == "elementwise" and across is None and extent > 1 else None
    if row is not None:
        # rows of a vector broadcast along them (a batch norm's scale and shift): ROW_BLOCK rows per tile,
        # each broadcast vector loaded once per block instead of once per row (batch_norm1d 1024x4096
        # 1t: 2.8 -> 1.6 ms)
        tile[row] = ROW_BLOCK
    outputs = loops["operand_dims"][loops.get("num_inputs") or 0:]
    # (i1 inputs: a mask that selects what a float accumulator takes, as top-k's masked maxima, vectorizes;
    # an integer count of bools left no lowerable multi_reduction)
    mask_inputs_ok = all(t.startswith(("f", "bf")) for t in result_types)
    partial = (kind == "reduction-inner" and vdim == len(iterators) - 1
               and not BOOL_TYPES & (result_types if mask_inputs_ok else element_types)
               and iterators[vdim] == "reduction"
               and all(-1 not in o for o in outputs))   # (tile_reduction_using_for asserts on `(d0, 0)` outputs)
    steps = [d for d, it in enumerate(iterators) if it == "reduction" and d != vdim and domain[d] > 1]
    rows = 1
    for d in steps:
        rows *= domain[d]
    # (several results: not step by step; an instance norm's two sums over H x W that way ran 10x slower than
    # the two ops apart, 34 against 3.4 ms: left out, below)
    if partial and steps and extent > 1 and extent * rows <= 2 * REDUCTION_CHUNK and len(outputs) == 1:
        # a sum over several loops (an instance norm's H x W, rows shorter than two vectors): one vector of
        # partial results accumulated across all of them (the other loops one step at a time), reduced once
        # per output instead of once per row; a short row is one vector of its own length
        if extent < 2 * width:
            tile[vdim] = extent
        params["partial_reduction"] = vdim
        params["partial_steps"] = steps
        if len(outputs) > 1:
            params["partial_outputs"] = len(outputs)
    elif partial and extent >= 2 * width:
        # a vector of partial results along the row, reduced once per output (not once per tile); outer
        # reduction loops (a whole-tensor sum) run around it, each row summed into fresh partials
        params["partial_reduction"] = vdim
        tile[vdim] = _reduced_row_vector(extent, width, lanes, mask_registers=vector_bits >= 512)
        if len(outputs) > 1:
            params["partial_outputs"] = len(outputs)
        if extent >= 2 * REDUCTION_CHUNK:   # long rows: summed chunk by chunk (f32 rounding, as torch's)
            params["partial_chunk"] = REDUCTION_CHUNK
        else:
            if extent % tile[vdim]:
                # a row no vector divides (1001): the last tile peeled, the rest whole vectors with the
                # partials in registers, instead of a masked read and the partials through memory every step
                params["partial_peel"] = 1
            # REDUCED_ROWS rows at a time (the output's innermost loop; a divisor of its extent or thread
            # chunk): as many independent load streams and accumulator chains, each row's partials reduced
            # once (matvec 4096 x 4096, one thread, JIT 8.5-9.9 -> 5.3-6.8 ms a call on the Zen 4 host:
            # one row at a time reads one stream from memory)
            out_loop = next((d for d in reversed(outputs[0]) if 0 <= d < len(domain) and iterators[d] == "parallel"),
                            None) if outputs else None
            if out_loop is not None:
                chunk = domain[out_loop] // threads if out_loop == split and threads > 1 else domain[out_loop]
                tile[out_loop] = _divisor_at_most(chunk, REDUCED_ROWS)
    return params


#: producers of an init that a window schedule computes tile by tile (fuse_init): a value per output, read
#: from nothing the op writes
FUSABLE_INITS = ("linalg.fill", "linalg.broadcast")


def init_fusion(op: dict[str, Any], ops: list[dict[str, Any]], params: dict[str, Any], lanes: int) -> dict[str, Any]:
    """generic.py's fuse_init / init_operand / init_tile for a window schedule (`params`: fold_unit_dims) whose
    op's init is a fill or a broadcast that only it reads: each tile of the op's leading tiled parallel loops
    (in its loop order, increasing, up to the remainder's loop) computes its slice of the init right before
    the op reads it, instead of one pass over the whole output first (a 1x1 conv block's fill cost 0.5-0.8
    ms against the conv's 0.38; on threads it ran on one core). Where those loops are all the output's, the
    fused tile is the register tile (its init written and read back in L1). {} where it does not apply."""
    loops = op.get("loops") or {}
    n_inputs = loops.get("num_inputs")
    init = (op.get("producers") or [-1])[-1]
    if (not params.get("fold_unit_dims") or params.get("split_reduction") or params.get("cache_tile")
            or n_inputs is None or len(op.get("producers") or []) != n_inputs + 1
            or not 0 <= init < len(ops) or ops[init].get("op") not in FUSABLE_INITS
            or ops[init].get("consumers") != [ops.index(op)] or ops[init].get("other_uses")):
        return {}
    iterators, domain = loops["iterators"], loops["domain"]
    out_dims = loops["operand_dims"][-1]
    tile = params["tile"]
    order = params.get("interchange") or list(range(len(tile)))
    rest = (params.get("remainder") or [None])[0]
    threads = params.get("threads", 1)
    chunks = {params.get("split"): threads} if threads > 1 else {}
    if params.get("split_also"):
        chunks[params["split_also"][0]] = params["split_also"][1]
    fused: list[int] = []
    covered: set[int] = set()   # (with the loops of one tile: a loop of one trip is no forall dim)
    for d in order:
        if iterators[d] != "parallel" or not tile[d] or d == rest or (fused and d < fused[-1]):
            break
        covered.add(d)
        if domain[d] // chunks.get(d, 1) > tile[d]:
            fused.append(d)
    if not fused and threads < 2:
        return {}
    extra: dict[str, Any] = {"init_operand": n_inputs}
    if fused:
        extra["fuse_init"] = fused
    if not set(out_dims) <= covered:
        # the fused tile spans whole loops (a plane's row of tiles): its own vectors
        last = out_dims[-1]
        extent = tile[last] if last in covered else domain[last] // chunks.get(last, 1)
        extra["init_tile"] = [1] * (len(out_dims) - 1) + [max(1, min(extent, 2 * lanes))]
    return extra


#: defining ops of an input that transform.structured.fuse would take into the tiles with the init (init_registers)
TILEABLE_INPUTS = ("tensor.pad", "tensor.pack", "tensor.unpack", "linalg.pack", "linalg.unpack")
#: defining ops of an input that transform.structured.fuse clones whole into every tile, where no canonicalization
#: erases the unused clone: a call (the last step of an outlined stack of layers) ran again per register tile
CLONED_INPUTS = ("func.call",)


def streams_an_input_across_rows(loops: dict, l2_bytes: int, order: list | None = None) -> bool:
    """Whether an input of the op is read once (every loop of more than one step indexes it: no reuse) along a
    reduction loop that is not its innermost dim and that the loop `order` (the schedule's interchange; None:
    the op's) takes outside that innermost dim, and is larger than the L2 (`l2_bytes`; 0: never): a register
    tile that accumulates over that reduction walks the input a short contiguous run per row, rows a whole row
    apart (a vector-matrix product x[k] * W[k, n], 4096 x 4096: a 32-column strip of W down 4096 rows of 16 KB
    per tile, a page per step), where the schedule's own order streams it row by row."""
    if not l2_bytes:
        return False
    iterators, domain = loops["iterators"], loops.get("domain") or []
    order = list(order) if order else list(range(len(domain)))
    position = {d: i for i, d in enumerate(order)}
    for dims in loops["operand_dims"][:loops.get("num_inputs") or 0]:
        if not dims or any(not 0 <= d < len(domain) for d in dims):
            continue
        read_once = all(d in dims for d, e in enumerate(domain) if e > 1)
        rows = any(iterators[d] == "reduction" and domain[d] > 1
                   and position.get(d, len(order)) < position.get(dims[-1], -1) for d in dims[:-1])
        elements = 1
        for d in dims:
            elements *= domain[d]
        if read_once and rows and 4 * elements > l2_bytes:   # (at least 4 bytes an element: f32)
            return True
    return False


def init_registers(op: dict[str, Any], ops: list[dict[str, Any]], params: dict[str, Any],
                   l2_bytes: int = 0) -> dict[str, Any]:
    """generic.py's init_registers (with init_operand and fuse_init: the output's loops) for a window schedule
    (`params`: fold_unit_dims) whose init is a fill or a broadcast (a convolution's bias) that only it reads: each
    register tile's accumulators start from the init's vectors, the remainder's loop peeled, instead of a pass
    writing the whole output before the op and the op reading it back (conv2d_1x1: 6.4 MB written and read
    back, 6-10% of a one-thread call). Only where every output loop is tiled by a divisor of its (thread chunk's)
    extent but the remainder's, whose split is at the last whole tile, and no input has a producer that the
    fusion would take into the tiles too (a linalg op, a pad) or clone into them (a call, CLONED_INPUTS: the
    call of an outlined layer ran once more per register tile), and not where the tile would walk an input read
    once down its rows (streams_an_input_across_rows: a vector-matrix product). {} where it does not apply."""
    loops = op.get("loops") or {}
    if loops.get("operand_dims") and streams_an_input_across_rows(loops, l2_bytes, params.get("interchange")):
        return {}
    n_inputs = loops.get("num_inputs")
    producers = op.get("producers") or []
    init = producers[-1] if producers else -1
    owners = op.get("operand_owners") or []
    if (not params.get("fold_unit_dims") or params.get("split_reduction") or params.get("cache_tile")
            or params.get("decompose") or n_inputs is None or len(producers) != n_inputs + 1
            or len(owners) != n_inputs + 1 or not 0 <= init < len(ops)
            or ops[init].get("op") not in FUSABLE_INITS
            or ops[init].get("consumers") != [ops.index(op)] or ops[init].get("other_uses")
            or any(p >= 0 for p in producers[:-1]) or any(o in TILEABLE_INPUTS + CLONED_INPUTS for o in owners[:-1])):
        return {}
    iterators, domain = loops["iterators"], loops["domain"]
    out_dims = sorted(set(loops["operand_dims"][-1]))
    tile = params["tile"]
    threads = params.get("threads", 1)
    chunks = {params.get("split"): threads} if threads > 1 else {}
    if params.get("split_also"):
        chunks[params["split_also"][0]] = params["split_also"][1]
    rest = params.get("remainder") or []
    for d in out_dims:
        if not 0 <= d < len(tile) or iterators[d] != "parallel" or not tile[d] or domain[d] % chunks.get(d, 1):
            return {}
        extent = domain[d] // chunks.get(d, 1)
        if rest and d == rest[0]:
            if rest[1] != extent - extent % tile[d] or rest[2] != extent % tile[d]:
                return {}
        elif extent % tile[d]:
            return {}
    if rest and rest[0] not in out_dims:
        return {}
    return {"init_operand": n_inputs, "fuse_init": out_dims, "init_registers": 1}


def phase_chains(entries: list[tuple[str, dict[str, Any]]], ops: list[dict[str, Any]]) -> list[tuple[str, dict[str, Any]]]:
    """generic.py's chain for a grouped window schedule whose ops accumulate one into the next (each op's init the
    result of the one before, read by nothing else: lh-strided-conv-planes' phases), taken image by image along
    loop 0 (their batch: tile 1, the thread split if any): all phases of one image run one after another, its
    accumulated output in L2 between them, instead of each phase streaming the whole output through memory
    (conv2d_strided: 8 x 64 x 56 x 57 floats, 6.5 MB, read and written back by each of four phases). Where
    loop 0 has one position (a batch of one: nothing to chain along) an entry stays as it is. On threads (split
    along loop 0) each core's chunk of images is the outer forall, the chain image by image inside it."""
    by_id = {op.get("id"): i for i, op in enumerate(ops)}
    out = []
    for spec, params in entries:
        ids = params.get("op")
        if (GENERIC_SCHEDULE not in spec or not isinstance(ids, list) or len(ids) < 2 or not params.get("fold_unit_dims")
                or params.get("init_operand", -1) >= 0 or params.get("split_reduction") or params.get("split_also")
                or (params.get("threads", 1) > 1 and params.get("split", 0) != 0) or any(i not in by_id for i in ids)):
            out.append((spec, params))
            continue
        idx = [by_id[i] for i in ids]
        loops = ops[idx[-1]].get("loops") or {}
        n_inputs, domain = loops.get("num_inputs"), loops.get("domain") or []
        tile = params.get("tile") or []
        linked = n_inputs is not None and all(
            len(ops[b].get("producers") or []) == n_inputs + 1 and (ops[b].get("producers") or [])[-1] == a
            and ops[a].get("consumers") == [b] and not ops[a].get("other_uses") for a, b in zip(idx, idx[1:]))
        if (not linked or not domain or not tile or tile[0] != 1 or loops.get("iterators", ["?"])[0] != "parallel"
                or (domain[0] or 0) < 2):
            out.append((spec, params))
            continue
        out.append((spec, dict(params, chain=1, chain_operand=n_inputs)))
    return out


def group_same_params(entries: list[tuple[str, dict[str, Any]]]) -> list[tuple[str, dict[str, Any]]]:
    """Generic-schedule entries whose parameters differ only in `op` become one entry naming all their
    ops (`op=[generic_3, generic_7, ...]`), at the place of the first: an unrolled RNN's 128 time steps
    give a dozen steps, not 500 (each step walks the whole module). Other entries stay as they are."""
    grouped: list[tuple[str, dict[str, Any]]] = []
    first: dict[tuple[str, str], int] = {}
    for spec, params in entries:
        if GENERIC_SCHEDULE not in spec or not isinstance(params.get("op"), str):
            grouped.append((spec, params))
            continue
        key = (spec, repr(sorted((k, v) for k, v in params.items() if k != "op")))
        if key not in first:
            first[key] = len(grouped)
            grouped.append((spec, dict(params)))
            continue
        at = first[key]
        ops = grouped[at][1]["op"]
        grouped[at][1]["op"] = (ops if isinstance(ops, list) else [ops]) + [params["op"]]
    return grouped
