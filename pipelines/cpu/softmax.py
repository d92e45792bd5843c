"""Transform-dialect schedule for f32 row softmax (``linalg.softmax`` over the last dimension of a
2-D tensor with static shapes) on the CPU.

``softmax_rows(rows=..., vector=..., parallel=...)``:
  1. decomposes ``linalg.softmax`` (``decompose_interface``: max reduction, exp(x - max), sum
     reduction, division; the fills of the two reductions);
  2. tiles the division by ``rows`` rows with ``tile_using_forall`` and fuses the other four ops
     (and the fills) into the forall, so that one iteration does the whole softmax of ``rows`` rows
     while they are in L1/L2 (the input is read from memory once, the output written once);
  3. inside an iteration, splits both reductions along the row into ``vector``-wide partial
     results (``tile_reduction_using_for``: a loop of elementwise max / add into a rows x vector
     accumulator, then one combining reduction) and tiles exp and the division by ``vector``
     columns;
  4. vectorizes everything (``vector`` f32 per row and operation: 64 = four AVX-512 registers).

``parallel=1`` keeps the forall: ``cpu-softmax-lower`` turns it into ``scf.parallel`` and runs it on
MLIR's async runtime (``async-parallel-for`` cuts the rows into tasks); ``parallel=0`` makes it a
plain ``scf.for`` (one core). Lower with ``pipeline: cpu-softmax-lower``
(pipelines/cpu/softmax-lower.yaml), which runs ``lh-math-approx`` so that exp stays in vector
registers (LLVM would call libm ``expf`` per element).

Constraints (no remainder handling): rows | M, vector | N.
"""
from __future__ import annotations

from workbench.common.transform_text import transform_module

#: the functions a session may call as generators (`file.py[gen=NAME]`); nothing else here is callable
GENERATORS = ["softmax_rows"]

PAYLOAD_OP = "linalg.softmax"
PARAMS = {
    "rows": {"min": 1, "max": 1024, "space": [1, 2, 4, 8], "help": "rows per forall iteration (must divide M)"},
    "vector": {"min": 1, "max": 1024, "space": [16, 32, 64, 128], "help": "f32 per vector op along the row (must divide N)"},
    "parallel": {"choices": [0, 1], "help": "1: forall on the async runtime (all cores); 0: a sequential loop"},
    "op": {"help": "the id (`inspect`; lh.op, set by `rewrite tag-ops`) of the one softmax to schedule; empty: all"},
    "bufferize": {"help": "end with bufferization (false: stay on tensors; pipelines/cpu/finish.py bufferizes)"},
}


def softmax_rows(rows: int = 1, vector: int = 64, parallel: int = 1, op: str = "", bufferize: bool = True) -> str:
    """The transform module (MLIR text) scheduling every linalg.softmax of the payload."""
    for name, v in (("rows", rows), ("vector", vector)):
        if not isinstance(v, int) or v < 1:
            raise ValueError(f"{name} must be a positive int, got {v!r}")
    if parallel not in (0, 1):
        raise ValueError(f"parallel must be 0 or 1, got {parallel!r}")
    if op and not all(c.isalnum() or c in "_-." for c in op):
        raise ValueError(f"op must be an op id like softmax_0, got {op!r}")
    a = "!transform.any_op"
    match_attrs = f' attributes{{lh.op = "{op}"}}' if op else ""
    sequential = "" if parallel else (
        f'    %foralls = transform.structured.match ops{{["scf.forall"]}} in {"%b" if bufferize else "%root"} : ({a}) -> {a}\n'
        f'    transform.foreach %foralls : {a} {{\n    ^bb0(%fa: {a}):\n'
        f'      %seq = transform.loop.forall_to_for %fa : ({a}) -> {a}\n    }}\n')
    return transform_module(f"""    %all = transform.structured.match ops{{["linalg.softmax"]}}{match_attrs} in %root : ({a}) -> {a}
{_EXPECT_ONE if op else ""}    transform.foreach %all : {a} {{
    ^bb0(%sm: {a}):
      // 1. max, exp(x - max), sum, div (+ two fills); %div is the op that replaces the softmax
      %div = transform.structured.decompose_interface %sm : ({a}) -> {a}
      %sum = transform.get_producer_of_operand %div[1] : ({a}) -> {a}
      %exp = transform.get_producer_of_operand %div[0] : ({a}) -> {a}
      %max = transform.get_producer_of_operand %exp[1] : ({a}) -> {a}
      %fsum = transform.get_producer_of_operand %sum[1] : ({a}) -> {a}
      %fmax = transform.get_producer_of_operand %max[1] : ({a}) -> {a}
      // 2. rows x N tiles: the whole softmax of `rows` rows per iteration
      %tdiv, %forall = transform.structured.tile_using_forall %div tile_sizes [{rows}, 0]
          : ({a}) -> ({a}, {a})
      %tsum, %f1 = transform.structured.fuse_into_containing_op %sum into %forall : ({a}, {a}) -> ({a}, {a})
      %tfsum, %f2 = transform.structured.fuse_into_containing_op %fsum into %f1 : ({a}, {a}) -> ({a}, {a})
      %fn = transform.get_parent_op %f2 {{op_name = "func.func"}} : ({a}) -> {a}
      // the exp slices read by the sum and by the division are the same: one fused exp
      transform.apply_cse to %fn : {a}
      %texp, %f3 = transform.structured.fuse_into_containing_op %exp into %f2 : ({a}, {a}) -> ({a}, {a})
      %tmax, %f4 = transform.structured.fuse_into_containing_op %max into %f3 : ({a}, {a}) -> ({a}, {a})
      %tfmax, %f5 = transform.structured.fuse_into_containing_op %fmax into %f4 : ({a}, {a}) -> ({a}, {a})
      // 3. along the row: vector-wide partial reductions (accumulators in registers) and vector-wide
      //    tiles of the division; exp(x - max) is computed where it is used (in the sum loop and again in
      //    the division loop), so that no row of exp values is stored (no buffer, no copy)
      %pm_fill, %pm, %pm_comb, %pm_loop = transform.structured.tile_reduction_using_for %tmax
          by tile_sizes = [0, {vector}] : ({a}) -> ({a}, {a}, {a}, {a})
      %td, %td_loop = transform.structured.tile_using_for %tdiv tile_sizes [0, {vector}] : ({a}) -> ({a}, {a})
      %ps_fill, %ps, %ps_comb, %ps_loop = transform.structured.tile_reduction_using_for %tsum
          by tile_sizes = [0, {vector}] : ({a}) -> ({a}, {a}, {a}, {a})
      %e1, %l1 = transform.structured.fuse_into_containing_op %texp into %td_loop : ({a}, {a}) -> ({a}, {a})
      %slice = transform.get_producer_of_operand %ps[0] : ({a}) -> {a}
      %exp2 = transform.get_producer_of_operand %slice[0] : ({a}) -> {a}
      %e2, %l2 = transform.structured.fuse_into_containing_op %exp2 into %ps_loop : ({a}, {a}) -> ({a}, {a})
      // 4. vectorize the (now static, small) linalg ops of the softmax's function (only there: the
      //    benchmark wrapper's whole-tensor copy would become one huge vector); partial sums and maxima
      //    become loop-carried vectors
      %f = transform.get_parent_op %f5 {{op_name = "func.func"}} : ({a}) -> {a}
      %v = transform.structured.vectorize_children_and_apply_patterns %f : ({a}) -> {a}
      transform.apply_patterns to %v {{
        transform.apply_patterns.canonicalization
      }} : {a}
      transform.apply_cse to %v : {a}
      %loops = transform.structured.match ops{{["scf.for"]}} in %v : ({a}) -> {a}
      transform.loop.hoist_loop_invariant_subsets %loops : {a}
      transform.apply_patterns to %v {{
        transform.apply_patterns.vector.lower_multi_reduction lowering_strategy = "innerreduction"
        transform.apply_patterns.canonicalization
      }} : {a}
    }}
{_BUFFERIZE if bufferize else ""}{sequential}""")


_EXPECT_ONE = """    %count = transform.num_associations %all : (!transform.any_op) -> !transform.param<i64>
    %one = transform.param.constant 1 : i64 -> !transform.param<i64>
    // the op named by `op` must exist (`inspect` lists the ids)
    transform.match.param.cmpi eq %count, %one : !transform.param<i64>
"""
_BUFFERIZE = """    // 5. bufferize (the forall writes the output tiles in place); parallel=0: the forall becomes a loop
    %mod = transform.structured.match ops{["builtin.module"]} in %root : (!transform.any_op) -> !transform.any_op
    %b = transform.bufferization.one_shot_bufferize %mod {bufferize_function_boundaries = true, allow_return_allocs_from_loops = true,
        function_boundary_type_conversion = 1 : i32} : (!transform.any_op) -> !transform.any_op
    %fb = transform.structured.match ops{["func.func"]} in %b : (!transform.any_op) -> !transform.any_op
    transform.apply_patterns to %fb {
      transform.apply_patterns.canonicalization
    } : !transform.any_op
    transform.apply_cse to %fb : !transform.any_op
    transform.apply_patterns to %fb {
      transform.apply_patterns.canonicalization
    } : !transform.any_op
"""


def default_params(m: int, n: int, threads: int = 2) -> dict:
    """rows: 1 (a row of 4096 f32 is 16 KiB: it and its exp stay in L1); vector: the largest of
    64, 32, 16, ... dividing N; parallel when there is more than one core and more than one row."""
    vector = next(v for v in (64, 32, 16, 8, 4, 2, 1) if n % v == 0)
    return {"rows": 1, "vector": vector, "parallel": int(threads > 1 and m > 1)}
