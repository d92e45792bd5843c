"""Code both sides import: plain data and ctypes, never `mlir`.

The session side (front ends, commands, session, steps, targets, execution) and the worker
processes (`workbench/worker/`, the only code that imports `mlir`) share these modules:
catalogues (rewrites, microkernel ABIs, benchmark-wrapper defaults), element types, where the
MLIR runtime libraries are, how a child Python process is started, and the CUDA driver probe.
"""
