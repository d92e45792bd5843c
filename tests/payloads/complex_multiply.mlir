func.func @cmul(%x: tensor<8x5xcomplex<f32>>, %y: tensor<8x5xcomplex<f32>>) -> tensor<8x5xcomplex<f32>> {
  %e = tensor.empty() : tensor<8x5xcomplex<f32>>
  %r = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>],
                       iterator_types = ["parallel", "parallel"]}
    ins(%x, %y : tensor<8x5xcomplex<f32>>, tensor<8x5xcomplex<f32>>) outs(%e : tensor<8x5xcomplex<f32>>) {
  ^bb0(%a: complex<f32>, %b: complex<f32>, %o: complex<f32>):
    %m = complex.mul %a, %b : complex<f32>
    linalg.yield %m : complex<f32>
  } -> tensor<8x5xcomplex<f32>>
  return %r : tensor<8x5xcomplex<f32>>
}
