"""How every child Python process of the workbench is started (workers, probes, MPI ranks).

One place builds the command line and the environment, so that every child sees the same
package (this checkout or the installed wheel) first on its path, and never the current
directory: `python -m` would put the cwd first on `sys.path`, and a `numpy.py` next to a
received session file would then run inside the workers. Python >= 3.11 has `-P` for that;
3.10 gets a `-c` bootstrap that drops `sys.path[0]` before running the module.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

#: the directory that holds the `workbench` package (a checkout's root, or site-packages)
PACKAGE_ROOT = Path(__file__).resolve().parents[2]

#: runs `sys.argv[1]` as `__main__` with the cwd ('' at sys.path[0] under -c) off the path
_SAFE_BOOTSTRAP = ("import sys, runpy; sys.path[:] = [p for p in sys.path if p not in ('', '.')]; "
                   "mod = sys.argv.pop(1); "
                   "runpy.run_module(mod, run_name='__main__', alter_sys=True)")


def module_command(module: str, *args: str, python: str | None = None) -> list[str]:
    """`python -m module args...` for a workbench module, without the cwd on `sys.path`."""
    exe = python or sys.executable
    if python is None and sys.version_info < (3, 11):
        return [exe, "-c", _SAFE_BOOTSTRAP, module, *args]
    if python is None:
        return [exe, "-P", "-m", module, *args]
    # another interpreter (version unknown here): the bootstrap works on every Python 3
    return [exe, "-c", _SAFE_BOOTSTRAP, module, *args]


def child_env(base: dict[str, str] | None = None, **extra: str) -> dict[str, str]:
    """The environment of a child process: `base` (default: ours) with the workbench package first
    on PYTHONPATH (and no empty or relative entries, which would mean the cwd), plus `extra`."""
    env = dict(os.environ if base is None else base)
    env.update(extra)
    rest = [p for p in env.get("PYTHONPATH", "").split(os.pathsep)
            if p and p != str(PACKAGE_ROOT) and os.path.isabs(p)]
    env["PYTHONPATH"] = os.pathsep.join([str(PACKAGE_ROOT), *rest])
    env["PYTHONSAFEPATH"] = "1"   # 3.11+: no cwd / script dir on sys.path, in grandchildren too
    return env


def output_spill_path(pid: int) -> str:
    """Where worker process `pid` keeps what native code prints during a step (`transform.print`, `print-ir`),
    read back when the step ends; when the worker dies mid-step (an MLIR assertion), its client reads the
    reason from here."""
    import tempfile

    return os.path.join(tempfile.gettempdir(), f"lh-workbench-worker-output-{pid}")
