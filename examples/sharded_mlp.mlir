// 2-layer MLP relu(X W1) W2, weight-stationary on a 1-D grid of 2 processes (Megatron-style
// tensor parallelism): X is replicated, W1 is split by columns and W2 by rows, so each rank
// holds half of the weights, computes relu(X W1[:, half]) W2[half, :], a partial sum over
// the hidden dimension K, and an all-reduce (MPI_Allreduce after mpi-lower) adds the halves.
// The result is replicated. `apply mpi-partition` changes W1 to 128x128 and W2 to 128x64
// per rank: put `bench` after it.
#map_2d = affine_map<(d0, d1) -> (d0, d1)>
module attributes {mpi.dlti = #dlti.map<"MPI:Implementation" = "MPICH", "MPI:comm_world_size" = 2>} {
  shard.grid @grid(shape = 2) {sym_visibility = "private"}
  func.func @mlp(%x: tensor<64x128xf32>, %w1: tensor<128x256xf32>, %w2: tensor<256x64xf32>) -> tensor<64x64xf32> {
    %replicated = shard.sharding @grid split_axes = [[]] : !shard.sharding
    %cols = shard.sharding @grid split_axes = [[], [0]] : !shard.sharding
    %rows = shard.sharding @grid split_axes = [[0]] : !shard.sharding
    %xs = shard.shard %x to %replicated : tensor<64x128xf32>
    %w1s = shard.shard %w1 to %cols : tensor<128x256xf32>
    %w2s = shard.shard %w2 to %rows : tensor<256x64xf32>
    %zero = arith.constant 0.0 : f32

    // layer 1: X W1 (column-parallel), relu
    %e1 = tensor.empty() : tensor<64x256xf32>
    %f1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<64x256xf32>) -> tensor<64x256xf32>
    %m1 = linalg.matmul ins(%xs, %w1s : tensor<64x128xf32>, tensor<128x256xf32>)
                        outs(%f1 : tensor<64x256xf32>) -> tensor<64x256xf32>
    %h = linalg.generic {indexing_maps = [#map_2d, #map_2d], iterator_types = ["parallel", "parallel"]}
        ins(%m1 : tensor<64x256xf32>) outs(%e1 : tensor<64x256xf32>) {
    ^bb0(%v: f32, %o: f32):
      %s = arith.maximumf %v, %zero : f32
      linalg.yield %s : f32
    } -> tensor<64x256xf32>

    // layer 2: H W2 (row-parallel: contraction over the split hidden dimension -> all-reduce)
    %e2 = tensor.empty() : tensor<64x64xf32>
    %f2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<64x64xf32>) -> tensor<64x64xf32>
    %m2 = linalg.matmul ins(%h, %w2s : tensor<64x256xf32>, tensor<256x64xf32>)
                        outs(%f2 : tensor<64x64xf32>) -> tensor<64x64xf32>
    %out = shard.shard %m2 to %replicated annotate_for_users : tensor<64x64xf32>
    return %out : tensor<64x64xf32>
  }
}
