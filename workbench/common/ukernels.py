"""Microkernel libraries (no MLIR import): the ABIs the `ukernel-calls` rewrite can target and
where their shared libraries are found at run time.

IREE's model: whether an op becomes a library call is decided at configuration time (the matmul
schedule's `impl=ukernel` marks the op with `lh.ukernel = "sgemm"`), the call itself is made late,
after bufferization (`rewrite: ukernel-calls`), and the run adds the library to the JIT's
shared libraries (`Target.extra_libraries`, from the external symbols the lowered module declares).

ABIs (cblas_sgemm argument lists; `int` is the library's integer width):
  openblas64  numpy's bundled OpenBLAS (numpy.libs/libscipy_openblas64_*.so), ILP64: scipy_cblas_sgemm64_
  cblas       a system CBLAS (Debian libopenblas / libblas), LP64: cblas_sgemm
"""
from __future__ import annotations

import ctypes.util
import glob
import importlib.util
import os
from pathlib import Path

ABIS = {
    "openblas64": {"symbol": "scipy_cblas_sgemm64_", "int": "i64", "threads_env": "OPENBLAS_NUM_THREADS"},
    "cblas": {"symbol": "cblas_sgemm", "int": "i32", "threads_env": "OPENBLAS_NUM_THREADS"},
}

class MissingLibrary(RuntimeError):
    pass


def _numpy_openblas() -> str | None:
    candidates: list[str] = []
    for pkg in ("numpy", "scipy_openblas64"):
        spec = importlib.util.find_spec(pkg)
        if spec is None or not spec.submodule_search_locations:
            continue
        root = Path(list(spec.submodule_search_locations)[0])
        candidates += glob.glob(str(root.parent / f"{pkg}.libs" / "libscipy_openblas64_*.so"))
        candidates += glob.glob(str(root / "lib" / "libscipy_openblas64_*.so"))
    return sorted(candidates)[0] if candidates else None


def _system_cblas() -> str | None:
    env = os.environ.get("LH_WORKBENCH_CBLAS")
    if env and os.path.isfile(env):
        return env
    for name in ("openblas", "cblas", "blis", "blas"):
        found = ctypes.util.find_library(name)
        if found:
            for d in ("/usr/lib/x86_64-linux-gnu", "/usr/lib64", "/usr/lib", "/usr/local/lib"):
                p = os.path.join(d, found)
                if os.path.isfile(p) and _has_symbol(p, "cblas_sgemm"):
                    return p
    return None


def _has_symbol(path: str, symbol: str) -> bool:
    try:
        return hasattr(ctypes.CDLL(path), symbol)
    except OSError:
        return False


def library_for_abi(abi: str) -> str:
    path = _numpy_openblas() if abi == "openblas64" else _system_cblas()
    if path is None:
        where = ("numpy.libs/libscipy_openblas64_*.so (numpy's bundled OpenBLAS)" if abi == "openblas64"
                 else "a system CBLAS (apt install libopenblas-dev) or $LH_WORKBENCH_CBLAS")
        raise MissingLibrary(f"microkernel library for {abi} not found: looked for {where}")
    return path


def choose_abi(library: str) -> str:
    """`auto` -> the first ABI whose library is present."""
    if library != "auto":
        if library not in ABIS:
            raise MissingLibrary(f"unknown microkernel library {library!r} (known: auto, {', '.join(ABIS)})")
        library_for_abi(library)
        return library
    for abi in ABIS:
        try:
            library_for_abi(abi)
            return abi
        except MissingLibrary:
            continue
    raise MissingLibrary("no microkernel library found (numpy's OpenBLAS or a system CBLAS)")


def libraries_for_symbols(symbols: set[str]) -> list[str]:
    """Shared libraries that define the external `symbols` a lowered module calls (known ABIs only)."""
    libs = []
    for abi, d in ABIS.items():
        if d["symbol"] in symbols:
            lib = library_for_abi(abi)
            if lib not in libs:
                libs.append(lib)
    return libs
