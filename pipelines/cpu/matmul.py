"""v1 draft"""

LOWERING_PASSES = [
    "func.func(convert-linalg-to-loops)",
    "func.func(convert-vector-to-scf{full-unroll=true})",
    "expand-strided-metadata",
    "lower-affine",
    "convert-scf-to-cf",
    "convert-vector-to-llvm",
    "finalize-memref-to-llvm",
    "convert-arith-to-llvm",
    "convert-index-to-llvm",
    "convert-func-to-llvm",
    "convert-cf-to-llvm",
    "reconcile-unrealized-casts",
]


def matmul_tiling(block_m: int = 64, block_n: int = 256, block_k: int = 256,
                  reg_m: int = 8, reg_n: int = 32, reg_k: int = 1) -> str:
    return f"""
module attributes {{transform.with_named_sequence}} {{
  transform.named_sequence @__transform_main(%root: !transform.any_op {{transform.readonly}}) {{
    %mm = transform.structured.match ops{{["linalg.matmul"]}} in %root : (!transform.any_op) -> !transform.any_op
    %t1, %l1:3 = transform.structured.tile_using_for %mm tile_sizes [{block_m}, {block_n}, {block_k}]
        : (!transform.any_op) -> (!transform.any_op, !transform.any_op, !transform.any_op, !transform.any_op)
    %t2, %l2:2 = transform.structured.tile_using_for %t1 tile_sizes [{reg_m}, {reg_n}, 0]
        : (!transform.any_op) -> (!transform.any_op, !transform.any_op, !transform.any_op)
    %t3, %l3 = transform.structured.tile_using_for %t2 tile_sizes [0, 0, {reg_k}]
        : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
    transform.structured.vectorize %t3 : !transform.any_op
    %f = transform.structured.match ops{{["func.func"]}} in %root : (!transform.any_op) -> !transform.any_op
    transform.apply_patterns to %f {{
      transform.apply_patterns.vector.lower_contraction lowering_strategy = "outerproduct"
      transform.apply_patterns.vector.transfer_permutation_patterns
      transform.apply_patterns.vector.lower_transpose
      transform.apply_patterns.canonicalization
    }} : !transform.any_op
    %mod = transform.structured.match ops{{["builtin.module"]}} in %root : (!transform.any_op) -> !transform.any_op
    %b = transform.bufferization.one_shot_bufferize %mod {{bufferize_function_boundaries = true,
        function_boundary_type_conversion = 1 : i32}} : (!transform.any_op) -> !transform.any_op
    %f2 = transform.structured.match ops{{["func.func"]}} in %b : (!transform.any_op) -> !transform.any_op
    transform.apply_patterns to %f2 {{
      transform.apply_patterns.canonicalization
    }} : !transform.any_op
    %h = transform.structured.hoist_redundant_vector_transfers %f2 : (!transform.any_op) -> !transform.any_op
    transform.apply_patterns to %h {{
      transform.apply_patterns.vector.lower_outerproduct
      transform.apply_patterns.vector.lower_transfer max_transfer_rank = 1
      transform.apply_patterns.vector.lower_broadcast
      transform.apply_patterns.vector.lower_shape_cast
      transform.apply_patterns.canonicalization
    }} : !transform.any_op
    transform.yield
  }}
}}
"""


def default_params(m: int, n: int, k: int) -> dict:
    return dict(block_m=64, block_n=256, block_k=256, reg_m=8, reg_n=32, reg_k=1)
