"""The CPU target: JIT through MLIR's ExecutionEngine on this host."""
from __future__ import annotations

import importlib.util
from typing import Any

from workbench.paths import LIBRARY_DIR
from workbench.targets.base import Target, register


def _load_library_module(relative: str):
    """Import a module of the installed (trusted) schedule library, e.g. for its parameter selector."""
    path = LIBRARY_DIR / relative
    spec = importlib.util.spec_from_file_location(f"lh_library_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@register
class CpuTarget(Target):
    name = "cpu"
    description = "host CPU, JIT-compiled with MLIR's ExecutionEngine"
    named_pipelines = {
        "cpu-lower": "cpu/lower.yaml",
        "cpu-bufferize": "lib/bufferization.yaml",
        "llvm-lowering": "lib/llvm-lowering.yaml",
        "cpu-naive": "cpu/naive.yaml",
        "cpu-matmul-lower": "cpu/matmul-lower.yaml",
        "cpu-matmul-parallel-lower": "cpu/matmul-parallel-lower.yaml",
    }
    default_lowering = "cpu-lower"
    # the async runtime runs scf.parallel loops lowered by async-parallel-for (parallel schedules)
    runtime_libraries = ("mlir_c_runner_utils", "mlir_runner_utils", "mlir_async_runtime")

    #: the shipped matmul schedule and its parameter selector (pipelines/cpu/matmul.py)
    matmul_schedule = "cpu/matmul.py"
    matmul_generator = "matmul_tiling"

    def can_run(self) -> tuple[bool, str]:
        return True, "host CPU"

    def select_params(self, info: dict[str, Any]) -> dict[str, dict[str, Any]]:
        """For each f32 matmul with static shapes: the matmul schedule's parameters for that shape."""
        library = _load_library_module(self.matmul_schedule)
        chosen: dict[str, dict[str, Any]] = {}
        for op in info.get("ops", []):
            dims = op.get("dims") or {}
            if op["op"] == "linalg.matmul" and op.get("dtype") == "f32" and all(v > 0 for v in dims.values()):
                spec = f"{self.pipeline_path_for(self.matmul_schedule)}[gen={self.matmul_generator}]"
                chosen.setdefault(spec, library.default_params(dims["m"], dims["n"], dims["k"]))
        return chosen

    @staticmethod
    def pipeline_path_for(relative: str) -> str:
        return f"pipelines/{relative}"
