"""The text of a transform-dialect schedule module, written once for every schedule generator.

A generator (pipelines/**/*.py, run in the compile worker) builds the body of its entry sequence
and wraps it:

    from workbench.common.transform_text import transform_module
    return transform_module(body)                     # %root: !transform.any_op {transform.readonly}
    return transform_module(body, consumed=True)      # the body consumes %root (e.g. bufferization)
"""
from __future__ import annotations

ANY_OP = "!transform.any_op"
ENTRY = "__transform_main"


def transform_module(body: str, *, consumed: bool = False, entry: str = ENTRY, root: str = "root",
                     extra_sequences: str = "") -> str:
    """`module attributes {transform.with_named_sequence} { named_sequence @entry(%root) { body; yield } }`.

    `body` is the sequence's ops (indented by the caller, one per line, no `transform.yield`);
    `extra_sequences` are further named sequences (e.g. matchers for foreach_match), placed before it."""
    effect = "transform.consumed" if consumed else "transform.readonly"
    body = body.rstrip("\n")
    return (f"module attributes {{transform.with_named_sequence}} {{\n"
            f"{extra_sequences.rstrip(chr(10)) + chr(10) if extra_sequences else ''}"
            f"  transform.named_sequence @{entry}(%{root}: {ANY_OP} {{{effect}}}) {{\n"
            f"{body}\n"
            f"    transform.yield\n"
            f"  }}\n"
            f"}}\n")


#: the matcher sequences `step_region` uses (pass them to transform_module's `extra_sequences`)
STEP_REGION_MATCHERS = f"""  transform.named_sequence @lh_in_function_body(%op: {ANY_OP} {{transform.readonly}}) -> {ANY_OP} {{
    %parent = transform.get_parent_op %op : ({ANY_OP}) -> {ANY_OP}
    transform.match.operation_name %parent ["func.func"] : {ANY_OP}
    transform.yield %op : {ANY_OP}
  }}
  transform.named_sequence @lh_read_from_function_body(%op: {ANY_OP} {{transform.readonly}}) -> {ANY_OP} {{
    transform.match.operation_name %op ["tensor.extract_slice", "vector.transfer_read"] : {ANY_OP}
    %source = transform.get_producer_of_operand %op[0] : ({ANY_OP}) -> {ANY_OP}
    %parent = transform.get_parent_op %source : ({ANY_OP}) -> {ANY_OP}
    transform.match.operation_name %parent ["func.func"] : {ANY_OP}
    transform.yield %source : {ANY_OP}
  }}
  transform.named_sequence @lh_keep(%op: {ANY_OP} {{transform.readonly}}) -> {ANY_OP} {{
    transform.yield %op : {ANY_OP}
  }}
"""

#: how many enclosing loops of each kind `step_region` looks through
STEP_REGION_DEPTH = 8


def step_region(inner: str, result: str) -> str:
    """Transform ops binding `result` to the ops directly in a function's body that a per-op step made and
    changed: the loops (scf.for, scf.forall) holding the loops in `inner`, and the ops in the function's body
    whose results slices in those loops read (a packed operand's loops, which a step's canonicalization
    moves out of one-trip loops into the function's body). Its cleanups look there: the rest of the function
    is other steps' work, and a whole-function cleanup costs as much as the function, so each step cost
    more the larger the model. `inner` must outlive the canonicalizations (a loop of several trips: a
    one-trip loop folds away). Needs STEP_REGION_MATCHERS in the module."""
    name = result.lstrip("%")
    text = ""
    chain = []
    for kind in ("for", "forall"):
        previous = inner
        for depth in range(STEP_REGION_DEPTH):
            handle = f"%{name}_{kind}{depth}"
            text += (f'    {handle} = transform.get_parent_op {previous} {{op_name = "scf.{kind}", allow_empty_results}}'
                     f" : ({ANY_OP}) -> {ANY_OP}\n")
            chain.append(handle)
            previous = handle
    text += f"    %{name}_loops = transform.merge_handles {inner}, {', '.join(chain)} {{deduplicate}} : {ANY_OP}\n"
    # (restrict_root: each candidate is matched itself, not the ops nested in it)
    text += (f"    %{name}_walked, %{name}_top = transform.foreach_match restrict_root flatten_results in %{name}_loops"
             f" @lh_in_function_body -> @lh_keep : ({ANY_OP}) -> ({ANY_OP}, {ANY_OP})\n")
    text += (f"    %{name}_loops_top, %{name}_read = transform.foreach_match flatten_results in %{name}_top"
             f" @lh_read_from_function_body -> @lh_keep : ({ANY_OP}) -> ({ANY_OP}, {ANY_OP})\n")
    text += f"    {result} = transform.merge_handles %{name}_loops_top, %{name}_read {{deduplicate}} : {ANY_OP}\n"
    return text
