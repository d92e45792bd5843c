// Generated code for the mpi target that fails on one rank only: rank 1 calls abort() (or,
// with the `hang` variant below, spins forever) while rank 0 returns normally. The run must
// report the failing rank and kill every rank.
module attributes {mpi.dlti = #dlti.map<"MPI:Implementation" = "MPICH">} {
  func.func private @abort()
  func.func @rank1_aborts(%x: tensor<8xf32>) -> tensor<8xf32> {
    %comm = mpi.comm_world : !mpi.comm
    %rv, %rank = mpi.comm_rank(%comm) : !mpi.retval, i32
    %c1 = arith.constant 1 : i32
    %is1 = arith.cmpi eq, %rank, %c1 : i32
    scf.if %is1 {
      func.call @abort() : () -> ()
    }
    return %x : tensor<8xf32>
  }
}
