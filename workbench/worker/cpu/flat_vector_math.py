"""`lh-flat-vector-math`: integer math ops on n-D vectors (`math.absi`, `math.ctlz`, `math.cttz`) ->
the same op on the 1-D vector of all the elements, between `vector.shape_cast`s.

Why: `convert-math-to-llvm` (LLVM 22.1.8) lowers these to LLVM intrinsics for scalars and 1-D vectors
only; on an n-D vector (what a schedule's vectorization of an n-D tile makes: `abs` of the relative
positions of T5's position buckets became `math.absi : vector<4x12xi64>`) the op is left, and
`convert-math-to-libm` then fails on it ("failed to legalize operation 'math.absi'"). The float math
ops take n-D vectors already (or get lh-math-approx's polynomials). Elementwise ops, so the flat op
computes the same elements; the shape casts cost nothing once in registers.
"""
from __future__ import annotations

#: math ops whose LLVM lowering takes scalars and 1-D vectors only
FLATTENED = ("math.absi", "math.ctlz", "math.cttz")


def _nd_vector(t):
    from mlir import ir

    t = t.maybe_downcast() if hasattr(t, "maybe_downcast") else t
    return t if isinstance(t, ir.VectorType) and t.rank > 1 and not t.scalable else None


def flatten_vector_math(module) -> int:
    """Rewrite every FLATTENED op on n-D vectors of `module`; the number rewritten."""
    from mlir import ir

    found = []

    def visit(op):
        op = op.operation if hasattr(op, "operation") else op
        if op.name in FLATTENED and len(op.results) == 1 and _nd_vector(op.results[0].type) is not None:
            found.append(op)
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit)
    for op in found:
        shaped = _nd_vector(op.results[0].type)
        size = 1
        for d in shaped.shape:
            size *= d
        with op.location, ir.InsertionPoint(op):
            flat_of = lambda v: ir.VectorType.get([size], ir.VectorType(v.type).element_type)  # noqa: E731
            operands = [ir.Operation.create("vector.shape_cast", results=[flat_of(v)], operands=[v]).result
                        for v in op.operands]
            flat = ir.Operation.create(op.name, results=[flat_of(op.results[0])], operands=operands,
                                       attributes={a.name: a.attr for a in (op.attributes[i] for i in range(len(op.attributes)))})
            back = ir.Operation.create("vector.shape_cast", results=[op.results[0].type], operands=[flat.result])
        op.results[0].replace_all_uses_with(back.result)
        op.erase()
    return len(found)
