"""`lh-bf16-compute-f32`: arithmetic and math ops on bf16 (scalars and vectors) computed in f32.

Why: x86 has no bf16 arithmetic (AVX512-BF16 only converts and takes dot products), so LLVM
promotes every bf16 op to f32 on its own and rounds its result back to bf16 (a convert pair per op),
and a math function on bf16 (`math.erf` in a GELU) is neither polynomial-approximated
(`lh-math-approx` takes f32) nor an LLVM intrinsic: a libm call per element, vectors unrolled. A
torch-mlir export of a bf16 model writes every pointwise op in bf16.

What: every float op of WIDENED whose operands or results are bf16 (or vectors of it) is rebuilt on
f32: a bf16 operand that is the rounded result of an op already rebuilt (`arith.truncf` of an f32
value) is replaced by that f32 value, any other one is extended (`arith.extf`: exact); a bf16 result
becomes the f32 result rounded once (`arith.truncf`), kept for uses outside the chain (stores, loop
arguments, function results). A chain of bf16 ops between a load and a store is so computed in f32 and
rounded once at the end -- what torch does for bf16 pointwise ops (its "opmath" type is f32), where
the payload as written rounds after every op (the reference run rounds so: the two agree within bf16's
tolerance). Values that cross memory or block arguments (a reduction's bf16 accumulator) keep their
per-step rounding. Runs before `lh-math-approx` in cpu-lower, so math functions get the f32
polynomials.
"""
from __future__ import annotations

#: ops rebuilt on f32 (same name, same attributes: cmpf's predicate, fastmath flags)
WIDENED = {
    "arith.addf", "arith.subf", "arith.mulf", "arith.divf", "arith.remf", "arith.negf",
    "arith.maximumf", "arith.minimumf", "arith.maxnumf", "arith.minnumf", "arith.cmpf", "arith.select",
    "math.absf", "math.exp", "math.exp2", "math.expm1", "math.log", "math.log2", "math.log10", "math.log1p",
    "math.sqrt", "math.rsqrt", "math.tanh", "math.erf", "math.erfc", "math.sin", "math.cos", "math.tan",
    "math.atan", "math.atan2", "math.powf", "math.fma", "math.floor", "math.ceil", "math.round",
    "math.roundeven", "math.trunc", "math.copysign", "math.sinh", "math.cosh", "math.asin", "math.acos",
    # exact moves, taken along so that a chain through them stays f32 (a loop-invariant constant
    # broadcast into the vector loop: GELU's sqrt(2))
    "vector.broadcast",
}


def _element(t):
    from mlir import ir

    t = t.maybe_downcast() if hasattr(t, "maybe_downcast") else t
    if isinstance(t, ir.VectorType):
        return t.element_type.maybe_downcast() if hasattr(t.element_type, "maybe_downcast") else t.element_type
    if isinstance(t, (ir.RankedTensorType, ir.UnrankedTensorType, ir.MemRefType)):
        return None   # ops on tensors / memrefs are not this pass's business
    return t


def _is_bf16(t) -> bool:
    from mlir import ir

    return isinstance(_element(t), ir.BF16Type)


def _as_f32(t):
    """The f32 type of the shape of `t` (bf16 or vector<..xbf16>)."""
    from mlir import ir

    t = t.maybe_downcast()
    f32 = ir.F32Type.get()
    if isinstance(t, ir.VectorType):
        return ir.VectorType.get(t.shape, f32, scalable=t.scalable_dims) if t.scalable else ir.VectorType.get(t.shape, f32)
    return f32


def widen(module) -> int:
    """Rebuild every WIDENED op on bf16 in `module` on f32 (see the module doc); the number rebuilt."""
    from mlir import ir
    from mlir.dialects import arith

    from workbench.worker.ir_walk import ops_where

    def takes_bf16(op) -> bool:
        if op.name not in WIDENED:
            return False
        if op.name in ("arith.select", "vector.broadcast"):   # only the values decide (not an i1 condition)
            return _is_bf16(op.results[0].type)
        return any(_is_bf16(v.type) for v in list(op.operands) + list(op.results))

    found = ops_where(module, takes_bf16)
    # the f32 value each rounded result stands for (a truncf made here: its operand)
    wide_of: dict = {}
    rounded = []
    for op in found:
        with ir.InsertionPoint(op), op.location:
            operands = []
            for v in op.operands:
                if not _is_bf16(v.type):
                    operands.append(v)
                    continue
                wide = wide_of.get(v)
                if wide is None:
                    wide = arith.ExtFOp(_as_f32(v.type), v).result
                operands.append(wide)
            results = [_as_f32(r.type) if _is_bf16(r.type) else r.type for r in op.results]
            attributes = {}
            for i in range(len(op.attributes)):
                named = op.attributes[i]   # (by index: a NamedAttribute)
                attributes[named.name] = named.attr
            new = ir.Operation.create(op.name, results=results, operands=operands, attributes=attributes)
            for old, res in zip(op.results, new.results):
                if _is_bf16(old.type):
                    narrow = arith.TruncFOp(old.type, res).result
                    wide_of[narrow] = res
                    rounded.append(narrow.owner)
                    old.replace_all_uses_with(narrow)
                else:
                    old.replace_all_uses_with(res)
        op.erase()
    # roundings whose every use now takes the f32 value: gone
    for op in reversed(rounded):
        if not list(op.results[0].uses):
            op.erase()
    return len(found)
