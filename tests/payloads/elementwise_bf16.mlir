// bf16 elementwise: relu(a * b + a)
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @fma_relu_bf16(%a: tensor<16x40xbf16>, %b: tensor<16x40xbf16>) -> tensor<16x40xbf16> {
  %empty = tensor.empty() : tensor<16x40xbf16>
  %r = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%a, %b : tensor<16x40xbf16>, tensor<16x40xbf16>) outs(%empty : tensor<16x40xbf16>) {
  ^bb0(%x: bf16, %y: bf16, %o: bf16):
    %m = arith.mulf %x, %y : bf16
    %s = arith.addf %m, %x : bf16
    %zero = arith.constant 0.0 : bf16
    %relu = arith.maximumf %s, %zero : bf16
    linalg.yield %relu : bf16
  } -> tensor<16x40xbf16>
  return %r : tensor<16x40xbf16>
}
