// conv2d 3x3 stride 2 (NCHW/FCHW), depthwise 3x3 (NHWC), 2x2 max pooling (NCHW): named ops as
// torch-mlir emits them (with a zero fill of the output); the pooled map plus a slice of the depthwise output
// (one result: the reference lowering cannot lower functions with several results yet).
func.func @conv_pool(%x: tensor<1x8x17x17xf32>, %w: tensor<16x8x3x3xf32>, %xh: tensor<1x6x6x16xf32>,
                     %dw: tensor<3x3x16xf32>) -> tensor<1x16x4x4xf32> {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %e = tensor.empty() : tensor<1x16x8x8xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<1x16x8x8xf32>) -> tensor<1x16x8x8xf32>
  %c = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>}
      ins(%x, %w : tensor<1x8x17x17xf32>, tensor<16x8x3x3xf32>) outs(%f : tensor<1x16x8x8xf32>) -> tensor<1x16x8x8xf32>
  %k = tensor.empty() : tensor<2x2xf32>
  %ep = tensor.empty() : tensor<1x16x4x4xf32>
  %fp = linalg.fill ins(%ninf : f32) outs(%ep : tensor<1x16x4x4xf32>) -> tensor<1x16x4x4xf32>
  %p = linalg.pooling_nchw_max {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>}
      ins(%c, %k : tensor<1x16x8x8xf32>, tensor<2x2xf32>) outs(%fp : tensor<1x16x4x4xf32>) -> tensor<1x16x4x4xf32>
  %ed = tensor.empty() : tensor<1x4x4x16xf32>
  %fd = linalg.fill ins(%zero : f32) outs(%ed : tensor<1x4x4x16xf32>) -> tensor<1x4x4x16xf32>
  %d = linalg.depthwise_conv_2d_nhwc_hwc {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%xh, %dw : tensor<1x6x6x16xf32>, tensor<3x3x16xf32>) outs(%fd : tensor<1x4x4x16xf32>) -> tensor<1x4x4x16xf32>
  %y = linalg.generic {indexing_maps = [affine_map<(n, c, h, w) -> (n, c, h, w)>, affine_map<(n, c, h, w) -> (n, h, w, c)>,
                                        affine_map<(n, c, h, w) -> (n, c, h, w)>],
                       iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%p, %d : tensor<1x16x4x4xf32>, tensor<1x4x4x16xf32>) outs(%ep : tensor<1x16x4x4xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %s = arith.addf %a, %b : f32
    linalg.yield %s : f32
  } -> tensor<1x16x4x4xf32>
  return %y : tensor<1x16x4x4xf32>
}
