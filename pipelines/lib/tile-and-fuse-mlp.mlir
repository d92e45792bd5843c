// Tile-and-fuse for an MLP layer chain fill -> matmul -> bias -> relu: tile the relu with
// scf.forall 32x64 and fuse bias, matmul and fill into each tile; tile the fused matmul's
// reduction by 16. (The generator pipelines/lib/fuse.py[gen=tile_and_fuse] is the
// parameterized version of this schedule.)
module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {
    %mms = transform.structured.match ops{["linalg.matmul"]} in %root : (!transform.any_op) -> !transform.any_op
    transform.foreach %mms : !transform.any_op {
    ^bb0(%mm: !transform.any_op):
      %bias = transform.get_consumers_of_result %mm[0] : (!transform.any_op) -> !transform.any_op
      %relu = transform.get_consumers_of_result %bias[0] : (!transform.any_op) -> !transform.any_op
      %fill = transform.get_producer_of_operand %mm[2] : (!transform.any_op) -> !transform.any_op
      %t, %forall = transform.structured.tile_using_forall %relu tile_sizes [32, 64]
          : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
      %fb, %l1 = transform.structured.fuse_into_containing_op %bias into %forall
          : (!transform.any_op, !transform.any_op) -> (!transform.any_op, !transform.any_op)
      %fm, %l2 = transform.structured.fuse_into_containing_op %mm into %l1
          : (!transform.any_op, !transform.any_op) -> (!transform.any_op, !transform.any_op)
      %ff, %l3 = transform.structured.fuse_into_containing_op %fill into %l2
          : (!transform.any_op, !transform.any_op) -> (!transform.any_op, !transform.any_op)
      %tk, %lk = transform.structured.tile_using_for %fm tile_sizes [0, 0, 16]
          : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
    }
    transform.yield
  }
  // Fuse only the bias into the matmul tiles (relu stays a separate op).
  transform.named_sequence @fuse_bias_only(%root: !transform.any_op {transform.readonly}) {
    %mms = transform.structured.match ops{["linalg.matmul"]} in %root : (!transform.any_op) -> !transform.any_op
    transform.foreach %mms : !transform.any_op {
    ^bb0(%mm: !transform.any_op):
      %bias = transform.get_consumers_of_result %mm[0] : (!transform.any_op) -> !transform.any_op
      %t, %forall = transform.structured.tile_using_forall %bias tile_sizes [32, 64]
          : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
      %fm, %l2 = transform.structured.fuse_into_containing_op %mm into %forall
          : (!transform.any_op, !transform.any_op) -> (!transform.any_op, !transform.any_op)
    }
    transform.yield
  }
}
