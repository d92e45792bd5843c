"""Long reductions of the check's reference (cpu-reference) summed in two levels.

The reference lowers each linalg op to plain loops, so a reduction is one running accumulator: a
16M-element f32 loss sum drifts by 1-3% that way, more than the check's tolerance, while the
scheduled code (partial vectors, chunked: pipelines/cpu/generic.py) and torch (pairwise) agree
within 1e-5. A reference must not be the least accurate of the three.

`split_long_reductions(module)`: every linalg.generic with one floating-point result, projected
maps and at least MIN_REDUCED reduced elements per output gets its innermost reduction loop split
into CHUNK interleaved partial accumulators (transform.structured.tile_reduction_using_for: a
partial tensor, the op accumulating into it, a combining op), so each accumulator sums
reduced/CHUNK terms and the combination CHUNK more, instead of `reduced` in one. Ops it cannot
split (no recognised combiner) are left as they were.
"""
from __future__ import annotations

CHUNK = 4096
MIN_REDUCED = 1 << 15
#: partial accumulators in all (outputs x chunk): the reference's extra memory stays under 16 MB
MAX_PARTIALS = 1 << 22
MARK = "lh.reference_split"
FLOATS = ("f32", "f16", "bf16")


def _plan(op) -> list[int] | None:
    """Tile sizes for tile_reduction_using_for (the innermost reduction loop), or None."""
    from mlir import ir

    from workbench.worker.payload_inspect import _loop_structure

    loops = _loop_structure(op)
    if not loops or loops["num_inputs"] is None or len(op.results) != 1:
        return None
    iterators, domain = loops["iterators"], loops["domain"] or []
    if "reduction" not in iterators or len(domain) != len(iterators) or any(d < 1 for d in domain):
        return None
    if not loops["projected"] or -1 in loops["operand_dims"][-1]:   # (tile_reduction asserts on `(d0, 0)` results)
        return None
    try:
        element = str(ir.ShapedType(op.results[0].type).element_type)
    except ValueError:
        return None
    if element not in FLOATS:
        return None
    reduced, outputs = 1, 1
    for d, it in zip(domain, iterators):
        if it == "reduction":
            reduced *= d
        else:
            outputs *= d
    if reduced < MIN_REDUCED:
        return None
    inner = max(i for i, it in enumerate(iterators) if it == "reduction")
    tile = min(CHUNK, domain[inner], MAX_PARTIALS // outputs)
    if tile < 2:
        return None
    sizes = [0] * len(iterators)
    sizes[inner] = tile
    return sizes


def split_long_reductions(module) -> int:
    """Split the long reductions of `module` (on tensors) as the module docstring says; how many."""
    from mlir import ir

    from workbench.worker.ir_walk import apply_transform, ops_where

    plans = [(op, sizes) for op in ops_where(module, lambda o: o.name == "linalg.generic")
             for sizes in [_plan(op)] if sizes]
    if not plans:
        return 0
    a = "!transform.any_op"
    body = []
    for i, (op, sizes) in enumerate(plans):
        op.attributes[MARK] = ir.StringAttr.get(str(i))
        body.append(f"""    transform.sequence %root : {a} failures(suppress) {{
    ^bb0(%r: {a}):
      %op = transform.structured.match attributes{{{MARK} = "{i}"}} in %r : ({a}) -> {a}
      %fill, %partial, %combine, %loop = transform.structured.tile_reduction_using_for %op by tile_sizes = {sizes}
          : ({a}) -> ({a}, {a}, {a}, {a})
    }}""")
    apply_transform(module, "\n".join(body) + "\n")
    for op in ops_where(module, lambda o: MARK in o.attributes):
        del op.attributes[MARK]
    return len(plans)
