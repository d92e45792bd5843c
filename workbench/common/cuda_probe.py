"""Is there a usable NVIDIA GPU here, and which compute capability? (ctypes only, no MLIR)

`libmlir_cuda_runtime.so` needs `libcuda.so.1` (the driver); where it is missing, building an
ExecutionEngine that links the runtime aborts the whole process. So every CUDA run asks this
probe first. The probe itself runs in a short-lived child process (`python -m
workbench.common.cuda_probe` prints one JSON line), so a broken driver cannot take the
caller down; the answer is cached per process. `$LH_WORKBENCH_LIBCUDA` names another driver
library (tests use it to simulate a machine without one).
"""
from __future__ import annotations

import ctypes
import json
import os
import subprocess

from workbench.common.spawn import child_env, module_command

LIBCUDA_ENV = "LH_WORKBENCH_LIBCUDA"
CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75
CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76
CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16

_cache: dict[str, dict] = {}


def libcuda_name() -> str:
    return os.environ.get(LIBCUDA_ENV) or "libcuda.so.1"


def probe_here() -> dict:
    """Probe in this process (the child of `probe()`, or a run worker before it links the runtime)."""
    name = libcuda_name()
    try:
        lib = ctypes.CDLL(name, mode=ctypes.RTLD_GLOBAL)
    except OSError as e:
        return {"ok": False, "reason": f"no CUDA driver: cannot load {name} ({e})"}

    def err(what: str, code: int) -> dict:
        s = ctypes.c_char_p()
        try:
            lib.cuGetErrorName(code, ctypes.byref(s))
        except Exception:
            pass
        return {"ok": False, "reason": f"{what} failed with {s.value.decode() if s.value else code}"}

    rc = lib.cuInit(0)
    if rc:
        return err("cuInit", rc)
    count = ctypes.c_int()
    rc = lib.cuDeviceGetCount(ctypes.byref(count))
    if rc:
        return err("cuDeviceGetCount", rc)
    if count.value < 1:
        return {"ok": False, "reason": "the CUDA driver sees no GPU"}
    dev = ctypes.c_int()
    rc = lib.cuDeviceGet(ctypes.byref(dev), 0)
    if rc:
        return err("cuDeviceGet", rc)
    major, minor, sms = ctypes.c_int(), ctypes.c_int(), ctypes.c_int()
    for attr, out in ((CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, major),
                      (CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, minor),
                      (CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, sms)):
        rc = lib.cuDeviceGetAttribute(ctypes.byref(out), attr, dev)
        if rc:
            return err("cuDeviceGetAttribute", rc)
    buf = ctypes.create_string_buffer(256)
    lib.cuDeviceGetName(buf, 256, dev)
    drv = ctypes.c_int()
    lib.cuDriverGetVersion(ctypes.byref(drv))
    return {"ok": True, "reason": f"{buf.value.decode()} (sm_{major.value}{minor.value}, {count.value} device(s))",
            "chip": f"sm_{major.value}{minor.value}", "name": buf.value.decode(), "devices": count.value,
            "multiprocessors": sms.value, "driver_version": drv.value, "libcuda": name}


def probe(timeout: float = 60.0) -> dict:
    """The probe's answer, computed once per process in a child process."""
    key = libcuda_name()
    if key in _cache:
        return _cache[key]
    try:
        p = subprocess.run(module_command("workbench.common.cuda_probe"), capture_output=True,
                           text=True, timeout=timeout, env=child_env(), stdin=subprocess.DEVNULL)
        lines = [ln for ln in p.stdout.splitlines() if ln.startswith("{")]
        if p.returncode == 0 and lines:
            answer = json.loads(lines[-1])
        else:
            tail = (p.stderr or p.stdout).strip().splitlines()[-1:] or [f"exit status {p.returncode}"]
            answer = {"ok": False, "reason": f"CUDA probe failed: {tail[0]}"}
    except subprocess.TimeoutExpired:
        answer = {"ok": False, "reason": f"CUDA probe hung for {timeout:.0f} s"}
    _cache[key] = answer
    return answer


DEFAULT_CHIP = "sm_90a"


def arch_specific(chip: str) -> str:
    """The arch-specific target of a compute capability that has one (sm_90 -> sm_90a: wgmma,
    setmaxnreg). Code for it runs only on that exact capability, which is what auto detection sees."""
    return chip + "a" if chip == "sm_90" else chip


def detected_chip() -> str | None:
    info = probe()
    return arch_specific(info["chip"]) if info.get("ok") and info.get("chip") else None


if __name__ == "__main__":
    print(json.dumps(probe_here()))
