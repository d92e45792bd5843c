"""`lh-conv-planes{lanes=16}`: channels-first convolutions with unit strides whose output rows are no whole
number of vectors (56, 28, 14, 7 wide) computed over the flattened plane of their input:

    O[n, f, oh, ow] += I[n, c, oh + kh*dh, ow + kw*dw] * W[f, c, kh, kw]
 -> O'[n, f, p] += I'[n, c, p + kh*dh*Wi + kw*dw] * W[f, c, kh, kw]        p < OH * Wi

with I' the input's spatial dims collapsed (a view; one more row of zeros past its end for the last
taps), O' the output computed over whole input rows (Wi positions per row, of which the first OW are
the convolution's: the others read across a row's end and are sliced off the result) and W as it was.
3-D ones flatten all spatial dims.

Why: the window schedule vectorizes along the output's innermost dim. A row of 56 f32 is 3.5 vectors of
16: it took half vectors (8 lanes) or whole ones and a remainder tile; a half vector halves the
multiply-adds per instruction on a core with two 512-bit FMA units (Intel), and one vector of outputs
per register tile makes every multiply-add wait for a broadcast load of its filter scalar. The plane is
one long dim (56 x 58 = 3248 positions, 203 vectors): whole vectors, two per register tile, at the price
of (Wi - OW) / OW extra positions (2 / 56 for a 3x3 window) and, unless the init is a fill or a broadcast
(made anew at the wider shape), a copy of it.
An init that is the leading corner of a tensor of the wider shape (a slice of the convolution before over the
same plane: lh-strided-conv-planes' phases) is that tensor, no copy. A 1x1 window whose input is larger than
its output (a stride-2 phase: lh-pointwise-convs leaves it) is computed over the plane too.
Grouped 2-D convolutions (`linalg.conv_2d_ngchw_gfchw`) become the same plane generic with a group loop (image
n x g x c x plane, filter g x f x c x window; torch-mlir's padded 4-D input is widened and viewed, not copied
again): RegNet's 3x3 over 14x14 / 7x7 1.6x faster, 28x28 even (docs/models-round13-real.md); not a grouped
Conv1d (rows of one, vectorized along h by the window schedule).
Only where that price is at most MAX_WASTE, on f32 (the bf16 ones take the VNNI/AMX paths), and where
lh-pad-conv-rows does not pad the rows to whole vectors instead (60 -> 64, 30 -> 32: conv3d's 30-wide rows
ran 1.4x slower over the plane). Measured on the 16-core Xeon (bench/cpu_models.py, the same run), one
thread / 16 threads: conv2d_3x3 (8x64x56x56) 24.8 -> 18.0 ms / 3.54 -> 3.26 ms, conv_block 28.4 -> 21.0 /
4.07 -> 3.24, conv_transpose2d 8.1 -> 5.9 / even. Depthwise convolutions are left: they are no FMA-bound
contraction (one multiply-add per tap and output), and their plane form ran 1.2x slower.
"""
from __future__ import annotations

from workbench.worker.cpu.padded_conv_rows import conv_ints, padded_high, padded_width, static_conv_rank, widened_init
from workbench.worker.cpu.pointwise_convs import collapse_spatial, collapsed_init, static_shape
from workbench.worker.ir_walk import erase_unread

#: named convolutions and their spatial rank
CONVS = {"linalg.conv_2d_nchw_fchw": 2, "linalg.conv_3d_ncdhw_fcdhw": 3}
#: grouped ones (image n x g x c x h x w, filter g x f x c x kh x kw): the plane generic keeps the group loop
GROUPED = {"linalg.conv_2d_ngchw_gfchw": 2}
#: ops without side effects that a grouped rewrite reads through (torch-mlir's expand of the padded input)
_VIEWS = ("tensor.expand_shape", "tensor.collapse_shape")
#: at most this fraction of extra (sliced off) output positions
MAX_WASTE = 0.5
#: ops without side effects that the rewrite leaves unread (the input's pad it widened, the init it made anew)
_PURE = ("tensor.pad", "tensor.empty", "linalg.fill", "linalg.broadcast", "tensor.extract_slice")


def _computed_positions(in_spatial: list[int], out_spatial: list[int]) -> int:
    """Positions the plane form computes: the outermost spatial dim as the output's, the others whole rows."""
    count = out_spatial[0]
    for d in in_spatial[1:]:
        count *= d
    return count


def _eligible(op, lanes: int) -> bool:
    from mlir import ir

    rank = static_conv_rank(op, CONVS) or static_conv_rank(op, GROUPED)
    if rank is None:
        return False
    lead = 3 if op.name in GROUPED else 2
    shapes = [static_shape(v) for v in op.operands]
    if any(not isinstance(ir.RankedTensorType(v.type).element_type, ir.F32Type) for v in op.operands):
        return False
    if conv_ints(op, "strides", rank) != [1] * rank:
        return False
    image, filt, out = shapes
    if filt[-rank:] == [1] * rank and image[lead:] == out[lead:]:
        return False   # pointwise: lh-pointwise-convs collapses the plane with nothing to slice off
    if out[-1] % lanes == 0 or padded_width(out[-1]) != out[-1]:
        return False   # whole vectors along the rows already, or once lh-pad-conv-rows pads them
    if lead == 3 and out[-1] == 1:
        return False   # torch-mlir's grouped Conv1d (rows of one): the window schedule's vectors go along h
    useful = 1
    for d in out[lead:]:
        useful *= d
    return _computed_positions(image[lead:], out[lead:]) <= (1 + MAX_WASTE) * useful


def ungrouped_image(image):
    """A grouped convolution's image (n x g x c x spatial..) as n x (g * c) x spatial..: the source of
    torch-mlir's expand_shape where it is one (so that its pad can be widened: one copy), else a collapse."""
    from mlir import ir
    from mlir.dialects import tensor

    from workbench.worker.ir_walk import defining_op

    producer = defining_op(image)
    groups = [[0], [1, 2]] + [[i] for i in range(3, len(static_shape(image)))]
    if producer is not None and producer.name == "tensor.expand_shape":
        found = [[int(ir.IntegerAttr(i).value) for i in ir.ArrayAttr(g)]
                 for g in ir.ArrayAttr(producer.attributes["reassociation"])]
        if found == groups:
            return producer.operands[0]
    i64 = ir.IntegerType.get_signless(64)
    reassociation = ir.ArrayAttr.get([ir.ArrayAttr.get([ir.IntegerAttr.get(i64, i) for i in g]) for g in groups])
    t = ir.RankedTensorType(image.type)
    shape = list(t.shape)
    flat = ir.RankedTensorType.get([shape[0], shape[1] * shape[2]] + shape[3:], t.element_type)
    return tensor.CollapseShapeOp(flat, image, reassociation).result


def split_groups(flat, groups: int):
    """n x (g * c) x L -> n x g x c x L (an expand_shape)."""
    from mlir import ir
    from mlir.dialects import tensor

    t = ir.RankedTensorType(flat.type)
    n, gc, length = list(t.shape)
    shape = [n, groups, gc // groups, length]
    i64 = ir.IntegerType.get_signless(64)
    reassociation = ir.ArrayAttr.get([ir.ArrayAttr.get([ir.IntegerAttr.get(i64, i) for i in g])
                                      for g in ([0], [1, 2], [3])])
    return tensor.ExpandShapeOp(ir.RankedTensorType.get(shape, t.element_type), flat, reassociation, [], shape).result


def _plane_generic(image, filt, init, rank: int, dilations: list[int], row_strides: list[int],
                   grouped: bool = False):
    """The convolution over the plane (module docstring), on the collapsed image and init; `grouped`: a
    grouped one (image n x g x c x plane, filter g x f x c x window, init n x g x f x plane)."""
    from mlir import ir
    from mlir.dialects import arith, linalg

    lead = 4 if grouped else 3                    # the parallel loops: n, (g,) f, p
    loops = lead + 1 + rank
    dims = [ir.AffineDimExpr.get(i) for i in range(loops)]
    n, group = dims[0], dims[1:lead - 2]          # ([g] or [])
    f, p, c = dims[lead - 2:lead + 1]
    window = dims[lead + 1:]
    tap = p
    for k, dilation, stride in zip(window, dilations, row_strides):
        tap = tap + k * (dilation * stride)

    def amap(exprs):
        return ir.AffineMapAttr.get(ir.AffineMap.get(loops, 0, exprs))

    maps = [amap([n] + group + [c, tap]), amap(group + [f, c] + list(window)), amap([n] + group + [f, p])]
    par, red = (ir.Attribute.parse(f"#linalg.iterator_type<{k}>") for k in ("parallel", "reduction"))
    iterators = ir.ArrayAttr.get([par] * lead + [red] * (loops - lead))
    generic = linalg.GenericOp([init.type], [image, filt], [init], ir.ArrayAttr.get(maps), iterators)
    f32 = ir.F32Type.get()
    block = generic.regions[0].blocks.append(f32, f32, f32)
    with ir.InsertionPoint(block):
        x, w, acc = block.arguments
        linalg.YieldOp([arith.AddFOp(acc, arith.MulFOp(x, w).result).result])
    return generic.results[0]


def conv_planes(module, lanes: int = 16) -> int:
    """Rewrite every eligible convolution (module docstring); how many were rewritten."""
    from mlir import ir
    from mlir.dialects import tensor

    from workbench.worker.ir_walk import ops_where

    rewritten = 0
    for op in ops_where(module, lambda o: _eligible(o, lanes)):
        grouped = op.name in GROUPED
        rank = GROUPED[op.name] if grouped else CONVS[op.name]
        lead = 3 if grouped else 2                 # n, (g,) c / f
        image, filt, init = op.operands
        in_shape, filt_shape, out_shape = (static_shape(v) for v in op.operands)
        dilations = conv_ints(op, "dilations", rank)
        in_sp, out_sp, window = in_shape[lead:], out_shape[lead:], filt_shape[-rank:]
        row_strides = [1] * rank                  # elements between steps of each spatial dim in the plane
        for i in range(rank - 2, -1, -1):
            row_strides[i] = row_strides[i + 1] * in_sp[i + 1]
        computed = _computed_positions(in_sp, out_sp)
        reach = computed + sum((k - 1) * d * s for k, d, s in zip(window, dilations, row_strides))
        plane = row_strides[0] * in_sp[0]
        extra_rows = -(-(reach - plane) // row_strides[0]) if reach > plane else 0
        with ir.InsertionPoint(op), op.location:
            source = ungrouped_image(image) if grouped else image     # (n x c x spatial..)
            wide_image = padded_high(source, [0, 0, extra_rows] + [0] * (rank - 1))
            flat_image, _ = collapse_spatial(wide_image, 2)
            if grouped:
                flat_image = split_groups(flat_image, in_shape[1])
            wide_init = widened_init(init, [0] * (lead + 1) + [i - o for i, o in zip(in_sp[1:], out_sp[1:])])
            wide_type = ir.RankedTensorType(wide_init.type)
            flat_init, reassociation = collapsed_init(wide_init, lead)
            if wide_init is not init:
                erase_unread(wide_init, _PURE)   # (made anew at the collapsed shape)
            flat = _plane_generic(flat_image, filt, flat_init, rank, dilations, row_strides, grouped)
            result = tensor.ExpandShapeOp(wide_type, flat, reassociation, [], list(wide_type.shape)).result
            if list(wide_type.shape) != out_shape:
                result = tensor.ExtractSliceOp(init.type, result, [], [], [], [0] * len(out_shape), out_shape,
                                               [1] * len(out_shape)).result
        op.results[0].replace_all_uses_with(result)
        op.erase()
        for value in (image, init):
            erase_unread(value, _PURE + _VIEWS)   # (an unread op would make inspect's generalized copy differ)
        rewritten += 1
    return rewritten

