"""`lh-strided-conv-planes`: 2-D channels-first convolutions with strides sh, sw > 1 along h and w (ResNet's
3x3 stride-2 downsampling, a 7x7 stride-2 stem) as sh * sw unit-stride convolutions, one per input phase
along both dims, each over a contiguous phase plane:

    O[n, f, oh, ow] += I[n, c, sh*oh + kh, sw*ow + kw] * W[f, c, kh, kw]
    kh = sh*th + rh, kw = sw*tw + rw:  I[n, c, sh*(oh + th) + rh, sw*(ow + tw) + rw] = P_rh,rw[n, c, oh + th, ow + tw]

P_rh,rw (every sh-th row from rh, every sw-th column from rw) comes from one pass over the input: its
rows and columns viewed as (Hq, sh) x (Wq, sw) (an expand_shape) and transposed to sh x sw x n x c x Hq x Wq,
each phase a contiguous n x c x Hq x Wq tensor (a slice). Phase (rh, rw) convolves its plane with the taps
W[.., rh::sh, rw::sw] (a strided slice of the filter) with unit strides; the phases accumulate one after
another into the result (the first into the init): exact work, no zero taps.

Every phase plane is Hq x Wq = (OH + ceil(KH / sh)) x (OW + ceil(KW / sw) - 1), the input zero-padded to
sh * Hq x sw * Wq (a zero tensor.pad of it widened): one row more than the widest phase's taps reach, so
that lh-conv-planes (after it) computes each phase over its flattened plane (vectors along OH * Wq
positions, contiguous loads; no pad of its own), and all phases' plane results have one shape (each reads the one before
whole: no copy between them). Where a phase plane's rows are whole vectors (OW = 112), the window
schedule vectorizes each phase along its contiguous rows.

Where lh-conv-planes would flatten the phases (their output rows are no whole number of {lanes=16}: 56,
28, 14), they are written here as its plane generics (tap (th, tw) at p + th * Wb + tw) over one buffer
[sh, sw, n, c, Hb, Wb] without any pad of the input: the unpadded input is transposed once into the
buffer's interior (rows y0.., columns x0..: its phases, each at the same place), and only the border
around it is zeroed (whole rows above and below, a column or two beside: a broadcast of a zero into each
slice). Padded phase r along a dim (low pad l) is input phase (r - l) mod s shifted by (r - l) floordiv s,
so each phase's flattened plane is the buffer's plane of its input phase read from its own offset
(y0 + shift_h) * Wb + x0 + shift_w, as long as its taps reach. One read of the input and one write of
the phases, where the pad (a fill of the whole padded buffer and a copy of the input into it) and the
transpose were three passes over ~n * c * H * W elements: on the 2-core Icelake host, conv2d_strided's
preparation went from ~10 ms (fill 3.5, copy 3.8, transpose 3.0) to ~7.5 ms of ~30 quiet, and from 45-68
ms to 18-36 ms of 107-152 under load (docs/models-round12.md). A W or H that is no multiple of the stride
is padded to one first (a copy, as before).

Strided depthwise convolutions (`linalg.depthwise_conv_2d_nchw_chw`, efficientnet's / MobileNet's 3x3 and 5x5
stride 2) take the same buffer and become one unit-stride depthwise convolution per phase, each over a 4-D view
of its input phase's plane from the phase's offset (row stride Wb: lh-conv-planes does not flatten depthwise
ones), taps W[c, rh::sh, rw::sw]. The window schedule had taken the strided ones along strided rows (0.8
GFLOP/s): 1x144x56x56 5x5 s2 4.7-7.0 -> 1.1-2.0 ms, 1x96x112x112 3x3 s2 4.5-6.8 -> 2.4 ms (one thread, busy
2-core host).

Strided grouped convolutions (`linalg.conv_2d_ngchw_gfchw`: RegNet's and ResNeXt's 3x3 stride 2, 8-64 channels a
group) whose phases would be flattened take the same buffer, built from the 4-D input behind torch-mlir's expand
to n x g x c (its pad folded as above): each phase's plane n x (g * c) x positions is read as n x g x c x positions
by a grouped plane generic (filter g x f x c x taps). The window schedule had taken them along strided rows with
vectors along a group's few output channels (2 GFLOP/s): 1x32x112x112 -> 56x56 in 2 groups 5.35 -> 0.48 ms,
1x48x112x112 in 6 groups 3.80 -> 0.56 ms (one thread, busy 2-core Icelake host; docs/models-round13-real.md).
Grouped ones with rows of whole vectors are left.

Only where every phase has taps (KH >= sh, KW >= sw: a 1x1 stride-2 shortcut reads one phase of four, whose
transpose would cost more than it saves), on f32, and with at most MAX_PHASES phases.

Measured on the 2-core Zen 4 host, one thread, against the selector without it (its decomposed path for
strided windows), fastest calls of 5 alternated rounds (`python bench/cpu_strided_convs.py [--cpu X]`),
old -> new ms, host (AVX-512) / --cpu icelake / --cpu avx2:
  conv2d_strided (8x64x112x112, 3x3 s2, 64 -> 64)    35.4 -> 30.5 / 33.4 -> 27.9 / 52.7 -> 44.9
  ResNet-18 downsampling (1x64x56x56, 3x3 s2, -> 128)   1.88 -> 1.32 / 1.84 -> 1.33 / 2.97 -> 2.74
  the same at 8 images                                 15.8 -> 12.7 / 15.6 -> 12.0 / 24.2 -> 23.0
  ResNet-18 stem (1x3x224x224, 7x7 s2, -> 64)           3.80 -> 3.01 / 3.84 -> 2.96 / 4.88 -> 3.07
  2x2 s2 (1x64x56x56 -> 128) / ConvNeXt's 4x4 s4 stem   0.85 -> 0.60 / 0.55 -> 0.36 (host)
"""
from __future__ import annotations

import math

from workbench.worker.cpu.conv_planes import GROUPED, _plane_generic, split_groups, ungrouped_image
from workbench.worker.cpu.padded_conv_rows import (built_value, conv_ints, padded_high, padded_width, static_conv_rank,
                                                   widened_init)
from workbench.worker.cpu.pointwise_convs import collapse_spatial, collapsed_init, static_shape
from workbench.worker.cpu.strided_convs import MEMOIZED_MAPS
from workbench.worker.ir_walk import erase_unread

CONVS = {"linalg.conv_2d_nchw_fchw": 2}
#: depthwise ones (filter c x kh x kw): one unit-stride depthwise convolution per phase over a 4-D view of the
#: zero-bordered buffer (they are not flattened: lh-conv-planes leaves depthwise convolutions)
DEPTHWISE = {"linalg.depthwise_conv_2d_nchw_chw": 2}
#: at most this many phases (sh * sw): ViT's 16x16 stride-16 patch embedding would become 256 convolutions, each
#: selected, scheduled and compiled on its own (the A/B run of that shape had not finished after 10 minutes);
#: ConvNeXt's 4x4 stride 4 (16) measured 1.5x faster
MAX_PHASES = 16
#: rows of whole vectors take the flat phases where the input has more elements than this times the output's
#: (_flat_plane_phases). Measured on one core of a Zen 3 (AVX2, 8 lanes; bench/ab_lowered.py with run's malloc
#: settings, cpu ms per call, padded -> flat): 8x64x112x112 3x3 s2 -> 64 (input 4x the output) 73.4 -> 59.6,
#: 2x32x224x224 3x3 s2 -> 32 (4x) 27.9 -> 21.1; the 7x7 stem 1x3x224x224 -> 64 (input 0.19x) 5.3 -> 5.7 (its
#: output copy costs more than the passes over the small input save): kept padded
FLAT_WHEN_INPUT_OVER = 1


def _eligible(op) -> bool:
    from mlir import ir

    if all(static_conv_rank(op, kind) is None for kind in (CONVS, DEPTHWISE, GROUPED)):
        return False
    if any(not isinstance(ir.RankedTensorType(v.type).element_type, ir.F32Type) for v in op.operands):
        return False
    strides, dilations = conv_ints(op, "strides", 2), conv_ints(op, "dilations", 2)
    window = static_shape(op.operands[1])[-2:]
    return (all(s > 1 for s in strides) and strides[0] * strides[1] <= MAX_PHASES and dilations == [1, 1]
            and all(k >= s for k, s in zip(window, strides)))


def _unit_strides(op):
    from mlir import ir

    attr = ir.DenseIntElementsAttr(op.attributes["strides"])
    return ir.Attribute.parse(f"dense<1> : {attr.type}")


def _phase_planes(image, strides: list[int], planes: list[int], outs=None):
    """[n, c, sh*Hq, sw*Wq] -> [sh, sw, n, c, Hq, Wq] (an expand_shape and one transpose; into `outs` if given)."""
    from mlir import ir
    from mlir.dialects import linalg, tensor

    t = ir.RankedTensorType(image.type)
    n, c = list(t.shape)[:2]
    (sh, sw), (hq, wq) = strides, planes
    i64 = ir.IntegerType.get_signless(64)
    groups = ir.ArrayAttr.get([ir.ArrayAttr.get([ir.IntegerAttr.get(i64, i) for i in g])
                               for g in [[0], [1], [2, 3], [4, 5]]])
    grouped = [n, c, hq, sh, wq, sw]
    view = tensor.ExpandShapeOp(ir.RankedTensorType.get(grouped, t.element_type), image, groups, [], grouped).result
    if outs is None:
        outs = tensor.EmptyOp([sh, sw, n, c, hq, wq], t.element_type).result
    return built_value(linalg.transpose(view, outs=[outs], permutation=[3, 5, 0, 1, 2, 4]))


def _zero_padded_source(image):
    """(source, low) where `image` is a zero tensor.pad of `source` with static lows (torch-mlir's padding),
    else (image, zeros)."""
    from workbench.worker.cpu.constant_folds import pad_value
    from workbench.worker.ir_walk import defining_op

    producer = defining_op(image)
    if (producer is not None and producer.name == "tensor.pad" and len(producer.operands) == 1
            and pad_value(producer) == 0):
        pad = producer.opview
        low, high = [int(v) for v in pad.static_low], [int(v) for v in pad.static_high]
        if min(low + high) >= 0 and low[:2] == high[:2] == [0, 0]:   # (static: no dynamic pad sizes)
            return pad.source, low
    return image, [0] * len(static_shape(image))


def _flat_plane_phases(op, lanes: int, by_size: bool = True) -> bool:
    """Whether the phases of `op` are written here as plane generics over one zero-bordered buffer (module
    docstring), not as named convolutions over a padded input's phases: where lh-conv-planes would flatten
    them anyway (their output rows are no whole number of {lanes} and lh-pad-conv-rows does not pad them),
    and also (`by_size`) where the rows are whole vectors but the input is larger than the output
    (FLAT_WHEN_INPUT_OVER).
    The padded variant passes over the input three times (the pad's fill and copy, the transpose of a plane
    row of OW + taps - 1 columns, masked at its end); the flat one once, then copies the output out of its
    planes' rows (one pass over the output)."""
    source, _ = _zero_padded_source(op.operands[0])   # (the input before torch-mlir's pad)
    x_shape, o_shape = static_shape(source), static_shape(op.operands[2])
    ow = o_shape[-1]
    if padded_width(ow) != ow:
        return False
    return ow % lanes != 0 or (by_size and math.prod(x_shape) > FLAT_WHEN_INPUT_OVER * math.prod(o_shape))


def _fill_zero(dest, offsets: list[int], sizes: list[int]):
    """`dest` with zeros in the box at `offsets` of `sizes` (a fill of a slice, inserted back: in place)."""
    from mlir import ir
    from mlir.dialects import arith, linalg, tensor

    element = ir.RankedTensorType(dest.type).element_type
    box = ir.RankedTensorType.get(sizes, element)
    ones = [1] * len(sizes)
    part = tensor.ExtractSliceOp(box, dest, [], [], [], offsets, sizes, ones).result
    # (a broadcast of a zero scalar, not a linalg.fill: the selector schedules it as any broadcast; a fill is
    # left to its consumer's group, and an insert_slice is none)
    scalar = ir.RankedTensorType.get([], element)
    zero = arith.ConstantOp(scalar, ir.DenseElementsAttr.get_splat(scalar, ir.FloatAttr.get(element, 0.0))).result
    filled = built_value(linalg.broadcast(zero, outs=[part], dimensions=list(range(len(sizes)))))
    return tensor.InsertSliceOp(filled, dest, [], [], [], offsets, sizes, ones).result


def _planes_reading(reads: dict, strides: list[int], offsets: list[int], sizes: list[int], every_plane: bool):
    """The (a, b) planes whose border box at `offsets` of `sizes` (rows, columns) some phase reads for an output
    (`reads`: per plane its phases' row and column ranges), as boxes of planes: [([a0, b0], [na, nb])]. A plane
    no phase reads there keeps its memory as it is (conv2d_strided's 3x3 stride 2, padding 1: the column beside
    the interior is read in the odd-column planes only, the top row in the odd-row ones, the bottom one by no
    output: half, half and none of the three writes). `every_plane`: all of them (the old variant)."""
    sh, sw = strides
    if every_plane:
        return [([0, 0], [sh, sw])]
    (r0, c0), (r1, c1) = offsets, (offsets[0] + sizes[0], offsets[1] + sizes[1])
    read = {plane for plane, boxes in reads.items()
            if any(y0 < r1 and r0 < y1 and x0 < c1 and c0 < x1 for y0, y1, x0, x1 in boxes)}
    if len(read) == sh * sw:
        return [([0, 0], [sh, sw])]
    rows = sorted({a for a, _ in read})
    if all((a, b) in read for a in rows for b in range(sw)):   # whole rows of planes
        return [([a, 0], [1, sw]) for a in rows]
    columns = sorted({b for _, b in read})
    if all((a, b) in read for a in range(sh) for b in columns):
        return [([0, b], [sh, 1]) for b in columns]
    return [([a, b], [1, 1]) for a, b in sorted(read)]


def _bordered_phase_planes(source, strides: list[int], low: list[int], out: list[int], taps: list[list[int]],
                           every_plane: bool = False):
    """The phases of the unpadded input written once into the interiors of zero-bordered planes:
    (buffer [sh, sw, n, c, Hb, Wb], per phase (rh, rw) its (a, b, row, col): the plane of padded phase
    (rh, rw) is the buffer's plane (a, b) from (row, col) on, row stride Wb)."""
    from mlir import ir
    from mlir.dialects import tensor

    x_shape = static_shape(source)
    n, c = x_shape[:2]
    # the input's rows and columns to whole phases (a copy only where they are not: an odd H or W)
    wide = padded_high(source, [0, 0] + [-d % s for d, s in zip(x_shape[2:], strides)])
    inner = [-(-d // s) for d, s in zip(x_shape[2:], strides)]            # rows, columns of each input phase
    # padded phase r along a dim: input phase (r - low) mod s, shifted by (r - low) floordiv s (<= 0)
    shifts = [[((r - lo) % s, (r - lo) // s) for r in range(s)] for s, lo in zip(strides, low)]
    origin = [max(-d for _, d in dim) for dim in shifts]                  # the interior's row, column
    width = max([origin[1] + inner[1]] + [origin[1] + d + out[1] + t - 1
                                          for (_, d), t in zip(shifts[1], taps[1])])
    reach = max((origin[0] + dh) * width + origin[1] + dw + (out[0] + th - 1) * width + tw - 1
                for (_, dh), th in zip(shifts[0], taps[0]) for (_, dw), tw in zip(shifts[1], taps[1]))
    height = max(origin[0] + inner[0], -(-reach // width))
    element = ir.RankedTensorType(source.type).element_type
    lead = list(strides) + [n, c]
    buffer = tensor.EmptyOp(lead + [height, width], element).result
    (y0, x0), (hx, wx) = origin, inner
    # each plane's rows and columns that its phases read for an output (the flat planes read more: their outputs'
    # extra columns, sliced off)
    reads: dict[tuple[int, int], list[tuple[int, int, int, int]]] = {}
    for (a, dh), th in zip(shifts[0], taps[0]):
        for (b, dw), tw in zip(shifts[1], taps[1]):
            reads.setdefault((a, b), []).append((y0 + dh, y0 + dh + out[0] + th - 1,
                                                 x0 + dw, x0 + dw + out[1] + tw - 1))
    for offsets, sizes in (([0, 0], [y0, width]), ([y0 + hx, 0], [height - y0 - hx, width]),
                           ([y0, 0], [hx, x0]), ([y0, x0 + wx], [hx, width - x0 - wx])):
        if not all(sizes):
            continue
        for planes, counts in _planes_reading(reads, strides, offsets, sizes, every_plane):
            buffer = _fill_zero(buffer, planes + [0, 0] + offsets, counts + lead[2:] + sizes)
    ones = [1] * 6
    interior = tensor.ExtractSliceOp(ir.RankedTensorType.get(lead + inner, element), buffer, [], [], [],
                                     [0] * 4 + origin, lead + inner, ones).result
    phases = _phase_planes(wide, strides, inner, outs=interior)
    buffer = tensor.InsertSliceOp(phases, buffer, [], [], [], [0] * 4 + origin, lead + inner, ones).result
    where = {(rh, rw): (a, b, y0 + dh, x0 + dw)
             for rh, (a, dh) in enumerate(shifts[0]) for rw, (b, dw) in enumerate(shifts[1])}
    return buffer, where


def _phases_in_bordered_buffer(op, window_from: int, every_plane: bool = False):
    """A strided convolution `op`'s filter and output shapes, strides, output sizes, taps per phase and its input's
    phases in _bordered_phase_planes' buffer (with where each phase lies); `window_from`: the filter's first
    window dim (2: f, c, kh, kw; 1: a depthwise c, kh, kw; 3: a grouped g, f, c, kh, kw, whose image's groups
    and channels are one dim in the buffer)."""
    image, filt, init = op.operands
    f_shape, o_shape = static_shape(filt), static_shape(init)
    strides = conv_ints(op, "strides", 2)
    window, out = f_shape[window_from:], o_shape[-2:]
    source, low = _zero_padded_source(ungrouped_image(image) if op.name in GROUPED else image)
    taps = [[-(-(k - r) // s) for r in range(s)] for k, s in zip(window, strides)]
    buffer, where = _bordered_phase_planes(source, strides, low[2:], out, taps, every_plane)
    return f_shape, o_shape, strides, out, taps, buffer, where


def _flat_phases(op, every_plane: bool = False) -> object:
    """The convolution `op` as one plane generic per phase over _bordered_phase_planes' buffer (flattened:
    tap (th, tw) of a phase at p + th * Wb + tw, as lh-conv-planes computes a unit-stride one), accumulated one
    after another; the result's extra columns sliced off. A grouped one (RegNet's, ResNeXt's 3x3 stride 2)
    reads each phase's plane n x (g * c) x positions as n x g x c x positions: grouped plane generics."""
    from mlir import ir
    from mlir.dialects import tensor

    image, filt, init = op.operands
    grouped = op.name in GROUPED
    kept = 3 if grouped else 2                  # the filter's and the output's dims before the window / plane
    f_shape, o_shape, strides, out, taps, buffer, where = _phases_in_bordered_buffer(op, kept, every_plane)
    shape = static_shape(buffer)
    lead, (height, width) = shape[:4], shape[4:]
    flat_buffer, _ = collapse_spatial(buffer, 4)
    element = ir.RankedTensorType(image.type).element_type
    wide_init = widened_init(init, [0] * (kept + 1) + [width - out[1]])
    wide_type = ir.RankedTensorType(wide_init.type)
    result, reassociation = collapsed_init(wide_init, kept)
    if wide_init is not init:
        erase_unread(wide_init, ("linalg.fill", "linalg.broadcast", "tensor.empty"))   # (made anew, collapsed)
    for rh in range(strides[0]):
        for rw in range(strides[1]):
            th, tw = taps[0][rh], taps[1][rw]
            a, b, row, col = where[(rh, rw)]
            start = row * width + col
            length = (out[0] + th - 1) * width + tw - 1
            plane = tensor.ExtractSliceOp(ir.RankedTensorType.get(lead[2:] + [length], element), flat_buffer,
                                          [], [], [], [a, b, 0, 0, start], [1, 1] + lead[2:] + [length],
                                          [1] * 5).result
            if grouped:
                plane = split_groups(plane, f_shape[0])
            taps_of = tensor.ExtractSliceOp(
                ir.RankedTensorType.get(f_shape[:kept] + [th, tw], element), filt, [], [], [],
                [0] * kept + [rh, rw], f_shape[:kept] + [th, tw], [1] * kept + strides).result
            result = _plane_generic(plane, taps_of, result, 2, [1, 1], [width, 1], grouped)
    result = tensor.ExpandShapeOp(wide_type, result, reassociation, [], list(wide_type.shape)).result
    if list(wide_type.shape) != o_shape:
        rank = len(o_shape)
        result = tensor.ExtractSliceOp(init.type, result, [], [], [], [0] * rank, o_shape, [1] * rank).result
    return result


def _depthwise_phases(op, every_plane: bool = False) -> object:
    """The depthwise convolution `op` as one unit-stride depthwise convolution per phase, each over a 4-D view
    of _bordered_phase_planes' buffer (its input phase's plane from the phase's offset), accumulated one after
    another."""
    from mlir import ir
    from mlir.dialects import tensor

    image, filt, init = op.operands
    f_shape, o_shape, strides, out, taps, buffer, where = _phases_in_bordered_buffer(op, 1, every_plane)
    lead = static_shape(buffer)[2:4]
    element = ir.RankedTensorType(image.type).element_type
    unit = _unit_strides(op)
    result = init
    for rh in range(strides[0]):
        for rw in range(strides[1]):
            th, tw = taps[0][rh], taps[1][rw]
            a, b, row, col = where[(rh, rw)]
            plane = [out[0] + th - 1, out[1] + tw - 1]
            view = tensor.ExtractSliceOp(ir.RankedTensorType.get(lead + plane, element), buffer, [], [], [],
                                         [a, b, 0, 0, row, col], [1, 1] + lead + plane, [1] * 6).result
            taps_of = tensor.ExtractSliceOp(
                ir.RankedTensorType.get(f_shape[:1] + [th, tw], element), filt, [], [], [],
                [0, rh, rw], f_shape[:1] + [th, tw], [1] + strides).result
            piece = op.clone(ip=ir.InsertionPoint(op))
            piece.operands[0] = view
            piece.operands[1] = taps_of
            piece.operands[2] = result
            piece.attributes["strides"] = unit
            if MEMOIZED_MAPS in piece.attributes:
                del piece.attributes[MEMOIZED_MAPS]
            result = piece.results[0]
    return result


def strided_conv_planes(module, lanes: int = 16, all_borders: bool = False) -> int:
    """Rewrite every eligible convolution (module docstring); how many were rewritten. `all_borders`: every
    plane's whole border zeroed (the old variant), not only what a phase reads (_planes_reading)."""
    from mlir import ir
    from mlir.dialects import tensor

    from workbench.worker.ir_walk import erase_unread, ops_where

    rewritten = 0
    for op in ops_where(module, _eligible):
        depthwise = op.name in DEPTHWISE
        flat = not depthwise and _flat_plane_phases(op, lanes, by_size=op.name not in GROUPED)
        if op.name in GROUPED and not flat:
            continue   # (grouped: the flat phases only; rows of whole vectors keep the window schedule's strided
            #            tiles, not measured against the flat phases)
        if depthwise or flat:
            image, init = op.operands[0], op.operands[2]
            with ir.InsertionPoint(op), op.location:
                result = _depthwise_phases(op, all_borders) if depthwise else _flat_phases(op, all_borders)
            op.results[0].replace_all_uses_with(result)
            op.erase()
            for value in (image, init):
                erase_unread(value, ("tensor.pad", "tensor.empty", "linalg.fill", "linalg.broadcast",
                                     "tensor.expand_shape", "tensor.collapse_shape"))
            rewritten += 1
            continue
        image, filt, init = op.operands
        x_shape, f_shape, o_shape = (static_shape(v) for v in op.operands)
        strides = conv_ints(op, "strides", 2)
        window, out = f_shape[2:], o_shape[2:]
        taps = [-(-k // s) for k, s in zip(window, strides)]          # the widest phase's taps per dim
        # (w: a row longer than the taps reach, an input whose last columns no output reads, keeps them)
        planes = [out[0] + taps[0], max(out[1] + taps[1] - 1, -(-x_shape[3] // strides[1]))]
        element = ir.RankedTensorType(image.type).element_type
        with ir.InsertionPoint(op), op.location:
            wide = padded_high(image, [0, 0] + [s * q - d for s, q, d in zip(strides, planes, x_shape[2:])])
            phases = _phase_planes(wide, strides, planes)
            unit = _unit_strides(op)
            result = init
            for rh in range(strides[0]):
                for rw in range(strides[1]):
                    th, tw = (-(-(k - r) // s) for k, r, s in zip(window, (rh, rw), strides))
                    plane = tensor.ExtractSliceOp(
                        ir.RankedTensorType.get(x_shape[:2] + planes, element), phases, [], [], [],
                        [rh, rw, 0, 0, 0, 0], [1, 1] + x_shape[:2] + planes, [1] * 6).result
                    taps_of = tensor.ExtractSliceOp(
                        ir.RankedTensorType.get(f_shape[:2] + [th, tw], element), filt, [], [], [],
                        [0, 0, rh, rw], f_shape[:2] + [th, tw], [1, 1] + strides).result
                    piece = op.clone(ip=ir.InsertionPoint(op))
                    piece.operands[0] = plane
                    piece.operands[1] = taps_of
                    piece.operands[2] = result
                    piece.attributes["strides"] = unit
                    if MEMOIZED_MAPS in piece.attributes:   # (the strided op's maps: derived again from the strides)
                        del piece.attributes[MEMOIZED_MAPS]
                    result = piece.results[0]
        op.results[0].replace_all_uses_with(result)
        op.erase()
        erase_unread(image, ("tensor.pad",))   # (the input's pad, when padded_high made a wider one)
        rewritten += 1
    return rewritten
