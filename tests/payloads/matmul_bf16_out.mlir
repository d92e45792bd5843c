// bf16 in, bf16 out: C += A * B in bf16
func.func @matmul_bf16_out(%a: tensor<32x64xbf16>, %b: tensor<64x16xbf16>, %c: tensor<32x16xbf16>) -> tensor<32x16xbf16> {
  %r = linalg.matmul ins(%a, %b : tensor<32x64xbf16>, tensor<64x16xbf16>) outs(%c : tensor<32x16xbf16>) -> tensor<32x16xbf16>
  return %r : tensor<32x16xbf16>
}
