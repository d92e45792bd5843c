"""Execution, session side (no `mlir`): start the worker processes and talk to them
(`worker_client`), inputs, statistics and checks of runs (`runner`), and the host side of the
targets whose runs are not a plain worker request: MPI ranks (`mpi_launch`)."""
