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
