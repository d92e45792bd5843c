// x.permute(0, 2, 1) (linalg.transpose) then erf-GELU (0.5 x (1 + erf(x / sqrt 2))). 6 x 40 x 50.
#id = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
func.func @transpose_erf(%x: tensor<6x40x50xf32>) -> tensor<6x50x40xf32> {
  %e = tensor.empty() : tensor<6x50x40xf32>
  %t = linalg.transpose ins(%x : tensor<6x40x50xf32>) outs(%e : tensor<6x50x40xf32>) permutation = [0, 2, 1]
  %g = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%t : tensor<6x50x40xf32>) outs(%e : tensor<6x50x40xf32>) {
  ^bb0(%in: f32, %out: f32):
    %r2 = arith.constant 0.70710678 : f32
    %h = arith.constant 0.5 : f32
    %one = arith.constant 1.0 : f32
    %a = arith.mulf %in, %r2 : f32
    %b = math.erf %a : f32
    %c = arith.addf %b, %one : f32
    %d = arith.mulf %in, %h : f32
    %y = arith.mulf %d, %c : f32
    linalg.yield %y : f32
  } -> tensor<6x50x40xf32>
  return %g : tensor<6x50x40xf32>
}
