// A program on tensors that prints its result (printMemrefF32 declared on tensor<*xf32>, as upstream's
// tensor tests write it): C = 100 + A B.
func.func @main() {
  %a = arith.constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>
  %b = arith.constant dense<[[5.0, 6.0, 7.0], [8.0, 9.0, 10.0]]> : tensor<2x3xf32>
  %c = arith.constant dense<100.0> : tensor<2x3xf32>
  %d = linalg.matmul ins(%a, %b : tensor<2x2xf32>, tensor<2x3xf32>) outs(%c : tensor<2x3xf32>) -> tensor<2x3xf32>
  %u = tensor.cast %d : tensor<2x3xf32> to tensor<*xf32>
  call @printMemrefF32(%u) : (tensor<*xf32>) -> ()
  return
}
func.func private @printMemrefF32(%ptr : tensor<*xf32>)
