// BERT's Q, K and V projections after the preparation: three matmuls of x whose inits are one shared fill, each with
// a bias epilogue writing a collapse of one shared 4-D empty tensor (the heads' layout)
#map = affine_map<(d0, d1) -> (d0, d1)>
#map5 = affine_map<(d0, d1) -> (d1)>
func.func @qkv(%x: tensor<128x256xf32>, %w1: tensor<256x256xf32>, %b1: tensor<256xf32>, %w2: tensor<256x256xf32>, %b2: tensor<256xf32>, %w3: tensor<256x256xf32>, %b3: tensor<256xf32>) -> (tensor<2x64x4x64xf32>, tensor<2x64x4x64xf32>, tensor<2x64x4x64xf32>) {
  %cst = arith.constant 0.0 : f32
  %0 = tensor.empty() : tensor<128x256xf32>
  %1 = linalg.fill ins(%cst : f32) outs(%0 : tensor<128x256xf32>) -> tensor<128x256xf32>
  %5 = tensor.empty() : tensor<2x64x4x64xf32>
  %8 = linalg.matmul ins(%x, %w1 : tensor<128x256xf32>, tensor<256x256xf32>) outs(%1 : tensor<128x256xf32>) -> tensor<128x256xf32>
  %c11 = tensor.collapse_shape %5 [[0, 1], [2, 3]] : tensor<2x64x4x64xf32> into tensor<128x256xf32>
  %9 = linalg.generic {indexing_maps = [#map, #map5, #map], iterator_types = ["parallel", "parallel"]} ins(%8, %b1 : tensor<128x256xf32>, tensor<256xf32>) outs(%c11 : tensor<128x256xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %s = arith.addf %a, %b : f32
    linalg.yield %s : f32
  } -> tensor<128x256xf32>
  %e9 = tensor.expand_shape %9 [[0, 1], [2, 3]] output_shape [2, 64, 4, 64] : tensor<128x256xf32> into tensor<2x64x4x64xf32>
  %10 = linalg.matmul ins(%x, %w2 : tensor<128x256xf32>, tensor<256x256xf32>) outs(%1 : tensor<128x256xf32>) -> tensor<128x256xf32>
  %c16 = tensor.collapse_shape %5 [[0, 1], [2, 3]] : tensor<2x64x4x64xf32> into tensor<128x256xf32>
  %11 = linalg.generic {indexing_maps = [#map, #map5, #map], iterator_types = ["parallel", "parallel"]} ins(%10, %b2 : tensor<128x256xf32>, tensor<256xf32>) outs(%c16 : tensor<128x256xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %s = arith.addf %a, %b : f32
    linalg.yield %s : f32
  } -> tensor<128x256xf32>
  %e11 = tensor.expand_shape %11 [[0, 1], [2, 3]] output_shape [2, 64, 4, 64] : tensor<128x256xf32> into tensor<2x64x4x64xf32>
  %12 = linalg.matmul ins(%x, %w3 : tensor<128x256xf32>, tensor<256x256xf32>) outs(%1 : tensor<128x256xf32>) -> tensor<128x256xf32>
  %c21 = tensor.collapse_shape %5 [[0, 1], [2, 3]] : tensor<2x64x4x64xf32> into tensor<128x256xf32>
  %13 = linalg.generic {indexing_maps = [#map, #map5, #map], iterator_types = ["parallel", "parallel"]} ins(%12, %b3 : tensor<128x256xf32>, tensor<256xf32>) outs(%c21 : tensor<128x256xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %s = arith.addf %a, %b : f32
    linalg.yield %s : f32
  } -> tensor<128x256xf32>
  %e13 = tensor.expand_shape %13 [[0, 1], [2, 3]] output_shape [2, 64, 4, 64] : tensor<128x256xf32> into tensor<2x64x4x64xf32>
  return %e9, %e11, %e13 : tensor<2x64x4x64xf32>, tensor<2x64x4x64xf32>, tensor<2x64x4x64xf32>
}
