"""`lh-plain-matmul-layout`: matmuls with a transposed operand (`x @ w.T` as a linalg.matmul with
transposed indexing maps, or as torch-mlir's linalg.generic with a multiply-add body; `a.T @ b`) become
a `linalg.transpose` of that operand and a plain linalg.matmul (on tensors, static shapes); a plain
matmul written as a multiply-add generic (upstream's elementwise fusion generalizes a named matmul whose
result it reshapes: an unrolled LSTM's per-step `h @ W_hh`) becomes a linalg.matmul again.

Why: the packed matmul schedule's micro-kernel reads B as [k][n] panels; with B indexed (n, k) the
packing transposes each panel back for the contraction, which the vector lowering then takes element
by element (8x slower than the plain matmul at 1024^3). The transpose is one pass over the operand
(K*N elements against M*N*K multiply-adds), tiled in square blocks by the selector, and the matmul
takes the plain (or epilogue, or parallel) packed schedule.
"""
from __future__ import annotations

#: (A, B, C) map results over (m, n, k) -> which inputs are transposed
TRANSPOSED = {((0, 2), (1, 2), (0, 1)): (False, True),
              ((2, 0), (2, 1), (0, 1)): (True, False),
              ((2, 0), (1, 2), (0, 1)): (True, True)}
#: a plain matmul's map results: rewritten when it is a generic (the named op is what it becomes)
PLAIN = ((0, 2), (2, 1), (0, 1))


def _transposed_inputs(op) -> tuple[bool, bool] | None:
    from workbench.worker.cpu.shared_rhs import _map_dims
    from workbench.worker.payload_inspect import _is_mul_add, iterator_types

    if op.name not in ("linalg.matmul", "linalg.generic") or len(op.operands) != 3 or len(op.results) != 1:
        return None
    dims = _map_dims(op)
    plain_generic = op.name == "linalg.generic" and dims is not None and tuple(dims) == PLAIN
    if dims is None or (tuple(dims) not in TRANSPOSED and not plain_generic):
        return None
    if op.name == "linalg.generic" and (not _is_mul_add(op) or iterator_types(op) != ["parallel", "parallel", "reduction"]):
        return None
    return (False, False) if plain_generic else TRANSPOSED[tuple(dims)]


def _transposed(value):
    """linalg.transpose of the static 2-D tensor `value`, built at the current insertion point."""
    from mlir import ir
    from mlir.dialects import linalg, tensor

    t = ir.RankedTensorType(value.type)
    empty = tensor.EmptyOp([t.shape[1], t.shape[0]], t.element_type)
    return linalg.transpose(value, outs=[empty.result], permutation=[1, 0])


def plain_matmul_layout(module) -> int:
    """Rewrite every such matmul (module docstring); how many were rewritten."""
    from mlir import ir
    from mlir.dialects import linalg

    from workbench.worker.ir_walk import ops_where

    rewritten = 0
    for op in ops_where(module, lambda o: o.name in ("linalg.matmul", "linalg.generic")):
        which = _transposed_inputs(op)
        if which is None:
            continue
        types = [ir.RankedTensorType(v.type) for v in op.operands]
        if not all(t.has_static_shape for t in types) or len({str(t.element_type) for t in types}) != 1:
            continue
        with ir.InsertionPoint(op), op.location:
            a, b = [_transposed(v) if flip else v for v, flip in zip(list(op.operands)[:2], which)]
            product = linalg.matmul(a, b, outs=[op.operands[2]])
        op.results[0].replace_all_uses_with(product)
        op.erase()
        rewritten += 1
    return rewritten
