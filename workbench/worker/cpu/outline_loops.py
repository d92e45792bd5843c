"""Each top-level loop nest of a large function in a function of its own, kept out of line.

A model lowers to one entry function holding every op's loop nest in sequence: an unrolled LSTM
(128 time steps, ~1500 ops) gives a 200k-line LLVM function, and LLVM's O3 pipeline is superlinear
in function size (its JIT compile ran past 10 minutes). Outlined, each loop nest is a small function
that LLVM optimizes alone; `noinline` keeps the inliner from rebuilding the giant function (each
outlined function has a single call site). A call per loop nest costs nanoseconds.

`outline_loops(module, min_loops=N)`: functions with at least N top-level loop ops (scf.for,
scf.forall, scf.parallel, affine.for) get each of them outlined (transform.loop.outline, which
passes the values used from above as arguments); smaller functions are left alone.

AMX kernels, whatever the function's size: a function whose AMX tile ops (`amx.*`) lie in two or more
top-level ops gets each of those loop nests outlined. LLVM configures the eight tmm registers once per
function (one ldtilecfg: a register keeps one tile shape, rows x bytes, in the whole function; its
register allocator takes for a tile only a register that is free or holds that shape). Two AMX kernels
of other tile shapes in one function share the eight: a bf16 MobileNetV3 block's expand convolution
(A tiles 16x32 B, B tiles 8x64 B, result tiles 16x64 B) took six of them, its project convolution (four
16x64 B tiles live at once) had two left, and the JIT failed with "ran out of registers during register
allocation" (docs/models-round12-bf16.md). Each kernel alone fits (the schedules plan at most eight
live tiles); in a function of its own it gets its own tile configuration. A loop that reads a tile
defined outside it stays (a tile cannot be passed to a call).
"""
from __future__ import annotations

MARK = "lh.outline"
LOOP_OPS = ("scf.for", "scf.forall", "scf.parallel", "affine.for")
DEFAULT_MIN_LOOPS = 64
#: the dialect of the tile ops whose register shapes are configured per function
AMX_PREFIX = "amx."


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


def _holds_amx(op) -> bool:
    from workbench.worker.ir_walk import ops_where

    return bool(ops_where(op, lambda o: o.operation.name.startswith(AMX_PREFIX)))


def _reads_tile_from_outside(loop) -> bool:
    """Some op in `loop` reads an AMX tile defined outside it (outlined, the tile would be a call argument)."""
    from workbench.worker.ir_walk import ops_where

    for op in ops_where(loop, lambda o: o.operation.name.startswith(AMX_PREFIX)):
        for value in op.operation.operands:
            if "amx.tile" in str(value.type) and not _nested_in(value, loop):
                return True
    return False


def _nested_in(value, loop) -> bool:
    """`value` is defined in `loop` (an op result or block argument somewhere inside it)."""
    from mlir import ir

    owner = value.owner
    op = owner.owner if isinstance(owner, ir.Block) else owner
    op = op.operation if hasattr(op, "operation") else op
    while op is not None:
        if op == loop.operation:
            return True
        parent = op.parent
        op = parent.operation if parent is not None and hasattr(parent, "operation") else parent
    return False


def _amx_kernels(func) -> list:
    """The top-level loops of `func` holding AMX tile ops, where such ops lie in two or more of its top-level
    ops (module docstring); a loop that reads a tile from outside it is left in place."""
    holders = [op for block in func.regions[0].blocks for op in block.operations if _holds_amx(op)]
    if len(holders) < 2:
        return []
    return [op for op in holders if op.operation.name in LOOP_OPS and not _reads_tile_from_outside(op)]


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
            loops = _amx_kernels(func)
            if not loops:
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
