"""The SYCL run worker: SPIR-V kernels + a host plan, run through dpctl (no MLIR in this process).

`python -m workbench.worker.sycl.run_worker FD` serves run requests (started fresh per run by
`Target.execute` through `RunClient`, so a kernel that crashes or hangs the runtime takes only this process down);
`python -m workbench.worker.sycl.run_worker --probe` prints the SYCL devices as JSON (what
`probe_devices` runs, in a subprocess with a timeout, so listing targets never hangs).

Run request:
  {"op": "run", "plan": {"entry", "functions", "binaries"} (workbench/worker/sycl/spirv_kernels.py),
   "device": {"type": "gpu" | None, "vendor": "Intel" | None, "filter": str | None, "what": str},
   "inputs": [ndarray], "outputs": [{"shape", "dtype"}], "call": bool, "bench": bool,
   "warmup": int, "iterations": int, "calls_per_sample": int (each time the mean of that many calls)}
  -> {"ok", "args_after", "outputs", "times", "compile_s", "report": {"device", "timer", "wall_times_s"}}

Launch sizes: gpu.launch_func's grid (work-groups) x block (work-items per group), given to
SYCL as global = grid*block and local = block. SYCL's nd_range lists dimensions slowest first
(its last dimension is OpenCL/SPIR-V dimension 0, gpu's `x`), so both are passed reversed.
Times are per iteration of the wrapper's `_lh_call`: the sum of the device time of its kernels
and copies (SYCL event profiling), or host wall time where the queue cannot profile.
"""
from __future__ import annotations

import json
import sys
import time
import traceback

from workbench.common.dtypes import itemsize
from workbench.common.sycl_devices import backends




# -- worker side ------------------------------------------------------------------------------
def _device_record(d) -> dict:
    backend = str(d.backend).split(".")[-1]
    dtype = str(d.device_type).split(".")[-1]
    return {"name": d.name, "backend": backend, "type": dtype, "vendor": d.vendor,
            "filter": d.filter_string if hasattr(d, "filter_string") else f"{backend}:{dtype}"}


def _probe() -> dict:
    import dpctl

    return {"ok": True, "devices": [_device_record(d) for d in dpctl.get_devices()], "error": ""}


class RunFailure(Exception):
    pass


def select_device(spec: dict):
    import dpctl

    if spec.get("filter"):
        try:
            return dpctl.SyclDevice(spec["filter"])
        except Exception as e:
            raise RunFailure(f"no SYCL device matches {spec['filter']!r}: {e}")
    if spec.get("type"):
        found = dpctl.get_devices(device_type=spec["type"])
        vendor = spec.get("vendor")
        chosen = [d for d in found if not vendor or vendor.lower() in d.vendor.lower()]
        if not chosen:
            have = backends([_device_record(d) for d in dpctl.get_devices()])
            raise RunFailure(f"no {spec.get('what') or spec['type']} SYCL device (dpctl.get_devices(device_type="
                             f"'{spec['type']}') found {len(found)}{' from ' + vendor if vendor else ''}; "
                             f"backends: {have})")
        return chosen[0]
    try:
        return dpctl.select_default_device()
    except Exception as e:
        raise RunFailure(f"no SYCL device: {e}")


_CTYPES = {"index": "c_int64", "i64": "c_int64", "i32": "c_int32", "i16": "c_int16", "i8": "c_int8",
           "i1": "c_uint8", "f32": "c_float", "f64": "c_double"}


class PlanRunner:
    """Interprets the host plan on one queue: buffers are USM device allocations."""

    def __init__(self, plan: dict, queue):
        import dpctl.program as dpprog

        self.plan = plan
        self.q = queue
        self.kernels: dict[tuple[str, str], object] = {}
        self.events: list = []
        self.keep: list = []
        t0 = time.perf_counter()
        programs = {}
        for name, b in plan["binaries"].items():
            try:
                programs[name] = dpprog.create_program_from_spirv(queue, b["data"], "")
            except Exception as e:
                raise RunFailure(f"the device rejected the SPIR-V of @{name}: {str(e).splitlines()[0] if str(e) else type(e).__name__}")
        for fn in plan["functions"].values():
            for o in fn["ops"]:
                if o["op"] == "launch":
                    key = (o["binary"], o["kernel"])
                    if key not in self.kernels:
                        prog = programs[o["binary"]]
                        if not prog.has_sycl_kernel(o["kernel"]):
                            raise RunFailure(f"SPIR-V module @{o['binary']} has no kernel {o['kernel']!r}")
                        self.kernels[key] = prog.get_sycl_kernel(o["kernel"])
        self.compile_s = time.perf_counter() - t0

    # buffers -----------------------------------------------------------------------------------
    def device_buffer(self, nbytes: int):
        import dpctl.memory as dpmem

        mem = dpmem.MemoryUSMDevice(max(int(nbytes), 1), queue=self.q)
        self.keep.append(mem)
        return mem

    def upload(self, arr):
        import numpy as np

        arr = np.ascontiguousarray(arr)
        mem = self.device_buffer(arr.nbytes)
        if arr.nbytes:
            self.q.memcpy(mem, arr, arr.nbytes)
        return {"mem": mem, "nbytes": arr.nbytes}

    def download(self, buf, shape, dtype):
        import numpy as np

        from workbench.common.dtypes import dtype_by_name

        out = np.empty(shape, dtype=dtype_by_name(dtype) if isinstance(dtype, str) else dtype)
        if out.nbytes:
            self.q.memcpy(out, buf["mem"], out.nbytes)
        return out

    # interpretation --------------------------------------------------------------------------------
    def call(self, name: str, args: list):
        import ctypes

        import numpy as np

        fn = self.plan["functions"][name]
        env = dict(zip(fn["args"], args))
        for o in fn["ops"]:
            kind = o["op"]
            if kind == "const":
                env[o["result"]] = o["value"]
            elif kind == "alloc":
                n = int(np.prod(o["shape"], dtype=np.int64)) * itemsize(o["dtype"])
                env[o["result"]] = {"mem": self.device_buffer(n), "nbytes": n}
            elif kind == "alias":
                env[o["result"]] = env[o["operand"]]
            elif kind == "dealloc":
                pass  # freed when the iteration's buffers are released (after the queue drained)
            elif kind == "copy":
                src, dst = env[o["src"]], env[o["dst"]]
                if src["nbytes"]:
                    self.events.append(self.q.memcpy_async(dst["mem"], src["mem"], src["nbytes"]))
            elif kind == "wait":
                self.q.wait()
            elif kind == "launch":
                self.events.append(self._launch(o, env, ctypes))
            elif kind == "call":
                results = self.call(o["callee"], [env[v] for v in o["operands"]])
                env.update(zip(o["results"], results))
            elif kind == "return":
                return [env[v] for v in o["operands"]]
        return []

    def _launch(self, o: dict, env: dict, ctypes):
        grid = [int(env[v]) for v in o["grid"]]
        block = [int(env[v]) for v in o["block"]]
        if o.get("shared_bytes") is not None and int(env[o["shared_bytes"]]):
            raise RunFailure("kernels with dynamic shared memory are not supported by the SYCL runtime")
        args = []
        for v, kind in zip(o["args"], o["arg_kinds"]):
            if kind == "ptr":
                args.append(env[v]["mem"])
            else:
                args.append(getattr(ctypes, _CTYPES[kind])(env[v]))
        gs = [g * b for g, b in zip(grid, block)][::-1]
        ls = block[::-1]
        try:
            return self.q.submit_async(self.kernels[(o["binary"], o["kernel"])], args, gs, ls)
        except Exception as e:
            raise RunFailure(f"launching {o['binary']}::{o['kernel']} (grid {grid}, block {block}) failed: "
                             f"{str(e).splitlines()[0] if str(e) else type(e).__name__}")

    def iteration(self, args: list) -> tuple[float, float | None]:
        """One `_lh_call`: (wall seconds, device seconds or None)."""
        self.events = []
        t0 = time.perf_counter()
        self.call(self.plan["entry"], args)
        self.q.wait()
        wall = time.perf_counter() - t0
        device = None
        try:
            device = sum(e.profiling_info_end - e.profiling_info_start for e in self.events) * 1e-9
        except Exception:
            device = None
        self.events = []
        return wall, device


def handle_run(req: dict) -> dict:
    import dpctl
    import numpy as np

    from workbench.worker.protocol import compiled
    from workbench.worker.run_worker import output_buffers

    try:
        device = select_device(req.get("device") or {})
        try:
            queue = dpctl.SyclQueue(device, property=["enable_profiling", "in_order"])
        except Exception:
            queue = dpctl.SyclQueue(device, property="in_order")
        runner = PlanRunner(req["plan"], queue)
        compiled(compile_s=runner.compile_s)   # the run's time limit starts now (workbench/worker/protocol.py)
        inputs = [np.ascontiguousarray(a) for a in req["inputs"]]
        out_specs = req.get("outputs") or []
        answer: dict = {"ok": True, "compile_s": runner.compile_s,
                        "report": {"device": f"{device.name} ({_device_record(device)['filter']})"}}

        def buffers():
            bufs = [runner.upload(a) for a in inputs]
            outs = [runner.upload(b) for b in output_buffers(out_specs)]
            return bufs, outs

        if req.get("call"):
            bufs, outs = buffers()
            runner.iteration(bufs + outs)
            answer["args_after"] = [runner.download(b, a.shape, a.dtype) for b, a in zip(bufs, inputs)]
            answer["outputs"] = [runner.download(b, o["shape"], o["dtype"]) for b, o in zip(outs, out_specs)]
        if req.get("bench"):
            bufs, outs = buffers()
            for _ in range(int(req.get("warmup", 0))):
                runner.iteration(bufs + outs)
            wall, dev = [], []
            # a sample is the mean of `calls_per_sample` calls (each waits for its kernels here: the
            # SYCL plan has no host-side stream to leave unsynchronized)
            calls = max(1, int(req.get("calls_per_sample", 1)))
            for _ in range(int(req["iterations"])):
                sample = [runner.iteration(bufs + outs) for _ in range(calls)]
                wall.append(sum(w for w, _ in sample) / calls)
                dev.append(None if any(d is None for _, d in sample) else sum(d for _, d in sample) / calls)
            profiled = all(d is not None and d > 0 for d in dev)
            answer["times"] = dev if profiled else wall
            answer["report"].update(timer="device (SYCL event profiling: kernels + copies)" if profiled
                                    else "host wall clock", wall_times_s=wall)
        runner.keep.clear()
        return answer
    except RunFailure as e:
        return {"ok": False, "error": str(e)}
    except Exception as e:
        return {"ok": False, "error": f"{type(e).__name__}: {e}".splitlines()[0], "diagnostics": traceback.format_exc()}


def serve(fd: int) -> None:
    from workbench.worker.protocol import serve_requests

    serve_requests(fd, handle_run)


if __name__ == "__main__":
    if sys.argv[1:] == ["--probe"]:
        try:
            print(json.dumps(_probe()))
        except Exception as e:
            print(json.dumps({"ok": False, "devices": [], "error": f"{type(e).__name__}: {e}".splitlines()[0]}))
    else:
        serve(int(sys.argv[1]))
