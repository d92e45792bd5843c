"""`lh-vnni-convs`: 2-D (and 1-D) convolutions (NCHW input, FCHW filter; NCW, FCW) reading bf16 and accumulating in f32 become a
convolution over input and filter packed in pairs of input channels (the VNNI layout `vdpbf16ps` reads),
for machines with AVX512-BF16 (the convolution counterpart of `lh-vnni-contractions`).

    O[n, f, oh, ow] += I[n, c, oh * sh + kh * dh, ow * sw + kw * dw] * W[f, c, kh, kw]
 -> O[n, f, oh, ow] += ext(Wp[f, co, kh, kw, ci]) * ext(Ip[n, co, oh * sh + kh * dh, ow * sw + kw * dw, ci])
       Ip = linalg.pack of I along C by 2: N x C/2 x H x W x 2 (the two channels of a pair next to each other
            at every pixel: a run of w reads 2 x w contiguous bf16); Wp likewise, F x C/2 x KH x KW x 2
       (an odd C is first padded with a zero channel)

over loops (n, f, oh, ow, co, kh, kw, ci) (a 1-D convolution, lh-pointwise-convs' 1x1 ones among them,
with its operands viewed with a unit height, the result collapsed back). The rewritten op carries VNNI_CONV_ATTR (the selector picks
pipelines/cpu/conv_vnni.py by it), whose micro-kernel is one filter pair (broadcast, 32 bits) times a run of
output positions (the input's 2 x w bf16): one vdpbf16ps per output channel, input channel pair and window
position.

Eligible: static shapes, bf16 input and filter (or f32 extensions of bf16 tensors), an f32 output, more
than 2 input channels, a unit stride along w (others keep the f32 window schedule, which extends the bf16 values). Output rows
that are no multiple of 8 are padded to one (the input widened with zeros to what the extra positions
read), the extra outputs sliced off: whole register tiles (ResNet's 28, 14 and 7 wide rows: 32, 16, 8).
"""
from __future__ import annotations

from workbench.worker.cpu.vnni_contractions import (PAIR, _bf16_input, _element, _erase_if_dead, _tensor_type,
                                                    widening_multiply_add)

#: the attribute the rewritten convolution carries (unit): workbench/targets/cpu.py selects by it
VNNI_CONV_ATTR = "lh.vnni_conv"
#: the attribute of the AMX layout's convolution (`amx=True`): pipelines/cpu/conv_amx.py schedules it
AMX_CONV_ATTR = "lh.amx_conv"
#: an AMX tile's rows (16 output channels) and its result columns (16 f32 output positions): the AMX layout
#: wants output channels in whole tiles; its output rows are padded to whole tiles
AMX_TILE = 16
#: the named convolutions rewritten (their loops: n, f, oh, ow, c, kh, kw)
CONV_OPS = ("linalg.conv_2d_nchw_fchw", "linalg.conv_1d_ncw_fcw")   # (a 1-D one viewed with a unit height)
#: output rows (ow) are padded to a multiple of this (the extra positions computed on zeros, sliced off):
#: the schedule's register tile runs along them without a remainder, 8 or 16 f32 lanes per vdpbf16ps
ROW_MULTIPLE = 8


def _attr_pair(op, name: str) -> list[int]:
    """The op's strides or dilations as (h, w) (a 1-D convolution's with a unit height)."""
    from mlir import ir

    if name not in op.attributes:
        return [1, 1]
    values = [int(v) for v in ir.DenseIntElementsAttr(op.attributes[name])]
    return [1] * (2 - len(values)) + values


def _with_unit_height(value):
    """A 1-D operand (d0 x d1 x w) viewed as d0 x d1 x 1 x w (expand_shape, no copy); 2-D ones as they are."""
    from mlir import ir
    from mlir.dialects import tensor

    t = _tensor_type(value)
    shape = list(t.shape)
    if len(shape) == 4:
        return value
    i64 = ir.IntegerType.get_signless(64)
    reassociation = ir.ArrayAttr.get([ir.ArrayAttr.get([ir.IntegerAttr.get(i64, i) for i in g])
                                      for g in ([0], [1], [2, 3])])
    new = shape[:2] + [1, shape[2]]
    return tensor.ExpandShapeOp(ir.RankedTensorType.get(new, t.element_type), value, reassociation, [], new).result


def _eligible(op) -> bool:
    if op.name not in CONV_OPS or len(op.results) != 1:
        return False
    image, filt, out = op.operands
    if _element(out) != "f32" or _bf16_input(image) is None or _bf16_input(filt) is None:
        return False
    types = [_tensor_type(v) for v in (image, filt, out)]
    if not all(t is not None and t.has_static_shape for t in types):
        return False
    # (one channel pair: the schedule's tile would fold the pair loop away, and with it the VNNI layout; a
    # stride along w: the input pairs of a run of outputs are not contiguous)
    return types[0].shape[1] > PAIR and _attr_pair(op, "strides")[1] == 1


def _pad_high(value, dim: int, amount: int):
    """`value` with `amount` zeros appended along `dim` (a tensor.pad)."""
    from mlir import ir
    from mlir.dialects import arith, tensor

    t = _tensor_type(value)
    shape = list(t.shape)
    high = [0] * len(shape)
    high[dim] = amount
    shape[dim] += amount
    pad = tensor.PadOp(ir.RankedTensorType.get(shape, t.element_type), value, [], [], [0] * len(shape), high)
    block = pad.region.blocks.append(*[ir.IndexType.get()] * len(shape))
    with ir.InsertionPoint(block):
        tensor.YieldOp(arith.ConstantOp(t.element_type, 0.0).result)
    return pad.result


def _pack_channel_pairs(value, pairs_last: bool = False):
    """`value` (d0 x C x ..., bf16) packed as d0 x ceil(C/2) x ... x 2, an odd C first padded with a zero
    channel (a tensor.pad: the pack itself then has whole tiles only, which it vectorizes). `pairs_last`:
    the pairs' dim after the others, d0 x ... x ceil(C/2) x 2 (a filter row of an AMX A tile: the pairs of
    one output channel at one window position, contiguous)."""
    from mlir.dialects import linalg, tensor

    if _tensor_type(value).shape[1] % PAIR:
        value = _pad_high(value, 1, PAIR - _tensor_type(value).shape[1] % PAIR)
    t = _tensor_type(value)
    shape = list(t.shape)
    rank = len(shape)
    if pairs_last:
        perm = [0] + list(range(2, rank)) + [1]
        dest = tensor.EmptyOp([shape[i] for i in perm[:-1]] + [shape[1] // PAIR, PAIR], t.element_type).result
        return linalg.pack(value, dest, [1], [PAIR], outer_dims_perm=perm)
    packed = [shape[0], shape[1] // PAIR] + shape[2:] + [PAIR]
    dest = tensor.EmptyOp(packed, t.element_type).result
    return linalg.pack(value, dest, [1], [PAIR])


def _padded_rows(image, out, filter_width: int, strides: list[int], dilations: list[int],
                 multiple: int = ROW_MULTIPLE):
    """(image, out) with the output rows (ow) padded to a multiple of `multiple` and the input widened
    to what the extra positions read (zeros): whole register tiles along the rows; the extra outputs are
    sliced off the result."""
    ow = _tensor_type(out).shape[-1]
    if ow % multiple == 0:
        return image, out
    padded = -(-ow // multiple) * multiple
    needed = (padded - 1) * strides[1] + (filter_width - 1) * dilations[1] + 1
    width = _tensor_type(image).shape[-1]
    if needed > width:
        image = _pad_high(image, 3, needed - width)
    return image, _pad_high(out, 3, padded - ow)


def _vnni_conv_generic(wp, ip, out, strides: list[int], dilations: list[int], amx: bool = False):
    """O[n, f, oh, ow] += ext(Wp[f, co, kh, kw, ci]) * ext(Ip[n, co, oh*sh + kh*dh, ow*sw + kw*dw, ci]) over
    loops (n, f, oh, ow, co, kh, kw, ci), tagged VNNI_CONV_ATTR; `amx`: the filter as Wa[f, kh, kw, co, ci],
    tagged AMX_CONV_ATTR."""
    from mlir import ir

    n, f, oh, ow, co, kh, kw, ci = (ir.AffineDimExpr.get(i) for i in range(8))

    def amap(exprs):
        return ir.AffineMapAttr.get(ir.AffineMap.get(8, 0, exprs))

    h = oh * strides[0] + kh * dilations[0]
    w = ow * strides[1] + kw * dilations[1]
    filter_map = amap([f, kh, kw, co, ci] if amx else [f, co, kh, kw, ci])
    maps = [filter_map, amap([n, co, h, w, ci]), amap([n, f, oh, ow])]
    return widening_multiply_add(wp, ip, out, maps, 4, 4, AMX_CONV_ATTR if amx else VNNI_CONV_ATTR)


def amx_row_padding(width: int) -> int:
    """The output row length an AMX convolution computes for rows of `width`: `width` itself where a divisor
    of it (<= 16: the result tile's columns) fills the tiles as well as padding to whole 16-column tiles
    would (56: 4 tiles of 14, 87.5% of each tile's columns, as 64 would be: no copies into and out of a
    padded row), else the next multiple of 16 (50: 64 columns, 78% used, against 5 tiles of 10, 62%)."""
    best_divisor = max(d for d in range(1, AMX_TILE + 1) if width % d == 0)
    padded = -(-width // AMX_TILE) * AMX_TILE
    return width if best_divisor / AMX_TILE >= width / padded else padded


def _amx_layout(op) -> bool:
    """The convolution's output channels come in whole AMX tiles (16 rows of the A tile) and its output rows
    have more than one position (the B tile's columns: a row of one, a squeeze-excite 1x1 convolution of a
    pooled 1x1 image, is a matrix-vector product; conv_amx's tile lost its `ow` loop to the unit-extent
    folding and the schedule failed with `too many tiles provided, expected at most 3 found 4`)."""
    out = _tensor_type(op.operands[2])
    return out.shape[1] % AMX_TILE == 0 and out.shape[-1] > 1


def vnni_convs(module, amx: bool = False) -> int:
    """Rewrite every eligible convolution (module docstring); how many were rewritten. `amx`: those whose
    output channels are whole AMX tiles get the AMX layout instead (the filter as F x KH x KW x C/2 x 2:
    each output channel's pairs at one window position a contiguous A tile row; output rows padded to whole
    16-column tiles where that fills the tiles better than a divisor of the row: amx_row_padding), tagged
    AMX_CONV_ATTR (pipelines/cpu/conv_amx.py)."""
    from mlir import ir

    from workbench.worker.ir_walk import ops_where

    rewritten = 0
    for op in ops_where(module, _eligible):
        image, filt, out = op.operands
        strides, dilations = _attr_pair(op, "strides"), _attr_pair(op, "dilations")
        on_tiles = amx and _amx_layout(op)
        with ir.InsertionPoint(op), op.location:
            ow = _tensor_type(out).shape[-1]
            image4, out4 = _padded_rows(_with_unit_height(_bf16_input(image, build=True)), _with_unit_height(out),
                                        _tensor_type(filt).shape[-1], strides, dilations,
                                        amx_row_padding(ow) if on_tiles else ROW_MULTIPLE)
            ip = _pack_channel_pairs(image4)
            wp = _pack_channel_pairs(_with_unit_height(_bf16_input(filt, build=True)), pairs_last=on_tiles)
            result = _vnni_conv_generic(wp, ip, out4, strides, dilations, amx=on_tiles)
            out_shape = list(_tensor_type(out4).shape)
            if out_shape[-1] != ow:
                from mlir.dialects import tensor

                sizes = out_shape[:-1] + [ow]
                sliced = ir.RankedTensorType.get(sizes, _tensor_type(out).element_type)
                result = tensor.ExtractSliceOp(sliced, result, [], [], [], [0] * 4, sizes, [1] * 4).result
            if _tensor_type(out).rank == 3:
                from mlir.dialects import tensor

                i64 = ir.IntegerType.get_signless(64)
                reassociation = ir.ArrayAttr.get([ir.ArrayAttr.get([ir.IntegerAttr.get(i64, i) for i in g])
                                                  for g in ([0], [1], [2, 3])])
                result = tensor.CollapseShapeOp(out.type, result, reassociation).result
        op.results[0].replace_all_uses_with(result)
        op.erase()
        for value in (image, filt):
            _erase_if_dead(value)
        rewritten += 1
    return rewritten
