// f32 matmul C + A x B sharded over a 1-D grid of 2 processes (the mpi target): A and C are
// split by rows, B is replicated, so every rank computes its block of rows with no
// communication. `apply mpi-partition` turns the signature into per-rank shapes
// (128x512, 512x128, 128x128): put `bench` after it.
module attributes {mpi.dlti = #dlti.map<"MPI:Implementation" = "MPICH", "MPI:comm_world_size" = 2>} {
  shard.grid @grid(shape = 2) {sym_visibility = "private"}
  func.func @matmul(%A: tensor<256x512xf32>, %B: tensor<512x128xf32>, %C: tensor<256x128xf32>) -> tensor<256x128xf32> {
    %rows = shard.sharding @grid split_axes = [[0]] : !shard.sharding
    %replicated = shard.sharding @grid split_axes = [[]] : !shard.sharding
    %a = shard.shard %A to %rows : tensor<256x512xf32>
    %b = shard.shard %B to %replicated : tensor<512x128xf32>
    %c = shard.shard %C to %rows : tensor<256x128xf32>
    %0 = linalg.matmul ins(%a, %b : tensor<256x512xf32>, tensor<512x128xf32>)
                       outs(%c : tensor<256x128xf32>) -> tensor<256x128xf32>
    %r = shard.shard %0 to %rows annotate_for_users : tensor<256x128xf32>
    return %r : tensor<256x128xf32>
  }
}
