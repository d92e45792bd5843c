// A loop whose body builds a new tensor each iteration and yields it (not the iter_arg's buffer):
// x <- tanh(x @ w + x), three times. One-shot bufferization refused it ("Yield operand #0 is not
// equivalent to the corresponding iter bbArg") before the pipelines allowed new buffers from loops.
func.func @recurrence(%x0: tensor<64x96xf32>, %w: tensor<96x96xf32>) -> tensor<64x96xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %zero = arith.constant 0.0 : f32
  %r = scf.for %i = %c0 to %c3 step %c1 iter_args(%x = %x0) -> tensor<64x96xf32> {
    %e = tensor.empty() : tensor<64x96xf32>
    %z = linalg.fill ins(%zero : f32) outs(%e : tensor<64x96xf32>) -> tensor<64x96xf32>
    %mm = linalg.matmul ins(%x, %w : tensor<64x96xf32>, tensor<96x96xf32>) outs(%z : tensor<64x96xf32>) -> tensor<64x96xf32>
    %e2 = tensor.empty() : tensor<64x96xf32>
    %y = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>],
                         iterator_types = ["parallel", "parallel"]}
        ins(%mm, %x : tensor<64x96xf32>, tensor<64x96xf32>) outs(%e2 : tensor<64x96xf32>) {
    ^bb0(%a: f32, %b: f32, %o: f32):
      %s = arith.addf %a, %b : f32
      %t = math.tanh %s : f32
      linalg.yield %t : f32
    } -> tensor<64x96xf32>
    scf.yield %y : tensor<64x96xf32>
  }
  return %r : tensor<64x96xf32>
}
