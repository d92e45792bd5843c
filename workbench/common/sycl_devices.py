"""SYCL devices and environment, seen from the session side (no MLIR, no dpctl in this process).

`probe_devices` asks a child process (`python -m workbench.worker.sycl.run_worker --probe`, with a
timeout, so listing targets never hangs) which SYCL devices dpctl sees; `sycl_env` is the
environment every process that loads the SYCL runtime needs.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from functools import lru_cache
from pathlib import Path

from workbench.common.spawn import child_env, module_command

PROBE_TIMEOUT_S = 30.0
OPENCL_CPU_LIBRARY = "libintelocl.so"


def find_opencl_cpu_runtime() -> str | None:
    """Intel's OpenCL CPU runtime shipped by the intel-opencl-rt wheel (in the environment's lib/)."""
    for prefix in dict.fromkeys([sys.prefix, sys.base_prefix, os.path.dirname(os.path.dirname(sys.executable))]):
        p = Path(prefix) / "lib" / OPENCL_CPU_LIBRARY
        if p.exists():
            return str(p)
    return None


def sycl_env() -> dict[str, str]:
    """Environment for processes that load the SYCL runtime: the wheel's .icd file names a build
    prefix that does not exist, so the OpenCL ICD loader is pointed at the library directly
    (only when the user has not set OCL_ICD_FILENAMES)."""
    env: dict[str, str] = {}
    if not os.environ.get("OCL_ICD_FILENAMES"):
        lib = find_opencl_cpu_runtime()
        if lib:
            env["OCL_ICD_FILENAMES"] = lib
    return env


def dpctl_installed() -> bool:
    import importlib.util

    return importlib.util.find_spec("dpctl") is not None


@lru_cache(maxsize=1)
def probe_devices(timeout: float = PROBE_TIMEOUT_S) -> dict:
    """{"ok", "devices": [{"name", "backend", "type", "vendor", "filter"}], "error"} (cached per process)."""
    if not dpctl_installed():
        return {"ok": False, "devices": [], "error": "dpctl is not installed (pip install 'lh-workbench[sycl]')"}
    env = child_env(**sycl_env())
    try:
        proc = subprocess.run(module_command("workbench.worker.sycl.run_worker", "--probe"),
                              capture_output=True, text=True, timeout=timeout, env=env, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        return {"ok": False, "devices": [], "error": f"probing SYCL devices timed out after {timeout:g} s"}
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if proc.returncode != 0 or not lines:
        tail = (proc.stderr.strip().splitlines() or [f"exit status {proc.returncode}"])[-1]
        return {"ok": False, "devices": [], "error": f"probing SYCL devices failed: {tail}"}
    return json.loads(lines[-1])


def describe_devices(devices: list[dict]) -> str:
    return ", ".join(f"{d['filter']} ({d['name']})" for d in devices) or "none"


def backends(devices: list[dict]) -> str:
    return ", ".join(dict.fromkeys(f"{d['backend']}:{d['type']}" for d in devices)) or "none"
