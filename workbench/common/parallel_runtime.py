"""Which runtime runs the CPU code's parallel loops: libgomp (GNU OpenMP) where the machine has it, else
MLIR's async runtime.

The schedules' `scf.forall` chunks ran as tasks on MLIR's async runtime (libmlir_async_runtime.so): a
mutex-guarded queue whose idle workers sleep on a condition variable, so every parallel loop pays a
wake-up per worker and a condition-variable wait for the last one. On the 16-core Xeon VM of the GPU
machine that cost ~0.1 ms a loop (a 12 us op took 126 us on 2 threads of this 2-core Zen 4), more than
torch's small ops take on 16 threads. libgomp's team stays spinning for a while after each region
(GOMP_SPINCOUNT), so a model's consecutive parallel loops reuse awake threads: a `GOMP_parallel` region
cost 1.6 us on this Zen 4 when the previous one had ended 50 us before.

`LH_WORKBENCH_PARALLEL_RUNTIME`: `gomp` (default where libgomp is found) or `async`; `LH_WORKBENCH_GOMP`: the
library's path (else the dynamic loader's search, then a copy bundled with torch).
"""
from __future__ import annotations

import ctypes.util
import glob
import importlib.util
import os
from pathlib import Path

RUNTIME_ENV = "LH_WORKBENCH_PARALLEL_RUNTIME"
LIBRARY_ENV = "LH_WORKBENCH_GOMP"
#: the symbols generated code calls (workbench/worker/cpu/gomp_parallel.py)
ENTRY = "GOMP_parallel"


def _loaded_path(name: str) -> str | None:
    """The file the dynamic loader maps for `name` (a soname or a path) if it exports GOMP_parallel: the
    JIT's shared_libs want a path, the loader's search knows only sonames."""
    try:
        lib = ctypes.CDLL(name)
    except OSError:
        return None
    if not hasattr(lib, ENTRY):
        return None
    if os.path.isabs(name):
        return name
    base = os.path.basename(name)
    try:
        with open("/proc/self/maps") as maps:
            for line in maps:
                path = line.split()[-1] if len(line.split()) >= 6 else ""
                if os.path.basename(path).startswith(base) and os.path.isfile(path):
                    return path
    except OSError:
        pass
    return None


def find_gomp() -> str | None:
    """Path (or soname the loader finds) of a libgomp that exports GOMP_parallel; None without one."""
    env = os.environ.get(LIBRARY_ENV, "")
    candidates = [env] if env else []
    soname = ctypes.util.find_library("gomp")
    if soname:
        candidates.append(soname)
    spec = importlib.util.find_spec("torch")
    for pkg in (spec.submodule_search_locations or []) if spec is not None else []:
        candidates += sorted(glob.glob(str(Path(pkg) / "lib" / "libgomp*.so*")))
    for candidate in candidates:
        path = _loaded_path(candidate) if candidate else None
        if path:
            return path
    return None


def parallel_runtime() -> str:
    """`gomp` or `async`: what the CPU lowering makes of parallel loops on this machine."""
    asked = os.environ.get(RUNTIME_ENV, "").strip().lower()
    if asked == "async":
        return "async"
    return "gomp" if find_gomp() else "async"


def libraries_for(llvm: str) -> list[str]:
    """libgomp for a lowered module whose parallel loops run on its team (lh-gomp-dispatch); a clear error
    if this machine has none (the module was lowered where it had)."""
    if f"@{ENTRY}(" not in llvm:
        return []
    lib = find_gomp()
    if lib is None:
        raise RuntimeError(f"the module's parallel loops call {ENTRY} (libgomp) and this machine has no libgomp "
                           f"(install libgomp1, or set {LIBRARY_ENV}); lower it again here to use MLIR's "
                           "async runtime instead")
    return [lib]
