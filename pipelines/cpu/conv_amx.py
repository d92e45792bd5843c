"""Transform-dialect schedule for bf16 convolutions on AMX tiles (Intel Sapphire Rapids and later: `tdpbf16ps`).

The payload op is what `lh-vnni-convs{amx=1}` (workbench/worker/cpu/vnni_convs.py) makes of a bf16 2-D
convolution accumulating in f32 whose output channels are whole tiles: a linalg.generic tagged `lh.amx_conv`
over loops (n, f, oh, ow, co, kh, kw, ci),

    O[n, f, oh, ow] += ext(Wa[f, kh, kw, co, ci]) * ext(Ip[n, co, oh * sh + kh * dh, ow * dw' + kw * dw, ci])

the input packed in channel pairs (Ip: N x C/2 x H x W x 2, a pixel's pair adjacent: a run of output
positions reads 2 x w contiguous bf16, one row of an AMX B tile), the filter in pairs after the window
(Wa: F x KH x KW x C/2 x 2: one output channel's pairs at one window position, a row of an A tile), the
output rows whole 16-column tiles (unit stride along w: lh-vnni-convs' eligibility).

No im2col: at one window position (kh, kw) the convolution's tile is a matmul of AMX operands read in place,

    O[f, w] += Wa[kh, kw][f, co, ci] * Ip[n, co, oh + kh, w + kw, ci]       (m = f, n = w, k = co pairs)

Schedule:
  1. The packs (pipelines/cpu/conv_vnni.py's step 1) and the split over the threads (loop `split`, and the
     batch into `batch_threads` chunks where `split` is the output rows: images x row blocks).
  2. Tiles: loops n, oh, f (tiles_f x tile_f), ow (tiles_w x tile_w), co (tile_k pairs: the K loop), kh,
     kw (by 1, `window` gives their extents); the tile's unit loops folded away
     (fold_unit_extent_dims_via_slices): an AMX matmul tile over (f, ow, co, ci).
  3. tiles_f x tiles_w tile products, vectorized to vector.contract (extensions folded) and unrolled, the
     window loops unrolled too: the K loop's body is straight-line tile products.
  4. Bufferization and upstream's `convert-vector-to-amx` (tile loads with the operands' row strides,
     tdpbf16ps, tile stores), in pipelines/cpu/finish.py{amx=1}; then lh-amx-tile-accumulators
     (pipelines/cpu/amx-accumulators.yaml) keeps the result tiles in tile registers across the K loop.
"""
from __future__ import annotations

from conv_vnni import ANY, matched_and_packs
from matmul_amx import amx_tile_contractions
from matmul_vnni import _tile, _unroll
from workbench.common.transform_text import transform_module

#: the functions a session may call as generators (`file.py[gen=NAME]`); nothing else here is callable
GENERATORS = ["conv_amx_tiling"]

PAYLOAD_OP = "linalg.generic"
#: the loops of the payload op, in order
LOOPS = ("n", "f", "oh", "ow", "co", "kh", "kw", "ci")
#: an AMX tile: at most 16 rows of 64 bytes (16 f32 results, 16 bf16 pairs)
TILE_ROWS = 16
PARAMS = {
    "op": {"help": "the id of the lh.amx_conv convolution to schedule (`inspect`)"},
    "tile_f": {"min": 1, "max": 16, "space": [8, 16], "help": "output channels per AMX tile (its rows, <= 16)"},
    "tile_w": {"min": 1, "max": 16, "space": [8, 16], "help": "output positions per AMX result tile (<= 16 f32)"},
    "tile_k": {"min": 1, "max": 16, "space": [4, 8, 16], "help": "input channel pairs per tile product (<= 16)"},
    "tiles_f": {"choices": [1, 2], "help": "result tiles along the output channels per K step (2 x 2 result tiles + "
                                          "2 A + 2 B: the 8 tmm registers)"},
    "tiles_w": {"choices": [1, 2], "help": "result tiles along the output row per K step"},
    "window": {"help": "the filter's extents [kh, kw] (the window loops, unrolled; set by the selector)"},
    "threads": {"min": 1, "max": 256, "help": "chunks of loop `split` run as parallel tasks (1: one thread)"},
    "split": {"min": 0, "max": 3, "help": "the parallel loop (n, f, oh, ow = 0..3) split over threads"},
    "batch_threads": {"min": 1, "max": 256, "help": "chunks of the batch too, where `split` is another loop "
                                                    "(tasks: threads x batch_threads)"},
}
CONSTRAINTS: list[str] = []


def conv_amx_tiling(op: str = "", tile_f: int = 16, tile_w: int = 16, tile_k: int = 16, tiles_f: int = 2,
                    tiles_w: int = 2, window: list[int] = [3, 3], threads: int = 1, split: int = 0,
                    batch_threads: int = 1) -> str:
    """The transform module (MLIR text) for the lh.amx_conv convolution `op`."""
    if not op or not all(c.isalnum() or c in "_-." for c in op):
        raise ValueError(f"op must be an op id like generic_0 (`inspect` lists them), got {op!r}")
    for name, v in (("tile_f", tile_f), ("tile_w", tile_w), ("tile_k", tile_k), ("threads", threads),
                    ("batch_threads", batch_threads)):
        if not isinstance(v, int) or v <= 0:
            raise ValueError(f"{name} must be a positive int, got {v!r}")
    if max(tile_f, tile_w, tile_k) > TILE_ROWS:
        raise ValueError(f"an AMX tile has at most {TILE_ROWS} rows of 64 bytes: tile_f={tile_f}, tile_w={tile_w}, "
                         f"tile_k={tile_k} must each be <= 16")
    if tiles_f not in (1, 2) or tiles_w not in (1, 2):
        raise ValueError(f"tiles_f and tiles_w must be 1 or 2, got {tiles_f}, {tiles_w}")
    if (not isinstance(window, (list, tuple)) or len(window) != 2
            or not all(isinstance(v, int) and v > 0 for v in window)):
        raise ValueError(f"window must be the filter's [kh, kw] extents, got {window!r}")
    if not 0 <= split <= 3:
        raise ValueError(f"split must be a parallel loop (0..3: n, f, oh, ow), got {split}")
    body = matched_and_packs(op, threads, split, batch_threads)
    # 2. tiles in the order n, oh, f, ow, co, kh, kw (a window loop of one position gets no loop)
    kh, kw = window
    sizes = [1, tiles_f * tile_f, 1, tiles_w * tile_w, tile_k, 1 if kh > 1 else 0, 1 if kw > 1 else 0, 0]
    body += _tile("%g", sizes, "t", [0, 2, 1, 3, 4, 5, 6, 7])
    k_loop = "%t_l#4"
    window_loops = [(f"%t_l#{5 + i}", extent) for i, extent in enumerate(e for e in window if e > 1)]
    innermost = window_loops[-1][0] if window_loops else k_loop
    body += (f"    transform.apply_patterns to {innermost} {{\n"
             f"      transform.apply_patterns.linalg.fold_unit_extent_dims_via_slices\n"
             f"    }} : {ANY}\n"
             f"    %folded = transform.structured.match ops{{[\"linalg.generic\"]}} in {innermost} : ({ANY}) -> {ANY}\n")
    # 3. the tile products, vectorized and unrolled; then the window loops unrolled
    body += _tile("%folded", [tile_f, tile_w, 0, 0], "p")
    body += f"    transform.structured.vectorize %p : {ANY}\n"
    body += _unroll("%p_l#1", tiles_w) + _unroll("%p_l#0", tiles_f)
    for loop, extent in reversed(window_loops):
        body += _unroll(loop, extent)
    return transform_module(body + amx_tile_contractions())


def default_params(out_channels: int, out_width: int, pairs: int, window: list, threads: int = 1,
                   split: int = 0, batch_threads: int = 1) -> dict:
    """Parameters for a convolution with `out_channels` (whole 16-row tiles) x `out_width` outputs per row over
    `pairs` input channel pairs: result tiles of 16 rows x the row's largest divisor up to 16, 2 x 2 of them per
    K step where the dims hold them, the most pairs (<= 16) per product that divide the channels'."""
    tile_f = next(f for f in (16, 8, 4, 2, 1) if out_channels % f == 0)
    # (the row's largest divisor up to 16: 14 of a row of 56, which lh-vnni-convs{amx=1} leaves unpadded)
    tile_w = max(w for w in range(1, TILE_ROWS + 1) if out_width % w == 0)
    tile_k = next(k for k in range(min(pairs, TILE_ROWS), 0, -1) if pairs % k == 0)
    tiles_f = 2 if out_channels % (2 * tile_f) == 0 else 1
    tiles_w = 2 if out_width % (2 * tile_w) == 0 else 1
    return dict(tile_f=tile_f, tile_w=tile_w, tile_k=tile_k, tiles_f=tiles_f, tiles_w=tiles_w,
                window=[int(v) for v in window], threads=threads, split=split, batch_threads=batch_threads)
