// Generated code that never returns: the run worker must be killed at the time limit.
func.func @spin(%m: memref<4xf32>) {
  %c0 = arith.constant 0 : index
  %one = arith.constant 1.0 : f32
  scf.while : () -> () {
    %t = arith.constant true
    scf.condition(%t)
  } do {
    %v = memref.load %m[%c0] : memref<4xf32>
    %w = arith.addf %v, %one : f32
    memref.store %w, %m[%c0] : memref<4xf32>
    scf.yield
  }
  return
}
