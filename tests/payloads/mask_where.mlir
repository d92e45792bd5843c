// Bool tensors as torch exports them: a mask `x > 0` returned as i1, and torch.where(x > 0, x, y)
// with the mask as an i1 tensor in between.
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @mask_where(%x: tensor<8x33xf32>, %y: tensor<8x33xf32>) -> (tensor<8x33xi1>, tensor<8x33xf32>) {
  %em = tensor.empty() : tensor<8x33xi1>
  %ef = tensor.empty() : tensor<8x33xf32>
  %mask = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<8x33xf32>) outs(%em : tensor<8x33xi1>) {
  ^bb0(%a: f32, %o: i1):
    %zero = arith.constant 0.0 : f32
    %gt = arith.cmpf ogt, %a, %zero : f32
    linalg.yield %gt : i1
  } -> tensor<8x33xi1>
  %r = linalg.generic {indexing_maps = [#id, #id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%mask, %x, %y : tensor<8x33xi1>, tensor<8x33xf32>, tensor<8x33xf32>) outs(%ef : tensor<8x33xf32>) {
  ^bb0(%m: i1, %a: f32, %b: f32, %o: f32):
    %s = arith.select %m, %a, %b : f32
    linalg.yield %s : f32
  } -> tensor<8x33xf32>
  return %mask, %r : tensor<8x33xi1>, tensor<8x33xf32>
}
