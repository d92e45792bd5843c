// 3-layer MLP on tensors, f32, static shapes: relu(relu(relu(X W1 + b1) W2 + b2) W3 + b3).
// Each layer: linalg.fill (zero) -> linalg.matmul -> bias add (linalg.generic, broadcast
// over rows) -> relu (linalg.generic, max with 0).  128x256 -> 512 -> 512 -> 128.
#map_2d = affine_map<(d0, d1) -> (d0, d1)>
#map_row = affine_map<(d0, d1) -> (d1)>

func.func @mlp(%x: tensor<128x256xf32>,
               %w1: tensor<256x512xf32>, %b1: tensor<512xf32>,
               %w2: tensor<512x512xf32>, %b2: tensor<512xf32>,
               %w3: tensor<512x128xf32>, %b3: tensor<128xf32>) -> tensor<128x128xf32> {
  %zero = arith.constant 0.0 : f32

  // layer 1
  %e1 = tensor.empty() : tensor<128x512xf32>
  %f1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<128x512xf32>) -> tensor<128x512xf32>
  %m1 = linalg.matmul ins(%x, %w1 : tensor<128x256xf32>, tensor<256x512xf32>)
                      outs(%f1 : tensor<128x512xf32>) -> tensor<128x512xf32>
  %a1 = linalg.generic {indexing_maps = [#map_2d, #map_row, #map_2d],
                        iterator_types = ["parallel", "parallel"]}
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

  // layer 2
  %e2 = tensor.empty() : tensor<128x512xf32>
  %f2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<128x512xf32>) -> tensor<128x512xf32>
  %m2 = linalg.matmul ins(%r1, %w2 : tensor<128x512xf32>, tensor<512x512xf32>)
                      outs(%f2 : tensor<128x512xf32>) -> tensor<128x512xf32>
  %a2 = linalg.generic {indexing_maps = [#map_2d, #map_row, #map_2d],
                        iterator_types = ["parallel", "parallel"]}
      ins(%m2, %b2 : tensor<128x512xf32>, tensor<512xf32>) outs(%e2 : tensor<128x512xf32>) {
  ^bb0(%v: f32, %b: f32, %o: f32):
    %s = arith.addf %v, %b : f32
    linalg.yield %s : f32
  } -> tensor<128x512xf32>
  %r2 = linalg.generic {indexing_maps = [#map_2d, #map_2d], iterator_types = ["parallel", "parallel"]}
      ins(%a2 : tensor<128x512xf32>) outs(%e2 : tensor<128x512xf32>) {
  ^bb0(%v: f32, %o: f32):
    %s = arith.maximumf %v, %zero : f32
    linalg.yield %s : f32
  } -> tensor<128x512xf32>

  // layer 3
  %e3 = tensor.empty() : tensor<128x128xf32>
  %f3 = linalg.fill ins(%zero : f32) outs(%e3 : tensor<128x128xf32>) -> tensor<128x128xf32>
  %m3 = linalg.matmul ins(%r2, %w3 : tensor<128x512xf32>, tensor<512x128xf32>)
                      outs(%f3 : tensor<128x128xf32>) -> tensor<128x128xf32>
  %a3 = linalg.generic {indexing_maps = [#map_2d, #map_row, #map_2d],
                        iterator_types = ["parallel", "parallel"]}
      ins(%m3, %b3 : tensor<128x128xf32>, tensor<128xf32>) outs(%e3 : tensor<128x128xf32>) {
  ^bb0(%v: f32, %b: f32, %o: f32):
    %s = arith.addf %v, %b : f32
    linalg.yield %s : f32
  } -> tensor<128x128xf32>
  %r3 = linalg.generic {indexing_maps = [#map_2d, #map_2d], iterator_types = ["parallel", "parallel"]}
      ins(%a3 : tensor<128x128xf32>) outs(%e3 : tensor<128x128xf32>) {
  ^bb0(%v: f32, %o: f32):
    %s = arith.maximumf %v, %zero : f32
    linalg.yield %s : f32
  } -> tensor<128x128xf32>
  return %r3 : tensor<128x128xf32>
}
