"""The CPU target: JIT through MLIR's ExecutionEngine on this host."""
from __future__ import annotations

from workbench.targets.base import Target, register


@register
class CpuTarget(Target):
    name = "cpu"
    description = "host CPU, JIT-compiled with MLIR's ExecutionEngine"
    named_pipelines = {
        "cpu-lower": "cpu/lower.yaml",
        "cpu-bufferize": "lib/bufferization.yaml",
        "llvm-lowering": "lib/llvm-lowering.yaml",
        "cpu-naive": "cpu/naive.yaml",
    }
    default_lowering = "cpu-lower"

    def can_run(self) -> tuple[bool, str]:
        return True, "host CPU"
