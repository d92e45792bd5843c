// In the style of upstream MLIR's -transform-interpreter tests: a payload with ops of a dialect MLIR
// does not know (test dialect) around a matmul, and the transform in the same file.
func.func @tile_me(%a: tensor<64x64xf32>, %b: tensor<64x64xf32>, %c: tensor<64x64xf32>) -> tensor<64x64xf32> {
  %0 = "test.produce"(%a) : (tensor<64x64xf32>) -> tensor<64x64xf32>
  %1 = linalg.matmul ins(%0, %b : tensor<64x64xf32>, tensor<64x64xf32>) outs(%c : tensor<64x64xf32>) -> tensor<64x64xf32>
  "test.consume"(%1) {test.attr = 1 : i32} : (tensor<64x64xf32>) -> ()
  return %1 : tensor<64x64xf32>
}
