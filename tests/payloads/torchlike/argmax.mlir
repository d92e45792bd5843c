// x.argmax(dim=1): a two-result reduction (value and index, linalg.index), as torch-mlir emits it. 70 x 130.
#id = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>
#row = affine_map<(d0, d1) -> (d0)>
func.func @argmax(%x: tensor<70x130xf32>) -> tensor<70xi64> {
  %ninf = arith.constant 0xFF800000 : f32
  %c0 = arith.constant 0 : i64
  %ev = tensor.empty() : tensor<70xf32>
  %fv = linalg.fill ins(%ninf : f32) outs(%ev : tensor<70xf32>) -> tensor<70xf32>
  %ei = tensor.empty() : tensor<70xi64>
  %fi = linalg.fill ins(%c0 : i64) outs(%ei : tensor<70xi64>) -> tensor<70xi64>
  %am:2 = linalg.generic {indexing_maps = [#id, #row, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<70x130xf32>) outs(%fv, %fi : tensor<70xf32>, tensor<70xi64>) {
  ^bb0(%in: f32, %v: f32, %i: i64):
    %j = linalg.index 1 : index
    %ji = arith.index_cast %j : index to i64
    %gt = arith.cmpf ogt, %in, %v : f32
    %nv = arith.select %gt, %in, %v : f32
    %ni = arith.select %gt, %ji, %i : i64
    linalg.yield %nv, %ni : f32, i64
  } -> (tensor<70xf32>, tensor<70xi64>)
  return %am#1 : tensor<70xi64>
}
