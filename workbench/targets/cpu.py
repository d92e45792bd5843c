"""The CPU target: JIT through MLIR's ExecutionEngine on this host."""
from __future__ import annotations

import importlib.util
from typing import Any

from workbench.paths import LIBRARY_DIR
from workbench.targets import cpu_selector
from workbench.targets.base import Target, register


def _load_library_module(relative: str):
    """Import a module of the installed (trusted) schedule library, e.g. for its parameter selector."""
    path = LIBRARY_DIR / relative
    spec = importlib.util.spec_from_file_location(f"lh_library_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_HOST: dict | None = None


def host_info() -> dict[str, Any]:
    """What the CPU selector looks at: SIMD width (from /proc/cpuinfo flags), cache sizes (sysfs)."""
    global _HOST
    if _HOST is not None:
        return _HOST
    import os
    from pathlib import Path

    flags: set[str] = set()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("flags"):
                flags = set(line.split(":", 1)[1].split())
                break
    except OSError:
        pass
    vector_bits = 512 if "avx512f" in flags else 256 if "avx2" in flags or "avx" in flags else 128
    caches: dict[str, int] = {}
    for d in sorted(Path("/sys/devices/system/cpu/cpu0/cache").glob("index*")):
        try:
            level = (d / "level").read_text().strip()
            kind = (d / "type").read_text().strip()
            size = (d / "size").read_text().strip()
        except OSError:
            continue
        if kind == "Instruction":
            continue
        mult = {"K": 1 << 10, "M": 1 << 20}.get(size[-1:], 1)
        caches[f"l{level}_bytes"] = int(size.rstrip("KM")) * mult
    _HOST = {"vector_bits": vector_bits, "avx512": "avx512f" in flags, "cores": os.cpu_count() or 1,
             "l1_bytes": caches.get("l1_bytes", 32 << 10), "l2_bytes": caches.get("l2_bytes", 1 << 20),
             "l3_bytes": caches.get("l3_bytes", 0)}
    return _HOST


def _have_ukernel() -> bool:
    from workbench.common.ukernels import MissingLibrary, choose_abi

    try:
        choose_abi("auto")
        return True
    except MissingLibrary:
        return False


@register
class CpuTarget(Target):
    name = "cpu"
    description = "host CPU, JIT-compiled with MLIR's ExecutionEngine"
    named_pipelines = {
        "cpu-lower": "cpu/lower.yaml",
        "cpu-bufferize": "lib/bufferization.yaml",
        "llvm-lowering": "lib/llvm-lowering.yaml",
        "cpu-naive": "cpu/naive.yaml",
        "cpu-reference": "cpu/reference.yaml",
        "cpu-matmul-lower": "cpu/matmul-lower.yaml",
        "cpu-matmul-parallel-lower": "cpu/matmul-parallel-lower.yaml",
        "cpu-softmax-lower": "cpu/softmax-lower.yaml",
    }
    default_lowering = "cpu-lower"
    # the async runtime runs scf.parallel loops lowered by async-parallel-for (parallel schedules)
    runtime_libraries = ("mlir_c_runner_utils", "mlir_runner_utils", "mlir_async_runtime")

    #: the shipped matmul schedule and its parameter selector (pipelines/cpu/matmul.py)
    matmul_schedule = "cpu/matmul.py"
    matmul_generator = "matmul_tiling"

    #: the shipped softmax schedule (pipelines/cpu/softmax.py; lowered by cpu-softmax-lower)
    softmax_schedule = "cpu/softmax.py"
    softmax_generator = "softmax_rows"

    selector_name = "cpu-selector"

    def can_run(self) -> tuple[bool, str]:
        return True, "host CPU"

    #: the whole-module tail after per-op steps (bufferization, vector lowering): pipelines/cpu/finish.py
    finish_schedule = "cpu/finish.py"
    finish_generator = "bufferize_and_lower_vectors"

    def select_params(self, info: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
        """One entry per op the shipped schedules handle, each with its own shape's parameters (given
        the host's vector width and L2 size, `host_info`): f32 matmuls with static shapes -> the
        matmul schedule; 2-D f32 linalg.softmax -> the softmax schedule.

        A payload with one such op gets that schedule whole (it bufferizes itself: one step). With
        several, each entry targets its op by id (`op=`, on tensors: `bufferize=false`) and a last
        whole-module entry (pipelines/cpu/finish.py) bufferizes and lowers the vectors."""
        per_op = [entry for op in info.get("ops", []) for entry in self._select_op(op)]
        whole = (self.matmul_schedule, self.softmax_schedule)  # schedules that bufferize by themselves
        if len(per_op) == 1 and any(per_op[0][0].startswith(self.pipeline_path_for(w)) for w in whole):
            return [(spec, {k: v for k, v in params.items() if k != "op"}) for spec, params in per_op]
        entries = [(spec, dict(params, bufferize=False) if "bufferize" in self._schedule_params(spec) else params)
                   for spec, params in per_op]
        entries.append((f"{self.pipeline_path_for(self.finish_schedule)}[gen={self.finish_generator}]", {}))
        return entries

    def _schedule_params(self, spec: str) -> set[str]:
        return {"bufferize"} if any(spec.startswith(self.pipeline_path_for(w))
                                    for w in (self.matmul_schedule, self.softmax_schedule)) else set()

    def _select_op(self, op: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
        """The (spec, params) entries for one inspected op (none: no shipped schedule handles it)."""
        host = host_info()
        dims = op.get("dims") or {}
        if op["op"] == "linalg.matmul" and op.get("dtype") == "f32" and op.get("in_dtype") == "f32" and dims and all(v > 0 for v in dims.values()):
            library = _load_library_module(self.matmul_schedule)
            spec = f"{self.pipeline_path_for(self.matmul_schedule)}[gen={self.matmul_generator}]"
            params = library.default_params(dims["m"], dims["n"], dims["k"], vector_bits=host["vector_bits"],
                                            l2_bytes=host["l2_bytes"])
            if params["reg_n"] < host["vector_bits"] // 32 and _have_ukernel():
                # N is no multiple of a vector: codegen without remainder handling runs at scalar-ish
                # speed, so the configuration picks the microkernel (lowered by cpu-matmul-lower)
                params["impl"] = "ukernel"
            return [(spec, {**params, "op": op["id"]})]
        shape = op.get("shape") or []
        if (op["op"] == "linalg.softmax" and op.get("dtype") == "f32" and len(shape) == 2
                and all(d > 0 for d in shape)):
            # row softmax with static shapes: decomposed, row-parallel, vectorized along the row
            spec = f"{self.pipeline_path_for(self.softmax_schedule)}[gen={self.softmax_generator}]"
            softmax = _load_library_module(self.softmax_schedule)
            return [(spec, {**softmax.default_params(shape[0], shape[1], threads=host["cores"]), "op": op["id"]})]
        if op["op"] in cpu_selector.GROUPED_WITH_CONSUMER:
            return []  # an init of its consumer (matmul, reduction): scheduled there or lowered as a memset loop
        generic = cpu_selector.generic_params(op, host["vector_bits"], host["cores"])
        if generic is None:
            return []  # no loop structure (linalg.softmax of another rank, pack, ...): cpu-lower lowers it
        generic.pop("class")
        return [(f"{self.pipeline_path_for(cpu_selector.GENERIC_SCHEDULE)}[gen={cpu_selector.GENERIC_GENERATOR}]",
                 generic)]

    def extra_libraries(self, llvm: str) -> list[str]:
        """Microkernel libraries for the external BLAS functions the lowered module declares."""
        from workbench.common.ukernels import ABIS, libraries_for_symbols

        symbols = {d["symbol"] for d in ABIS.values() if f"@{d['symbol']}(" in llvm}
        return libraries_for_symbols(symbols)

    def run_env(self, threads: int | None) -> dict[str, str]:
        env = super().run_env(threads)
        # library calls (microkernels) run on as many threads as the generated code: 1 unless asked
        env["OPENBLAS_NUM_THREADS"] = str(threads or 1)
        return env

    @staticmethod
    def pipeline_path_for(relative: str) -> str:
        return f"pipelines/{relative}"
