"""Transform-dialect schedule for chains of row reductions and elementwise ops on NVIDIA GPUs (the cuda
target): softmax (max, exp-sum, normalize), log_softmax, layer_norm (mean, variance, normalize),
rms_norm as torch-mlir decomposes them, after the elementwise fusion of the target's preparation.

``gpu_rows(op=..., threads=..., rows=..., vector=..., group=...)`` marks the ops of one chain (their
ids, comma-separated) with ``lh.gpu_rows = {group, threads, rows, vector}``; after bufferization
cuda-lower's ``rewrite: gpu-reductions`` (workbench/worker/cuda/row_kernels.py) makes the chain ONE
kernel: ``rows`` rows per thread block, ``threads`` threads per row holding the row in registers
(``vector``-wide loads and stores), warp-shuffle reductions. A chain the kernel cannot take loses its
mark (its reductions keep their own single-reduction kernels).

``select(n_rows, length, innermost)``: the selector's parameters for R rows of N elements.
"""
from workbench.common.transform_text import transform_module

#: the functions a session may call as generators (`file.py[gen=NAME]`); nothing else here is callable
GENERATORS = ["gpu_rows"]

PAYLOAD_OP = "linalg.generic"
PARAMS = {
    "threads": {"min": 1, "max": 1024, "help": "threads per row (a power of two)"},
    "rows": {"min": 1, "max": 1024, "help": "rows per thread block (threads x rows <= 1024)"},
    "vector": {"min": 1, "max": 8, "help": "elements per load / store (a power of two dividing the innermost dim)"},
}
MARK = "lh.gpu_rows"
#: most elements of a row one thread holds (registers)
MAX_PER_THREAD = 64


def gpu_rows(op: str = "", threads: int = 256, rows: int = 1, vector: int = 4, group: int = 0) -> str:
    if threads < 1 or threads > 1024 or threads & (threads - 1):
        raise ValueError(f"threads={threads}: a power of two in [1, 1024]")
    if rows < 1 or rows * threads > 1024:
        raise ValueError(f"rows={rows}: rows x threads must be in [1, 1024]")
    if vector < 1 or vector > 8 or vector & (vector - 1):
        raise ValueError(f"vector={vector}: 1, 2, 4 or 8")
    ids = [i for i in op.split(",") if i]
    if not ids or not all(ch.isalnum() or ch == "_" for i in ids for ch in i):
        raise ValueError(f"op={op!r}: op ids such as generic_0,generic_1")
    text = f"""    %config = transform.param.constant {{group = {group} : i64, threads = {threads} : i64, rows = {rows} : i64, vector = {vector} : i64}} -> !transform.any_param
"""
    for k, i in enumerate(ids):
        text += f"""    %op{k} = transform.structured.match ops{{["linalg.generic"]}} attributes{{lh.op = "{i}"}} in %root : (!transform.any_op) -> !transform.any_op
    transform.annotate %op{k} "{MARK}" = %config : !transform.any_op, !transform.any_param
"""
    return transform_module(text)


def select(n_rows: int, length: int, innermost: int, elem_bytes: int = 4) -> dict | None:
    """vector: 16-byte loads of the chain's narrowest element type (4 f32, 8 f16 / bf16) where the
    innermost row dim allows, else fewer; threads: the row's vectors, at most 1024, at least a quarter of
    them (4 vectors a thread) or a warp; rows per block to make 256 threads. None where a thread would
    hold more than MAX_PER_THREAD elements."""
    widest = max(1, min(8, 16 // max(1, elem_bytes)))
    vector = next(v for v in (8, 4, 2, 1) if v <= widest and innermost % v == 0)
    vectors = -(-length // vector)

    def pow2(x):
        t = 1
        while t < x:
            t *= 2
        return t

    threads = min(1024, pow2(vectors), max(32, pow2(-(-vectors // 4))))
    per_thread = -(-vectors // threads) * vector
    if per_thread > MAX_PER_THREAD:
        return None
    rows = max(1, min(256 // threads, n_rows))
    return {"threads": threads, "rows": rows, "vector": vector}
