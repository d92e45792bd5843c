// fp8 in, f32 out and f32 in, fp8 out: e4m3 and e5m2 conversions
#id = affine_map<(d0) -> (d0)>
func.func @fp8_roundtrip(%a: tensor<64xf8E4M3FN>, %b: tensor<64xf8E5M2>, %x: tensor<64xf32>)
    -> (tensor<64xf32>, tensor<64xf8E4M3FN>, tensor<64xf16>) {
  %e32 = tensor.empty() : tensor<64xf32>
  %e8 = tensor.empty() : tensor<64xf8E4M3FN>
  %e16 = tensor.empty() : tensor<64xf16>
  %sum = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]}
      ins(%a, %b : tensor<64xf8E4M3FN>, tensor<64xf8E5M2>) outs(%e32 : tensor<64xf32>) {
  ^bb0(%p: f8E4M3FN, %q: f8E5M2, %o: f32):
    %pf = arith.extf %p : f8E4M3FN to f32
    %qf = arith.extf %q : f8E5M2 to f32
    %s = arith.addf %pf, %qf : f32
    linalg.yield %s : f32
  } -> tensor<64xf32>
  %down = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%x : tensor<64xf32>) outs(%e8 : tensor<64xf8E4M3FN>) {
  ^bb0(%p: f32, %o: f8E4M3FN):
    %t = arith.truncf %p : f32 to f8E4M3FN
    linalg.yield %t : f8E4M3FN
  } -> tensor<64xf8E4M3FN>
  %half = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%x : tensor<64xf32>) outs(%e16 : tensor<64xf16>) {
  ^bb0(%p: f32, %o: f16):
    %t = arith.truncf %p : f32 to f16
    linalg.yield %t : f16
  } -> tensor<64xf16>
  return %sum, %down, %half : tensor<64xf32>, tensor<64xf8E4M3FN>, tensor<64xf16>
}
