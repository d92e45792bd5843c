// relu(x[b] @ w + bias) for each of 2 batches, inside an scf.forall over the batch (what an earlier step of a
// model leaves: the rows schedule's batch loop around a token-mixing linear layer and its epilogue)
#map_2d = affine_map<(d0, d1) -> (d0, d1)>
#map_row = affine_map<(d0, d1) -> (d1)>
func.func @layer(%x: tensor<2x96x64xf32>, %w1: tensor<64x128xf32>, %b1: tensor<128xf32>) -> tensor<2x96x128xf32> {
  %zero = arith.constant 0.0 : f32
  %out = tensor.empty() : tensor<2x96x128xf32>
  %r = scf.forall (%i) in (2) shared_outs(%o = %out) -> (tensor<2x96x128xf32>) {
    %xi = tensor.extract_slice %x[%i, 0, 0] [1, 96, 64] [1, 1, 1] : tensor<2x96x64xf32> to tensor<96x64xf32>
    %e1 = tensor.empty() : tensor<96x128xf32>
    %f1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<96x128xf32>) -> tensor<96x128xf32>
    %m1 = linalg.matmul ins(%xi, %w1 : tensor<96x64xf32>, tensor<64x128xf32>) outs(%f1 : tensor<96x128xf32>) -> tensor<96x128xf32>
    %a1 = linalg.generic {indexing_maps = [#map_2d, #map_row, #map_2d], iterator_types = ["parallel", "parallel"]}
        ins(%m1, %b1 : tensor<96x128xf32>, tensor<128xf32>) outs(%e1 : tensor<96x128xf32>) {
    ^bb0(%v: f32, %b: f32, %acc: f32):
      %s = arith.addf %v, %b : f32
      %t = arith.maximumf %s, %zero : f32
      linalg.yield %t : f32
    } -> tensor<96x128xf32>
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %a1 into %o[%i, 0, 0] [1, 96, 128] [1, 1, 1] : tensor<96x128xf32> into tensor<2x96x128xf32>
    }
  }
  return %r : tensor<2x96x128xf32>
}
