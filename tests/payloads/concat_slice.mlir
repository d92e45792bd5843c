// torch.cat((a, b), dim=1)[:, 25:35] and [:, 15:25]: the first slice lies within b (read from b, offset
// 5: no concatenation), the second straddles both operands (the concatenation stays). 8 x 20 and 8 x 30.
func.func @concat_slice(%a: tensor<8x20xf32>, %b: tensor<8x30xf32>) -> (tensor<8x10xf32>, tensor<8x10xf32>) {
  %c = tensor.concat dim(1) %a, %b : (tensor<8x20xf32>, tensor<8x30xf32>) -> tensor<8x50xf32>
  %inside = tensor.extract_slice %c[0, 25] [8, 10] [1, 1] : tensor<8x50xf32> to tensor<8x10xf32>
  %across = tensor.extract_slice %c[0, 15] [8, 10] [1, 1] : tensor<8x50xf32> to tensor<8x10xf32>
  return %inside, %across : tensor<8x10xf32>, tensor<8x10xf32>
}
