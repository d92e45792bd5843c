// Buffer-level code that frees its own temporary (as convert-shard-to-mpi's halo exchange does):
// lh-mpi-buffer-deallocation leaves it as it is (the ownership-based deallocation refuses frees).
module attributes {mpi.dlti = #dlti.map<"MPI:Implementation" = "MPICH", "MPI:comm_world_size" = 2>} {
  func.func @f(%x: memref<16xf32>, %y: memref<16xf32>) {
    %tmp = memref.alloc() : memref<16xf32>
    memref.copy %x, %tmp : memref<16xf32> to memref<16xf32>
    %world = mpi.comm_world : !mpi.comm
    mpi.allreduce(%tmp, %tmp, MPI_SUM, %world) : memref<16xf32>, memref<16xf32>
    memref.copy %tmp, %y : memref<16xf32> to memref<16xf32>
    memref.dealloc %tmp : memref<16xf32>
    return
  }
}
