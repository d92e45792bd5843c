"""`lh-row-matmuls-as-matvecs`: a one-row matmul with a transposed weight, `x @ W.T` (a batch-1 linear layer:
torch-mlir writes a linalg.transpose of W and a plain linalg.matmul), becomes a matvec of W itself:

    C[1, N] = A[1, K] @ transpose(W[N, K])   ->   C = expand(matvec(W, collapse(A)), init collapsed)

The transpose was a pass over the whole weight on every call, as long as the product itself (a 1000x1024
classifier: 0.9 ms of MobileNetV3-small's 7.5 ms, the product 0.24); W's rows are what a matvec reads
contiguously (the matmul family's matvec schedule: rows in blocks, K in vectors). After elementwise fusion,
which folds the reshapes around it, the one-row matmul is a vector-times-matrix generic (x[k] * B[k, n]
into y[n]): taken the same way.
"""
from __future__ import annotations


def _ranked(value):
    """`value`'s ranked tensor type when its shape is static, else None."""
    from workbench.worker.ir_walk import ranked_tensor_type

    return ranked_tensor_type(value, static=True)


def _transposed_weight(value):
    """W where `value` is linalg.transpose(W) with permutation [1, 0] (2-D), else None."""
    from mlir import ir

    owner = value.owner
    op = owner.operation if hasattr(owner, "operation") else owner
    if getattr(op, "name", "") != "linalg.transpose":
        return None
    if list(ir.DenseI64ArrayAttr(op.attributes["permutation"])) != [1, 0]:
        return None
    return op.operands[0]


#: the vector-times-matrix generic (loops n, k) that elementwise fusion makes of a one-row matmul whose operands
#: it reshapes: x[k] * B[k, n] accumulated into y[n]
_VECMAT_MAPS = ((1,), (1, 0), (0,))


def _vecmat_generic(op):
    """(x, W, init) of a vector-times-matrix multiply-add generic over f32 whose matrix is a transposed W."""
    from workbench.worker.cpu.shared_rhs import _map_dims
    from workbench.worker.payload_inspect import _is_mul_add

    if op.name != "linalg.generic" or len(op.operands) != 3 or len(op.results) != 1:
        return None
    dims = _map_dims(op)
    if dims is None or tuple(tuple(d) for d in dims) != _VECMAT_MAPS or not _is_mul_add(op):
        return None
    from workbench.worker.ir_walk import iterator_types

    if iterator_types(op) != ["parallel", "reduction"]:
        return None
    x, b, init = op.operands
    types = [_ranked(v) for v in (x, b, init)]
    if any(t is None or str(t.element_type) != "f32" for t in types):
        return None
    w = _transposed_weight(b)
    return None if w is None or _ranked(w) is None else (x, w, init)


def _eligible(op):
    """(A, W, init) of a one-row f32 matmul reading a transposed W (or of the vector-times-matrix generic
    fusion makes of one: A and init then vectors), else None."""
    from workbench.worker.ir_walk import has_custom_indexing_maps

    if op.name == "linalg.generic":
        return _vecmat_generic(op)
    if op.name != "linalg.matmul" or len(op.operands) != 3 or len(op.results) != 1 or has_custom_indexing_maps(op):
        return None
    a, b, init = op.operands
    types = [_ranked(v) for v in (a, b, init)]
    if any(t is None or t.rank != 2 or str(t.element_type) != "f32" for t in types) or types[0].shape[0] != 1:
        return None
    w = _transposed_weight(b)
    return None if w is None or _ranked(w) is None else (a, w, init)


def row_matmuls_as_matvecs(module) -> int:
    """Rewrite every eligible matmul (module docstring); how many were rewritten."""
    from mlir import ir
    from mlir.dialects import linalg, tensor

    from workbench.worker.ir_walk import ops_where

    found = [(op, match) for op in ops_where(module, lambda o: o.name in ("linalg.matmul", "linalg.generic"))
             if (match := _eligible(op)) is not None]
    i64 = ir.IntegerType.get_signless(64)
    both = ir.ArrayAttr.get([ir.ArrayAttr.get([ir.IntegerAttr.get(i64, 0), ir.IntegerAttr.get(i64, 1)])])
    for op, (a, w, init) in found:
        transpose = op.operands[1].owner
        n, k = _ranked(w).shape
        with ir.InsertionPoint(op), op.location:
            f32 = ir.F32Type.get()
            if _ranked(a).rank == 1:     # (the fused generic: vectors already)
                result = linalg.matvec(w, a, outs=[init])
            else:
                x = tensor.CollapseShapeOp(ir.RankedTensorType.get([k], f32), a, both).result
                y0 = tensor.CollapseShapeOp(ir.RankedTensorType.get([n], f32), init, both).result
                y = linalg.matvec(w, x, outs=[y0])
                result = tensor.ExpandShapeOp(ir.RankedTensorType.get([1, n], f32), y, both, [], [1, n]).result
        op.results[0].replace_all_uses_with(result)
        op.erase()
        transpose = transpose.operation if hasattr(transpose, "operation") else transpose
        if not any(True for r in transpose.results for _ in r.uses):
            transpose.erase()
    return len(found)
