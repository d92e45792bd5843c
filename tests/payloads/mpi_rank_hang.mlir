// Generated code for the mpi target where rank 1 never returns (rank 0 finishes): the run must
// time out and kill every rank (mpiexec's whole process group).
module attributes {mpi.dlti = #dlti.map<"MPI:Implementation" = "MPICH">} {
  func.func @rank1_hangs(%x: tensor<8xf32>) -> tensor<8xf32> {
    %comm = mpi.comm_world : !mpi.comm
    %rv, %rank = mpi.comm_rank(%comm) : !mpi.retval, i32
    %c1 = arith.constant 1 : i32
    %is1 = arith.cmpi eq, %rank, %c1 : i32
    scf.if %is1 {
      %m = memref.alloc() : memref<1xf32>
      %c0 = arith.constant 0 : index
      %one = arith.constant 1.0 : f32
      scf.while : () -> () {
        %t = arith.constant true
        scf.condition(%t)
      } do {
        %v = memref.load %m[%c0] : memref<1xf32>
        %w = arith.addf %v, %one : f32
        memref.store %w, %m[%c0] : memref<1xf32>
        scf.yield
      }
    }
    return %x : tensor<8xf32>
  }
}
