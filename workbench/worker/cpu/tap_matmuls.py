"""`lh-tap-matmuls`: 1-D convolutions of one f32 image with many channels (wav2vec2's feature encoder,
512 -> 512 channels, 3 taps, stride 2 over 3199 positions; TCN and Conformer blocks) as one matmul per tap,
each over a view of the input shifted by the tap (every s-th column for a stride s), accumulated one into
the next:

    O[0, f, w] += I[0, c, s*w + t*d] * W[f, c, t]   ->   O' = sum_t W[:, :, t] x I[0, :, t*d :: s][:, :OW]

(W[:, :, t] and the shifted input are slices, O' the init collapsed to F x OW: no copies; the first matmul
accumulates into the init, each next one into the one before.) The window schedule computes a convolution
as a register tile of 8 output channels by 32 positions over blocks of 8 input channels, the output
channels outermost: every block of 8 output channels streams the whole input, which for 1024 x 1600 f32
(6.5 MB, after lh-strided-convs' phases) is 64 passes over memory per call (2.5 GFLOP at ~10 GFLOP/s on
the 2-core Icelake host). The matmul schedule packs and blocks both operands for the caches; a stride is
read by its packing of the input (before lh-strided-convs, whose phases-as-channels pad 3 taps to 4).

Only where the input does not fit in {min-bytes} (the selector passes the L2 size: below it the window
schedule's passes over the input hit L2, and a 256-channel TCN conv over 1000 positions, 1 MB, measured even
or slower as matmuls), where the contraction is wide enough for the matmul schedule's tiles (MIN_CHANNELS
input and output channels) and with at most MAX_TAPS taps (each tap is a matmul step of its own).
"""
from __future__ import annotations

from workbench.worker.cpu.padded_conv_rows import conv_ints, static_conv_rank
from workbench.worker.cpu.pointwise_convs import static_shape

CONVS = {"linalg.conv_1d_ncw_fcw": 1}
#: input and output channels at least this many (a 1-channel waveform's first conv stays a window op)
MIN_CHANNELS = 32
#: at most this many taps (matmuls)
MAX_TAPS = 8


def _eligible(op, min_bytes: int = 0) -> bool:
    from mlir import ir

    if static_conv_rank(op, CONVS) is None:
        return False
    if any(not isinstance(ir.RankedTensorType(v.type).element_type, ir.F32Type) for v in op.operands):
        return False
    image, filt, out = (static_shape(v) for v in op.operands)
    return (image[0] == 1 and filt[2] <= MAX_TAPS and image[1] * image[2] * 4 >= min_bytes and min(filt[0], filt[1]) >= MIN_CHANNELS
            and (filt[2] > 1 or conv_ints(op, "strides", 1) != [1]))


def tap_matmuls(module, min_bytes: int = 0) -> int:
    """Rewrite every eligible convolution (module docstring); how many were rewritten."""
    from mlir import ir
    from mlir.dialects import linalg, tensor

    from workbench.worker.cpu.pointwise_convs import _collapse
    from workbench.worker.ir_walk import ops_where

    rewritten = 0
    for op in ops_where(module, lambda o: _eligible(o, min_bytes)):
        image, filt, init = op.operands
        (_, c, _), (f, _, taps), (_, _, ow) = (static_shape(v) for v in op.operands)
        dilation, stride = conv_ints(op, "dilations", 1)[0], conv_ints(op, "strides", 1)[0]
        element = ir.RankedTensorType(image.type).element_type
        out_type = ir.RankedTensorType(op.results[0].type)
        with ir.InsertionPoint(op), op.location:
            result, reassociation = _collapse(init, [[0, 1], [2]])          # F x OW
            for t in range(taps):
                w_t = tensor.ExtractSliceOp(ir.RankedTensorType.get([f, c], element), filt, [], [], [],
                                            [0, 0, t], [f, c, 1], [1, 1, 1]).result
                x_t = tensor.ExtractSliceOp(ir.RankedTensorType.get([c, ow], element), image, [], [], [],
                                            [0, 0, t * dilation], [1, c, ow], [1, 1, stride]).result
                result = linalg.matmul(w_t, x_t, outs=[result])
            result = tensor.ExpandShapeOp(out_type, result, reassociation, [], list(out_type.shape)).result
        op.results[0].replace_all_uses_with(result)
        op.erase()
        rewritten += 1
    return rewritten
