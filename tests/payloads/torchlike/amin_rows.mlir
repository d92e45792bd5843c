// x.min(dim=0) (value and index, linalg.index): a two-result reduction over many long rows, taken step by
// step with vectors along the outputs, walking blocks of rows x outputs (cache_tile). 300 x 1024.
#id = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>
func.func @amin_rows(%x: tensor<300x1024xf32>) -> (tensor<1024xf32>, tensor<1024xi64>) {
  %inf = arith.constant 0x7F800000 : f32
  %c0 = arith.constant 0 : i64
  %ev = tensor.empty() : tensor<1024xf32>
  %fv = linalg.fill ins(%inf : f32) outs(%ev : tensor<1024xf32>) -> tensor<1024xf32>
  %ei = tensor.empty() : tensor<1024xi64>
  %fi = linalg.fill ins(%c0 : i64) outs(%ei : tensor<1024xi64>) -> tensor<1024xi64>
  %m:2 = linalg.generic {indexing_maps = [#id, #col, #col], iterator_types = ["reduction", "parallel"]}
      ins(%x : tensor<300x1024xf32>) outs(%fv, %fi : tensor<1024xf32>, tensor<1024xi64>) {
  ^bb0(%in: f32, %v: f32, %i: i64):
    %r = linalg.index 0 : index
    %ri = arith.index_cast %r : index to i64
    %lt = arith.cmpf olt, %in, %v : f32
    %nv = arith.minimumf %in, %v : f32
    %ni = arith.select %lt, %ri, %i : i64
    linalg.yield %nv, %ni : f32, i64
  } -> (tensor<1024xf32>, tensor<1024xi64>)
  return %m#0, %m#1 : tensor<1024xf32>, tensor<1024xi64>
}
