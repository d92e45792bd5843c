"""`lh-transposed-b-matmuls`: a matmul or batch matmul whose B is a `linalg.transpose` of the last two
dims (torch's `q @ k.transpose(-1, -2)`, `x @ w.t()`) reads the transpose's input with transposed-B
indexing maps instead (on tensors, static shapes). The transpose is then no kernel and no pass over
memory: the wgmma kernel reads B K-major (stored N x K) directly, its TMA boxes as wide as the
row-major ones (see wgmma_matmul: K-major B). The inverse of the cpu target's lh-plain-matmul-layout,
whose packed micro-kernel wants B as [k][n]."""
from __future__ import annotations

_OPS = {"linalg.matmul": 2, "linalg.batch_matmul": 3}


def _swapped_last_two(op, rank: int) -> bool:
    """Whether `op` is a linalg.transpose swapping the last two of `rank` dims (batch dims kept)."""
    from mlir import ir

    if op.name != "linalg.transpose":
        return False
    perm = list(ir.DenseI64ArrayAttr(op.attributes["permutation"]))
    return perm == list(range(rank - 2)) + [rank - 1, rank - 2]


def fold_transposed_b(module) -> int:
    """Rewrite every such matmul (module docstring); how many were rewritten."""
    from mlir import ir
    from mlir.dialects import linalg

    from workbench.worker.cuda.wgmma_matmul import TRANSPOSED_B_MAPS
    from workbench.worker.ir_walk import has_custom_indexing_maps, ops_where

    rewritten = 0
    for op in ops_where(module, lambda o: o.name in _OPS):
        rank = _OPS[op.name]
        if has_custom_indexing_maps(op) or len(op.operands) != 3 or len(op.results) != 1:
            continue
        b = op.operands[1]
        producer = b.owner
        if isinstance(producer, ir.Block) or not _swapped_last_two(producer, rank):
            continue
        source = producer.operands[0]
        if not ir.RankedTensorType(source.type).has_static_shape:
            continue
        maps = [ir.AffineMapAttr(ir.Attribute.parse(m)).value for m in TRANSPOSED_B_MAPS[rank]]
        build = linalg.matmul if rank == 2 else linalg.batch_matmul
        with ir.InsertionPoint(op), op.location:
            product = build(op.operands[0], source, outs=[op.operands[2]], indexing_maps=maps)
        op.results[0].replace_all_uses_with(product)
        op.erase()
        if not list(producer.results[0].uses):
            producer.erase()
        rewritten += 1
    return rewritten
