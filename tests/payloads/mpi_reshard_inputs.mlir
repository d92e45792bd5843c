// C + A B with K split in the inputs (A by columns, B by rows) but the result wanted by rows: the
// partitioner reshards the inputs instead of reducing partial sums: A columns -> rows (all_to_all),
// B rows -> replicated (all_gather), C replicated -> rows (all_slice).
module attributes {mpi.dlti = #dlti.map<"MPI:Implementation" = "MPICH", "MPI:comm_world_size" = 2>} {
  shard.grid @grid(shape = 2) {sym_visibility = "private"}
  func.func @f(%A: tensor<64x128xf32>, %B: tensor<128x32xf32>, %C: tensor<64x32xf32>) -> tensor<64x32xf32> {
    %kcols = shard.sharding @grid split_axes = [[], [0]] : !shard.sharding
    %krows = shard.sharding @grid split_axes = [[0]] : !shard.sharding
    %replicated = shard.sharding @grid split_axes = [[]] : !shard.sharding
    %a = shard.shard %A to %kcols : tensor<64x128xf32>
    %b = shard.shard %B to %krows : tensor<128x32xf32>
    %c = shard.shard %C to %replicated : tensor<64x32xf32>
    %0 = linalg.matmul ins(%a, %b : tensor<64x128xf32>, tensor<128x32xf32>) outs(%c : tensor<64x32xf32>) -> tensor<64x32xf32>
    %r = shard.shard %0 to %krows annotate_for_users : tensor<64x32xf32>
    return %r : tensor<64x32xf32>
  }
}
