// x + bias (broadcast over rows), then tanh-GELU, as torch-mlir emits it: one generic per op.
// 100 x 300: no multiple of any vector width (masked remainders).
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d1)>
func.func @gelu_bias(%x: tensor<100x300xf32>, %b: tensor<300xf32>) -> tensor<100x300xf32> {
  %e = tensor.empty() : tensor<100x300xf32>
  %a = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x, %b : tensor<100x300xf32>, tensor<300xf32>) outs(%e : tensor<100x300xf32>) {
  ^bb0(%in: f32, %in_0: f32, %out: f32):
    %s = arith.addf %in, %in_0 : f32
    linalg.yield %s : f32
  } -> tensor<100x300xf32>
  %g = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%a : tensor<100x300xf32>) outs(%e : tensor<100x300xf32>) {
  ^bb0(%in: f32, %out: f32):
    %c05 = arith.constant 0.5 : f32
    %c1 = arith.constant 1.0 : f32
    %k = arith.constant 0.7978845608 : f32
    %c = arith.constant 0.044715 : f32
    %x2 = arith.mulf %in, %in : f32
    %x3 = arith.mulf %x2, %in : f32
    %t0 = arith.mulf %x3, %c : f32
    %t1 = arith.addf %in, %t0 : f32
    %t2 = arith.mulf %t1, %k : f32
    %t3 = math.tanh %t2 : f32
    %t4 = arith.addf %t3, %c1 : f32
    %t5 = arith.mulf %in, %c05 : f32
    %r = arith.mulf %t5, %t4 : f32
    linalg.yield %r : f32
  } -> tensor<100x300xf32>
  return %g : tensor<100x300xf32>
}
