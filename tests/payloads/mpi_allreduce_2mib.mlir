// relu(A B) with K split over 2 ranks: the all-reduce sums 1024x512 f32 partial products (2 MiB,
// over promote-buffers-to-stack's 1 MiB: heap buffers, freed or leaked on every call).
#map = affine_map<(d0, d1) -> (d0, d1)>
module attributes {mpi.dlti = #dlti.map<"MPI:Implementation" = "MPICH", "MPI:comm_world_size" = 2>} {
  shard.grid @grid(shape = 2) {sym_visibility = "private"}
  func.func @mm_relu(%A: tensor<1024x16xf32>, %B: tensor<16x512xf32>) -> tensor<1024x512xf32> {
    %kcols = shard.sharding @grid split_axes = [[], [0]] : !shard.sharding
    %krows = shard.sharding @grid split_axes = [[0]] : !shard.sharding
    %replicated = shard.sharding @grid split_axes = [[]] : !shard.sharding
    %a = shard.shard %A to %kcols : tensor<1024x16xf32>
    %b = shard.shard %B to %krows : tensor<16x512xf32>
    %zero = arith.constant 0.0 : f32
    %e = tensor.empty() : tensor<1024x512xf32>
    %f = linalg.fill ins(%zero : f32) outs(%e : tensor<1024x512xf32>) -> tensor<1024x512xf32>
    %m = linalg.matmul ins(%a, %b : tensor<1024x16xf32>, tensor<16x512xf32>)
                       outs(%f : tensor<1024x512xf32>) -> tensor<1024x512xf32>
    %ms = shard.shard %m to %replicated : tensor<1024x512xf32>
    %mr = shard.shard %ms to %replicated annotate_for_users : tensor<1024x512xf32>
    %e2 = tensor.empty() : tensor<1024x512xf32>
    %r = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]}
        ins(%mr : tensor<1024x512xf32>) outs(%e2 : tensor<1024x512xf32>) {
    ^bb0(%v: f32, %o: f32):
      %s = arith.maximumf %v, %zero : f32
      linalg.yield %s : f32
    } -> tensor<1024x512xf32>
    %out = shard.shard %r to %replicated annotate_for_users : tensor<1024x512xf32>
    return %out : tensor<1024x512xf32>
  }
}
