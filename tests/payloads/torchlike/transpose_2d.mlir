// x.t().contiguous(): a transposing copy, tiled by square blocks (partial ones at both edges: 200 and 300
// are no multiples of the vector width nor of the cache block). 200 x 300.
func.func @transpose_2d(%x: tensor<200x300xf32>) -> tensor<300x200xf32> {
  %e = tensor.empty() : tensor<300x200xf32>
  %t = linalg.transpose ins(%x : tensor<200x300xf32>) outs(%e : tensor<300x200xf32>) permutation = [1, 0]
  return %t : tensor<300x200xf32>
}
