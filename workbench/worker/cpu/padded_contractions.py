"""`lh-pad-contraction-dims{lanes=16}`: f32 contractions (matmul in any layout, batch matmul, their generic
forms) whose M or N has no good register-tile divisor computed over padded rows or columns: the operands
that the padded loop indexes widened with zeros, the extra results sliced off.

    C[0:m, 0:n] = A @ B   ->   (pad(A) @ pad(B))[0:m, 0:n]   with m -> m', n -> n'

The matmul schedules tile by register tiles that must divide the dims (no remainder tiles). A token count
such as ViT's 197 (a prime) left them a 1-row tile: a pass over the packed B panel per row, about half the
speed of an 8-row tile. M is padded to a multiple of 8 or 4 where the wider tile pays for the extra rows
(`padded_rows`), where it is, K to a multiple of {k-multiple} (`padded_depth`: a prime K such as a 7x7
window's 49 left the packed schedules one-step K tiles; 52 gives them reg_k 4 and 4-deep pack tiles: Swin's
192 x 49x49 @ 49x32 0.72 -> 0.63 ms, ViT's 12 x 197x197 @ 197x64 0.81 -> 0.74 ms), N to whole vectors when they use the lanes better than the tiles that
divide N (1000 columns: half vectors; 20: quarter ones): whole tiles everywhere, at the price of copying the padded operands (O(m k + k n) against O(m n k) multiply-adds).
The pads are upstream's (transform.structured.pad), so every layout of every contraction is padded the same
way; a fill of the init folds into a fill of the padded one (the function is canonicalized).
"""
from __future__ import annotations

#: register tile rows the matmul schedules use (pipelines/cpu/matmul.py register_tile), widest first
ROW_TILES = (8, 4, 2, 1)
#: rows of a tile of two vectors that keep the FMA units busy: fewer rows are fewer independent
#: accumulator chains (1 row: 2 chains of 4-cycle FMAs on 2 ports, a quarter of the peak)
FULL_SPEED_ROWS = 4
#: the attribute that marks the op being padded for the transform sequence (removed after)
_TAG = "lh.pad_target"


def _row_cost(rows: int) -> float:
    """Relative time of `rows` rows computed in the widest row tile that divides them."""
    tile = next(r for r in ROW_TILES if rows % r == 0)
    return rows / min(1.0, tile / FULL_SPEED_ROWS)


def padded_rows(extent: int) -> int:
    """`extent` or its round-up to a multiple of a row tile, whichever computes fastest (ties: the
    smaller): 197 (a prime, one-row tiles) -> 200, 42 (two-row tiles) -> 44, 13 -> 16, 2 stays."""
    candidates = [extent] + [-(-extent // r) * r for r in ROW_TILES[:2]]
    return min(candidates, key=lambda e: (_row_cost(e), e))


#: the widest block of columns the matmul schedules pack B in (pipelines/cpu/matmul.py default_params'
#: cap_n below 1024 x 1024): a wider N has to be cut in blocks that divide it
PACKED_COLUMNS_CAP = 512
#: a wide N whose blocks of whole register tiles (two vectors) are narrower than this many tiles is padded
#: until they are not (an LM head's vocabulary: 32003 -> 32008 whole vectors = 8 x 4001, blocks of one
#: vector, A packed again for every 8 columns: 128 x 256 x 32003 at 12 GFLOP/s)
MIN_BLOCK_TILES = 4


def widest_block(extent: int, tile: int, cap: int = PACKED_COLUMNS_CAP) -> int:
    """The widest divisor of `extent` up to `cap` that is a multiple of `tile` (0: none)."""
    return max((b for b in range(tile, min(cap, extent) + 1, tile) if extent % b == 0), default=0)


def padded_columns(extent: int, lanes: int) -> int:
    """`extent` rounded up to whole vectors of `lanes` where that uses the lanes better than the widest
    power-of-two tile that divides it (20 of 16 lanes: 20/32 of two vectors against 4/16 of one), else
    `extent`. A wide N (more than 4 packed blocks, where the schedules cannot take all of N as one block)
    is rounded up further, a register tile of two vectors at a time, until its blocks of whole tiles are
    at least MIN_BLOCK_TILES wide: at most 8 tiles more (a multiple of 8 tiles has a block of 8),
    32003 -> 32016 with 8 lanes (blocks of 29 tiles of 16), 50257 (GPT-2's vocabulary) -> 50304 with 16 (12 tiles)."""
    if extent <= 2:
        return extent
    rounded = extent
    if extent % lanes:
        rounded = -(-extent // lanes) * lanes
        divisor = extent & -extent          # the largest power of two dividing it
        rounded = rounded if extent / rounded > min(divisor, lanes) / lanes else extent
    tile = 2 * lanes
    if extent > 4 * PACKED_COLUMNS_CAP and widest_block(rounded, tile) < MIN_BLOCK_TILES * tile:
        wide = -(-extent // tile) * tile
        while widest_block(wide, tile) < MIN_BLOCK_TILES * tile:
            wide += tile
        return wide
    return rounded


def padded_depth(extent: int, multiple: int) -> int:
    """`extent` (K) rounded up to a multiple of `multiple` where it is no multiple of it (0: unchanged).
    The packed schedules unroll K by the largest of 4, 2, 1 dividing their K block and pack A / B in
    K tiles that divide it: a prime K (49 of a 7x7 window) got one-step tiles (reg_k 1, pack tiles 1)."""
    if multiple <= 1 or extent % multiple == 0 or extent < multiple:
        return extent
    return -(-extent // multiple) * multiple


def _contraction_dims(op) -> tuple[int, int, int, int, int] | None:
    """(m, n, k, m loop, n loop) of an f32 contraction on static tensors (its loops are (batch..., m, n, k)),
    else None."""
    from mlir import ir

    from workbench.worker.payload_inspect import _iteration_domain, describe_linalg_op

    if not all(isinstance(v.type, ir.RankedTensorType) and v.type.has_static_shape
               and str(v.type.element_type) == "f32" for v in op.operands):
        return None
    if op.name == "linalg.generic" and ("lh.vnni" in op.attributes or "lh.vnni_conv" in op.attributes):
        return None
    info = describe_linalg_op(op)
    dims = info.get("dims") or {}
    if info.get("kind") != "contraction" or "m" not in dims or "n" not in dims or "k" not in dims:
        return None
    domain = _iteration_domain(op)
    if domain is None or len(domain) < 3:
        return None
    return dims["m"], dims["n"], dims["k"], len(domain) - 3, len(domain) - 2


def _plan(op, lanes: int, k_multiple: int = 0) -> tuple[list[int], list[int]] | None:
    """(padding dims, multiples) for `op`, or None where nothing is padded."""
    found = _contraction_dims(op)
    if found is None:
        return None
    m, n, k, m_loop, n_loop = found
    dims, multiples = [], []
    new_m = padded_rows(m)
    if new_m != m:
        dims.append(m_loop)
        multiples.append(next(r for r in ROW_TILES if new_m % r == 0))
    # columns: whole vectors, only where the padded B is read by several row tiles (a few rows: the copy
    # of B would cost as much as the product)
    new_n = padded_columns(n, lanes)
    if m >= 8 and new_n != n:
        dims.append(n_loop)
        multiples.append(new_n)   # (a multiple of the padded N itself: exactly that N)
    # depth: whole K steps of the unrolled kernel (zeros in A's extra columns and B's extra rows add
    # nothing), only where rows are padded anyway (A is copied then: its extra columns come with that copy)
    if dims and dims[0] == m_loop and padded_depth(k, k_multiple) != k:
        dims.append(n_loop + 1)
        multiples.append(k_multiple)
    return (dims, multiples) if dims else None


def pad_contraction_dims(module, lanes: int = 16, k_multiple: int = 0) -> int:
    """Pad every eligible contraction (module docstring); how many were padded."""
    from mlir import ir

    from workbench.worker.ir_walk import apply_transform, ops_where

    plans = [(op, plan) for op in ops_where(module, lambda o: o.name.startswith("linalg."))
             if (plan := _plan(op, lanes, k_multiple)) is not None]
    any_op = "!transform.any_op"
    for op, (dims, multiples) in plans:
        op.attributes[_TAG] = ir.UnitAttr.get()
        zeros = ", ".join(["0.0 : f32"] * len(op.operands))
        apply_transform(module, f"""
    %op = transform.structured.match ops{{["{op.name}"]}} attributes{{{_TAG}}} in %root : ({any_op}) -> {any_op}
    %p, %pad, %copy = transform.structured.pad %op pad_to_multiple_of {multiples} {{
        padding_values = [{zeros}], padding_dimensions = {dims}, copy_back_op = "none"}}
        : ({any_op}) -> ({any_op}, {any_op}, {any_op})
    %f = transform.get_parent_op %p {{op_name = "func.func"}} : ({any_op}) -> {any_op}
    transform.apply_patterns to %f {{
      transform.apply_patterns.canonicalization
    }} : {any_op}
""")
        # (the padded op keeps the attributes of the one it replaces: the tag goes, the op id stays)
        for tagged in ops_where(module, lambda o: _TAG in o.attributes):
            del tagged.attributes[_TAG]
    return len(plans)
