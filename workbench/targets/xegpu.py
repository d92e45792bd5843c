"""The xegpu target: XeGPU schedules (upstream transform.xegpu.* ops and xegpu-* passes) for Intel
GPUs, run through the same dpctl runtime as `sycl`, on an Intel GPU only.

Pipelines: `xegpu-distribute` (work-group XeGPU -> subgroups -> lanes, inside the gpu.module),
`xegpu-lower` (that, then XeGPU -> XeVM -> LLVM kernels, inside the gpu.module),
`xegpu-binary` (SPIR-V device binaries through the llvm-spirv translator: the pinned wheels have no
LLVM SPIR-V backend for gpu-module-to-binary; workbench/worker/xegpu/spirv_binary.py).
The schedule is pipelines/xegpu/matmul.py[gen=xegpu_matmul] (f16 x f16 -> f32 with DPAS).
"""
from __future__ import annotations

from typing import Any

from workbench.targets.base import register
from workbench.targets.sycl import SyclTarget


@register
class XegpuTarget(SyclTarget):
    name = "xegpu"
    description = "Intel GPUs: XeGPU schedules lowered through XeVM, run with dpctl on an Intel GPU"
    named_pipelines = {
        "xegpu-distribute": "xegpu/distribute.yaml",
        "xegpu-lower": "xegpu/lower.yaml",
        "xegpu-binary": "xegpu/binary.yaml",
        "xegpu-run-lower": "xegpu/run-lower.yaml",
    }
    default_lowering = "xegpu-run-lower"
    device_type = "gpu"
    device_vendor = "Intel"
    device_what = "Intel GPU"

    matmul_schedule = "pipelines/xegpu/matmul.py"

    def select_params(self, info: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
        """f16 matmuls with static shapes: the XeGPU matmul schedule's parameters for that shape
        (one whole-module entry: the first matmul's)."""
        from workbench.targets.cpu import _load_library_module

        library = _load_library_module("xegpu/matmul.py")
        chosen: dict[str, dict[str, Any]] = {}
        for op in info.get("ops", []):
            dims = op.get("dims") or {}
            if op["op"] == "linalg.matmul" and op.get("dtype") == "f16" and dims and all(v > 0 for v in dims.values()):
                chosen.setdefault(f"{self.matmul_schedule}[gen=xegpu_matmul]",
                                  library.default_params(dims["m"], dims["n"], dims["k"]))
        return list(chosen.items())
