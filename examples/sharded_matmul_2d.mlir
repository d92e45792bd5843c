// f32 matmul C + A x B on a 2-D grid of 2x2 processes (the mpi target): A is split by rows over
// grid axis 0, B by columns over grid axis 1, C by both, so rank (i, j) computes block (i, j) of C
// with no communication. `apply mpi-partition` turns the signature into per-rank shapes
// (128x512, 512x64, 128x64): put `bench` after it; `run --target mpi --ranks 4`.
// For a 2x4 grid write shape = 2x4 and comm_world_size 8.
module attributes {mpi.dlti = #dlti.map<"MPI:Implementation" = "MPICH", "MPI:comm_world_size" = 4>} {
  shard.grid @grid(shape = 2x2) {sym_visibility = "private"}
  func.func @matmul(%A: tensor<256x512xf32>, %B: tensor<512x128xf32>, %C: tensor<256x128xf32>) -> tensor<256x128xf32> {
    %rows = shard.sharding @grid split_axes = [[0]] : !shard.sharding
    %cols = shard.sharding @grid split_axes = [[], [1]] : !shard.sharding
    %blocks = shard.sharding @grid split_axes = [[0], [1]] : !shard.sharding
    %a = shard.shard %A to %rows : tensor<256x512xf32>
    %b = shard.shard %B to %cols : tensor<512x128xf32>
    %c = shard.shard %C to %blocks : tensor<256x128xf32>
    %0 = linalg.matmul ins(%a, %b : tensor<256x512xf32>, tensor<512x128xf32>)
                       outs(%c : tensor<256x128xf32>) -> tensor<256x128xf32>
    %r = shard.shard %0 to %blocks annotate_for_users : tensor<256x128xf32>
    return %r : tensor<256x128xf32>
  }
}
