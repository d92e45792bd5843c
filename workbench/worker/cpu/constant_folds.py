"""`lh-fold-constant-weights`: data movement whose inputs are all constants (a weight transposed, reshaped or
padded) computed once, at compile time: the op's result becomes a constant of its own.

    %w = arith.constant dense_resource<W> : tensor<NxK>
    %t = linalg.transpose ins(%w) outs(%e) permutation = [1, 0]      ->   %t = arith.constant dense_resource<W'>

torch-mlir writes every `x @ W.T` (each nn.Linear) as a linalg.transpose of the weight and a plain matmul, and
lh-plain-matmul-layout makes the same of matmuls with transposed maps; the transpose then ran on every call, a
pass over the whole weight (a LLaMA LM's tied 32003x256 head: 6.3 ms a call). lh-pad-contraction-dims pads the
weight for whole register tiles: one more copy of it a call. Folded: transposes (linalg.transpose, or a copy
generic with permutation maps), tensor.pad with a constant padding value, and reshapes (collapse / expand
shape) on the way to one of those.

The data: the Python bindings cannot read a `dense_resource` blob, but they print it: the constant cloned into
a module of its own prints its blob alone (hex: a 4-byte alignment, then the elements' bytes), which numpy
reads, moves and hands back as a new `dense_resource` (DenseResourceElementsAttr.get_from_buffer). Pure data
movement only depends on the element width, so bf16 / f16 / integer weights are moved as unsigned integers
of their width. The new constant is put where the old one was (torch-mlir: every weight at the top of the
function), so that repeated layers stay alike. A constant left without uses is erased (its blob is not
printed again).
"""
from __future__ import annotations

#: element widths numpy moves as unsigned integers of the same size
_UNSIGNED = {8: "uint8", 16: "uint16", 32: "uint32", 64: "uint64"}
#: the ops a fold starts from (their result is the weight in another layout or size)
_MOVING = ("linalg.transpose", "tensor.pad", "linalg.generic")
#: reshapes folded when a folded op reads them (they are free views on their own)
_RESHAPES = ("tensor.collapse_shape", "tensor.expand_shape")


def _static_type(value):
    from workbench.worker.ir_walk import ranked_tensor_type

    return ranked_tensor_type(value, static=True)


def _numpy_dtype(tensor_type):
    import numpy as np

    from workbench.worker.ir_walk import element_bits

    bits = element_bits(tensor_type.element_type)
    return np.dtype(_UNSIGNED[bits]) if bits in _UNSIGNED else None


def _resource_bytes(constant_op) -> bytes | None:
    """The element bytes of a `dense_resource` constant: printed from a module holding a clone of it."""
    from mlir import ir

    scratch = ir.Module.create(constant_op.location)
    with ir.InsertionPoint(scratch.body):
        constant_op.clone()
    text = str(scratch)
    start = text.find('"0x', text.find("dialect_resources"))
    if start < 0:
        return None
    end = text.find('"', start + 1)
    return bytes.fromhex(text[start + 3 + 8:end])     # (after the 4-byte alignment)


def constant_array(value):
    """The static tensor `value` as a numpy array of unsigned integers of its element width, when it is an
    arith.constant (`dense_resource` or `dense` elements), else None."""
    import numpy as np
    from mlir import ir

    from workbench.worker.ir_walk import defining_op, is_dense_resource

    t = _static_type(value)
    op = defining_op(value)
    if t is None or op is None or op.name != "arith.constant" or _numpy_dtype(t) is None:
        return None
    dtype, shape = _numpy_dtype(t), tuple(t.shape)
    attr = op.attributes["value"]
    if is_dense_resource(attr):
        data = _resource_bytes(op)
    else:
        try:
            dense = ir.DenseElementsAttr(attr)
        except (ValueError, TypeError):
            return None
        if dense.is_splat:
            return None        # (canonicalization folds data movement of a splat without a copy of it)
        try:
            data = np.ascontiguousarray(np.array(dense)).tobytes()
        except (ValueError, TypeError, RuntimeError):
            return None
    if data is None or len(data) != int(np.prod(shape, dtype=np.int64)) * dtype.itemsize:
        return None
    return np.frombuffer(data, dtype=dtype).reshape(shape)


def pad_value(op):
    """The padding value of a tensor.pad as a bit pattern of its element width (its body yields a constant),
    else None."""
    import numpy as np
    from mlir import ir

    from workbench.worker.ir_walk import defining_op, element_bits

    body = op.regions[0].blocks[0].operations
    yielded = defining_op(list(body)[-1].operands[0]) if len(list(body)[-1].operands) == 1 else None
    if yielded is None or getattr(yielded, "name", "") != "arith.constant":
        return None
    attr = yielded.attributes["value"]
    t = _static_type(op.results[0])
    bits = element_bits(t.element_type)
    try:
        value = ir.FloatAttr(attr).value
        floats = {16: "float16", 32: "float32", 64: "float64"}
        if value == 0.0 and str(value) != "-0.0":
            return 0
        if bits not in floats or str(t.element_type) == "bf16":
            return None
        return int(np.array(value, dtype=floats[bits]).view(_UNSIGNED[bits]))
    except (ValueError, TypeError):
        pass
    try:
        return ir.IntegerAttr(attr).value & ((1 << bits) - 1)
    except (ValueError, TypeError):
        return None


def _copy_permutation(op):
    """The permutation a linalg.generic applies when it only copies its one input (permutation maps, body
    `yield %in`), else None."""
    from mlir import ir

    if len(op.operands) != 2 or len(op.results) != 1:
        return None
    body = list(op.regions[0].blocks[0].operations)
    block = op.regions[0].blocks[0]
    if len(body) != 1 or body[0].name != "linalg.yield" or body[0].operands[0] != block.arguments[0]:
        return None
    maps = [ir.AffineMapAttr(m).value for m in ir.ArrayAttr(op.attributes["indexing_maps"])]
    if not all(m.is_permutation for m in maps):
        return None
    dims = [[ir.AffineDimExpr(e).position for e in m.results] for m in maps]
    # out[i_0..] = in[...]: output dim d of the loop order reads input dim at the same loop index
    position_in_input = {loop: pos for pos, loop in enumerate(dims[0])}
    return [position_in_input[loop] for loop in dims[1]]


def _folded_array(op, arrays):
    """The result of `op` on constant inputs `arrays` (numpy), or None when `op` is not folded."""
    import numpy as np
    from mlir import ir

    result_type = _static_type(op.results[0]) if len(op.results) == 1 else None
    if result_type is None:
        return None
    source = arrays[0]
    if op.name == "linalg.transpose":
        return np.transpose(source, list(ir.DenseI64ArrayAttr(op.attributes["permutation"])))
    if op.name == "linalg.generic":
        permutation = _copy_permutation(op)
        return None if permutation is None else np.transpose(source, permutation)
    if op.name in _RESHAPES:
        return source.reshape(tuple(result_type.shape))
    if op.name == "tensor.pad":
        if len(op.operands) != 1:     # (dynamic low / high pads)
            return None
        value = pad_value(op)
        low = list(ir.DenseI64ArrayAttr(op.attributes["static_low"]))
        high = list(ir.DenseI64ArrayAttr(op.attributes["static_high"]))
        if value is None or min(low + high) < 0:
            return None
        return np.pad(source, list(zip(low, high)), constant_values=source.dtype.type(value))
    return None


def _folds_from(op) -> list:
    """The ops to fold for `op` (data movement of constants), inputs first: reshapes of constants it reads
    included; [] when an input is not a constant or `op` does not fold."""
    from workbench.worker.ir_walk import defining_op

    chain = []
    producer = defining_op(op.operands[0])
    while producer is not None and producer.name in _RESHAPES:
        chain.insert(0, producer)
        producer = defining_op(producer.operands[0])
    return chain + [op] if producer is not None and producer.name == "arith.constant" else []


def fold_constant_weights(module) -> int:
    """Fold every transpose / copy / pad of a constant (module docstring); how many ops were folded."""
    from mlir import ir
    from mlir.dialects import arith

    from workbench.worker.ir_walk import defining_op, erase_unread, ops_where

    candidates = ops_where(module, lambda o: o.name in _MOVING)
    folded = 0
    for op in candidates:
        chain = _folds_from(op)
        if not chain:
            continue
        constant = defining_op(chain[0].operands[0])
        array = constant_array(chain[0].operands[0])
        if array is None:
            continue
        for step in chain:
            array = _folded_array(step, [array])
            if array is None:
                break
        result_type = _static_type(op.results[0])
        if array is None or _numpy_dtype(result_type) is None or tuple(array.shape) != tuple(result_type.shape):
            continue
        import numpy as np

        data = np.ascontiguousarray(array)
        # (where the constant was: with the function's other weights, not amid the ops of a layer, whose runs
        # lh-outline-repeated-steps matches)
        with ir.InsertionPoint(constant), op.location:
            attr = ir.DenseResourceElementsAttr.get_from_buffer(data, f"lh_folded_weight_{folded}", result_type)
            replacement = arith.ConstantOp(result_type, attr).result
        op.results[0].replace_all_uses_with(replacement)
        # the chain, then the constant, where nothing else reads them
        erase_unread(op.results[0], _MOVING + _RESHAPES + ("arith.constant",))
        folded += 1
    return folded
