// Row softmax on tensor<64x1024xf32> with the named linalg.softmax op
// (decompose it with transform.structured.decompose_interface or the
// `pipelines/lib/softmax-decompose.mlir` schedule).
func.func @softmax(%x: tensor<64x1024xf32>) -> tensor<64x1024xf32> {
  %e = tensor.empty() : tensor<64x1024xf32>
  %0 = linalg.softmax dimension(1) ins(%x : tensor<64x1024xf32>)
                                   outs(%e : tensor<64x1024xf32>) -> tensor<64x1024xf32>
  return %0 : tensor<64x1024xf32>
}
