// f16 matmul with f32 accumulation: C + A x B (the XeGPU/DPAS shape of a GEMM).
func.func @matmul_f16(%A: tensor<256x256xf16>, %B: tensor<256x256xf16>, %C: tensor<256x256xf32>) -> tensor<256x256xf32> {
  %0 = linalg.matmul ins(%A, %B : tensor<256x256xf16>, tensor<256x256xf16>)
                     outs(%C : tensor<256x256xf32>) -> tensor<256x256xf32>
  return %0 : tensor<256x256xf32>
}
