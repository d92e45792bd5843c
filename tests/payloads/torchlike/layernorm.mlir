// torch.nn.functional.layer_norm over the last dim (no affine) as decomposed generics:
// mean, centered, variance, normalize. 32 x 200.
#id = affine_map<(d0, d1) -> (d0, d1)>
#red = affine_map<(d0, d1) -> (d0, 0)>
func.func @layernorm(%x: tensor<32x200xf32>) -> tensor<32x200xf32> {
  %zero = arith.constant 0.0 : f32
  %n = arith.constant 200.0 : f32
  %eps = arith.constant 1.0e-5 : f32
  %e1 = tensor.empty() : tensor<32x1xf32>
  %f1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<32x1xf32>) -> tensor<32x1xf32>
  %sum = linalg.generic {indexing_maps = [#id, #red], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<32x200xf32>) outs(%f1 : tensor<32x1xf32>) {
  ^bb0(%in: f32, %out: f32):
    %s = arith.addf %in, %out : f32
    linalg.yield %s : f32
  } -> tensor<32x1xf32>
  %e = tensor.empty() : tensor<32x200xf32>
  %c = linalg.generic {indexing_maps = [#id, #red, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x, %sum : tensor<32x200xf32>, tensor<32x1xf32>) outs(%e : tensor<32x200xf32>) {
  ^bb0(%in: f32, %s: f32, %out: f32):
    %m = arith.divf %s, %n : f32
    %d = arith.subf %in, %m : f32
    linalg.yield %d : f32
  } -> tensor<32x200xf32>
  %f2 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<32x1xf32>) -> tensor<32x1xf32>
  %var = linalg.generic {indexing_maps = [#id, #red], iterator_types = ["parallel", "reduction"]}
      ins(%c : tensor<32x200xf32>) outs(%f2 : tensor<32x1xf32>) {
  ^bb0(%in: f32, %out: f32):
    %sq = arith.mulf %in, %in : f32
    %s = arith.addf %sq, %out : f32
    linalg.yield %s : f32
  } -> tensor<32x1xf32>
  %r = linalg.generic {indexing_maps = [#id, #red, #id], iterator_types = ["parallel", "parallel"]}
      ins(%c, %var : tensor<32x200xf32>, tensor<32x1xf32>) outs(%e : tensor<32x200xf32>) {
  ^bb0(%in: f32, %v: f32, %out: f32):
    %m = arith.divf %v, %n : f32
    %a = arith.addf %m, %eps : f32
    %q = math.rsqrt %a : f32
    %y = arith.mulf %in, %q : f32
    linalg.yield %y : f32
  } -> tensor<32x200xf32>
  return %r : tensor<32x200xf32>
}
