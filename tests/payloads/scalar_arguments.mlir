// An entry with scalar arguments: a pad value (f32), a flag (i1) choosing a branch, and a count (index).
func.func @pad_then_maybe_double(%x: tensor<10x10xf32>, %v: f32, %flag: i1, %n: index) -> tensor<13x15xf32> {
  %p = tensor.pad %x low[1, 2] high[2, 3] {
  ^bb0(%i: index, %j: index):
    tensor.yield %v : f32
  } : tensor<10x10xf32> to tensor<13x15xf32>
  %r = scf.if %flag -> tensor<13x15xf32> {
    %e = tensor.empty() : tensor<13x15xf32>
    %a = linalg.add ins(%p, %p : tensor<13x15xf32>, tensor<13x15xf32>) outs(%e : tensor<13x15xf32>) -> tensor<13x15xf32>
    scf.yield %a : tensor<13x15xf32>
  } else {
    scf.yield %p : tensor<13x15xf32>
  }
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %s = scf.for %i = %c0 to %n step %c1 iter_args(%t = %r) -> tensor<13x15xf32> {
    %e = tensor.empty() : tensor<13x15xf32>
    %a = linalg.add ins(%t, %p : tensor<13x15xf32>, tensor<13x15xf32>) outs(%e : tensor<13x15xf32>) -> tensor<13x15xf32>
    scf.yield %a : tensor<13x15xf32>
  }
  return %s : tensor<13x15xf32>
}
