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


# -- how libgomp's idle threads wait, by the machine's load -------------------------------------------------

#: the user's own settings of how OpenMP threads wait: either one set, the workbench sets nothing
WAIT_SETTINGS = ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")
#: libgomp's spin (pause-loop iterations, tens of microseconds) before a waiting thread sleeps, where other
#: work shares the cores. libgomp's default, 300000 (milliseconds), keeps a thread that finished its chunk
#: spinning on its core while a team mate waits in the run queue behind another process, at every region's
#: end: on the 16-core Xeon of the GPU machine with 6 busy processes, 16 threads, transformer_layer took
#: 208 ms against 6.0 ms with 1000 (mlp 47.8 against 7.1; idle: 2.4 -> 2.8 and 4.7 -> 4.9 ms); on this 2-core
#: Zen 4 beside a 1.4-core load, 2 threads, examples/mlp.mlir 32 ms against 1.4 (idle 0.72).
BUSY_SPINCOUNT = 1000
#: the environment variable the run worker reads back to say its threads waited briefly (the load it saw)
OTHER_LOAD_ENV = "LH_WORKBENCH_OTHER_LOAD"


def runnable_elsewhere(samples: int = 5, interval_s: float = 0.004) -> int | None:
    """Tasks running or waiting for a CPU on this machine besides the caller: the median of `samples` reads
    of /proc/loadavg's running count (a brief wake-up is not load); None where there is no /proc/loadavg."""
    import statistics
    import time

    counts = []
    for i in range(samples):
        try:
            with open("/proc/loadavg") as f:
                running = f.read().split()[3].split("/")[0]
            counts.append(max(int(running) - 1, 0))   # (this reader is running)
        except (OSError, IndexError, ValueError):
            return None
        if i + 1 < samples:
            time.sleep(interval_s)
    return int(statistics.median(counts))


def wait_settings(threads: int, cpus: int, others: int | None, environ=os.environ) -> dict[str, str]:
    """The environment of a run of `threads` OpenMP threads on `cpus` CPUs while `others` other tasks
    run: BUSY_SPINCOUNT (and OTHER_LOAD_ENV) where they would not all have a CPU; nothing when the machine
    has room, the load is unknown, one thread runs, or the user set WAIT_SETTINGS."""
    if others is None or threads <= 1 or any(name in environ for name in WAIT_SETTINGS):
        return {}
    if threads + others <= cpus:
        return {}
    return {"GOMP_SPINCOUNT": str(BUSY_SPINCOUNT), OTHER_LOAD_ENV: str(others)}


def busy_note(others: str) -> str:
    """The run's warning when its threads waited briefly for a busy machine (OTHER_LOAD_ENV's value)."""
    return (f"{others} other task{'s' if others != '1' else ''} had this machine's CPUs: the OpenMP threads slept "
            f"at each parallel loop's end instead of spinning (GOMP_SPINCOUNT={BUSY_SPINCOUNT}); an idle machine "
            "may time it faster (set OMP_WAIT_POLICY or GOMP_SPINCOUNT to choose)")
