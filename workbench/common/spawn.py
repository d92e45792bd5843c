"""How every child Python process of the workbench is started (workers, probes, MPI ranks).

One place builds the command line and the environment, so that every child sees the same
package (this checkout or the installed wheel) first on its path.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

#: the directory that holds the `workbench` package (a checkout's root, or site-packages)
PACKAGE_ROOT = Path(__file__).resolve().parents[2]


def module_command(module: str, *args: str, python: str | None = None) -> list[str]:
    """`python -m module args...` for a workbench module."""
    return [python or sys.executable, "-m", module, *args]


def child_env(base: dict[str, str] | None = None, **extra: str) -> dict[str, str]:
    """The environment of a child process: `base` (default: ours) with the workbench package first
    on PYTHONPATH, plus `extra`."""
    env = dict(os.environ if base is None else base)
    env.update(extra)
    rest = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p and p != str(PACKAGE_ROOT)]
    env["PYTHONPATH"] = os.pathsep.join([str(PACKAGE_ROOT), *rest])
    return env
