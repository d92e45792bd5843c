// Wav2Vec2's positional convolution as torch-mlir writes a grouped Conv1d (hidden 64, 4 groups, kernel 16,
// padding 8): the 1-D convolution as a 2-D one over a trailing unit width, then the extra output position
// sliced off and GELU (bench/hf_defs.py Wav2Vec2, `import`ed).
module {
  func.func @main(%x: tensor<1x64x159xf32>, %w: tensor<64x16x16xf32>, %b: tensor<64xf32>) -> tensor<1x64x159xf32> {
    %cst = arith.constant 0.000000e+00 : f32
    %c1 = arith.constant 1.000000e+00 : f32
    %half = arith.constant 5.000000e-01 : f32
    %sqrt2 = arith.constant 1.41421354 : f32
    %e = tensor.expand_shape %x [[0], [1], [2, 3]] output_shape [1, 64, 159, 1] : tensor<1x64x159xf32> into tensor<1x64x159x1xf32>
    %padded = tensor.pad %e low[0, 0, 8, 0] high[0, 0, 8, 0] {
    ^bb0(%i0: index, %i1: index, %i2: index, %i3: index):
      tensor.yield %cst : f32
    } : tensor<1x64x159x1xf32> to tensor<1x64x175x1xf32>
    %0 = tensor.empty() : tensor<1x64x160x1xf32>
    %bc = linalg.broadcast ins(%b : tensor<64xf32>) outs(%0 : tensor<1x64x160x1xf32>) dimensions = [0, 2, 3]
    %xe = tensor.expand_shape %padded [[0], [1, 2], [3], [4]] output_shape [1, 4, 16, 175, 1] : tensor<1x64x175x1xf32> into tensor<1x4x16x175x1xf32>
    %we = tensor.expand_shape %w [[0, 1], [2], [3, 4]] output_shape [4, 16, 16, 16, 1] : tensor<64x16x16xf32> into tensor<4x16x16x16x1xf32>
    %be = tensor.expand_shape %bc [[0], [1, 2], [3], [4]] output_shape [1, 4, 16, 160, 1] : tensor<1x64x160x1xf32> into tensor<1x4x16x160x1xf32>
    %conv = linalg.conv_2d_ngchw_gfchw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>} ins(%xe, %we : tensor<1x4x16x175x1xf32>, tensor<4x16x16x16x1xf32>) outs(%be : tensor<1x4x16x160x1xf32>) -> tensor<1x4x16x160x1xf32>
    %c = tensor.collapse_shape %conv [[0], [1, 2], [3, 4]] : tensor<1x4x16x160x1xf32> into tensor<1x64x160xf32>
    %s = tensor.extract_slice %c[0, 0, 0] [1, 64, 159] [1, 1, 1] : tensor<1x64x160xf32> to tensor<1x64x159xf32>
    %1 = tensor.empty() : tensor<1x64x159xf32>
    %g = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%s : tensor<1x64x159xf32>) outs(%1 : tensor<1x64x159xf32>) {
    ^bb0(%in: f32, %out: f32):
      %2 = arith.divf %in, %sqrt2 : f32
      %3 = math.erf %2 : f32
      %4 = arith.addf %3, %c1 : f32
      %5 = arith.mulf %4, %half : f32
      %6 = arith.mulf %in, %5 : f32
      linalg.yield %6 : f32
    } -> tensor<1x64x159xf32>
    return %g : tensor<1x64x159xf32>
  }
}
