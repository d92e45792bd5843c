// An if/else diamond over tensors written with cf branches (upstream's detensorize_if.mlir style): the
// branch taken depends on the first element of the input, each branch computes its own tensor and the
// join block's argument carries it on.
#map1 = affine_map<(d0) -> (d0)>

func.func @main(%x: tensor<8xf32>, %y: tensor<8xf32>) -> tensor<8xf32> {
  %c0 = arith.constant 0 : index
  %zero = arith.constant 0.0 : f32
  %first = tensor.extract %x[%c0] : tensor<8xf32>
  %pos = arith.cmpf ogt, %first, %zero : f32
  cf.cond_br %pos, ^bb1(%x : tensor<8xf32>), ^bb2(%y : tensor<8xf32>)

^bb1(%a: tensor<8xf32>):  // pred: ^bb0
  %ea = tensor.empty() : tensor<8xf32>
  %sum = linalg.generic {indexing_maps = [#map1, #map1, #map1], iterator_types = ["parallel"]}
      ins(%a, %y : tensor<8xf32>, tensor<8xf32>) outs(%ea : tensor<8xf32>) {
    ^bb0(%p: f32, %q: f32, %o: f32):
      %r = arith.addf %p, %q : f32
      linalg.yield %r : f32
  } -> tensor<8xf32>
  cf.br ^bb3(%sum : tensor<8xf32>)

^bb2(%b: tensor<8xf32>):  // pred: ^bb0
  %eb = tensor.empty() : tensor<8xf32>
  %prod = linalg.generic {indexing_maps = [#map1, #map1, #map1], iterator_types = ["parallel"]}
      ins(%b, %x : tensor<8xf32>, tensor<8xf32>) outs(%eb : tensor<8xf32>) {
    ^bb0(%p: f32, %q: f32, %o: f32):
      %r = arith.mulf %p, %q : f32
      linalg.yield %r : f32
  } -> tensor<8xf32>
  cf.br ^bb3(%prod : tensor<8xf32>)

^bb3(%res: tensor<8xf32>):  // 2 preds: ^bb1, ^bb2
  %ef = tensor.empty() : tensor<8xf32>
  %out = linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel"]}
      ins(%res : tensor<8xf32>) outs(%ef : tensor<8xf32>) {
    ^bb0(%p: f32, %o: f32):
      %two = arith.constant 2.0 : f32
      %r = arith.mulf %p, %two : f32
      linalg.yield %r : f32
  } -> tensor<8xf32>
  return %out : tensor<8xf32>
}
