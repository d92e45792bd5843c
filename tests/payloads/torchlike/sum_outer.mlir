// x.sum(dim=0): a reduction over the outer dim, as torch-mlir emits it. 70 x 130.
#id = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>
#row = affine_map<(d0, d1) -> (d0)>
func.func @sum0(%x: tensor<70x130xf32>) -> tensor<130xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<130xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<130xf32>) -> tensor<130xf32>
  %s = linalg.generic {indexing_maps = [#id, #col], iterator_types = ["reduction", "parallel"]}
      ins(%x : tensor<70x130xf32>) outs(%f : tensor<130xf32>) {
  ^bb0(%in: f32, %out: f32):
    %a = arith.addf %in, %out : f32
    linalg.yield %a : f32
  } -> tensor<130xf32>
  return %s : tensor<130xf32>
}
