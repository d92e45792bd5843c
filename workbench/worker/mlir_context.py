"""The MLIR contexts the workers make: single-threaded.

The bindings collect the errors of `Module.parse`, `Operation.verify` and `PassManager.run` in a
diagnostic handler (`PyMlirContext::ErrorCapture::handler`) that makes Python objects without taking
the GIL. With the context's thread pool on, MLIR verifies the ops isolated from above (functions,
nested modules, transform sequences) in parallel, and an op that fails there reports from a pool
thread: nanobind then aborts the process ("incref_check(): attempted to change the reference count of
a Python object while the GIL was not held"). Upstream's pack-unpack-mmt4d.mlir, whose
`transform.structured.lower_unpack` has a result more than MLIR 22 has, killed the compile worker that
way on one load in three instead of failing at its line. Single-threaded, every diagnostic is emitted
on the thread that holds the GIL (and a context no longer starts a pool of threads per parsed module).
"""
from __future__ import annotations


def new_context():
    """A fresh `mlir.ir.Context` with multithreading off (see the module docstring)."""
    from mlir import ir

    ctx = ir.Context()
    ctx.enable_multithreading(False)
    return ctx
