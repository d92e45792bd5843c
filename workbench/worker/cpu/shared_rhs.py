"""`lh-shared-rhs-matmuls`: contractions whose right-hand matrix is the same for every row block become
one linalg.matmul over all the rows (on tensors).

Two forms torch-mlir writes for a linear layer (or `x @ W`) applied to a 3-D input:
- a `linalg.batch_matmul` whose B operand is a 2-D matrix broadcast over the batch (a
  `linalg.generic` copying W[k, n] into B[b, k, n]): nn.MultiheadAttention's input projections.
  The broadcast writes the matrix once per batch (128 copies of a 256x256 weight: 32 MB), and the
  batch matmul packs each copy again;
- a `linalg.generic` with maps (m0, m1, n, k): A[m0, m1, k], B[k, n] -> C[m0, m1, n] and a
  multiply-add body (its output projection, once the reshapes around it are folded): no named op
  has these maps, so the packed schedules do not take it.
Both are C = A @ W with the leading row dims of A and C collapsed (a free reshape of a tensor):
`tensor.collapse_shape` of A and the init, a `linalg.matmul`, a `tensor.expand_shape` of its result.
The matmul (and its epilogue) then takes the packed matmul schedules, W is packed once per block.
"""
from __future__ import annotations


def _ranked(value):
    from mlir import ir

    t = value.type
    t = t.maybe_downcast() if hasattr(t, "maybe_downcast") else t
    return t if isinstance(t, ir.RankedTensorType) else None


def _owner(value, name: str):
    from mlir import ir

    owner = value.owner
    if isinstance(owner, (ir.Operation, ir.OpView)) and owner.operation.name == name:
        return owner.operation
    return None


def _map_dims(op) -> list[tuple[int, ...]] | None:
    """Each indexing map's results as loop dims (None when one is no plain dim)."""
    from mlir import ir

    try:
        maps = [ir.AffineMapAttr(a).value for a in ir.ArrayAttr(op.attributes["indexing_maps"])]
        return [tuple(ir.AffineDimExpr(r).position for r in m.results) for m in maps]
    except (KeyError, ValueError, TypeError):
        return None


def _broadcast_matrix(value):
    """The 2-D matrix W that `value` broadcasts over a leading batch dim (a linalg.generic
    B[b, k, n] = W[k, n], body a plain yield of its input), None otherwise."""
    from workbench.worker.payload_inspect import iterator_types

    op = _owner(value, "linalg.generic")
    if op is None or len(op.operands) != 2 or len(op.results) != 1:
        return None
    if _map_dims(op) != [(1, 2), (0, 1, 2)] or any(it != "parallel" for it in iterator_types(op)):
        return None
    body = list(op.regions[0].blocks[0].operations)
    if len(body) != 1 or body[0].operation.operands[0] != op.regions[0].blocks[0].arguments[0]:
        return None
    return op.operands[0]


def _rows_matmul(op) -> tuple[object, object, object, int] | None:
    """(A, W, init, row dims) for a contraction C[r0.., n] = sum_k A[r0.., k] W[k, n] written with a
    shared W (module docstring), None for any other op."""
    from workbench.worker.payload_inspect import _is_mul_add, iterator_types

    if len(op.results) != 1:
        return None
    if op.name == "linalg.batch_matmul" and "indexing_maps" not in str(op).split("ins(")[0]:
        w = _broadcast_matrix(op.operands[1])
        return (op.operands[0], w, op.operands[2], 2) if w is not None else None
    if op.name != "linalg.generic" or len(op.operands) != 3 or not _is_mul_add(op):
        return None
    dims = _map_dims(op)
    if dims is None:
        return None
    rank = len(dims[2]) + 1          # loops: rows.., n, k
    rows = rank - 2
    if rows < 2:
        return None
    r, n, k = tuple(range(rows)), rows, rows + 1
    if dims != [r + (k,), (k, n), r + (n,)]:
        return None
    if iterator_types(op) != ["parallel"] * (rank - 1) + ["reduction"]:
        return None
    return op.operands[0], op.operands[1], op.operands[2], rows


def collapse_shared_rhs(module) -> int:
    """Rewrite every such contraction (module docstring); how many were rewritten."""
    from mlir import ir
    from mlir.dialects import linalg, tensor

    from workbench.worker.ir_walk import ops_where

    found = []
    for op in ops_where(module, lambda o: o.name in ("linalg.batch_matmul", "linalg.generic")):
        match = _rows_matmul(op)
        if match is None:
            continue
        a, w, init, rows = match
        types = [_ranked(v) for v in (a, w, init)]
        if any(t is None or not t.has_static_shape for t in types):
            continue
        if any(str(t.element_type) != str(types[2].element_type) for t in types):
            continue   # (mixed precision: left to lh-widen-contraction-inputs first)
        found.append((op, a, w, init, rows))
    for op, a, w, init, rows in found:
        ta, tc = _ranked(a), _ranked(init)
        m = 1
        for d in ta.shape[:rows]:
            m *= d
        groups = ir.ArrayAttr.get([ir.ArrayAttr.get([ir.IntegerAttr.get(ir.IntegerType.get_signless(64), i)
                                                     for i in range(rows)])]
                                  + [ir.ArrayAttr.get([ir.IntegerAttr.get(ir.IntegerType.get_signless(64), rows)])])
        with ir.InsertionPoint(op), op.location:
            a2 = tensor.CollapseShapeOp(ir.RankedTensorType.get([m, ta.shape[-1]], ta.element_type), a, groups)
            c2 = tensor.CollapseShapeOp(ir.RankedTensorType.get([m, tc.shape[-1]], tc.element_type), init, groups)
            product = linalg.matmul(a2.result, w, outs=[c2.result])
            expanded = tensor.ExpandShapeOp(op.results[0].type, product, groups, [], list(tc.shape))
        broadcast = _owner(op.operands[1], "linalg.generic") if op.name == "linalg.batch_matmul" else None
        op.results[0].replace_all_uses_with(expanded.result)
        op.erase()
        if broadcast is not None and not list(broadcast.results[0].uses):
            broadcast.erase()
    return len(found)
