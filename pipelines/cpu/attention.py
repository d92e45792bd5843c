"""Transform-dialect schedule for attention over long sequences on the CPU: the scores computed, normalized
and consumed one block of query rows at a time (pipelines/cpu/attention.py).

``attention_blocks(op=[pv, ..., qk], rows=R)``: torch's scaled_dot_product_attention in torch-mlir's form is
S = Q K^T (a batch contraction), a softmax chain over S's rows (max, exp, sum, the division) and O = P V.
Written as separate ops, S and P are B x N x N tensors (8 x 1500 x 1500 floats in Whisper's encoder: 72 MB
each) that go to memory and back several times. Here:
  1. the last op ``pv`` (the P V contraction: loops batch, rows, columns, keys) is tiled by one batch and
     ``rows`` query rows (``tile_using_forall``);
  2. every other op of ``op`` (the softmax chain, the Q K^T contraction and the fills of their inits, each
     after all its consumers in the list) is fused into that loop, so one iteration computes a rows x N
     block of the scores, its softmax and its rows of the output while the block is in L2;
  3. the loop is annotated to run serially (pipelines/cpu/finish.py makes it scf.for loops), or, with
     ``parallel=1``, stays a forall (tasks on the async runtime: the blocks split over the cores).
The ops stay on tensors with their ids: the selector's per-op steps after this one (the packed matmul
schedule of each contraction, the row chain of the softmax) schedule their tiles inside the loop.
"""
from __future__ import annotations

from generic import SERIAL_FORALL, _check_id, match_one
from workbench.common.transform_text import transform_module

#: the functions a session may call as generators (`file.py[gen=NAME]`); nothing else here is callable
GENERATORS = ["attention_blocks"]

PARAMS = {
    "op": {"help": "the op ids (`inspect`; lh.op, set by `rewrite tag-ops`): the P V contraction first, then the "
                   "ops to fuse into its row blocks, each after all its consumers in the list"},
    "rows": {"min": 0, "help": "query rows per block (0: all of them, the blocks one batch index each)"},
    "batch_dims": {"min": 1, "help": "leading batch loops of the P V contraction (tiled by 1)"},
    "parallel": {"min": 0, "max": 1, "help": "1: the blocks loop is a forall (tasks on the async runtime); 0: serial"},
}


def attention_blocks(op: list[str] = [], rows: int = 64, batch_dims: int = 1, parallel: int = 0) -> str:
    """The transform module (MLIR text): `op`[0] tiled by one batch and `rows` rows, the others fused in."""
    ids = [str(i) for i in op] if isinstance(op, (list, tuple)) else [str(op)]
    if len(ids) < 2:
        raise ValueError(f"op must list the P V contraction and the ops to fuse into it, got {op!r}")
    for i in ids:
        _check_id(i)
    if not isinstance(rows, int) or rows < 0:
        raise ValueError(f"rows must be a non-negative int, got {rows!r}")
    if not isinstance(batch_dims, int) or batch_dims < 1:
        raise ValueError(f"batch_dims must be a positive int, got {batch_dims!r}")
    if parallel not in (0, 1):
        raise ValueError(f"parallel must be 0 or 1, got {parallel!r}")
    a = "!transform.any_op"
    sizes = [1] * batch_dims + [rows, 0, 0]
    text = match_one(ids[0], "%sink")
    text += (f"    %t_sink, %forall0 = transform.structured.tile_using_forall %sink tile_sizes {sizes}"
             f" : ({a}) -> ({a}, {a})\n")
    for n, producer in enumerate(ids[1:]):
        text += match_one(producer, f"%p{n}")
        # (the slices of one producer that several ops read are the same after CSE: fused once)
        text += (f"    %fn{n} = transform.get_parent_op %forall{n} {{op_name = \"func.func\"}} : ({a}) -> {a}\n"
                 f"    transform.apply_cse to %fn{n} : {a}\n"
                 # (a slice of a slice becomes one: the padded Q K^T's result, read through the slice that drops
                 # its padding columns, is then read by the block's slice directly, which fusion follows)
                 f"    transform.apply_patterns to %fn{n} {{\n"
                 f"      transform.apply_patterns.tensor.merge_consecutive_insert_extract_slice\n"
                 f"    }} : {a}\n")
        text += (f"    %f{n}, %forall{n + 1} = transform.structured.fuse_into_containing_op %p{n} into %forall{n}"
                 f" : ({a}, {a}) -> ({a}, {a})\n")
    last = f"%forall{len(ids) - 1}"
    if not parallel:
        # (rows 0: no loop over the rows, whose one iteration the canonicalizations would fold away)
        text += f"    transform.annotate {last} \"{SERIAL_FORALL}{batch_dims + bool(rows)}\" : {a}\n"
    fn = "%attn_fn"
    text += (f"    {fn} = transform.get_parent_op {last} {{op_name = \"func.func\"}} : ({a}) -> {a}\n"
             f"    transform.apply_cse to {fn} : {a}\n")
    return transform_module(text)
