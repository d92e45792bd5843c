"""`lh-pointwise-convs`: channels-first convolutions with a 1 x 1 (x 1) window and unit strides (ResNet's
bottleneck 1x1 convolutions, a 1x1x1 conv3d) as one 1-D convolution over the spatial dims collapsed:

    O[n, f, h, w] += I[n, c, h, w] * W[f, c, 0, 0]
 -> O'[n, f, h * W + w] += I'[n, c, h * W + w] * W'[f, c, 0]     (linalg.conv_1d_ncw_fcw)

with I', W', O' collapse_shape views of I, W and the init (no copies) and the result expanded back. The
window schedule then vectorizes along the whole plane (h * w positions, 784 for 28 x 28) instead of along
rows (28 = 16 + a remainder of 12: 43% of the tiles 12 wide, measured 25% slower for 256 -> 256
channels at 28 x 28).
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


def collapse_spatial(value, keep: int):
    """`value` (d0 x d1 x spatial..) viewed as d0 x d1 x prod(spatial); `keep` leading dims kept."""
    from mlir import ir
    from mlir.dialects import tensor

    t = ir.RankedTensorType(value.type)
    shape = list(t.shape)
    i64 = ir.IntegerType.get_signless(64)
    groups = [[i] for i in range(keep)] + [list(range(keep, len(shape)))]
    reassociation = ir.ArrayAttr.get([ir.ArrayAttr.get([ir.IntegerAttr.get(i64, i) for i in g]) for g in groups])
    flat = 1
    for d in shape[keep:]:
        flat *= d
    result = ir.RankedTensorType.get(shape[:keep] + [flat], t.element_type)
    return tensor.CollapseShapeOp(result, value, reassociation).result, reassociation


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
    i64 = ir.IntegerType.get_signless(64)
    groups = [[i] for i in range(keep)] + [list(range(keep, len(shape)))]
    reassociation = ir.ArrayAttr.get([ir.ArrayAttr.get([ir.IntegerAttr.get(i64, i) for i in g]) for g in groups])
    return new, reassociation


def pointwise_convs(module) -> int:
    """Rewrite every eligible convolution (module docstring); how many were rewritten."""
    from mlir import ir
    from mlir.dialects import linalg, tensor

    from workbench.worker.ir_walk import erase_unread, ops_where

    rewritten = 0
    for op in ops_where(module, _eligible):
        image, filt, init = op.operands
        out_type = ir.RankedTensorType(op.results[0].type)
        with ir.InsertionPoint(op), op.location:
            i1, _ = collapse_spatial(image, 2)
            w1, _ = collapse_spatial(filt, 2)   # F x C x 1
            o1, reassociation = collapsed_init(init, 2)
            conv = linalg.conv_1d_ncw_fcw(i1, w1, outs=[o1], strides=[1], dilations=[1])
            result = tensor.ExpandShapeOp(out_type, conv, reassociation, [], list(out_type.shape)).result
        op.results[0].replace_all_uses_with(result)
        op.erase()
        erase_unread(init, ("linalg.fill", "linalg.broadcast", "tensor.empty"))
        rewritten += 1
    return rewritten
