"""MPI worker code: shard-dialect helpers (compile worker) and one MPI rank (started by mpiexec)."""
