// Reproducer (MLIR 22.1.8, xtc wheels, assertion-enabled): multi-stage pipelining of matmul_mma_smem.
// Payload: f16 linalg.matmul 256x128x128 (tensor args), applied as a transform (trust it first):
//   apply pipelines/cuda/repro/mma_smem_pipelined_s3.mlir
// Fixed in matmul_mma_smem{stages=S} (no barrier before the copies; see NOTES_matmul.md).
// Everything up to transform.nvgpu.create_async_groups works (typed 3x128x32 / 3x32x128 shared
// allocs outside the K loop, cp.async into slot (k/32) mod 3); pipeline_shared_memory_copies aborts:
// NVGPUTransformOps.cpp:210 collectStage0PipeliningOps: Assertion 'barriers.empty()' failed (SIGABRT).
// See pipelines/cuda/NOTES_matmul.md, section 'Multi-stage pipelining'.
module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.consumed}) {
    %mm0 = transform.structured.match ops{["linalg.matmul"]} in %root : (!transform.any_op) -> !transform.any_op
    %blk, %fb = transform.structured.tile_using_forall %mm0 tile_sizes [128, 128]
        (mapping = [#gpu.block<y>, #gpu.block<x>]) : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
    %kt, %kl = transform.structured.tile_using_for %blk tile_sizes [0, 0, 32]
        : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
    %padded, %pad, %cpb = transform.structured.pad %kt {padding_values = [0.0 : f16, 0.0 : f16, 0.0 : f16],
        padding_dimensions = [2], nofold_flags = [1, 1, 0], copy_back_op = "none"}
        : (!transform.any_op) -> (!transform.any_op, !transform.any_op, !transform.any_op)
    %pa, %pb = transform.split_handle %pad : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
    %ba, %na = transform.structured.bufferize_to_allocation %pa {memory_space = #gpu.address_space<workgroup>, memcpy_op = "linalg.copy"} : !transform.any_op
    %bb, %nb = transform.structured.bufferize_to_allocation %pb {memory_space = #gpu.address_space<workgroup>, memcpy_op = "linalg.copy"} : !transform.any_op
    %b = transform.bufferization.one_shot_bufferize %root {bufferize_function_boundaries = true,
        function_boundary_type_conversion = 1 : i32} : (!transform.any_op) -> !transform.any_op
    %f0 = transform.structured.match ops{["func.func"]} in %b : (!transform.any_op) -> !transform.any_op
    transform.apply_patterns to %f0 {
      transform.apply_patterns.canonicalization
    } : !transform.any_op
    %mm2 = transform.structured.match ops{["linalg.matmul"]} in %b : (!transform.any_op) -> !transform.any_op
    %wrp, %fw = transform.structured.tile_using_forall %mm2 tile_sizes [64, 64]
        (mapping = [#gpu.warp<y>, #gpu.warp<x>]) : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
    %cps = transform.structured.match ops{["linalg.copy"]} in %b : (!transform.any_op) -> !transform.any_op
    %ca, %cb = transform.split_handle %cps : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
    %cat, %caf = transform.structured.tile_using_forall %ca tile_sizes [4, 8]
        (mapping = [#gpu.thread<linear_dim_1>, #gpu.thread<linear_dim_0>]) : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
    %cbt, %cbf = transform.structured.tile_using_forall %cb tile_sizes [4, 8]
        (mapping = [#gpu.thread<linear_dim_1>, #gpu.thread<linear_dim_0>]) : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
    %f = transform.structured.match ops{["func.func"]} in %b : (!transform.any_op) -> !transform.any_op
    %gl = transform.gpu.map_forall_to_blocks %f generate_gpu_launch : (!transform.any_op) -> !transform.any_op
    %m2 = transform.gpu.map_nested_forall_to_threads %gl block_dims = [64, 2, 1]
        : (!transform.any_op) -> !transform.any_op
    %f1 = transform.structured.match ops{["func.func"]} in %b : (!transform.any_op) -> !transform.any_op
    transform.apply_patterns to %f1 {
      transform.apply_patterns.canonicalization
    } : !transform.any_op
    %hf = transform.apply_registered_pass "buffer-loop-hoisting" to %f1 : (!transform.any_op) -> !transform.any_op
    %al = transform.structured.match ops{["memref.alloc"]} in %hf : (!transform.any_op) -> !transform.op<"memref.alloc">
    %mb = transform.memref.multibuffer %al {factor = 3, skip_analysis} : (!transform.op<"memref.alloc">) -> !transform.any_op
    %pieces = transform.structured.match ops{["linalg.matmul", "linalg.copy"]} in %b : (!transform.any_op) -> !transform.any_op
    transform.structured.vectorize %pieces {create_named_contraction} : !transform.any_op
    %f2 = transform.structured.match ops{["func.func"]} in %b : (!transform.any_op) -> !transform.any_op
    transform.apply_patterns to %f2 {
      transform.apply_patterns.canonicalization
    } : !transform.any_op
    transform.apply_patterns to %f2 {
      transform.apply_patterns.memref.fold_memref_alias_ops
      transform.apply_patterns.canonicalization
    } : !transform.any_op
    transform.apply_patterns to %f2 {
      transform.apply_patterns.gpu.unroll_vectors_subgroup_mma [16, 8, 16]
      transform.apply_patterns.vector.cast_away_vector_leading_one_dim
      transform.apply_patterns.canonicalization
    } : !transform.any_op
    transform.apply_cse to %f2 : !transform.any_op
    %f3 = transform.structured.hoist_redundant_vector_transfers %f2 : (!transform.any_op) -> !transform.any_op
    %launches = transform.structured.match ops{["gpu.launch"]} in %b : (!transform.any_op) -> !transform.any_op
    %kf = transform.get_parent_op %launches {op_name = "func.func", deduplicate} : (!transform.any_op) -> !transform.any_op
    %f4 = transform.apply_registered_pass "convert-vector-to-gpu" with options = {"use-nvgpu" = true} to %kf
        : (!transform.any_op) -> !transform.any_op
    transform.apply_patterns to %f4 {
      transform.apply_patterns.vector.transfer_to_scf max_transfer_rank = 1 full_unroll = true
      transform.apply_patterns.vector.lower_transfer max_transfer_rank = 1
      transform.apply_patterns.canonicalization
    } : !transform.any_op
    %f5 = transform.nvgpu.create_async_groups %f4 {bypass_l1} : (!transform.any_op) -> !transform.any_op
    %loops = transform.structured.match ops{["scf.for"]} in %f5 : (!transform.any_op) -> !transform.op<"scf.for">
    %pl = transform.nvgpu.pipeline_shared_memory_copies failures(propagate) %loops {depth = 3, peel_epilogue} : (!transform.op<"scf.for">) -> !transform.any_op
    transform.yield
  }
}
