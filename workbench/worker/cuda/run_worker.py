"""The run worker for CUDA: the ordinary run worker plus the two things the MLIR CUDA runtime needs.

1. `libcuda.so.1` is loaded (and the GPU probed) *before* the ExecutionEngine links
   `libmlir_cuda_runtime.so`: without the driver that link aborts the process, with it missing
   we answer with a clear error instead.
2. The runtime wrappers (mgpuLaunchKernel, mgpuMemcpy, ...) report CUDA errors only by printing
   `'cuXxx(...)' failed with 'CUDA_ERROR_...'` to stderr and carry on. fd 2 is redirected to a
   file while the engine is built and called; any such line fails the run (the text is still
   echoed to the real stderr).
"""
from __future__ import annotations

import re
import sys

from workbench.common import cuda_probe
from workbench.worker.protocol import serve_requests
from workbench.worker.run_worker import handle_run
from workbench.worker.stderr_capture import captured_stderr

CUDA_ERROR = re.compile(r"failed with '(CUDA_ERROR_[A-Z_]+|<unknown>)'")


def handle_gpu_run(req: dict) -> dict:
    info = cuda_probe.probe_here()
    if not info["ok"]:
        return {"ok": False, "error": f"cannot run on the GPU: {info['reason']}"}
    with captured_stderr() as written:
        answer = handle_run(req)
    text = written[0]
    if text:
        sys.stderr.write(text)
        sys.stderr.flush()
    errors = [ln.strip() for ln in text.splitlines() if CUDA_ERROR.search(ln)]
    if errors and answer.get("ok"):
        more = f" (+{len(errors) - 1} more)" if len(errors) > 1 else ""
        return {"ok": False, "error": f"CUDA error in the runtime: {errors[0]}{more}",
                "diagnostics": "\n".join(errors[:50])}
    if answer.get("ok"):
        answer["device"] = info["reason"]
    return answer


def serve(fd: int) -> None:
    serve_requests(fd, handle_gpu_run)


if __name__ == "__main__":
    serve(int(sys.argv[1]))
