// 3-layer MLP whose layers alternate column and row splits on a 1-D grid of 2 processes, so that
// the partitioner must move data between the layers (resharding):
//   layer 1, column-parallel: H1 = relu(X W1), W1 split by columns -> H1 split by columns;
//   H1 columns -> rows:        shard.all_to_all (each rank keeps its rows of every column block);
//   layer 2, row-parallel:     H2 = relu(H1 W2), H1 by rows, W2 replicated -> H2 split by rows;
//   H2 rows -> replicated:     shard.all_gather;
//   layer 3, column-parallel:  Y = H2 W3, W3 split by columns -> Y split by columns (returned so).
// MLIR 22's convert-shard-to-mpi lowers neither all_to_all nor all_gather: mpi-lower rewrites them
// first (lh-shard-collectives: pairwise MPI send/recv of the blocks each rank needs).
// `apply mpi-partition` makes W1 128x128, W3 128x32 and Y 64x32 per rank: put `bench` after it.
#map_2d = affine_map<(d0, d1) -> (d0, d1)>
module attributes {mpi.dlti = #dlti.map<"MPI:Implementation" = "MPICH", "MPI:comm_world_size" = 2>} {
  shard.grid @grid(shape = 2) {sym_visibility = "private"}
  func.func @mlp(%x: tensor<64x128xf32>, %w1: tensor<128x256xf32>, %w2: tensor<256x128xf32>,
                 %w3: tensor<128x64xf32>) -> tensor<64x64xf32> {
    %replicated = shard.sharding @grid split_axes = [[]] : !shard.sharding
    %cols = shard.sharding @grid split_axes = [[], [0]] : !shard.sharding
    %rows = shard.sharding @grid split_axes = [[0]] : !shard.sharding
    %xs = shard.shard %x to %replicated : tensor<64x128xf32>
    %w1s = shard.shard %w1 to %cols : tensor<128x256xf32>
    %w2s = shard.shard %w2 to %replicated : tensor<256x128xf32>
    %w3s = shard.shard %w3 to %cols : tensor<128x64xf32>
    %zero = arith.constant 0.0 : f32

    // layer 1: relu(X W1), split by columns
    %e1 = tensor.empty() : tensor<64x256xf32>
    %f1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<64x256xf32>) -> tensor<64x256xf32>
    %m1 = linalg.matmul ins(%xs, %w1s : tensor<64x128xf32>, tensor<128x256xf32>)
                        outs(%f1 : tensor<64x256xf32>) -> tensor<64x256xf32>
    %h1 = linalg.generic {indexing_maps = [#map_2d, #map_2d], iterator_types = ["parallel", "parallel"]}
        ins(%m1 : tensor<64x256xf32>) outs(%e1 : tensor<64x256xf32>) {
    ^bb0(%v: f32, %o: f32):
      %s = arith.maximumf %v, %zero : f32
      linalg.yield %s : f32
    } -> tensor<64x256xf32>
    // columns -> rows
    %h1c = shard.shard %h1 to %cols : tensor<64x256xf32>
    %h1r = shard.shard %h1c to %rows annotate_for_users : tensor<64x256xf32>

    // layer 2: relu(H1 W2), split by rows
    %e2 = tensor.empty() : tensor<64x128xf32>
    %f2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<64x128xf32>) -> tensor<64x128xf32>
    %m2 = linalg.matmul ins(%h1r, %w2s : tensor<64x256xf32>, tensor<256x128xf32>)
                        outs(%f2 : tensor<64x128xf32>) -> tensor<64x128xf32>
    %h2 = linalg.generic {indexing_maps = [#map_2d, #map_2d], iterator_types = ["parallel", "parallel"]}
        ins(%m2 : tensor<64x128xf32>) outs(%e2 : tensor<64x128xf32>) {
    ^bb0(%v: f32, %o: f32):
      %s = arith.maximumf %v, %zero : f32
      linalg.yield %s : f32
    } -> tensor<64x128xf32>
    // rows -> replicated
    %h2r = shard.shard %h2 to %rows : tensor<64x128xf32>
    %h2a = shard.shard %h2r to %replicated annotate_for_users : tensor<64x128xf32>

    // layer 3: H2 W3, split by columns
    %e3 = tensor.empty() : tensor<64x64xf32>
    %f3 = linalg.fill ins(%zero : f32) outs(%e3 : tensor<64x64xf32>) -> tensor<64x64xf32>
    %y = linalg.matmul ins(%h2a, %w3s : tensor<64x128xf32>, tensor<128x64xf32>)
                       outs(%f3 : tensor<64x64xf32>) -> tensor<64x64xf32>
    %out = shard.shard %y to %cols annotate_for_users : tensor<64x64xf32>
    return %out : tensor<64x64xf32>
  }
}
