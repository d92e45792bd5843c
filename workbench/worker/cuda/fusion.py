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

PIPELINE = ("builtin.module(func.func(math-expand-ops{ops=fpowi},linalg-fuse-elementwise-ops,"
            "linalg-fold-unit-extent-dims,canonicalize))")
#: the named ops the cuda selector gives a matmul schedule (workbench/targets/cuda.py)
CONTRACTIONS = ("linalg.matmul", "linalg.batch_matmul")


def fuse_elementwise(module) -> int:
    """The guarded fusion (module docstring); how many values were guarded."""
    from workbench.worker.fusion_guards import run_guarded
    from workbench.worker.ir_walk import ops_where

    guards = [(value, op) for op in ops_where(module, lambda o: o.name in CONTRACTIONS)
              for value in list(op.operands)[:len(op.operands) - len(op.results)] + list(op.results)]
    run_guarded(module, PIPELINE, guards)
    return len(guards)
