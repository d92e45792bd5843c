// F.pad(x, (2, 1), mode="reflect") of a 1-D tensor written as torch-mlir writes the gather (|j - 2| reflected
// back from the far edge): a pad of rank 1, no rows around it. 100 -> 103.
#id = affine_map<(d0) -> (d0)>
func.func @reflect_1d(%x: tensor<100xf32>) -> tensor<103xf32> {
  %e = tensor.empty() : tensor<103xf32>
  %p = linalg.generic {indexing_maps = [#id], iterator_types = ["parallel"]} outs(%e : tensor<103xf32>) {
  ^bb0(%out: f32):
    %c2 = arith.constant 2 : i64
    %c99 = arith.constant 99 : i64
    %c198 = arith.constant 198 : i64
    %j = linalg.index 0 : index
    %ji = arith.index_cast %j : index to i64
    %s = arith.subi %ji, %c2 : i64
    %a = math.absi %s : i64
    %far = arith.cmpi sgt, %a, %c99 : i64
    %back = arith.subi %c198, %a : i64
    %k = arith.select %far, %back, %a : i64
    %kx = arith.index_cast %k : i64 to index
    %v = tensor.extract %x[%kx] : tensor<100xf32>
    linalg.yield %v : f32
  } -> tensor<103xf32>
  return %p : tensor<103xf32>
}
