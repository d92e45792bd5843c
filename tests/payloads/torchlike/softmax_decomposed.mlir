// torch.softmax(x, dim=1) as torch-mlir emits it (linalg.generic chain, not linalg.softmax):
// max over the row (init -inf), exp(x - max), sum over the row, divide. 64 x 1000.
#id = affine_map<(d0, d1) -> (d0, d1)>
#red = affine_map<(d0, d1) -> (d0, 0)>
func.func @softmax(%x: tensor<64x1000xf32>) -> tensor<64x1000xf32> {
  %ninf = arith.constant 0xFF800000 : f32
  %zero = arith.constant 0.0 : f32
  %e1 = tensor.empty() : tensor<64x1xf32>
  %f1 = linalg.fill ins(%ninf : f32) outs(%e1 : tensor<64x1xf32>) -> tensor<64x1xf32>
  %max = linalg.generic {indexing_maps = [#id, #red], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<64x1000xf32>) outs(%f1 : tensor<64x1xf32>) {
  ^bb0(%in: f32, %out: f32):
    %m = arith.maximumf %in, %out : f32
    linalg.yield %m : f32
  } -> tensor<64x1xf32>
  %e = tensor.empty() : tensor<64x1000xf32>
  %ex = linalg.generic {indexing_maps = [#id, #red, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x, %max : tensor<64x1000xf32>, tensor<64x1xf32>) outs(%e : tensor<64x1000xf32>) {
  ^bb0(%in: f32, %m: f32, %out: f32):
    %d = arith.subf %in, %m : f32
    %v = math.exp %d : f32
    linalg.yield %v : f32
  } -> tensor<64x1000xf32>
  %f2 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<64x1xf32>) -> tensor<64x1xf32>
  %sum = linalg.generic {indexing_maps = [#id, #red], iterator_types = ["parallel", "reduction"]}
      ins(%ex : tensor<64x1000xf32>) outs(%f2 : tensor<64x1xf32>) {
  ^bb0(%in: f32, %out: f32):
    %s = arith.addf %in, %out : f32
    linalg.yield %s : f32
  } -> tensor<64x1xf32>
  %r = linalg.generic {indexing_maps = [#id, #red, #id], iterator_types = ["parallel", "parallel"]}
      ins(%ex, %sum : tensor<64x1000xf32>, tensor<64x1xf32>) outs(%e : tensor<64x1000xf32>) {
  ^bb0(%in: f32, %s: f32, %out: f32):
    %q = arith.divf %in, %s : f32
    linalg.yield %q : f32
  } -> tensor<64x1000xf32>
  return %r : tensor<64x1000xf32>
}
