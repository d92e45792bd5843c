// F.pad(x, (1, 1), mode="reflect") along the last dim: a gather whose index is computed per element
// (|j - 1|, reflected back from the far edge), as torch-mlir emits it with tensor.extract. 64 x 100 -> 64 x 102.
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @reflect_pad(%x: tensor<64x100xf32>) -> tensor<64x102xf32> {
  %e = tensor.empty() : tensor<64x102xf32>
  %p = linalg.generic {indexing_maps = [#id], iterator_types = ["parallel", "parallel"]} outs(%e : tensor<64x102xf32>) {
  ^bb0(%out: f32):
    %c1 = arith.constant 1 : i64
    %c99 = arith.constant 99 : i64
    %c198 = arith.constant 198 : i64
    %i = linalg.index 0 : index
    %j = linalg.index 1 : index
    %ji = arith.index_cast %j : index to i64
    %s = arith.subi %ji, %c1 : i64
    %a = math.absi %s : i64
    %far = arith.cmpi sgt, %a, %c99 : i64
    %back = arith.subi %c198, %a : i64
    %k = arith.select %far, %back, %a : i64
    %kx = arith.index_cast %k : i64 to index
    %v = tensor.extract %x[%i, %kx] : tensor<64x100xf32>
    linalg.yield %v : f32
  } -> tensor<64x102xf32>
  return %p : tensor<64x102xf32>
}
