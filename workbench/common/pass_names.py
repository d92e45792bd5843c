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


#: the workbench's own passes (workbench/worker/py_passes.py PASSES, which the front end cannot import: it is on
#: the worker side), for completion; tests/test_qa_round6.py keeps the two lists equal
WORKBENCH_PASSES = (
    "lh-frontend-to-linalg", "lh-apply-payload-schedule", "lh-erase-transform-schedules",
    "lh-lift-tensor-cf", "lh-buffer-deallocation", "lh-profile-regions", "lh-specialize-shapes", "lh-gpu-device-wrapper",
    "lh-gpu-device-memory", "lh-gpu-serial-kernels", "lh-parallel-dims-first", "lh-gpu-linear-map",
    "lh-barrier-after-async-wait", "lh-bf16-memory-as-bits", "lh-bf16-compute-f32", "lh-unmask-fp-reductions", "lh-flat-vector-math", "lh-contiguous-gather-sources",
    "lh-math-approx", "lh-math-exp-approx", "lh-outline-loops", "lh-outline-repeated-steps",
    "lh-contiguous-copies-as-memcpy", "lh-parallel-to-gomp", "lh-gomp-dispatch", "lh-flush-denormals", "lh-defer-accumulator-loads",
    "lh-task-buffers-on-stack",
    "lh-split-leftover-ops", "lh-split-long-reductions", "lh-drop-body-asserts", "lh-fold-slices-of-concat", "lh-unshare-fills",
    "lh-drop-dead-results", "lh-fuse-into-gathers", "lh-fold-all-neg-inf-checks", "lh-scale-after-contractions",
    "lh-merge-contraction-batches", "lh-flash-attention",
    "lh-softmax-reciprocals", "lh-widen-bool-reductions", "lh-fuse-elementwise",
    "lh-gather-indices", "lh-dilated-input-convs", "lh-widen-contraction-inputs", "lh-vnni-contractions",
    "lh-pad-contraction-dims", "lh-amx-tile-accumulators", "lh-row-matmuls-as-matvecs", "lh-conv-planes",
    "lh-fold-constant-weights", "lh-strided-conv-planes", "lh-fold-splat-extracts", "lh-constant-pad-rows", "lh-pad-copies", "lh-merge-sibling-reductions", "lh-row-networks",
    "lh-pad-conv-rows", "lh-strided-convs", "lh-tap-matmuls", "lh-pointwise-convs", "lh-vnni-convs",
    "lh-flatten-contiguous-transfers", "lh-shared-rhs-matmuls", "lh-shared-lhs-matmuls", "lh-transposed-b-matmuls",
    "lh-drop-redundant-stream-syncs", "lh-fuse-elementwise-keep-contractions", "lh-narrow-contraction-inputs",
    "lh-narrow-widened-results", "lh-reshape-gathers", "lh-collapse-planes", "lh-collapse-expanded-elementwise",
    "lh-plain-matmul-layout",
    "lh-report-failed-asserts", "lh-widen-i1-memrefs", "lh-widen-i1-vector-args", "lh-mpi-buffer-deallocation",
    "lh-mpi-reuse-comm", "lh-shard-collectives", "lh-blas-matmuls", "lh-xegpu-spirv-binary",
    "lh-reuse-gpu-stream", "lh-cache-gpu-temporaries", "lh-nvvm-lower",
)
