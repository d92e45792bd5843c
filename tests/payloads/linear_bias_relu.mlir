// One MLP layer: relu(x @ w + b), f32 (the matmul and its bias/relu epilogue: matmul_family.matmul_epilogue)
#map_2d = affine_map<(d0, d1) -> (d0, d1)>
#map_row = affine_map<(d0, d1) -> (d1)>
func.func @layer(%x: tensor<128x256xf32>, %w1: tensor<256x512xf32>, %b1: tensor<512xf32>) -> tensor<128x512xf32> {
  %zero = arith.constant 0.0 : f32
  %e1 = tensor.empty() : tensor<128x512xf32>
  %f1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<128x512xf32>) -> tensor<128x512xf32>
  %m1 = linalg.matmul ins(%x, %w1 : tensor<128x256xf32>, tensor<256x512xf32>) outs(%f1 : tensor<128x512xf32>) -> tensor<128x512xf32>
  %a1 = linalg.generic {indexing_maps = [#map_2d, #map_row, #map_2d], iterator_types = ["parallel", "parallel"]}
      ins(%m1, %b1 : tensor<128x512xf32>, tensor<512xf32>) outs(%e1 : tensor<128x512xf32>) {
  ^bb0(%v: f32, %b: f32, %o: f32):
    %s = arith.addf %v, %b : f32
    linalg.yield %s : f32
  } -> tensor<128x512xf32>
  %r1 = linalg.generic {indexing_maps = [#map_2d, #map_2d], iterator_types = ["parallel", "parallel"]}
      ins(%a1 : tensor<128x512xf32>) outs(%e1 : tensor<128x512xf32>) {
  ^bb0(%v: f32, %o: f32):
    %s = arith.maximumf %v, %zero : f32
    linalg.yield %s : f32
  } -> tensor<128x512xf32>
  return %r1 : tensor<128x512xf32>
}
