"""Transform-dialect schedule for row softmax (``linalg.softmax``, or its decomposition) on
NVIDIA GPUs (the cuda target).

``softmax_rows(rows_per_block=...)``: decomposes ``linalg.softmax`` (max, exp(x - max), sum,
divide), bufferizes, and gives each of the resulting ops (fills included) its own kernel: a
block handles ``rows_per_block`` rows, one thread per row walks the row. Simple and correct;
the row reductions are sequential per thread (the cuda target's first softmax schedule).
"""
from workbench.common.transform_text import transform_module


#: the functions a session may call as generators (`file.py[gen=NAME]`); nothing else here is callable
GENERATORS = ["softmax_rows"]

PAYLOAD_OP = "linalg.softmax"
PARAMS = {
    "rows_per_block": {"divides": "M", "min": 1, "max": 1024, "help": "rows per thread block (= threads per block)"},
}


def softmax_rows(rows_per_block: int = 32) -> str:
    if rows_per_block < 1 or rows_per_block > 1024:
        raise ValueError("rows_per_block must be in [1, 1024]")
    r = rows_per_block
    return transform_module(f"""    %sm = transform.structured.match ops{{["linalg.softmax"]}} in %root : (!transform.any_op) -> !transform.any_op
    %d = transform.structured.decompose_interface %sm : (!transform.any_op) -> !transform.any_op
    %b = transform.bufferization.one_shot_bufferize %root {{bufferize_function_boundaries = true,
        function_boundary_type_conversion = 1 : i32}} : (!transform.any_op) -> !transform.any_op
    %funcs = transform.structured.match ops{{["func.func"]}} in %b : (!transform.any_op) -> !transform.any_op
    %ops = transform.structured.match ops{{["linalg.generic", "linalg.fill"]}} in %b : (!transform.any_op) -> !transform.any_op
    transform.foreach %ops : !transform.any_op {{
    ^bb0(%op: !transform.any_op):
      %t, %fb = transform.structured.tile_using_forall %op tile_sizes [{r}]
          (mapping = [#gpu.block<x>]) : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
      %t2, %ft = transform.structured.tile_using_forall %t tile_sizes [1]
          (mapping = [#gpu.thread<x>]) : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
      %gl = transform.gpu.map_forall_to_blocks %fb generate_gpu_launch : (!transform.any_op) -> !transform.any_op
      %m = transform.gpu.map_nested_forall_to_threads %gl block_dims = [{r}, 1, 1]
          : (!transform.any_op) -> !transform.any_op
    }}
""", consumed=True)
