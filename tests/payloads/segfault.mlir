// Generated code that writes far out of bounds: the run worker must die, not the session.
func.func @oob(%m: memref<4xf32>) {
  %far = arith.constant 4000000000 : index
  %v = arith.constant 1.0 : f32
  memref.store %v, %m[%far] : memref<4xf32>
  return
}
