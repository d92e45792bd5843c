// A while loop over tensors written with cf branches (upstream's detensorize_while.mlir style): the
// block arguments carry a 0-d counter and a vector; the body scales the vector until the counter
// reaches the bound.
#map0 = affine_map<() -> ()>
#map1 = affine_map<(d0) -> (d0)>

func.func @main(%x: tensor<16xf32>, %s: tensor<16xf32>) -> tensor<16xf32> {
  %zero = arith.constant dense<0> : tensor<i32>
  %bound = arith.constant dense<5> : tensor<i32>
  cf.br ^bb1(%zero, %x : tensor<i32>, tensor<16xf32>)

^bb1(%i: tensor<i32>, %v: tensor<16xf32>):  // 2 preds: ^bb0, ^bb2
  %e = tensor.empty() : tensor<i1>
  %lt = linalg.generic {indexing_maps = [#map0, #map0, #map0], iterator_types = []}
      ins(%i, %bound : tensor<i32>, tensor<i32>) outs(%e : tensor<i1>) {
    ^bb0(%a: i32, %b: i32, %o: i1):
      %c = arith.cmpi slt, %a, %b : i32
      linalg.yield %c : i1
  } -> tensor<i1>
  %cond = tensor.extract %lt[] : tensor<i1>
  cf.cond_br %cond, ^bb2(%i, %v : tensor<i32>, tensor<16xf32>), ^bb3(%v : tensor<16xf32>)

^bb2(%i2: tensor<i32>, %v2: tensor<16xf32>):  // pred: ^bb1
  %ei = tensor.empty() : tensor<i32>
  %next = linalg.generic {indexing_maps = [#map0, #map0], iterator_types = []}
      ins(%i2 : tensor<i32>) outs(%ei : tensor<i32>) {
    ^bb0(%a: i32, %o: i32):
      %one = arith.constant 1 : i32
      %n = arith.addi %a, %one : i32
      linalg.yield %n : i32
  } -> tensor<i32>
  %ev = tensor.empty() : tensor<16xf32>
  %w = linalg.generic {indexing_maps = [#map1, #map1, #map1], iterator_types = ["parallel"]}
      ins(%v2, %s : tensor<16xf32>, tensor<16xf32>) outs(%ev : tensor<16xf32>) {
    ^bb0(%a: f32, %b: f32, %o: f32):
      %half = arith.constant 0.5 : f32
      %m = arith.mulf %a, %b : f32
      %h = arith.mulf %m, %half : f32
      %r = arith.addf %h, %a : f32
      linalg.yield %r : f32
  } -> tensor<16xf32>
  cf.br ^bb1(%next, %w : tensor<i32>, tensor<16xf32>)

^bb3(%out: tensor<16xf32>):  // pred: ^bb1
  return %out : tensor<16xf32>
}
