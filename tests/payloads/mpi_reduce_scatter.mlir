// Already partitioned: reduce_scatter (sum over dim 0, max over dim 1) and all_gather back to the
// full shape on 2 ranks. The input is replicated, so the results are 2 x (sum) and x (max).
module attributes {mpi.dlti = #dlti.map<"MPI:Implementation" = "MPICH", "MPI:comm_world_size" = 2>} {
  shard.grid @grid(shape = 2) {sym_visibility = "private"}
  func.func @f(%x: tensor<8x4xf32>) -> (tensor<8x4xf32>, tensor<8x4xf32>) {
    %s = shard.reduce_scatter %x on @grid grid_axes = [0] scatter_axis = 0 : tensor<8x4xf32> -> tensor<4x4xf32>
    %g = shard.all_gather %s on @grid grid_axes = [0] gather_axis = 0 : tensor<4x4xf32> -> tensor<8x4xf32>
    %m = shard.reduce_scatter %x on @grid grid_axes = [0] reduction = max scatter_axis = 1 : tensor<8x4xf32> -> tensor<8x2xf32>
    %h = shard.all_gather %m on @grid grid_axes = [0] gather_axis = 1 : tensor<8x2xf32> -> tensor<8x4xf32>
    return %g, %h : tensor<8x4xf32>, tensor<8x4xf32>
  }
}
