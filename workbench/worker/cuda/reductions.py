"""The `gpu-reductions` rewrite (cuda-lower): fused row chains first (row_kernels: softmax, norms), then
every single marked reduction (reduce_kernels); each module builds its own kernels."""
from __future__ import annotations


def rewrite_marked(module) -> int:
    """How many kernels the two rewrites built (a chain's reductions go with its kernel)."""
    from workbench.worker.cuda import reduce_kernels, row_kernels

    return row_kernels.rewrite_marked(module) + reduce_kernels.rewrite_marked(module)
