"""A payload's own transform script: upstream test files carry the schedule next to the code it
transforms (`module attributes {transform.with_named_sequence} { transform.named_sequence
@__transform_main ... }`, or a top-level `transform.sequence` in older files).

`lh-apply-payload-schedule` runs it as one step (upstream's `transform-interpreter`) and erases it;
`erase_schedules` (also run by `lh-frontend-to-linalg`, the first stage of every lowering, of the
check's reference and of `select`) drops it as mlir-opt's `-test-transform-dialect-erase-schedule`
does, so a payload that carries one lowers and runs, scheduled by it or not.
"""
from __future__ import annotations

WITH_NAMED_SEQUENCE = "transform.with_named_sequence"


def is_schedule(op) -> bool:
    """A top-level op that is a transform script: a module marked `transform.with_named_sequence`, or a
    transform-dialect op (`transform.sequence`, `transform.named_sequence`) written at the top level."""
    op = op.operation
    if op.name == "builtin.module":
        return WITH_NAMED_SEQUENCE in op.attributes
    return op.name.startswith("transform.")


def schedules_of(module) -> list:
    return [op for op in module.body.operations if is_schedule(op)]


def erase_schedules(module) -> int:
    """Erase the module's transform scripts; how many there were. The payload module itself keeps its
    `transform.with_named_sequence` attribute only if it had no nested script (mlir-opt leaves it too)."""
    found = schedules_of(module)
    for op in found:
        op.operation.erase()
    return len(found)


def apply_payload_schedule(module, entry: str = "__transform_main") -> None:
    """Run the payload's own named sequence `entry` on it (transform-interpreter), then erase its
    scripts; ValueError in one line when it has none."""
    from mlir.passmanager import PassManager

    if not schedules_of(module) and WITH_NAMED_SEQUENCE not in module.operation.attributes:
        raise ValueError("the payload holds no transform script (a `module attributes "
                         "{transform.with_named_sequence}` with `transform.named_sequence @__transform_main`)")
    PassManager.parse(f"builtin.module(transform-interpreter{{entry-point={entry}}})").run(module.operation)
    erase_schedules(module)
