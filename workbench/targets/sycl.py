"""The SYCL target: GPU-dialect kernels -> SPIR-V, run on any SYCL device through dpctl.

The host side is not JIT-compiled: the compile worker lowers the module (kernels outlined into
`gpu.module`s, converted to SPIR-V and serialized into `gpu.binary` ops) and extracts the
binaries plus a host plan (allocations, copies, `gpu.launch_func`s) from the benchmark wrapper;
the SYCL run worker builds the programs with dpctl and replays the plan on a queue.
Without a GPU this runs on the OpenCL CPU device of the `sycl` extra (intel-opencl-rt).
"""
from __future__ import annotations

import os
from typing import Any, ClassVar

from workbench.targets.base import Target, output_specs, register

#: choose the device: a SYCL filter string such as "opencl:cpu" or "level_zero:gpu:0"
DEVICE_ENV = "LH_WORKBENCH_SYCL_DEVICE"


@register
class SyclTarget(Target):
    name = "sycl"
    description = "GPU-dialect kernels as SPIR-V on a SYCL device (dpctl); the OpenCL CPU device without a GPU"
    named_pipelines = {
        "sycl-lower": "sycl/lower.yaml",
        "sycl-gpu-map": "sycl/gpu-map.yaml",
        "spirv-kernels": "sycl/spirv-kernels.yaml",
    }
    default_lowering = "sycl-lower"
    run_artifact = "spirv-kernels"
    runtime_libraries = ()

    #: which devices this target accepts (None: any); `what` names them in messages
    device_type: ClassVar[str | None] = None
    device_vendor: ClassVar[str | None] = None
    device_what: ClassVar[str] = "SYCL"

    def device_spec(self) -> dict:
        return {"type": self.device_type, "vendor": self.device_vendor, "what": self.device_what,
                "filter": os.environ.get(DEVICE_ENV) or None}

    def matching_devices(self, devices: list[dict]) -> list[dict]:
        spec = self.device_spec()
        if spec["filter"]:
            f = spec["filter"].lower()
            return [d for d in devices if d["filter"].lower().startswith(f) or f == f"{d['backend']}:{d['type']}"]
        return [d for d in devices if (not self.device_type or d["type"] == self.device_type)
                and (not self.device_vendor or self.device_vendor.lower() in d["vendor"].lower())]

    def can_run(self) -> tuple[bool, str]:
        from workbench.common import sycl_devices

        probe = sycl_devices.probe_devices()
        if not probe["ok"]:
            return False, probe["error"]
        found = self.matching_devices(probe["devices"])
        if not found:
            return False, self.no_device_reason(probe["devices"])
        return True, sycl_devices.describe_devices(found[:1])

    def no_device_reason(self, devices: list[dict]) -> str:
        from workbench.common import sycl_devices

        spec = self.device_spec()
        if spec["filter"]:
            return f"no SYCL device matches {DEVICE_ENV}={spec['filter']} (devices: {sycl_devices.describe_devices(devices)})"
        if self.device_type:
            return (f"no {self.device_what} SYCL device (dpctl.get_devices(device_type='{self.device_type}') found "
                    f"none{' from ' + self.device_vendor if self.device_vendor else ''}; backends: "
                    f"{sycl_devices.backends(devices)})")
        return "dpctl found no SYCL device"

    def run_env(self, threads: int | None) -> dict[str, str]:
        from workbench.common import sycl_devices

        env = super().run_env(threads)
        env.update(sycl_devices.sycl_env())
        return env

    run_worker_module = "workbench.worker.sycl.run_worker"
    run_worker_name = "SYCL run worker"

    def run_request(self, artifact: Any, meta: dict, inputs: list, *, call: bool, bench: bool,
                    opt_level: int = 3) -> dict:
        """The host plan + SPIR-V kernels the SYCL worker executes through dpctl."""
        return {"plan": artifact, "device": self.device_spec(), "inputs": inputs,
                "outputs": output_specs(meta, meta["arg_specs"]),
                "call": call, "bench": bench, "warmup": meta.get("warmup", 0), "iterations": meta["iterations"],
                "calls_per_sample": meta.get("calls_per_sample", 1)}

    def select_params(self, info: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
        return []
