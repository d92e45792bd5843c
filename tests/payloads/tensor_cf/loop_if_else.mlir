// An if/else diamond over tensors inside a loop, all written with cf branches: each of 4 steps adds %y to
// the carried vector where its first element is positive, else multiplies it by %y; the diamond's join
// block carries the tensor back to the loop header.
#map1 = affine_map<(d0) -> (d0)>

func.func @main(%x: tensor<8xf32>, %y: tensor<8xf32>) -> tensor<8xf32> {
  %c0 = arith.constant 0 : index
  %steps = arith.constant 4 : i32
  %start = arith.constant 0 : i32
  cf.br ^head(%start, %x : i32, tensor<8xf32>)

^head(%i: i32, %v: tensor<8xf32>):  // 2 preds: ^bb0, ^join
  %more = arith.cmpi slt, %i, %steps : i32
  cf.cond_br %more, ^test(%v : tensor<8xf32>), ^exit(%v : tensor<8xf32>)

^test(%t: tensor<8xf32>):  // pred: ^head
  %zero = arith.constant 0.0 : f32
  %first = tensor.extract %t[%c0] : tensor<8xf32>
  %pos = arith.cmpf ogt, %first, %zero : f32
  cf.cond_br %pos, ^then(%t : tensor<8xf32>), ^else(%t : tensor<8xf32>)

^then(%a: tensor<8xf32>):  // pred: ^test
  %ea = tensor.empty() : tensor<8xf32>
  %sum = linalg.generic {indexing_maps = [#map1, #map1, #map1], iterator_types = ["parallel"]}
      ins(%a, %y : tensor<8xf32>, tensor<8xf32>) outs(%ea : tensor<8xf32>) {
    ^bb0(%p: f32, %q: f32, %o: f32):
      %r = arith.addf %p, %q : f32
      linalg.yield %r : f32
  } -> tensor<8xf32>
  cf.br ^join(%sum : tensor<8xf32>)

^else(%b: tensor<8xf32>):  // pred: ^test
  %eb = tensor.empty() : tensor<8xf32>
  %prod = linalg.generic {indexing_maps = [#map1, #map1, #map1], iterator_types = ["parallel"]}
      ins(%b, %y : tensor<8xf32>, tensor<8xf32>) outs(%eb : tensor<8xf32>) {
    ^bb0(%p: f32, %q: f32, %o: f32):
      %r = arith.mulf %p, %q : f32
      linalg.yield %r : f32
  } -> tensor<8xf32>
  cf.br ^join(%prod : tensor<8xf32>)

^join(%res: tensor<8xf32>):  // 2 preds: ^then, ^else
  %one = arith.constant 1 : i32
  %next = arith.addi %i, %one : i32
  cf.br ^head(%next, %res : i32, tensor<8xf32>)

^exit(%out: tensor<8xf32>):  // pred: ^head
  return %out : tensor<8xf32>
}
