"""Upstream MLIR pass names users type most: what `pass ` completes and what a mistyped pass name is
compared with (the wheels' pass registry cannot be listed from Python)."""
from __future__ import annotations

COMMON_PASSES = (
    "canonicalize", "cse", "symbol-dce", "loop-invariant-code-motion", "inline",
    "eliminate-empty-tensors", "one-shot-bufferize", "buffer-deallocation-pipeline",
    "func.func(convert-linalg-to-loops)", "convert-linalg-to-affine-loops", "lower-affine",
    "convert-scf-to-cf", "expand-strided-metadata", "finalize-memref-to-llvm",
    "convert-vector-to-scf", "convert-vector-to-llvm", "convert-to-llvm", "reconcile-unrealized-casts",
)

#: more upstream passes a mistyped name is compared with (the nested ones by their own name)
MORE_PASSES = (
    "convert-linalg-to-loops", "convert-func-to-llvm", "convert-arith-to-llvm", "convert-cf-to-llvm",
    "convert-math-to-llvm", "convert-index-to-llvm", "convert-scf-to-openmp", "convert-openmp-to-llvm",
    "linalg-fuse-elementwise-ops", "linalg-generalize-named-ops", "linalg-specialize-generic-ops",
    "linalg-fold-unit-extent-dims", "transform-interpreter", "test-transform-dialect-erase-schedule",
    "sparsifier", "tosa-to-linalg-pipeline", "tosa-to-linalg", "tosa-to-arith", "tosa-to-tensor",
    "gpu-kernel-outlining", "convert-gpu-to-nvvm", "gpu-lower-to-nvvm-pipeline", "affine-loop-fusion",
    "affine-loop-tile", "affine-super-vectorize", "sccp", "remove-dead-values", "mem2reg", "sroa",
    "fold-memref-alias-ops", "buffer-hoisting", "buffer-loop-hoisting", "promote-buffers-to-stack",
    "ownership-based-buffer-deallocation", "buffer-deallocation-simplification",
    "bufferization-lower-deallocations", "empty-tensor-to-alloc-tensor", "drop-equivalent-buffer-results",
    "convert-elementwise-to-linalg", "convert-tensor-to-linalg", "convert-bufferization-to-memref",
    "lower-vector-multi-reduction", "lower-vector-mask", "arith-expand", "arith-emulate-wide-int",
    "math-uplift-to-fma", "convert-math-to-libm", "convert-complex-to-llvm", "strip-debuginfo",
    "print-ir", "scf-for-loop-canonicalization", "scf-forall-to-parallel", "scf-forall-to-for",
    "scf-parallel-loop-fusion", "scf-parallel-loop-tiling", "test-lower-to-llvm",
)


def pass_names() -> list[str]:
    """Every pass name known here, nested ones (`func.func(x)`) by their own name."""
    names = [p.partition("(")[2].rstrip(")") if "(" in p else p for p in COMMON_PASSES]
    return list(dict.fromkeys([*names, *MORE_PASSES]))
