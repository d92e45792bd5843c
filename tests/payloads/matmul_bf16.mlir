// bf16 inputs, f32 accumulation and result (the usual mixed-precision matmul)
func.func @matmul_bf16(%a: tensor<64x48xbf16>, %b: tensor<48x32xbf16>) -> tensor<64x32xf32> {
  %zero = arith.constant 0.0 : f32
  %empty = tensor.empty() : tensor<64x32xf32>
  %init = linalg.fill ins(%zero : f32) outs(%empty : tensor<64x32xf32>) -> tensor<64x32xf32>
  %c = linalg.matmul ins(%a, %b : tensor<64x48xbf16>, tensor<48x32xbf16>) outs(%init : tensor<64x32xf32>) -> tensor<64x32xf32>
  return %c : tensor<64x32xf32>
}
