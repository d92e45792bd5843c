"""`lh-shared-rhs-matmuls`: contractions whose right-hand matrix is the same for every row block become
one linalg.matmul over all the rows (on tensors).

Two forms torch-mlir writes for a linear layer (or `x @ W`) applied to a 3-D input:
- a `linalg.batch_matmul` whose B operand is a 2-D matrix broadcast over the batch (a
  `linalg.generic` copying W[k, n] into B[b, k, n]): nn.MultiheadAttention's input projections.
  The broadcast writes the matrix once per batch (128 copies of a 256x256 weight: 32 MB), and the
  batch matmul packs each copy again;
- a `linalg.generic` with maps (m0, m1, n, k): A[m0, m1, k], B[k, n] -> C[m0, m1, n] and a
  multiply-add body (its output projection, once the reshapes around it are folded): no named op
  has these maps, so the packed schedules do not take it. Any groups of loops in that order do:
  A[r.., k..] W[k.., n..] -> C[r.., n..] (the heads' product with the output weight, summed over
  heads and head dims; a QKV projection whose columns the fusion split into (3, d)).
Both are C = A @ W with the leading row dims of A and C collapsed (a free reshape of a tensor):
`tensor.collapse_shape` of A and the init, a `linalg.matmul`, a `tensor.expand_shape` of its result.
The matmul (and its epilogue) then takes the packed matmul schedules, W is packed once per block.
"""
from __future__ import annotations

import math


def _ranked(value):
    from workbench.worker.ir_walk import ranked_tensor_type

    return ranked_tensor_type(value)


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


def _grouped_contraction(dims: list[tuple[int, ...]], iterators: list[str]) -> tuple[int, int, int] | None:
    """(rows, reduced, columns): the number of loops in each group when the maps are those of a matmul
    over groups of loops, A[r.., k..] W[k.., n..] -> C[r.., n..] (each group's loops in the same order
    wherever they appear; every r and n parallel, every k a reduction), None for any other maps."""
    if len(dims) != 3:
        return None
    a, w, c = dims
    reduced = [d for d in a if iterators[d] == "reduction"]
    rows = [d for d in a if iterators[d] == "parallel"]
    columns = [d for d in w if iterators[d] == "parallel"]
    if not rows or not reduced or not columns or set(rows) & set(columns):
        return None   # (a loop in both A and W is a batch loop: no shared W)
    if (list(a) != rows + reduced or list(w) != reduced + columns or list(c) != rows + columns
            or sorted(a + tuple(columns)) != list(range(len(iterators)))):
        return None
    return len(rows), len(reduced), len(columns)


def _rows_matmul(op) -> tuple[object, object, object, int, int] | None:
    """(A, W, init, row dims, reduced dims) for a contraction C[r0.., n..] = sum_k.. A[r0.., k..]
    W[k.., n..] written with a shared W (module docstring), None for any other op."""
    from workbench.worker.payload_inspect import _is_mul_add, iterator_types

    if len(op.results) != 1:
        return None
    if op.name == "linalg.batch_matmul" and "indexing_maps" not in str(op).split("ins(")[0]:
        w = _broadcast_matrix(op.operands[1])
        return (op.operands[0], w, op.operands[2], 2, 1) if w is not None else None
    if op.name != "linalg.generic" or len(op.operands) != 3 or not _is_mul_add(op):
        return None
    dims = _map_dims(op)
    if dims is None:
        return None
    groups = _grouped_contraction(dims, iterator_types(op))
    if groups is None or groups == (1, 1, 1):
        return None   # (one loop each: a plain matmul written as a generic, which the matmul family takes)
    rows, reduced, _ = groups
    return op.operands[0], op.operands[1], op.operands[2], rows, reduced


def _groups(sizes: list[int]):
    """The reassociation of consecutive dims in groups of `sizes` (`[2, 1]`: [[0, 1], [2]])."""
    from mlir import ir

    i64 = ir.IntegerType.get_signless(64)
    starts = [sum(sizes[:i]) for i in range(len(sizes))]
    return ir.ArrayAttr.get([ir.ArrayAttr.get([ir.IntegerAttr.get(i64, s + j) for j in range(size)])
                             for s, size in zip(starts, sizes)])


def _collapsed(value, sizes: list[int], shape: list[int]):
    """`value` collapsed to `shape` by consecutive groups of `sizes` dims (itself when already of that rank)."""
    from mlir import ir
    from mlir.dialects import tensor

    t = _ranked(value)
    if t.rank == len(shape):
        return value
    return tensor.CollapseShapeOp(ir.RankedTensorType.get(shape, t.element_type), value, _groups(sizes)).result


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
        a, w, init, rows, reduced = match
        types = [_ranked(v) for v in (a, w, init)]
        if any(t is None or not t.has_static_shape for t in types):
            continue
        if any(str(t.element_type) != str(types[2].element_type) for t in types):
            continue   # (mixed precision: left to lh-widen-contraction-inputs first)
        found.append((op, a, w, init, rows, reduced))
    for op, a, w, init, rows, reduced in found:
        ta, tw, tc = _ranked(a), _ranked(w), _ranked(init)
        m, k = math.prod(ta.shape[:rows]), math.prod(ta.shape[rows:])
        n = math.prod(tc.shape[rows:])
        with ir.InsertionPoint(op), op.location:
            a2 = _collapsed(a, [rows, ta.rank - rows], [m, k])
            w2 = _collapsed(w, [reduced, tw.rank - reduced], [k, n])
            c2 = _collapsed(init, [rows, tc.rank - rows], [m, n])
            product = linalg.matmul(a2, w2, outs=[c2])
            result = product if tc.rank == 2 else tensor.ExpandShapeOp(
                op.results[0].type, product, _groups([rows, tc.rank - rows]), [], list(tc.shape)).result
        broadcast = _owner(op.operands[1], "linalg.generic") if op.name == "linalg.batch_matmul" else None
        op.results[0].replace_all_uses_with(result)
        op.erase()
        if broadcast is not None and not list(broadcast.results[0].uses):
            broadcast.erase()
    return len(found)
