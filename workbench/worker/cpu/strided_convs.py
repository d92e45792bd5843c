"""`lh-strided-convs`: channels-first convolutions with a stride s > 1 along w (the input's innermost dim) as
s unit-stride convolutions, one per input phase.

Output position o reads input s*o + k for tap k. With k = s*t + r (phase r, 0 <= r < s) that is element
o + t of the phase's row P_r[q] = I[s*q + r]: a stride-1 convolution of P_r with the taps r, r + s, ...
(a strided slice of the filter). The phases come from one pass over the input (its rows viewed as
q x s, an expand_shape, transposed to s x q: each phase a contiguous row), and the s convolutions
accumulate one after another into the result (the first into the init):

    O = conv_s(I, W, init)  ->  conv_1(P_{s-1}, W[.., s-1::s], ... conv_1(P_0, W[.., 0::s], init))

The window schedule then vectorizes each along w with contiguous loads, as any unit-stride convolution
(a stride along w otherwise leaves the vectors along the output channels: strided reads, a transposed
output). Strides along the other spatial dims stay (a row offset per output row). Where the phases'
taps padded to whole phases add at most MAX_EXTRA_WORK of multiply-adds, the phases become input
channels of one convolution instead (c * s + r: one transpose, one convolution, no accumulation passes).

A selector preparation step for 1-D convolutions only (`{max-rank=1}`: a Whisper-like front end's stride-2
conv1d went from 2.8 GFLOP/s, vectors along the output channels with strided reads, to 46); for 2-D and
3-D ones it is opt-in: on a 3x3 stride-2 conv, 64 -> 64 channels at 112 x 112, it measured even with the
selector's decomposed path (README).
"""
from __future__ import annotations

from workbench.worker.cpu.padded_conv_rows import conv_ints, static_conv_rank
from workbench.worker.cpu.vnni_convs import _pad_high, _tensor_type

#: named channels-first convolutions (the input's, filter's and output's innermost dims are w, the tap
#: along w and ow) and the rank of their spatial dims
CONVS = {"linalg.conv_1d_ncw_fcw": 1, "linalg.conv_2d_nchw_fchw": 2, "linalg.conv_3d_ncdhw_fcdhw": 3,
         "linalg.conv_2d_ngchw_gfchw": 2}

#: the indexing maps a named linalg op caches on itself once computed (from its strides, for a convolution)
MEMOIZED_MAPS = "linalg.memoized_indexing_maps"

#: those whose channels are dim 1 of input and filter (no groups): the phases can become channels
CHANNELS_FIRST = {"linalg.conv_1d_ncw_fcw", "linalg.conv_2d_nchw_fchw", "linalg.conv_3d_ncdhw_fcdhw"}


def _eligible(op) -> bool:
    rank = static_conv_rank(op, CONVS)
    return rank is not None and conv_ints(op, "strides", rank)[-1] > 1 and conv_ints(op, "dilations", rank)[-1] == 1


def _with_unit_w_stride(op, rank: int):
    """The `strides` attribute of `op` with the innermost stride 1 (same element type and shape)."""
    from mlir import ir

    attr = ir.DenseIntElementsAttr(op.attributes["strides"])
    values = [int(v) for v in attr][:-1] + [1]
    return ir.Attribute.parse(f"dense<[{', '.join(map(str, values))}]> : {attr.type}")


def _phase_rows(image, s: int):
    """[.., w] -> [.., s, ceil(w / s)]: row r holds elements r, r + s, ... (zero-padded to whole groups)."""
    from mlir import ir
    from mlir.dialects import linalg, tensor

    t = _tensor_type(image)
    shape = list(t.shape)
    rank = len(shape)
    groups = -(-shape[-1] // s)
    wide = _pad_high(image, rank - 1, groups * s - shape[-1]) if groups * s > shape[-1] else image
    i64 = ir.IntegerType.get_signless(64)
    reassociation = ir.ArrayAttr.get([ir.ArrayAttr.get([ir.IntegerAttr.get(i64, i) for i in g])
                                      for g in [[d] for d in range(rank - 1)] + [[rank - 1, rank]]])
    grouped = shape[:-1] + [groups, s]
    view = tensor.ExpandShapeOp(ir.RankedTensorType.get(grouped, t.element_type), wide, reassociation, [],
                                grouped).result
    empty = tensor.EmptyOp(shape[:-1] + [s, groups], t.element_type)
    return linalg.transpose(view, outs=[empty.result], permutation=list(range(rank - 1)) + [rank, rank - 1])


def _phases_as_channels(value, s: int, width: int):
    """[n, c, .., w] (w zero-padded to `width`, a multiple of s) -> [n, c * s, .., width / s]: channel
    c * s + r holds elements r, r + s, ... of channel c's rows (an expand_shape, one transpose that moves
    the phase next to the channel, a collapse_shape)."""
    from mlir import ir
    from mlir.dialects import linalg, tensor

    t = _tensor_type(value)
    shape = list(t.shape)
    rank = len(shape)
    if width > shape[-1]:
        value = _pad_high(value, rank - 1, width - shape[-1])
    i64 = ir.IntegerType.get_signless(64)

    def groups(gs):
        return ir.ArrayAttr.get([ir.ArrayAttr.get([ir.IntegerAttr.get(i64, i) for i in g]) for g in gs])

    grouped = shape[:-1] + [width // s, s]
    view = tensor.ExpandShapeOp(ir.RankedTensorType.get(grouped, t.element_type), value,
                                groups([[d] for d in range(rank - 1)] + [[rank - 1, rank]]), [], grouped).result
    moved = shape[:2] + [s] + shape[2:-1] + [width // s]
    empty = tensor.EmptyOp(moved, t.element_type)
    phased = linalg.transpose(view, outs=[empty.result], permutation=[0, 1, rank] + list(range(2, rank)))
    merged = [shape[0], shape[1] * s] + moved[3:]
    return tensor.CollapseShapeOp(ir.RankedTensorType.get(merged, t.element_type), phased,
                                  groups([[0], [1, 2]] + [[d] for d in range(3, rank + 1)])).result


def _extra_work(taps: int, s: int) -> float:
    """The multiply-adds of the phases-as-channels form over the convolution's (taps padded to whole phases)."""
    return s * -(-taps // s) / taps


#: the phases become input channels (one convolution) where that adds at most this fraction of multiply-adds
#: (3 taps, stride 2: 4 / 3); else one convolution per phase (a 1x1 stride 2: the phase it reads only)
MAX_EXTRA_WORK = 4 / 3


def strided_convs(module, max_rank: int = 3) -> int:
    """Rewrite every eligible convolution (module docstring) of at most `max_rank` spatial dims; how many
    were rewritten."""
    from mlir import ir
    from mlir.dialects import tensor

    from workbench.worker.ir_walk import ops_where

    rewritten = 0
    for op in ops_where(module, lambda o: _eligible(o) and CONVS[o.name] <= max_rank):
        rank = CONVS[op.name]
        image, filt, init = op.operands
        s = conv_ints(op, "strides", rank)[-1]
        x_type = _tensor_type(image)
        x_shape = list(x_type.shape)
        f_type = _tensor_type(filt)
        f_shape = list(f_type.shape)
        taps, ow = f_shape[-1], list(_tensor_type(init).shape)[-1]
        with ir.InsertionPoint(op), op.location:
            unit = _with_unit_w_stride(op, rank)
            if op.name in CHANNELS_FIRST and _extra_work(taps, s) <= MAX_EXTRA_WORK:
                # one convolution over s x the channels, each phase's taps padded to ceil(taps / s) with zeros
                whole = -(-taps // s) * s
                phased_image = _phases_as_channels(image, s, -(-x_shape[-1] // s) * s)
                phased_filter = _phases_as_channels(filt, s, whole)
                piece = op.clone(ip=ir.InsertionPoint(op))
                piece.operands[0] = phased_image
                piece.operands[1] = phased_filter
                piece.attributes["strides"] = unit
                if MEMOIZED_MAPS in piece.attributes:
                    del piece.attributes[MEMOIZED_MAPS]
                op.results[0].replace_all_uses_with(piece.results[0])
                op.erase()
                rewritten += 1
                continue
            rows = _phase_rows(image, s)
            result = init
            for r in range(min(s, taps)):
                phase_taps = -(-(taps - r) // s)
                width = ow + phase_taps - 1
                # phase r's rows (the phase dim dropped: a rank-reducing slice of contiguous rows)
                phase = tensor.ExtractSliceOp(
                    ir.RankedTensorType.get(x_shape[:-1] + [width], x_type.element_type), rows, [], [], [],
                    [0] * (len(x_shape) - 1) + [r, 0], x_shape[:-1] + [1, width], [1] * (len(x_shape) + 1)).result
                phase_filter = tensor.ExtractSliceOp(
                    ir.RankedTensorType.get(f_shape[:-1] + [phase_taps], f_type.element_type), filt, [], [], [],
                    [0] * (len(f_shape) - 1) + [r], f_shape[:-1] + [phase_taps], [1] * (len(f_shape) - 1) + [s]).result
                piece = op.clone(ip=ir.InsertionPoint(op))
                piece.operands[0] = phase
                piece.operands[1] = phase_filter
                piece.operands[2] = result
                piece.attributes["strides"] = unit
                if MEMOIZED_MAPS in piece.attributes:   # (the maps of the strided op: derived again from the strides)
                    del piece.attributes[MEMOIZED_MAPS]
                result = piece.results[0]
        op.results[0].replace_all_uses_with(result)
        op.erase()
        rewritten += 1
    return rewritten
