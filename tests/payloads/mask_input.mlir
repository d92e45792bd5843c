// An i1 input (a bool mask argument) and an i1 constant: masked_fill(x, ~mask & keep, -1)
#id = affine_map<(d0) -> (d0)>
func.func @masked_fill(%x: tensor<37xf32>, %mask: tensor<37xi1>) -> tensor<37xf32> {
  %keep = arith.constant dense<[true, false, true, true, false, true, true, true, false, true, true, true, true, false, true, true, true, true, true, false, true, true, true, true, true, true, false, true, true, true, true, true, true, true, false, true, true]> : tensor<37xi1>
  %e = tensor.empty() : tensor<37xf32>
  %r = linalg.generic {indexing_maps = [#id, #id, #id, #id], iterator_types = ["parallel"]}
      ins(%x, %mask, %keep : tensor<37xf32>, tensor<37xi1>, tensor<37xi1>) outs(%e : tensor<37xf32>) {
  ^bb0(%a: f32, %m: i1, %k: i1, %o: f32):
    %true = arith.constant true
    %nm = arith.xori %m, %true : i1
    %c = arith.andi %nm, %k : i1
    %neg = arith.constant -1.0 : f32
    %s = arith.select %c, %neg, %a : f32
    linalg.yield %s : f32
  } -> tensor<37xf32>
  return %r : tensor<37xf32>
}
