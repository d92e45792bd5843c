// x.mean(dim=(2, 3)) of an N x C x H x W tensor (instance norm's statistics, a global average pool):
// a sum over two loops whose rows (W) are shorter than two vectors, then the division. 4 x 24 x 20 x 24.
#id = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#nc = affine_map<(d0, d1, d2, d3) -> (d0, d1)>
#id2 = affine_map<(d0, d1) -> (d0, d1)>
func.func @mean_hw(%x: tensor<4x24x20x24xf32>) -> tensor<4x24xf32> {
  %zero = arith.constant 0.0 : f32
  %n = arith.constant 480.0 : f32
  %e = tensor.empty() : tensor<4x24xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<4x24xf32>) -> tensor<4x24xf32>
  %s = linalg.generic {indexing_maps = [#id, #nc], iterator_types = ["parallel", "parallel", "reduction", "reduction"]}
      ins(%x : tensor<4x24x20x24xf32>) outs(%f : tensor<4x24xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %a = arith.addf %in, %acc : f32
    linalg.yield %a : f32
  } -> tensor<4x24xf32>
  %m = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%s : tensor<4x24xf32>) outs(%e : tensor<4x24xf32>) {
  ^bb0(%in: f32, %out: f32):
    %d = arith.divf %in, %n : f32
    linalg.yield %d : f32
  } -> tensor<4x24xf32>
  return %m : tensor<4x24xf32>
}
