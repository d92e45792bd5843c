// x.sum(): a whole-tensor sum (every loop a reduction: no parallel loop to split over threads; the
// selector splits a reduction loop into partial sums per thread, combined after), as torch-mlir emits it. 300 x 520.
#id = affine_map<(d0, d1) -> (d0, d1)>
#scalar = affine_map<(d0, d1) -> ()>
func.func @sum_all(%x: tensor<300x520xf32>) -> tensor<f32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<f32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<f32>) -> tensor<f32>
  %s = linalg.generic {indexing_maps = [#id, #scalar], iterator_types = ["reduction", "reduction"]}
      ins(%x : tensor<300x520xf32>) outs(%f : tensor<f32>) {
  ^bb0(%in: f32, %acc: f32):
    %a = arith.addf %in, %acc : f32
    linalg.yield %a : f32
  } -> tensor<f32>
  return %s : tensor<f32>
}
