"""Each top-level loop nest of a large function in a function of its own, kept out of line.

A model lowers to one entry function holding every op's loop nest in sequence: an unrolled LSTM
(128 time steps, ~1500 ops) gives a 200k-line LLVM function, and LLVM's O3 pipeline is superlinear
in function size (its JIT compile ran past 10 minutes). Outlined, each loop nest is a small function
that LLVM optimizes alone; `noinline` keeps the inliner from rebuilding the giant function (each
outlined function has a single call site). A call per loop nest costs nanoseconds.

`outline_loops(module, min_loops=N)`: functions with at least N top-level loop ops (scf.for,
scf.forall, scf.parallel, affine.for) get each of them outlined (transform.loop.outline, which
passes the values used from above as arguments); smaller functions are left alone.
"""
from __future__ import annotations

MARK = "lh.outline"
LOOP_OPS = ("scf.for", "scf.forall", "scf.parallel", "affine.for")
DEFAULT_MIN_LOOPS = 64


def _schedule(names: list[str]) -> str:
    """Transform ops outlining the loop marked `lh.outline = "<i>"` into function names[i]
    (transform.loop.outline does not make names unique: one op per loop, each with its own name)."""
    a = "!transform.any_op"
    body = ['    %noinline = transform.param.constant ["noinline"] -> !transform.any_param']
    for i, name in enumerate(names):
        body += [f'    %l{i} = transform.structured.match attributes{{{MARK} = "{i}"}} in %root : ({a}) -> {a}',
                 f'    %f{i}, %c{i} = transform.loop.outline %l{i} {{func_name = "{name}"}} : ({a}) -> ({a}, {a})',
                 f'    transform.annotate %f{i} "passthrough" = %noinline : {a}, !transform.any_param']
    return "\n".join(body) + "\n"


def outline_loops(module, min_loops: int = DEFAULT_MIN_LOOPS) -> int:
    """Outline the top-level loops of every function with at least `min_loops` of them; how many."""
    from mlir import ir

    from workbench.worker.ir_walk import apply_transform, symbol_names

    taken = symbol_names(module)
    names: list[str] = []
    for func in list(module.body.operations):
        if func.operation.name != "func.func" or not func.regions[0].blocks:
            continue
        loops = [op for block in func.regions[0].blocks for op in block.operations
                 if op.operation.name in LOOP_OPS]
        if len(loops) < min_loops:
            continue
        base = ir.StringAttr(func.attributes["sym_name"]).value
        for loop in loops:
            name = f"{base}_loop{len(names)}"
            while name in taken:
                name += "_"
            taken.add(name)
            loop.operation.attributes[MARK] = ir.StringAttr.get(str(len(names)))
            names.append(name)
    if not names:
        return 0
    apply_transform(module, _schedule(names))
    for func in module.body.operations:   # each marked loop now opens a function of its own
        for block in (func.regions[0].blocks if func.operation.regions else ()):
            for op in block.operations:
                if MARK in op.operation.attributes:
                    del op.operation.attributes[MARK]
    return len(names)
