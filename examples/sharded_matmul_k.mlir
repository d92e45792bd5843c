// f32 matmul C + A x B with the reduction dimension K split over a 1-D grid of 2 processes: A is
// split by columns, B by rows, C is replicated. Each rank computes a partial product over its half
// of K (rank 0 adds C, the others start from zero) and an all-reduce (MPI_Allreduce after
// mpi-lower) sums them. `apply mpi-partition` makes A 256x256 and B 256x128 per rank.
module attributes {mpi.dlti = #dlti.map<"MPI:Implementation" = "MPICH", "MPI:comm_world_size" = 2>} {
  shard.grid @grid(shape = 2) {sym_visibility = "private"}
  func.func @matmul(%A: tensor<256x512xf32>, %B: tensor<512x128xf32>, %C: tensor<256x128xf32>) -> tensor<256x128xf32> {
    %kcols = shard.sharding @grid split_axes = [[], [0]] : !shard.sharding
    %krows = shard.sharding @grid split_axes = [[0]] : !shard.sharding
    %replicated = shard.sharding @grid split_axes = [[]] : !shard.sharding
    %a = shard.shard %A to %kcols : tensor<256x512xf32>
    %b = shard.shard %B to %krows : tensor<512x128xf32>
    %c = shard.shard %C to %replicated : tensor<256x128xf32>
    %0 = linalg.matmul ins(%a, %b : tensor<256x512xf32>, tensor<512x128xf32>)
                       outs(%c : tensor<256x128xf32>) -> tensor<256x128xf32>
    %r = shard.shard %0 to %replicated annotate_for_users : tensor<256x128xf32>
    return %r : tensor<256x128xf32>
  }
}
