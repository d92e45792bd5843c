// fp8 data movement (no fp8 arithmetic: LLVM has no CPU lowering for fp8 extf/truncf): transposes of
// an e4m3 and an e5m2 tensor, and an f16 one
func.func @transpose_fp8(%a: tensor<8x24xf8E4M3FN>, %b: tensor<5x7xf8E5M2>, %h: tensor<3x9xf16>)
    -> (tensor<24x8xf8E4M3FN>, tensor<7x5xf8E5M2>, tensor<9x3xf16>) {
  %ea = tensor.empty() : tensor<24x8xf8E4M3FN>
  %eb = tensor.empty() : tensor<7x5xf8E5M2>
  %eh = tensor.empty() : tensor<9x3xf16>
  %ta = linalg.transpose ins(%a : tensor<8x24xf8E4M3FN>) outs(%ea : tensor<24x8xf8E4M3FN>) permutation = [1, 0]
  %tb = linalg.transpose ins(%b : tensor<5x7xf8E5M2>) outs(%eb : tensor<7x5xf8E5M2>) permutation = [1, 0]
  %th = linalg.transpose ins(%h : tensor<3x9xf16>) outs(%eh : tensor<9x3xf16>) permutation = [1, 0]
  return %ta, %tb, %th : tensor<24x8xf8E4M3FN>, tensor<7x5xf8E5M2>, tensor<9x3xf16>
}
