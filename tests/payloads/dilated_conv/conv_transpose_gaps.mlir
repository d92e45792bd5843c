// ConvTranspose1d(3 -> 4 channels, kernel 2, stride 3) as torch-mlir writes it: the input inserted with
// stride 3 into zeros (offset kernel - 1 = 1), a stride-1 convolution with the flipped filter. With a
// kernel shorter than the stride, every third output position (phase 2) meets no tap: the bias alone.
// 2x3x5 -> 2x4x14.
func.func @main(%x: tensor<2x3x5xf32>) -> tensor<2x4x14xf32> {
  %zero = arith.constant 0.0 : f32
  %w = arith.constant dense<[[[0.5, -1.0], [0.25, 2.0], [-0.75, 1.5]],
                             [[1.0, 0.5], [-0.5, 0.125], [0.375, -2.0]],
                             [[-1.25, 0.75], [2.5, -0.25], [0.625, 1.0]],
                             [[0.875, -1.5], [-2.0, 0.5], [1.75, 0.25]]]> : tensor<4x3x2xf32>
  %bias = arith.constant dense<[0.1, -0.2, 0.3, -0.4]> : tensor<4xf32>
  %e = tensor.empty() : tensor<2x3x15xf32>
  %zeros = linalg.fill ins(%zero : f32) outs(%e : tensor<2x3x15xf32>) -> tensor<2x3x15xf32>
  %dilated = tensor.insert_slice %x into %zeros[0, 0, 1] [2, 3, 5] [1, 1, 3] : tensor<2x3x5xf32> into tensor<2x3x15xf32>
  %oe = tensor.empty() : tensor<2x4x14xf32>
  %init = linalg.broadcast ins(%bias : tensor<4xf32>) outs(%oe : tensor<2x4x14xf32>) dimensions = [0, 2]
  %y = linalg.conv_1d_ncw_fcw {dilations = dense<1> : vector<1xi64>, strides = dense<1> : vector<1xi64>}
       ins(%dilated, %w : tensor<2x3x15xf32>, tensor<4x3x2xf32>) outs(%init : tensor<2x4x14xf32>) -> tensor<2x4x14xf32>
  return %y : tensor<2x4x14xf32>
}
