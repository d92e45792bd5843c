"""Worker-side rewrites (the `rewrite` step kind): Python rewrites of the payload for which no MLIR
pass exists, run by the compile worker. This module holds their names and parameter schemas (no
MLIR import, so the step layer can validate parameters); workbench/worker/rewrites.py runs them.

Both follow IREE's microkernel model: a schedule decides at configuration time and marks the op,
the rewrite lowers the marked op after bufferization.
"""
from __future__ import annotations

from workbench.common.ukernels import ABIS


class RewriteError(RuntimeError):
    pass


#: name -> help, parameters (ParamSpec fields), implementation ("module:function(module, **params)")
REWRITES = {
    "tag-ops": {
        "help": "give every linalg op without one a stable id `lh.op = \"<kind>_<index>\"` (what per-op "
                "schedules match with their `op` parameter; `inspect` shows the ids)",
        "params": {},
        "impl": "workbench.worker.op_ids:tag_ops",
    },
    "ukernel-calls": {
        "help": "replace ops marked lh.ukernel = \"sgemm\" (f32 linalg.matmul on memrefs) by cblas sgemm calls",
        "params": {"library": {"type": "str", "default": "auto", "choices": ["auto", *ABIS],
                               "help": "auto: numpy's OpenBLAS (ILP64), else a system CBLAS"}},
        "impl": "workbench.worker.cpu.ukernel_rewrite:ukernel_calls",
    },
    "gpu-reductions": {
        "help": "replace linalg.generic reductions marked lh.gpu_reduce (on memrefs) by row-reduction kernels: "
                "threads striding each row, partials in registers, a shared-memory tree",
        "params": {},
        "impl": "workbench.worker.cuda.reductions:rewrite_marked",
    },
    "gpu-transposes": {
        "help": "replace linalg.transposes of the last two dims (on memrefs, in host code) by a shared-memory "
                "transpose kernel: 32 x 32 tiles, coalesced reads and writes",
        "params": {},
        "impl": "workbench.worker.cuda.transpose_kernel:rewrite_transposes",
    },
    "simt-kernels": {
        "help": "replace f32 linalg.matmuls marked lh.simt_tiles (on memrefs) by generated CUDA-core kernels: "
                "shared-memory tiles, register tiles of FMAs, guarded edges",
        "params": {},
        "impl": "workbench.worker.cuda.simt_matmul:rewrite_marked",
    },
    "wgmma-kernels": {
        "help": "replace f16 linalg.matmuls marked lh.wgmma (on memrefs) by generated sm_90 TMA + wgmma kernels",
        "params": {},
        "impl": "workbench.worker.cuda.wgmma_matmul:rewrite_marked",
    },
}
