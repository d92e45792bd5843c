// A TOSA block (what TFLite / ONNX converters and torch-mlir's TOSA path emit): a batched matmul, a broadcast bias
// add, a clamp (relu6), exp and a sum over the last axis.
func.func @main(%a: tensor<2x64x128xf32>, %b: tensor<2x128x32xf32>, %bias: tensor<1x1x32xf32>) -> (tensor<2x64x32xf32>, tensor<2x64x1xf32>) {
  %za = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %0 = tosa.matmul %a, %b, %za, %za : (tensor<2x64x128xf32>, tensor<2x128x32xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<2x64x32xf32>
  %1 = tosa.add %0, %bias : (tensor<2x64x32xf32>, tensor<1x1x32xf32>) -> tensor<2x64x32xf32>
  %2 = tosa.clamp %1 {min_val = 0.0 : f32, max_val = 6.0 : f32} : (tensor<2x64x32xf32>) -> tensor<2x64x32xf32>
  %3 = tosa.exp %2 : (tensor<2x64x32xf32>) -> tensor<2x64x32xf32>
  %4 = tosa.reduce_sum %3 {axis = 2 : i32} : (tensor<2x64x32xf32>) -> tensor<2x64x1xf32>
  return %2, %4 : tensor<2x64x32xf32>, tensor<2x64x1xf32>
}
