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


class NoPayloadSchedule(ValueError):
    """The payload has no script to run (or none with the entry asked for)."""


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


def named_sequences(module) -> list[str]:
    """The names of the `transform.named_sequence` ops at the module's top level and in its nested
    `transform.with_named_sequence` modules (where transform-interpreter looks for its entry)."""
    def in_block(block) -> list[str]:
        return [str(op.operation.attributes["sym_name"]).strip('"') for op in block.operations
                if op.operation.name == "transform.named_sequence"]
    names = in_block(module.body)
    for op in module.body.operations:
        if op.operation.name == "builtin.module" and WITH_NAMED_SEQUENCE in op.operation.attributes:
            names += in_block(op.operation.regions[0].blocks[0])
    return names


def legacy_sequences(module) -> list:
    """Top-level `transform.sequence` ops: the scripts of older upstream files (LLVM <= 17), which
    mlir-opt's -test-transform-dialect-interpreter ran on the module that holds them."""
    return [op for op in module.body.operations if op.operation.name == "transform.sequence"]


def apply_payload_schedule(module, entry: str = "__transform_main") -> None:
    """Run the payload's own named sequence `entry` on it (transform-interpreter), or, in an older file
    that has none, its top-level `transform.sequence` scripts in order; then erase its scripts.
    NoPayloadSchedule in one line when it has no such script (a failing script raises MLIR's own error:
    MLIRError from the pass, ValueError with its located diagnostics from the interpreter)."""
    from mlir.passmanager import PassManager

    if not schedules_of(module) and WITH_NAMED_SEQUENCE not in module.operation.attributes:
        raise NoPayloadSchedule("the payload holds no transform script (a `module attributes "
                         "{transform.with_named_sequence}` with `transform.named_sequence @__transform_main`)")
    names = named_sequences(module)
    legacy = legacy_sequences(module)
    if entry not in names and legacy:
        from mlir.dialects.transform import interpreter

        for sequence in legacy:
            interpreter.apply_named_sequence(module.operation, sequence.operation, module.operation)
    elif entry not in names:
        raise NoPayloadSchedule(f"the payload's transform script has no `transform.named_sequence @{entry}`"
                         + (f" (it has {', '.join('@' + n for n in names)}: pass lh-apply-payload-schedule{{entry=NAME}})"
                            if names else ""))
    else:
        PassManager.parse(f"builtin.module(transform-interpreter{{entry-point={entry}}})").run(module.operation)
    erase_schedules(module)
