// torch-mlir's linear layer on a 3-D input, relu(x @ w + b) for x of 4 x 32 rows: a batch matmul of the weight
// broadcast over the batch (lh-shared-rhs-matmuls: one matmul over the 128 collapsed rows, its init a
// collapse_shape of the zeroed 3-D output), then the bias add and relu over 3-D (lh-collapse-expanded-elementwise)
#bcast = affine_map<(d0, d1, d2) -> (d1, d2)>
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#bias = affine_map<(d0, d1, d2) -> (d2)>
func.func @linear3d(%x: tensor<4x32x64xf32>, %w: tensor<64x96xf32>, %b: tensor<96xf32>) -> tensor<4x32x96xf32> {
  %zero = arith.constant 0.0 : f32
  %ew = tensor.empty() : tensor<4x64x96xf32>
  %bw = linalg.generic {indexing_maps = [#bcast, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%w : tensor<64x96xf32>) outs(%ew : tensor<4x64x96xf32>) {
  ^bb0(%v: f32, %o: f32):
    linalg.yield %v : f32
  } -> tensor<4x64x96xf32>
  %e = tensor.empty() : tensor<4x32x96xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<4x32x96xf32>) -> tensor<4x32x96xf32>
  %m = linalg.batch_matmul ins(%x, %bw : tensor<4x32x64xf32>, tensor<4x64x96xf32>) outs(%f : tensor<4x32x96xf32>) -> tensor<4x32x96xf32>
  %r = linalg.generic {indexing_maps = [#id3, #bias, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%m, %b : tensor<4x32x96xf32>, tensor<96xf32>) outs(%e : tensor<4x32x96xf32>) {
  ^bb0(%v: f32, %c: f32, %o: f32):
    %s = arith.addf %v, %c : f32
    %t = arith.maximumf %s, %zero : f32
    linalg.yield %t : f32
  } -> tensor<4x32x96xf32>
  return %r : tensor<4x32x96xf32>
}
