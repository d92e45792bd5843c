"""Transform-dialect schedules for reductions on NVIDIA GPUs (the cuda target): torch-mlir's
decomposed softmax / log_softmax / layer_norm / sums / means are linalg.generic reductions plus
elementwise ops.

``gpu_reduce(threads=..., rows=..., op=...)`` marks a reduction (every one, or op ``op`` by its id)
with ``lh.gpu_reduce = {threads, rows}``; after bufferization cuda-lower's ``rewrite: gpu-reductions``
(workbench/worker/cuda/reduce_kernels.py) makes it one kernel: ``rows`` rows per thread block, the
``threads`` threads of a row stride its reduction loop (coalesced when the reduction is the innermost
loop), partial results in registers, then a shared-memory tree. Ops the kernel cannot take (argmax's
two coupled results, ...) keep the naive mapping.

``select(rows, length)``: the selector's parameters for R rows of N reduced elements.
"""
from workbench.common.transform_text import transform_module

#: the functions a session may call as generators (`file.py[gen=NAME]`); nothing else here is callable
GENERATORS = ["gpu_reduce"]

PAYLOAD_OP = "linalg.generic"
PARAMS = {
    "threads": {"min": 1, "max": 1024, "help": "threads per row (a power of two): they stride the reduction loop"},
    "rows": {"min": 1, "max": 1024, "help": "rows per thread block (threads x rows <= 1024)"},
}
MARK = "lh.gpu_reduce"


def gpu_reduce(threads: int = 256, rows: int = 1, op: str = "") -> str:
    if threads < 1 or threads > 1024 or threads & (threads - 1):
        raise ValueError(f"threads={threads}: a power of two in [1, 1024]")
    if rows < 1 or rows * threads > 1024:
        raise ValueError(f"rows={rows}: rows x threads must be in [1, 1024]")
    if not all(ch.isalnum() or ch == "_" for ch in op):
        raise ValueError(f"op={op!r}: an op id such as generic_1")
    only = f' attributes{{lh.op = "{op}"}}' if op else ""
    return transform_module(f"""    %red = transform.structured.match ops{{["linalg.generic"]}}{only} in %root : (!transform.any_op) -> !transform.any_op
    %config = transform.param.constant {{threads = {threads} : i64, rows = {rows} : i64}} -> !transform.any_param
    transform.annotate %red "{MARK}" = %config : !transform.any_op, !transform.any_param
""")


def select(n_rows: int, length: int) -> dict | None:
    """threads: the reduced length rounded up to a power of two, 32 to 256 (a warp at least: short rows
    share a block, `rows` of them, 256 threads per block; long rows take 256 threads each). None where
    one thread per row (the naive mapping) does as well: rows of fewer than 8 elements."""
    if length < 8:
        return None
    threads = 32
    while threads < length and threads < 256:
        threads *= 2
    rows = max(1, min(256 // threads, n_rows))
    while rows & (rows - 1):
        rows -= 1
    return {"threads": threads, "rows": rows}
