// torch.nn.Embedding as torch-mlir's fx importer writes it: token ids (i64) index the table's rows
// inside a linalg.generic, with the payload's own bounds check (cf.assert) that random ids would fail.
#map = affine_map<(d0, d1, d2) -> (d0, d1)>
#map1 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
func.func @embedding(%ids: tensor<4x8xi64>, %table: tensor<100x16xf32>) -> tensor<4x8x16xf32> {
  %c100 = arith.constant 100 : i64
  %c0 = arith.constant 0 : i64
  %e = tensor.empty() : tensor<4x8x16xf32>
  %r = linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%ids : tensor<4x8xi64>) outs(%e : tensor<4x8x16xf32>) {
  ^bb0(%id: i64, %o: f32):
    %ok_hi = arith.cmpi slt, %id, %c100 : i64
    %ok_lo = arith.cmpi sge, %id, %c0 : i64
    %ok = arith.andi %ok_hi, %ok_lo : i1
    cf.assert %ok, "index must be smaller than dim size"
    %row = arith.index_cast %id : i64 to index
    %col = linalg.index 2 : index
    %v = tensor.extract %table[%row, %col] : tensor<100x16xf32>
    linalg.yield %v : f32
  } -> tensor<4x8x16xf32>
  return %r : tensor<4x8x16xf32>
}
