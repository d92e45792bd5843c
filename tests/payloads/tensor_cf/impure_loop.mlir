// A loop over tensors whose header does more than compute the condition (upstream's
// detensorize_while_impure_cf.mlir style): the header reduces the carried vector to its sum, the branch
// to the exit passes that sum (a value the loop body does not carry), the body scales the vector.
#map0 = affine_map<() -> ()>
#map1 = affine_map<(d0) -> (d0)>
#map2 = affine_map<(d0) -> ()>

func.func @main(%x: tensor<10xf32>) -> tensor<f32> {
  %limit = arith.constant dense<1000.0> : tensor<f32>
  %count = arith.constant 0 : i32
  cf.br ^bb1(%count, %x : i32, tensor<10xf32>)

^bb1(%n: i32, %v: tensor<10xf32>):  // 2 preds: ^bb0, ^bb2
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<f32>
  %acc = linalg.fill ins(%z : f32) outs(%e : tensor<f32>) -> tensor<f32>
  %sum = linalg.generic {indexing_maps = [#map1, #map2], iterator_types = ["reduction"]}
      ins(%v : tensor<10xf32>) outs(%acc : tensor<f32>) {
    ^bb0(%a: f32, %o: f32):
      %abs = math.absf %a : f32
      %r = arith.addf %abs, %o : f32
      linalg.yield %r : f32
  } -> tensor<f32>
  %eb = tensor.empty() : tensor<i1>
  %small = linalg.generic {indexing_maps = [#map0, #map0, #map0], iterator_types = []}
      ins(%sum, %limit : tensor<f32>, tensor<f32>) outs(%eb : tensor<i1>) {
    ^bb0(%a: f32, %b: f32, %o: i1):
      %c = arith.cmpf olt, %a, %b : f32
      linalg.yield %c : i1
  } -> tensor<i1>
  %c1 = tensor.extract %small[] : tensor<i1>
  %max = arith.constant 20 : i32
  %c2 = arith.cmpi slt, %n, %max : i32
  %go = arith.andi %c1, %c2 : i1
  cf.cond_br %go, ^bb2(%v : tensor<10xf32>), ^bb3(%sum : tensor<f32>)

^bb2(%w: tensor<10xf32>):  // pred: ^bb1
  %ew = tensor.empty() : tensor<10xf32>
  %next = linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel"]}
      ins(%w : tensor<10xf32>) outs(%ew : tensor<10xf32>) {
    ^bb0(%a: f32, %o: f32):
      %k = arith.constant 1.5 : f32
      %one = arith.constant 1.0 : f32
      %m = arith.mulf %a, %k : f32
      %r = arith.addf %m, %one : f32
      linalg.yield %r : f32
  } -> tensor<10xf32>
  %one_i = arith.constant 1 : i32
  %n2 = arith.addi %n, %one_i : i32
  cf.br ^bb1(%n2, %next : i32, tensor<10xf32>)

^bb3(%out: tensor<f32>):  // pred: ^bb1
  return %out : tensor<f32>
}
