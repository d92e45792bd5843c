"""Worker processes: the only code of the workbench that imports `mlir`.

The MLIR wheels are built with assertions, and an assertion or `LLVM ERROR` aborts the process,
so every MLIR object lives in a child process that the session side starts by module name
(workbench/execution/worker_client.py) and never imports:

- `compile_worker`: parses, applies steps (passes, transform schedules, generators, rewrites,
  the benchmark wrapper), inspects payloads, lowers for a run; `run_worker`: JIT-runs a lowered
  module with ExecutionEngine, started fresh per run.
- one subpackage per target for what only that target needs: `cpu/` (microkernel calls, the
  exp approximation), `cuda/` (the GPU wrapper and device memory, the wgmma kernel generator,
  the CUDA run worker), `sycl/` (SPIR-V kernels + host plan, the dpctl run worker), `mpi/`
  (shard helpers, one MPI rank).

Worker code imports only `workbench.worker.*` and `workbench.common.*` (tests/test_layers.py).
"""
