"""Elementwise fusion that keeps the named contractions (the cuda target's preparation step).

Upstream's `linalg-fuse-elementwise-ops` also fuses reshapes by expansion: a linalg op reading a
tensor.collapse_shape, or read by a tensor.expand_shape, is rewritten over the uncollapsed dims, and a
named op comes out of that as a linalg.generic. torch-mlir writes a batch matmul of multi-head
attention between such reshapes ([b, h, s, d] collapsed to [b*h, s, d] and back), and a linear layer
of a 3-D input as a matmul of the collapsed rows: after the fusion they were generics, which the cuda
selector does not take for a matmul (no wgmma or mma schedule: a naive kernel each).

`fuse_elementwise(module)`: the operands and results of each named contraction are guarded
(workbench/worker/fusion_guards.py) through upstream's pipeline (integer powers expanded,
elementwise fusion, unit dims folded, canonicalization). Other ops fuse as before; broadcast
operands are not guarded (the row kernels keep a broadcast operand in registers: fusing it costs
nothing here, unlike on the CPU).
"""
from __future__ import annotations

from workbench.worker.fusion_guards import PIPELINE  # upstream's fusion, as both targets run it

#: the named ops the cuda selector gives a matmul schedule (workbench/targets/cuda.py)
CONTRACTIONS = ("linalg.matmul", "linalg.batch_matmul")


def fuse_elementwise(module, batch_operands: tuple[str, ...] | None = None) -> int:
    """The guarded fusion (module docstring); how many values were guarded. `batch_operands`: the operand
    element types of the batch matmuls kept (those the selector has a schedule for; None: all). The
    others fuse as upstream fuses them: a naive kernel either way, with its producers fused in."""
    from mlir import ir

    from workbench.worker.fusion_guards import run_guarded
    from workbench.worker.ir_walk import ops_where

    def kept(op) -> bool:
        if op.name not in CONTRACTIONS:
            return False
        return (op.name != "linalg.batch_matmul" or batch_operands is None
                or str(ir.ShapedType(op.operands[0].type).element_type) in batch_operands)

    guards = [(value, op) for op in ops_where(module, kept)
              for value in list(op.operands)[:len(op.operands) - len(op.results)] + list(op.results)]
    run_guarded(module, PIPELINE, guards)
    return len(guards)
