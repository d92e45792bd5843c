// f32 matmul on tensors: C + A x B.
func.func @matmul(%A: tensor<256x512xf32>, %B: tensor<512x128xf32>, %C: tensor<256x128xf32>) -> tensor<256x128xf32> {
  %0 = linalg.matmul ins(%A, %B : tensor<256x512xf32>, tensor<512x128xf32>)
                     outs(%C : tensor<256x128xf32>) -> tensor<256x128xf32>
  return %0 : tensor<256x128xf32>
}
