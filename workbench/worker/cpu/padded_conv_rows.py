"""`lh-pad-conv-rows`: channels-first convolutions whose output rows (ow, unit stride) are a little short of a
multiple of a 512-bit vector (16 f32) computed over padded rows: the input widened with zeros to what the
extra positions read, the init padded, the extra outputs sliced off the result.

    O[.., 0:ow] = conv(I, W, init)  ->  conv(pad(I), W, pad(init))[.., 0:ow]

The window schedule vectorizes along the rows; a row that is no multiple of the vector width is split into
whole vectors and one tile of the rest (60 = 48 + 12: the 12 wide tile is lowered as an 8 and a 4 wide
one). Padded to 64 every tile is whole, at the price of ROW_WASTE at most of extra multiply-adds and a
copy of the input and of the result.

Where the padded input's channel planes are a multiple of ALIAS_BYTES apart (conv3d's 32 x 32 x 34 f32 planes:
136 KiB, 34 x 4 KiB), the register tile's rows of consecutive input channels, read one after another at each
window position, all fall into the same L1 sets (an 8- or 12-way L1 of 64 sets holds 8 or 12 of them, the tile
reads 16 channels a window position): the pad, a copy anyway, adds a row to each plane, which puts channel c's
rows c rows further along the sets.

Rows of at least PEEL_MIN_ROW outputs (conv1d's 1022), where an image's input channels over the output
positions take at most `split_max_plane_bytes`, and whose result is copied anyway (returned, inserted into or
concatenated with another tensor: COPYING_USERS; an elementwise consumer reads the padded result's slice in place), (the selector: the L2 share under which it cuts no plane into
cache blocks, cpu_selector.plane_blocks; 0, the default: never), are not padded on the output side: the convolution is
split at the last whole vector multiple (1008) into one over the whole tiles and one over the rest (14), each
writing its slice of the result (`tensor.insert_slice`s into one tensor, in place once bufferized): no copy of the
padded result into the result (16 x 64 x 1022 floats for conv1d). The input is still padded as above: its rows
(1024 floats, 4 KiB) read at a 1026-float stride no longer share their L1 sets (read in place, rows 4 KiB apart,
the same convolution took 20.7 instead of 13.0 ms of CPU per call on the 2-core Zen 3). A larger plane is left
padded: the selector cuts it into blocks of positions that divide the row (1008 = 9 x 112), which the split's
992 whole positions have none of (whisper_encoder's 384-channel conv1d: 190 -> 223 ms of CPU when split).
"""
from __future__ import annotations

from workbench.worker.cpu.constant_folds import pad_value
from workbench.worker.cpu.vnni_convs import _tensor_type
from workbench.worker.ir_walk import defining_op, element_bits

#: named channels-first convolutions and the rank of their spatial dims
CONVS = {"linalg.conv_1d_ncw_fcw": 1, "linalg.conv_2d_nchw_fchw": 2, "linalg.conv_3d_ncdhw_fcdhw": 3}
#: rows are padded to a multiple of this (f32 lanes of a 512-bit vector; two 256-bit ones)
ROW_MULTIPLE = 16
#: at most this fraction of extra positions (60 -> 64, 30 -> 32; not 56 -> 64, which half vectors divide)
ROW_WASTE = 1 / 8
#: rows of at least this many outputs are split at the last whole multiple of ROW_MULTIPLE instead of computed
#: over a padded result (the rest, at most 1/16 of the row, in a convolution of its own; module docstring)
PEEL_MIN_ROW = 16 * ROW_MULTIPLE
#: L1 sets x line size of the x86 cores we run on (32 KiB 8-way, 48 KiB 12-way: 64 sets of 64-byte lines): rows
#: this many bytes apart share their sets
ALIAS_BYTES = 4096


def conv_ints(op, name: str, rank: int) -> list[int]:
    """A convolution's `strides` / `dilations` (ones where the attribute is absent)."""
    from mlir import ir

    if name not in op.attributes:
        return [1] * rank
    return [int(v) for v in ir.DenseIntElementsAttr(op.attributes[name])]


def static_conv_rank(op, convs: dict) -> int | None:
    """The spatial rank of a named convolution of `convs` (name -> rank) on static tensors, else None."""
    from mlir import ir

    rank = convs.get(op.name)
    if rank is None or len(op.operands) != 3 or len(op.results) != 1:
        return None
    if not all(isinstance(v.type, ir.RankedTensorType) and v.type.has_static_shape for v in op.operands):
        return None
    return rank


def padded_width(ow: int) -> int:
    """The padded row length for `ow` outputs, `ow` itself where no padding pays."""
    if ow <= ROW_MULTIPLE or ow % ROW_MULTIPLE == 0:
        return ow
    padded = -(-ow // ROW_MULTIPLE) * ROW_MULTIPLE
    return padded if padded - ow <= ROW_WASTE * ow else ow


def unaliased_rows(shape: list[int], element_bits: int) -> int:
    """Rows to append to the planes of a channels-first `shape` (N x C x spatial..., rank >= 2 spatial dims)
    so that its channel planes are no multiple of ALIAS_BYTES apart (0: they are not, or one row does not
    help: rows that are themselves a multiple)."""
    if len(shape) < 4 or element_bits % 8:
        return 0
    row = shape[-1] * element_bits // 8
    plane = row
    for d in shape[2:-1]:
        plane *= d
    if plane % ALIAS_BYTES or row % ALIAS_BYTES == 0:
        return 0
    return 1


def _pad_highs(value, high: list[int]):
    """`value` with high[d] zeros appended along each dim d (one tensor.pad)."""
    from mlir import ir
    from mlir.dialects import arith, tensor

    t = _tensor_type(value)
    shape = [s + h for s, h in zip(t.shape, high)]
    pad = tensor.PadOp(ir.RankedTensorType.get(shape, t.element_type), value, [], [], [0] * len(shape), high)
    block = pad.region.blocks.append(*[ir.IndexType.get()] * len(shape))
    with ir.InsertionPoint(block):
        tensor.YieldOp(arith.ConstantOp(t.element_type, 0.0).result)
    return pad.result


def _eligible(op) -> bool:
    rank = static_conv_rank(op, CONVS)
    if rank is None:
        return False
    ow = op.operands[2].type.shape[-1]
    return conv_ints(op, "strides", rank)[-1] == 1 and padded_width(ow) != ow


def _plane_bytes(op) -> int:
    """One image's input channels over the output positions, in bytes (what cpu_selector.plane_blocks weighs)."""
    image, _, init = (_tensor_type(v) for v in op.operands)
    positions = 1
    for d in init.shape[2:]:
        positions *= d
    return image.shape[1] * positions * max((element_bits(image.element_type) or 32) // 8, 1)


#: users that copy a tensor they read into a buffer of their own (a padded result's slice read by one of them is copied;
#: an elementwise consumer reads the slice in place, as a strided view)
COPYING_USERS = frozenset({"func.return", "tensor.insert_slice", "tensor.concat"})


def _result_copied(op) -> bool:
    """Whether the convolution's result goes to a user that copies it (COPYING_USERS): only there does a padded
    result cost a copy of its slice (tcn's convolutions, read by elementwise ops, took 5% more CPU when split)."""
    return any(use.owner.name in COPYING_USERS for use in op.results[0].uses)


def pad_conv_rows(module, split_max_plane_bytes: int = 0) -> int:
    """Rewrite every eligible convolution (module docstring); how many were rewritten."""
    from mlir import ir
    from mlir.dialects import tensor

    from workbench.worker.ir_walk import ops_where

    rewritten = 0
    for op in ops_where(module, _eligible):
        rank = CONVS[op.name]
        image, filt, init = op.operands
        out_shape = list(_tensor_type(init).shape)
        ow = out_shape[-1]
        padded = padded_width(ow)
        dilation = conv_ints(op, "dilations", rank)[-1]
        needed = padded + (_tensor_type(filt).shape[-1] - 1) * dilation
        with ir.InsertionPoint(op), op.location:
            image_type = _tensor_type(image)
            high = [0] * len(out_shape)
            high[-1] = max(needed - image_type.shape[-1], 0)
            wide_shape = [s + h for s, h in zip(image_type.shape, high)]
            if any(high):
                # (the extra row is never read: the convolution reads what its output positions need)
                high[-2] += unaliased_rows(wide_shape, element_bits(image_type.element_type) or 0) if rank >= 2 else 0
            wide = _pad_highs(image, high) if any(high) else image
            if ow >= PEEL_MIN_ROW and _plane_bytes(op) <= split_max_plane_bytes and _result_copied(op):
                result = _peeled(op, wide, ow // ROW_MULTIPLE * ROW_MULTIPLE, (_tensor_type(filt).shape[-1] - 1)
                                 * dilation)
                old_init = defining_op(init)
                op.results[0].replace_all_uses_with(result)
                op.erase()
                if old_init is not None and old_init.name in ("linalg.fill", "linalg.broadcast") \
                        and not list(old_init.results[0].uses):
                    old_init.erase()   # (remade into each piece's slice)
                rewritten += 1
                continue
            # (a fill or broadcast init made anew at the padded shape: no fill of zeros and copy into them)
            wide_init = widened_init(init, [0] * (len(out_shape) - 1) + [padded - ow])
            piece = op.clone(ip=ir.InsertionPoint(op))
            piece.operands[0] = wide
            piece.operands[2] = wide_init
            piece.results[0].set_type(wide_init.type)
            result = tensor.ExtractSliceOp(init.type, piece.results[0], [], [], [], [0] * len(out_shape), out_shape,
                                           [1] * len(out_shape)).result
        op.results[0].replace_all_uses_with(result)
        op.erase()
        rewritten += 1
    return rewritten


def _last_dim_slice(value, offset: int, size: int):
    """`value`[.., offset:offset + size] along its last dim (a tensor.extract_slice)."""
    from mlir import ir
    from mlir.dialects import tensor

    t = _tensor_type(value)
    sizes = list(t.shape[:-1]) + [size]
    return tensor.ExtractSliceOp(ir.RankedTensorType.get(sizes, t.element_type), value, [], [], [],
                                 [0] * (t.rank - 1) + [offset], sizes, [1] * t.rank).result


def _peeled(op, wide, whole: int, reach: int):
    """The convolution `op` as two over its output rows' [0, whole) and [whole, ow), each reading its part of the
    input `wide` (`reach`: the extra input positions a window reads past its output's) and writing its slice of
    one result tensor (module docstring). A fill or broadcast init is made anew into each slice (the schedules
    fuse it into their tiles); any other init is sliced."""
    from mlir import ir
    from mlir.dialects import linalg, tensor

    init = op.operands[2]
    ow = _tensor_type(init).shape[-1]
    producer = defining_op(init)
    remake = producer is not None and single_use(init) and producer.name in ("linalg.fill", "linalg.broadcast")
    dest = producer.operands[-1] if remake else init
    for offset, size in ((0, whole), (whole, ow - whole)):
        piece_init = _last_dim_slice(dest, offset, size)
        if remake and producer.name == "linalg.fill":
            piece_init = built_value(linalg.fill(producer.operands[0], outs=[piece_init]))
        elif remake:
            added = [int(d) for d in ir.DenseI64ArrayAttr(producer.attributes["dimensions"])]
            piece_init = built_value(linalg.broadcast(producer.operands[0], outs=[piece_init], dimensions=added))
        piece_input = _last_dim_slice(wide, offset, size + reach)
        piece = op.clone(ip=ir.InsertionPoint(op))
        piece.operands[0] = piece_input
        piece.operands[2] = piece_init
        piece.results[0].set_type(piece_init.type)
        t = _tensor_type(dest)
        dest = tensor.InsertSliceOp(piece.results[0], dest, [], [], [], [0] * (t.rank - 1) + [offset],
                                    list(t.shape[:-1]) + [size], [1] * t.rank).result
    return dest


def padded_high(value, high: list[int]):
    """`value` with zeros appended (`high` per dim); an existing zero-valued tensor.pad producing it is widened
    instead (one copy of the input, not two) when this is its only use."""
    from mlir import ir
    from mlir.dialects import arith, tensor

    if not any(high):
        return value
    source, low, base_high = value, [0] * len(high), [0] * len(high)
    producer = defining_op(value)
    if (producer is not None and producer.name == "tensor.pad" and single_use(value)
            and len(producer.operands) == 1 and pad_value(producer) == 0):   # (static low and high)
        pad = producer.opview
        source = pad.source
        low = [int(v) for v in pad.static_low]
        base_high = [int(v) for v in pad.static_high]
    t = ir.RankedTensorType(value.type)
    shape = [d + h for d, h in zip(t.shape, high)]
    new_pad = tensor.PadOp(ir.RankedTensorType.get(shape, t.element_type), source, [], [], low,
                           [b + h for b, h in zip(base_high, high)])
    block = new_pad.region.blocks.append(*[ir.IndexType.get()] * len(shape))
    with ir.InsertionPoint(block):
        tensor.YieldOp(arith.ConstantOp(t.element_type, 0.0).result)
    return new_pad.result


def widened_init(init, high: list[int]):
    """The init with `high` more positions per dim: a fill or a broadcast of a tensor without those dims
    made anew at the wider shape (no copy), anything else padded with zeros (the extra positions are
    sliced off the result: their values do not matter)."""
    from mlir import ir
    from mlir.dialects import linalg, tensor

    producer = defining_op(init)
    t = ir.RankedTensorType(init.type)
    shape = [d + h for d, h in zip(t.shape, high)]
    if producer is not None and single_use(init) and producer.name == "tensor.extract_slice":
        # the leading corner of a tensor of the wider shape (the result of a convolution over the same plane:
        # lh-strided-conv-planes' phases, each accumulating into the one before): that tensor, no copy
        source = producer.operands[0]
        view = producer.opview
        if (len(producer.operands) == 1 and list(ir.RankedTensorType(source.type).shape) == shape
                and all(int(v) == 0 for v in view.static_offsets) and all(int(v) == 1 for v in view.static_strides)):
            return source
    if producer is not None and single_use(init):
        if producer.name == "linalg.fill":
            empty = tensor.EmptyOp(shape, t.element_type).result
            return built_value(linalg.fill(producer.operands[0], outs=[empty]))
        if producer.name == "linalg.broadcast":
            added = [int(d) for d in ir.DenseI64ArrayAttr(producer.attributes["dimensions"])]
            if all(d in added for d, h in enumerate(high) if h):
                empty = tensor.EmptyOp(shape, t.element_type).result
                return built_value(linalg.broadcast(producer.operands[0], outs=[empty], dimensions=added))
    return padded_high(init, high)


def built_value(built):
    """The result of what a linalg builder returned (a value, or an op view)."""
    return built.results[0] if hasattr(built, "results") else built


def single_use(value) -> bool:
    return sum(1 for _ in value.uses) == 1
