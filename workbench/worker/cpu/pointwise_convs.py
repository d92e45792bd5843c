"""`lh-pointwise-convs`: channels-first convolutions with a 1 x 1 (x 1) window and unit strides (ResNet's
bottleneck 1x1 convolutions, a 1x1x1 conv3d) as one 1-D convolution over the spatial dims collapsed:

    O[n, f, h, w] += I[n, c, h, w] * W[f, c, 0, 0]
 -> O'[n, f, h * W + w] += I'[n, c, h * W + w] * W'[f, c, 0]     (linalg.conv_1d_ncw_fcw)

with I', W', O' collapse_shape views of I, W and the init (no copies) and the result expanded back. The
window schedule then vectorizes along the whole plane (h * w positions, 784 for 28 x 28) instead of along
rows (28 = 16 + a remainder of 12: 43% of the tiles 12 wide, measured 25% slower for 256 -> 256
channels at 28 x 28).

A convolution of one f32 image becomes the matmul W[f, c] x I[c, h * w] instead (views of the filter, the
image and the init; the result expanded back): the window schedule tiles the 1-D convolution as 8 output
channels x 32 positions over blocks of 8 input channels, the output channels outermost, so every block of 8
output channels streams the whole input (DenseNet's 192 -> 128 at 56 x 56, a 2.4 MB input: 7-11 ms; as a
matmul, packed and blocked for the caches, 0.9 ms; ShuffleNet's 464 -> 1024 at 7 x 7 0.82 -> 0.43 ms;
docs/models-round13-real.md). Batches of several images and bf16 ones (the VNNI convolution path) keep the
1-D convolution.

A patch embedding (ViT's 16 x 16 stride 16, CLIP's 32 x 32 stride 32: a window equal to its strides over an
input of whole windows) of one f32 image is the matmul W[f, c * kh * kw] x P[c * kh * kw, positions] too,
with P the image's patches as columns (an expand_shape and one transpose copy of the image: f times less
data than the matmul reads). Its strides are above lh-strided-conv-planes' phases, and the window schedule
took CLIP's (3 -> 768, 224 x 224) at ~15 GFLOP/s (8 ms of the model's ~40 in a profile).
"""
from __future__ import annotations

import math

from workbench.worker.cpu.padded_conv_rows import conv_ints

#: named channels-first convolutions and the rank of their spatial dims
CONVS = {"linalg.conv_2d_nchw_fchw": 2, "linalg.conv_3d_ncdhw_fcdhw": 3}


def static_shape(value) -> list[int] | None:
    from mlir import ir

    t = value.type
    if not isinstance(t, ir.RankedTensorType):
        try:
            t = ir.RankedTensorType(t)
        except ValueError:
            return None
    return list(t.shape) if t.has_static_shape else None


def _eligible(op) -> bool:
    rank = CONVS.get(op.name)
    if rank is None or len(op.operands) != 3 or len(op.results) != 1:
        return False
    shapes = [static_shape(v) for v in op.operands]
    if any(s is None for s in shapes):
        return False
    # (an input larger than the output, whose last rows / columns no output reads: its collapsed plane's
    # positions are no output's; lh-conv-planes takes it)
    return (shapes[1][2:] == [1] * rank and conv_ints(op, "strides", rank) == [1] * rank
            and shapes[0][2:] == shapes[2][2:])


def _patch_eligible(op) -> bool:
    """A 2-D convolution of one f32 image whose window equals its strides (> 1) over whole windows."""
    from mlir import ir

    if op.name != "linalg.conv_2d_nchw_fchw" or len(op.operands) != 3 or len(op.results) != 1:
        return False
    shapes = [static_shape(v) for v in op.operands]
    if any(s is None for s in shapes) or shapes[0][0] != 1:
        return False
    if not all(isinstance(ir.RankedTensorType(v.type).element_type, ir.F32Type) for v in op.operands):
        return False
    from workbench.worker.ir_walk import defining_op

    # (a filter as the model has it, an argument or a constant: one another rewrite made, e.g. the flipped and
    # strided taps of lh-dilated-input-convs' transposed convolutions, is no contiguous matrix to view)
    producer = defining_op(op.operands[1])
    if producer is not None and producer.name != "arith.constant":
        return False
    window, strides = shapes[1][2:], conv_ints(op, "strides", 2)
    return (window == strides and window != [1, 1] and conv_ints(op, "dilations", 2) == [1, 1]
            and shapes[0][2:] == [o * k for o, k in zip(shapes[2][2:], window)])


def _patch_matmul(op):
    """W[f, c*kh*kw] x P[c*kh*kw, oh*ow] for a `_patch_eligible` convolution; (product, reassociation)."""
    from mlir import ir
    from mlir.dialects import linalg, tensor

    image, filt, init = op.operands
    _, c, _, _ = static_shape(image)
    _, _, kh, kw = static_shape(filt)
    _, _, oh, ow = static_shape(init)
    element = ir.RankedTensorType(image.type).element_type
    six = ir.RankedTensorType.get([1, c, oh, kh, ow, kw], element)
    windows = tensor.ExpandShapeOp(six, image, _reassociation([[0], [1], [2, 3], [4, 5]]), [],
                                   [1, c, oh, kh, ow, kw]).result
    empty = tensor.EmptyOp([1, c, kh, kw, oh, ow], element).result
    from workbench.worker.cpu.padded_conv_rows import built_value

    patches = built_value(linalg.transpose(windows, outs=[empty], permutation=[0, 1, 3, 5, 2, 4]))
    p2, _ = _collapse(patches, [[0, 1, 2, 3], [4, 5]])          # c*kh*kw x P
    w2, _ = _collapse(filt, [[0], [1, 2, 3]])                   # F x c*kh*kw
    o2, reassociation = _collapse(init, [[0, 1], [2, 3]])       # F x P
    return linalg.matmul(w2, p2, outs=[o2]), reassociation


def _spatial_groups(rank: int, keep: int) -> list[list[int]]:
    """The reassociation groups that keep `keep` leading dims and collapse the rest into one."""
    return [[i] for i in range(keep)] + [list(range(keep, rank))]


def _reassociation(groups: list[list[int]]):
    from mlir import ir

    i64 = ir.IntegerType.get_signless(64)
    return ir.ArrayAttr.get([ir.ArrayAttr.get([ir.IntegerAttr.get(i64, i) for i in g]) for g in groups])


def _collapse(value, groups: list[list[int]]):
    """`value` collapsed by `groups` (a collapse_shape view) and the reassociation."""
    from mlir import ir
    from mlir.dialects import tensor

    t = ir.RankedTensorType(value.type)
    shape = list(t.shape)
    reassociation = _reassociation(groups)
    sizes = [math.prod(shape[i] for i in g) for g in groups]
    return tensor.CollapseShapeOp(ir.RankedTensorType.get(sizes, t.element_type), value, reassociation).result, \
        reassociation


def collapse_spatial(value, keep: int):
    """`value` (d0 x d1 x spatial..) viewed as d0 x d1 x prod(spatial); `keep` leading dims kept."""
    from mlir import ir

    return _collapse(value, _spatial_groups(len(ir.RankedTensorType(value.type).shape), keep))


def collapsed_init(value, keep: int):
    """`value` (a convolution's init) viewed as collapse_spatial does, with its reassociation; a fill, or a
    broadcast that adds every collapsed dim (a bias), read by nothing else (the convolution, or not yet) is made anew at the collapsed shape
    instead of collapsed: the convolution's init is then the fill / broadcast itself, which its schedule
    fuses into its tiles (`fuse_init`: each tile writes its own init, no pass over the whole output
    before the convolution). The old producer is left for the caller to erase once unread."""
    from mlir import ir
    from mlir.dialects import linalg, tensor

    from workbench.worker.cpu.padded_conv_rows import built_value
    from workbench.worker.ir_walk import defining_op

    producer = defining_op(value)
    if producer is None or sum(1 for _ in value.uses) > 1 or producer.name not in ("linalg.fill", "linalg.broadcast"):
        return collapse_spatial(value, keep)
    shape = list(ir.RankedTensorType(value.type).shape)
    flat_shape = shape[:keep] + [math.prod(shape[keep:])]
    element = ir.RankedTensorType(value.type).element_type
    if producer.name == "linalg.fill":
        empty = tensor.EmptyOp(flat_shape, element).result
        new = built_value(linalg.fill(producer.operands[0], outs=[empty]))
    else:
        added = [int(d) for d in ir.DenseI64ArrayAttr(producer.attributes["dimensions"])]
        if not set(range(keep, len(shape))) <= set(added):
            return collapse_spatial(value, keep)
        empty = tensor.EmptyOp(flat_shape, element).result
        new = built_value(linalg.broadcast(producer.operands[0], outs=[empty],
                                           dimensions=[d for d in added if d < keep] + [keep]))
    return new, _reassociation(_spatial_groups(len(shape), keep))


def _as_matmul(op) -> bool:
    """One image of f32: the convolution is the matmul W[f, c] x I[c, positions] (all views), which the
    matmul schedule packs and blocks for the caches."""
    from mlir import ir

    from workbench.worker.ir_walk import defining_op

    # (not a filter sliced with strides, lh-dilated-input-convs' taps of a transposed convolution: its view as
    # a matrix is strided, which the matmul's micro-kernel call does not take)
    producer = defining_op(op.operands[1])
    if producer is not None and producer.name == "tensor.extract_slice" and any(
            s != 1 for s in ir.DenseI64ArrayAttr(producer.attributes["static_strides"])):
        return False
    return (static_shape(op.operands[0])[0] == 1
            and all(isinstance(ir.RankedTensorType(v.type).element_type, ir.F32Type) for v in op.operands))


def pointwise_convs(module) -> int:
    """Rewrite every eligible convolution (module docstring); how many were rewritten."""
    from mlir import ir
    from mlir.dialects import linalg, tensor

    from workbench.worker.ir_walk import erase_unread, ops_where

    rewritten = 0
    for op in ops_where(module, lambda o: _eligible(o) or _patch_eligible(o)):
        image, filt, init = op.operands
        out_type = ir.RankedTensorType(op.results[0].type)
        rank = len(out_type.shape)
        with ir.InsertionPoint(op), op.location:
            if _patch_eligible(op):
                product, reassociation = _patch_matmul(op)
            elif _as_matmul(op):
                spatial = list(range(2, rank))
                i2, _ = _collapse(image, [[0, 1], spatial])            # C x P
                w2, _ = _collapse(filt, [[0], [1] + spatial])          # F x C
                o2, reassociation = _collapse(init, [[0, 1], spatial])  # F x P
                product = linalg.matmul(w2, i2, outs=[o2])
            else:
                i1, _ = collapse_spatial(image, 2)
                w1, _ = collapse_spatial(filt, 2)   # F x C x 1
                o1, reassociation = collapsed_init(init, 2)
                product = linalg.conv_1d_ncw_fcw(i1, w1, outs=[o1], strides=[1], dilations=[1])
            result = tensor.ExpandShapeOp(out_type, product, reassociation, [], list(out_type.shape)).result
        op.results[0].replace_all_uses_with(result)
        op.erase()
        erase_unread(init, ("linalg.fill", "linalg.broadcast", "tensor.empty"))
        rewritten += 1
    return rewritten
