"""Transform-dialect schedule for bf16 convolutions in the VNNI layout (AVX512-BF16's `vdpbf16ps`).

The payload op is what `lh-vnni-convs` (workbench/worker/cpu/vnni_convs.py) makes of a bf16 2-D convolution
accumulating in f32: a linalg.generic tagged `lh.vnni_conv` over loops (n, f, oh, ow, co, kh, kw, ci),

    O[n, f, oh, ow] += ext(Wp[f, co, kh, kw, ci]) * ext(Ip[n, co, oh * sh + kh * dh, ow * sw + kw * dw, ci])

with input and filter packed in input-channel pairs (linalg.pack along C by 2: ci, the pair, innermost).

Schedule:
  1. The pack of the input (its producer): one image per parallel task where threads > 1, one row of pairs
     (1 x 1 x 1 x W outer dims) per step, vectorized (two channel rows read, interleaved by shuffles); the
     filter's pack one output channel and pair at a time.
  2. The convolution: `threads` chunks of loop `split` (scf.forall), then tiles of `tile_f` output channels x
     `tile_w` output positions x `tile_c` channel pairs (n, oh and the window loops by 1) in the order
     `interchange` (default: n, f, window, pairs, oh, ow: the filter block of one window position is read
     once for all the output positions).
  3. The tile's unit loops folded away (fold_unit_extent_dims_via_slices): O[f, w] += Wp[f, co, ci] *
     Ip[co, w, ci], then tiled by one output channel and one pair: (1, tile_w, 1, 2) contractions, in the
     VNNI layout upstream's `x86vector.vector_contract_to_packed_type_dot_product` takes (A[.., K/2, 2],
     B[K/2, N, 2]), vectorized and unrolled: a broadcast of the filter pair (32 bits) and one
     `x86vector.avx512.dot` (vdpbf16ps) on the input's 2 x tile_w bf16 per contraction.
  4. Loop-invariant code motion (the filter block out of the spatial loops) and vector lowering; the
     whole-module finish step (pipelines/cpu/finish.py) bufferizes, and `flatten-transfers` reads the input
     pairs as one flat vector.
"""
from __future__ import annotations

from workbench.common.transform_text import transform_module

#: the functions a session may call as generators (`file.py[gen=NAME]`); nothing else here is callable
GENERATORS = ["conv_vnni_tiling"]

PAYLOAD_OP = "linalg.generic"
#: the loops of the payload op, in order
LOOPS = ("n", "f", "oh", "ow", "co", "kh", "kw", "ci")
PARAMS = {
    "op": {"help": "the id of the lh.vnni_conv convolution to schedule (`inspect`)"},
    "tile_f": {"min": 1, "max": 64, "space": [4, 8, 16], "help": "output channels per register tile (one accumulator each)"},
    "tile_w": {"choices": [4, 8, 16], "help": "output positions per accumulator (f32 lanes of one vdpbf16ps)"},
    "tile_c": {"min": 1, "max": 256, "space": [1, 2, 4, 8], "help": "input channel pairs per register tile step (unrolled)"},
    "threads": {"min": 1, "max": 256, "help": "chunks of loop `split` run as parallel tasks (1: one thread)"},
    "split": {"min": 0, "max": 3, "help": "the parallel loop (n, f, oh, ow = 0..3) split over threads"},
    "interchange": {"help": "the order of the tiled loops (n, f, oh, ow, co, kh, kw, ci = 0..7; empty: the default)"},
}

ANY = "!transform.any_op"
#: the most channel pairs per register tile step (unrolled) where no small divisor of the pairs exists
MAX_PAIR_TILE = 16
#: n, f, kh, kw, co, oh, ow, ci
DEFAULT_INTERCHANGE = [0, 1, 5, 6, 4, 2, 3, 7]


def conv_vnni_tiling(op: str = "", tile_f: int = 8, tile_w: int = 16, tile_c: int = 4, threads: int = 1,
                     split: int = 0, interchange: list[int] = []) -> str:
    """The transform module (MLIR text) for the lh.vnni_conv convolution `op`."""
    if not op or not all(c.isalnum() or c in "_-." for c in op):
        raise ValueError(f"op must be an op id like generic_0 (`inspect` lists them), got {op!r}")
    for name, v in (("tile_f", tile_f), ("tile_w", tile_w), ("tile_c", tile_c), ("threads", threads)):
        if not isinstance(v, int) or v <= 0:
            raise ValueError(f"{name} must be a positive int, got {v!r}")
    if tile_w not in (4, 8, 16):
        raise ValueError(f"tile_w must be 4, 8 or 16 (f32 lanes of one vdpbf16ps), got {tile_w}")
    if not 0 <= split <= 3:
        raise ValueError(f"split must be a parallel loop (0..3: n, f, oh, ow), got {split}")
    order = [int(i) for i in interchange] or DEFAULT_INTERCHANGE
    if sorted(order) != list(range(len(LOOPS))):
        raise ValueError(f"interchange must be a permutation of the {len(LOOPS)} loops {LOOPS}, got {order}")
    body = matched_and_packs(op, threads, split)
    # 2. the register tiles
    sizes = [1, tile_f, 1, tile_w, tile_c, 1, 1, 0]
    body += (f"    %t, %t_l:7 = transform.structured.tile_using_for %g tile_sizes {sizes} interchange = {order}"
             f" : ({ANY}) -> ({', '.join([ANY] * 8)})\n"
             f"    %inner = transform.get_parent_op %t {{op_name = \"scf.for\"}} : ({ANY}) -> {ANY}\n"
             f"    %func = transform.get_parent_op %inner {{op_name = \"func.func\"}} : ({ANY}) -> {ANY}\n"
             # 3. unit loops folded: O[f, w] += Wp[f, co, ci] * Ip[co, w, ci] (loops f, w, co, ci)
             f"    transform.apply_patterns to %inner {{\n"
             f"      transform.apply_patterns.linalg.fold_unit_extent_dims_via_slices\n"
             f"      transform.apply_patterns.canonicalization\n"
             f"    }} : {ANY}\n"
             f"    %folded = transform.structured.match ops{{[\"linalg.generic\"]}} in %inner : ({ANY}) -> {ANY}\n")
    # the folded op's loops: those of the tile longer than 1, in the op's order
    folded = [d for d, s in enumerate(sizes) if s != 1]
    unit = [1 if LOOPS[d] in ("f", "co") and sizes[d] > 1 else 0 for d in folded]
    unrolled = [sizes[d] for d in folded if LOOPS[d] in ("f", "co") and sizes[d] > 1]
    if unrolled:
        names = f"%u_l:{len(unrolled)}" if len(unrolled) > 1 else "%u_l"
        body += (f"    %unit, {names} = transform.structured.tile_using_for %folded tile_sizes {unit}"
                 f" : ({ANY}) -> ({', '.join([ANY] * (len(unrolled) + 1))})\n"
                 f"    transform.structured.vectorize %unit : {ANY}\n")
        for i in reversed(range(len(unrolled))):
            loop = f"%u_l#{i}" if len(unrolled) > 1 else "%u_l"
            body += f"    transform.loop.unroll {loop} {{factor = {unrolled[i]}}} : {ANY}\n"
    else:
        body += f"    transform.structured.vectorize %folded : {ANY}\n"
    body += f"""    transform.apply_patterns to %func {{
      transform.apply_patterns.vector.transfer_permutation_patterns
      transform.apply_patterns.vector.reduction_to_contract
      transform.apply_patterns.vector.fold_arith_extension
      transform.apply_patterns.canonicalization
    }} : {ANY}
    transform.apply_cse to %func : {ANY}
    transform.apply_patterns to %func {{
      transform.apply_patterns.x86vector.vector_contract_to_packed_type_dot_product
      transform.apply_patterns.canonicalization
    }} : {ANY}
    %all_loops = transform.structured.match ops{{["scf.for"]}} in %func : ({ANY}) -> {ANY}
    transform.apply_licm to %all_loops : {ANY}
    transform.apply_patterns to %func {{
      transform.apply_patterns.vector.lower_masked_transfers
      transform.apply_patterns.vector.transfer_permutation_patterns
      transform.apply_patterns.vector.lower_contraction lowering_strategy = "outerproduct"
      transform.apply_patterns.vector.lower_transpose lowering_strategy = "shuffle_16x16"
      transform.apply_patterns.vector.lower_masks
      transform.apply_patterns.canonicalization
    }} : {ANY}
"""
    return transform_module(body)


def default_params(out_channels: int, out_width: int, pairs: int, threads: int = 1, split: int = 0,
                   vector_registers: int = 32) -> dict:
    """Parameters for a convolution with `out_channels` x `out_width` outputs per row over `pairs` input
    channel pairs: the widest accumulator (16, 8, 4 lanes) that divides the row, as many output channels
    as leave registers for the input vectors, the pairs in blocks of 2 to 4 (unrolled; all of a prime
    number of pairs up to MAX_PAIR_TILE)."""
    tile_w = next((w for w in (16, 8, 4) if out_width % w == 0), 0)
    if not tile_w:
        raise ValueError(f"output width {out_width} is no multiple of 4: no VNNI tile")
    tile_f = next(f for f in (8, 4, 2, 1) if out_channels % f == 0 and f <= max(vector_registers // 2 - 4, 1))
    # (two pairs at least: one pair per tile is folded away with the other unit loops, and the contraction
    # left is no longer in the VNNI layout: outer products instead of vdpbf16ps)
    tile_c = next((c for c in (4, 2, 3) if pairs % c == 0), pairs if pairs <= MAX_PAIR_TILE else 1)
    return dict(tile_f=tile_f, tile_w=tile_w, tile_c=tile_c, threads=threads, split=split)


def matched_and_packs(op: str, threads: int, split: int, batch_threads: int = 1) -> str:
    """Transform ops of the schedule's first step: %g = the convolution `op` (an error unless exactly one
    op has that id), split into `threads` chunks of loop `split` (scf.forall) where threads > 1 (and its batch
    into `batch_threads` chunks too where `split` is another loop: threads x batch_threads tasks); the input's
    pack (its operand 1's producer) tiled one row of channel pairs per step (one image per parallel task where
    threads > 1), the filter's (operand 0's) one output channel and its second outer dim (the pair; a window
    row in the AMX layout) at a time, both vectorized."""
    body = (f'    %g_all = transform.structured.match ops{{["linalg.generic"]}} attributes{{lh.op = "{op}"}} in %root'
            f" : ({ANY}) -> {ANY}\n"
            f"    %g_count = transform.num_associations %g_all : ({ANY}) -> !transform.param<i64>\n"
            f"    %g_one = transform.param.constant 1 : i64 -> !transform.param<i64>\n"
            f"    // op {op} must exist (`inspect` lists the ids)\n"
            f"    transform.match.param.cmpi eq %g_count, %g_one : !transform.param<i64>\n"
            f"    %pk_all = transform.get_producer_of_operand %g_all[1] : ({ANY}) -> {ANY}\n"
            f"    %fpk = transform.get_producer_of_operand %g_all[0] : ({ANY}) -> {ANY}\n")
    counts = [0] * (split + 1)
    counts[split] = threads
    if split and batch_threads > 1:
        counts[0] = batch_threads
    if max(counts) > 1:
        body += (f"    %g, %g_forall = transform.structured.tile_using_forall %g_all num_threads {counts}"
                 f" : ({ANY}) -> ({ANY}, {ANY})\n")
    else:
        body += f"    %g = transform.merge_handles %g_all : {ANY}\n"
    # 1. the input's pack: one row of channel pairs per step, one image per task where the convolution is split
    if max(counts) > 1:
        body += (f"    %pk, %pk_forall = transform.structured.tile_using_forall %pk_all tile_sizes [1]"
                 f" : ({ANY}) -> ({ANY}, {ANY})\n")
    else:
        body += f"    %pk = transform.merge_handles %pk_all : {ANY}\n"
    body += (f"    %pkt, %pkt_l:3 = transform.structured.tile_using_for %pk tile_sizes [1, 1, 1, 0]"
             f" : ({ANY}) -> ({ANY}, {ANY}, {ANY}, {ANY})\n"
             f"    transform.structured.vectorize %pkt : {ANY}\n"
             # the filter's pack (a constant's, once per call): all window positions of one pair per step
             f"    %fpkt, %fpkt_l:2 = transform.structured.tile_using_for %fpk tile_sizes [1, 1, 0, 0]"
             f" : ({ANY}) -> ({ANY}, {ANY}, {ANY})\n"
             f"    transform.structured.vectorize %fpkt : {ANY}\n")
    return body
