"""Convolutions over a stride-dilated input as one dense convolution per output phase
(`lh-dilated-input-convs`).

torch-mlir writes a transposed convolution (ConvTranspose1d/2d/3d, stride s) as a plain stride-1
convolution of a zero tensor into which the input was inserted with strides s (`tensor.insert_slice %x
into %zeros [...] [1, 1, s, s]`) and a flipped filter: (s^d - 1) / s^d of the multiply-adds multiply
zeros. Along each such dim, output position o = s q + r (phase r) only meets the filter taps k with
(r + k - offset) divisible by s, k = k0 + s t, and those read input element q + t + m with
m = (r + k0 - offset) / s: a dense stride-1 convolution of the (zero-padded) input with the filter's
taps k0, k0 + s, ... (a strided slice of the filter), written to every s-th output position.

`dilated_input_convs(module)` rewrites each such named convolution (static shapes, a zero fill under
the insert, unit strides and dilations in the convolution itself) into s^d of them, one per phase
combination: each reads a slice of the input (padded once where a phase reads past an edge) and a
strided slice of the filter, accumulates into a dense copy of its phase of the init (the bias) and is
inserted into its phase of the result. The per-phase convolutions are ordinary convolutions for the
selector's window schedule; the work drops by s^d.
"""
from __future__ import annotations

import itertools

from mlir import ir

from workbench.worker.ir_walk import ops_where


def _op(value):
    owner = value.owner
    return None if isinstance(owner, ir.Block) else getattr(owner, "operation", owner)


def _static(attr) -> list[int] | None:
    values = list(ir.DenseI64ArrayAttr(attr))
    return None if any(v < -(1 << 62) for v in values) else values


def _is_zero_fill(value) -> bool:
    fill = _op(value)
    if fill is None or fill.name != "linalg.fill":
        return False
    constant = _op(fill.operands[0])
    if constant is None or constant.name != "arith.constant":
        return False
    try:
        return ir.FloatAttr(constant.attributes["value"]).value == 0.0
    except (ValueError, TypeError):
        try:
            return ir.IntegerAttr(constant.attributes["value"]).value == 0
        except (ValueError, TypeError):
            return False


def _extract(value, offsets, sizes, strides):
    t = ir.RankedTensorType(value.type)
    return ir.Operation.create(
        "tensor.extract_slice", results=[ir.RankedTensorType.get(sizes, t.element_type)], operands=[value],
        attributes={"static_offsets": ir.DenseI64ArrayAttr.get(offsets), "static_sizes": ir.DenseI64ArrayAttr.get(sizes),
                    "static_strides": ir.DenseI64ArrayAttr.get(strides),
                    "operandSegmentSizes": ir.DenseI32ArrayAttr.get([1, 0, 0, 0])}).result


def _insert(source, dest, offsets, strides):
    sizes = list(ir.RankedTensorType(source.type).shape)
    return ir.Operation.create(
        "tensor.insert_slice", results=[dest.type], operands=[source, dest],
        attributes={"static_offsets": ir.DenseI64ArrayAttr.get(offsets), "static_sizes": ir.DenseI64ArrayAttr.get(sizes),
                    "static_strides": ir.DenseI64ArrayAttr.get(strides),
                    "operandSegmentSizes": ir.DenseI32ArrayAttr.get([1, 1, 0, 0, 0])}).result


def _dense_copy(value):
    """`value` copied into a fresh tensor (an elementwise linalg.generic: a strided slice read once into a
    dense buffer that the convolution then accumulates into)."""
    from mlir.dialects import linalg

    t = ir.RankedTensorType(value.type)
    # (a fresh allocation, not tensor.empty: empty-tensor elimination would make the convolution accumulate
    # in the strided phase of the result, every vector access then element by element)
    empty = ir.Operation.create("bufferization.alloc_tensor", results=[t], operands=[],
                                attributes={"operandSegmentSizes": ir.DenseI32ArrayAttr.get([0, 0, 0])})
    identity = ir.AffineMapAttr.get(ir.AffineMap.get_identity(t.rank))
    parallel = ir.Attribute.parse("#linalg.iterator_type<parallel>")
    generic = linalg.GenericOp([ir.RankedTensorType.get(t.shape, t.element_type)], [value], [empty.result],
                               ir.ArrayAttr.get([identity, identity]), ir.ArrayAttr.get([parallel] * t.rank))
    block = generic.regions[0].blocks.append(t.element_type, t.element_type)
    with ir.InsertionPoint(block):
        linalg.YieldOp([block.arguments[0]])
    return generic.results[0]


def _again_into_fresh(producer, init, o_sizes):
    """A clone of the init's `producer` (a fill or broadcast: its operand 1 the output) writing a fresh dense
    tensor of a phase's sizes `o_sizes`: its result."""
    t = ir.RankedTensorType(init.type)
    fresh = ir.Operation.create("bufferization.alloc_tensor", results=[ir.RankedTensorType.get(o_sizes, t.element_type)],
                                operands=[], attributes={"operandSegmentSizes": ir.DenseI32ArrayAttr.get([0, 0, 0])})
    again = producer.clone()
    again.operands[1] = fresh.result
    again.results[0].set_type(fresh.result.type)
    return again.results[0]


def _phase_init(init, o_offsets, o_sizes, o_strides, phase_dims):
    """The init of one phase's convolution, dense: a broadcast along the phase's dims (a bias) broadcast
    again into the phase's shape, anything else copied out of its strided phase."""
    broadcast = _op(init)
    if broadcast is not None and broadcast.name == "linalg.fill":
        # a constant init (a convolution without bias: zeros): the same fill of a fresh dense tensor. A copy of
        # the fill's strided phase is an identity generic, which the first function-wide canonicalization of
        # an earlier step erased (the selector had read it as an op to schedule: `select --apply` failed on
        # a ConvTranspose1d without bias, `op generic_54 must exist`)
        return _again_into_fresh(broadcast, init, o_sizes)
    if broadcast is not None and broadcast.name == "linalg.broadcast":
        dimensions = set(ir.DenseI64ArrayAttr(broadcast.attributes["dimensions"]))
        if set(phase_dims) <= dimensions:
            return _again_into_fresh(broadcast, init, o_sizes)
    return _dense_copy(_extract(init, o_offsets, o_sizes, o_strides))


def _spatial_dims(conv, insert) -> list[dict] | None:
    """Per input dim read through `d_out + d_tap` (a stride-1, dilation-1 window) and dilated by the
    insert (stride > 1): its positions in the input, filter and output and the sizes; None when the
    convolution or the insert is of another form."""
    from workbench.worker.payload_inspect import _indexing_maps, _linear_terms

    maps = _indexing_maps(conv)
    if not maps or len(maps) != 3:
        return None
    x, zeros = insert.operands[0], insert.operands[1]
    offsets, sizes, strides = (_static(insert.attributes[k]) for k in ("static_offsets", "static_sizes", "static_strides"))
    if offsets is None or sizes is None or strides is None:
        return None
    x_shape = list(ir.RankedTensorType(x.type).shape)
    zero_shape = list(ir.RankedTensorType(zeros.type).shape)
    filter_shape = list(ir.RankedTensorType(conv.operands[1].type).shape)
    out_shape = list(ir.RankedTensorType(conv.operands[2].type).shape)
    if sizes != x_shape:
        return None   # (a rank-reducing insert)

    def position(amap, dim):
        for p, e in enumerate(amap.results):
            if isinstance(e, ir.AffineDimExpr) and ir.AffineDimExpr(e).position == dim:
                return p
        return None

    dims = []
    for p, expr in enumerate(maps[0].results):
        if isinstance(expr, ir.AffineDimExpr):
            if offsets[p] != 0 or strides[p] != 1 or zero_shape[p] != x_shape[p]:
                return None
            continue
        terms = _linear_terms(expr)
        if not terms or sorted(terms.values()) != [1, 1] or len(terms) != 2:
            return None
        out_dim = next((d for d in terms if position(maps[2], d) is not None), None)
        tap_dim = next((d for d in terms if position(maps[1], d) is not None and d != out_dim), None)
        if out_dim is None or tap_dim is None:
            return None
        q, r = position(maps[1], tap_dim), position(maps[2], out_dim)
        dims.append({"input": p, "filter": q, "output": r, "stride": strides[p], "offset": offsets[p],
                     "length": x_shape[p], "taps": filter_shape[q], "outputs": out_shape[r]})
    if not dims or all(d["stride"] == 1 for d in dims):
        return None
    return dims


def _phases(dim: dict) -> list[tuple[int, int, int, int, int]]:
    """(phase r, first tap k0, taps T, outputs Q, input shift m) of one dilated dim, those with work."""
    s, off = dim["stride"], dim["offset"]
    phases = []
    for r in range(s):
        k0 = (off - r) % s
        taps = -(-(dim["taps"] - k0) // s) if dim["taps"] > k0 else 0
        outputs = -(-(dim["outputs"] - r) // s) if dim["outputs"] > r else 0
        if taps and outputs:
            phases.append((r, k0, taps, outputs, (r + k0 - off) // s))
    return phases


def _convs_over_dilated_inputs(module) -> list:
    def eligible(op) -> bool:
        if not op.name.startswith("linalg.conv_") or len(op.operands) != 3 or len(op.results) != 1:
            return False
        if any(not isinstance(v.type, ir.RankedTensorType) or not ir.RankedTensorType(v.type).has_static_shape
               for v in op.operands):
            return False
        for key in ("strides", "dilations"):
            if key in op.attributes and any(int(v) != 1 for v in ir.DenseIntElementsAttr(op.attributes[key])):
                return False
        insert = _op(op.operands[0])
        return (insert is not None and insert.name == "tensor.insert_slice" and len(insert.operands) == 2
                and _is_zero_fill(insert.operands[1]))

    return ops_where(module, eligible)


def dilated_input_convs(module) -> int:
    """Rewrite every eligible convolution (module docstring); how many were rewritten."""
    rewritten = 0
    for conv in _convs_over_dilated_inputs(module):
        insert = _op(conv.operands[0])
        dims = _spatial_dims(conv, insert)
        if dims is None:
            continue
        per_dim = [_phases(d) for d in dims]
        x, zeros = insert.operands[0], insert.operands[1]
        x_shape = list(ir.RankedTensorType(x.type).shape)
        filter_shape = list(ir.RankedTensorType(conv.operands[1].type).shape)
        out_shape = list(ir.RankedTensorType(conv.operands[2].type).shape)
        # the input padded with zeros where a phase reads past an edge
        low = [0] * len(x_shape)
        high = [0] * len(x_shape)
        for d, phases in zip(dims, per_dim):
            p = d["input"]
            low[p] = max([0] + [-m for *_, m in phases])
            high[p] = max([0] + [m + q + t - 1 - d["length"] for _, _, t, q, m in phases])
        from mlir.dialects import tensor

        with ir.InsertionPoint(conv), conv.location:
            padded = x
            if any(low) or any(high):
                shape = [n + lo + hi for n, lo, hi in zip(x_shape, low, high)]
                empty = tensor.EmptyOp(shape, ir.RankedTensorType(x.type).element_type)
                fill = _op(zeros).clone(ip=ir.InsertionPoint(conv))
                fill.operands[1] = empty.result
                fill.results[0].set_type(empty.result.type)
                padded = _insert(x, fill.results[0], low, [1] * len(x_shape))
            init = conv.operands[2]
            every = all(len(phases) == d["stride"] for d, phases in zip(dims, per_dim))
            # (every output position in some phase: the phases write the whole result, nothing of the init is kept)
            result = tensor.EmptyOp(out_shape, ir.RankedTensorType(init.type).element_type).result if every else init
            for combination in itertools.product(*per_dim):
                in_offsets = [0] * len(x_shape)
                in_sizes = [n + lo + hi for n, lo, hi in zip(x_shape, low, high)]
                f_offsets, f_sizes, f_strides = [0] * len(filter_shape), list(filter_shape), [1] * len(filter_shape)
                o_offsets, o_sizes, o_strides = [0] * len(out_shape), list(out_shape), [1] * len(out_shape)
                for d, (r, k0, taps, outputs, m) in zip(dims, combination):
                    in_offsets[d["input"]] = low[d["input"]] + m
                    in_sizes[d["input"]] = outputs + taps - 1
                    f_offsets[d["filter"]], f_sizes[d["filter"]], f_strides[d["filter"]] = k0, taps, d["stride"]
                    o_offsets[d["output"]], o_sizes[d["output"]], o_strides[d["output"]] = r, outputs, d["stride"]
                padded_shape = list(ir.RankedTensorType(padded.type).shape)
                piece_input = (padded if in_sizes == padded_shape and not any(in_offsets)
                               else _extract(padded, in_offsets, in_sizes, [1] * len(x_shape)))
                piece_filter = _extract(conv.operands[1], f_offsets, f_sizes, f_strides)
                piece_init = _phase_init(init, o_offsets, o_sizes, o_strides, [d["output"] for d in dims])
                piece = conv.clone(ip=ir.InsertionPoint(conv))
                piece.operands[0] = piece_input
                piece.operands[1] = piece_filter
                piece.operands[2] = piece_init
                piece.results[0].set_type(piece_init.type)
                result = _insert(piece.results[0], result, o_offsets, o_strides)
        conv.results[0].replace_all_uses_with(result)
        conv.erase()
        if _op(init) is not None and _op(init).name == "linalg.broadcast" and not list(init.uses):
            _op(init).erase()
        # the dilated input, its zero fill and their empty tensor, unless something else reads them (left
        # dead, later passes would erase them and change the op count the selector's inspection expects)
        for dead in (insert, _op(zeros), _op(_op(zeros).operands[1])):
            if dead is not None and dead.name in ("tensor.insert_slice", "linalg.fill", "tensor.empty") and not any(
                    list(r.uses) for r in dead.results):
                dead.erase()
        rewritten += 1
    return rewritten
