"""`lh-bf16-compute-f32`: arithmetic and math ops on bf16 and f16 (scalars and vectors) computed in f32.

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


#: linalg ops whose body may be rewritten (named ops, such as a bf16 matmul with its extf/mulf/addf
#: body on memrefs, must keep the body their name promises: the verifier checks it)
FREE_BODIES = {"linalg.generic", "linalg.map", "linalg.reduce"}


def _in_named_op(op) -> bool:
    parent = op.operation.parent
    name = parent.name if parent is not None else ""
    return name.startswith("linalg.") and name not in FREE_BODIES


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


def _is_narrow(t) -> bool:
    """bf16 or f16 (x86 without AVX512-FP16 has no f16 arithmetic either: LLVM promotes per op too)."""
    from mlir import ir

    return isinstance(_element(t), (ir.BF16Type, ir.F16Type))


def _as_f32(t):
    """The f32 type of the shape of `t` (bf16 or vector<..xbf16>)."""
    from mlir import ir

    t = t.maybe_downcast()
    f32 = ir.F32Type.get()
    if isinstance(t, ir.VectorType):
        return ir.VectorType.get(t.shape, f32, scalable=t.scalable_dims) if t.scalable else ir.VectorType.get(t.shape, f32)
    return f32


def widen(module) -> int:
    """Rebuild every WIDENED op on bf16 or f16 in `module` on f32 (see the module doc); the number
    rebuilt. Then the bf16 conversions as integer ops (`expand_conversions`; f16's are F16C
    instructions on every AVX2 host)."""
    from mlir import ir
    from mlir.dialects import arith

    from workbench.worker.ir_walk import ops_where

    def takes_bf16(op) -> bool:
        if op.name not in WIDENED or _in_named_op(op):
            return False
        if op.name in ("arith.select", "vector.broadcast"):   # only the values decide (not an i1 condition)
            return _is_narrow(op.results[0].type)
        return any(_is_narrow(v.type) for v in list(op.operands) + list(op.results))

    found = ops_where(module, takes_bf16)
    # the f32 value each rounded result stands for (a truncf made here: its operand)
    wide_of: dict = {}
    rounded = []
    for op in found:
        with ir.InsertionPoint(op), op.location:
            operands = []
            for v in op.operands:
                if not _is_narrow(v.type):
                    operands.append(v)
                    continue
                wide = wide_of.get(v)
                if wide is None:
                    wide = arith.ExtFOp(_as_f32(v.type), v).result
                operands.append(wide)
            results = [_as_f32(r.type) if _is_narrow(r.type) else r.type for r in op.results]
            attributes = {}
            for i in range(len(op.attributes)):
                named = op.attributes[i]   # (by index: a NamedAttribute)
                attributes[named.name] = named.attr
            new = ir.Operation.create(op.name, results=results, operands=operands, attributes=attributes)
            for old, res in zip(op.results, new.results):
                if _is_narrow(old.type):
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
    expand_conversions(module)
    moves_as_bits(module)
    return len(found)


#: vector ops that only move elements (no arithmetic): on bf16, rebuilt on their i16 bits (`moves_as_bits`)
MOVES = {"vector.extract", "vector.insert", "vector.shuffle", "vector.extract_strided_slice",
         "vector.insert_strided_slice", "vector.from_elements", "vector.transpose", "vector.shape_cast",
         "vector.to_elements"}


def moves_as_bits(module) -> int:
    """Every MOVES op on bf16 (scalars or vectors) rebuilt on i16: its bf16 operands bitcast to i16
    (`vector.bitcast`, same shape; `arith.bitcast` for scalars), the same op (same attributes) on them,
    its results bitcast back to bf16 -- exact, and the bitcast pairs between moves fold away. Why: LLVM
    22's x86 backend soft-promotes scalar bf16 and aborts on element moves of bf16 vectors of types it
    widens or splits ("LLVM ERROR: Do not know how to soft promote this operator's operand!"): a
    strided bf16 convolution's vectorized window (HF ResNet in bf16) reads the filter as
    vector<16x8x3xbf16> and takes it apart tap by tap, and transposes the input rows with a
    vector.shuffle of vector<72xbf16>. The number rebuilt."""
    from mlir import ir
    from mlir.dialects import arith, vector

    from workbench.worker.ir_walk import ops_where

    def moves_bf16(op) -> bool:
        return (op.name in MOVES and not _in_named_op(op)
                and any(_is_bf16(v.type) for v in list(op.operands) + list(op.results)))

    i16 = ir.IntegerType.get_signless(16)

    def bits_type(t):
        t = t.maybe_downcast()
        return ir.VectorType.get(t.shape, i16) if isinstance(t, ir.VectorType) else i16

    def cast(v, to):
        if isinstance(to.maybe_downcast() if hasattr(to, "maybe_downcast") else to, ir.VectorType):
            return vector.BitCastOp(to, v).result
        return arith.BitcastOp(to, v).result

    found = ops_where(module, moves_bf16)
    for op in found:
        with ir.InsertionPoint(op), op.location:
            operands = [cast(v, bits_type(v.type)) if _is_bf16(v.type) else v for v in op.operands]
            results = [bits_type(r.type) if _is_bf16(r.type) else r.type for r in op.results]
            attributes = {}
            for i in range(len(op.attributes)):
                named = op.attributes[i]
                attributes[named.name] = named.attr
            new = ir.Operation.create(op.name, results=results, operands=operands, attributes=attributes)
            for old, res in zip(op.results, new.results):
                old.replace_all_uses_with(cast(res, old.type) if _is_bf16(old.type) else res)
        op.erase()
    return len(found)


def memory_as_bits(module) -> int:
    """On the LLVM dialect: every `llvm.load` / `llvm.store` of a vector of bf16 as one of the vector of i16
    of its length, bitcast (exact). LLVM 22's x86 backend aborts on bf16 vectors of 8k+1 elements
    (vector<9xbf16>, vector<17xbf16>, vector<33xbf16>: split into legal vectors and one scalar bf16, which
    it soft-promotes: "LLVM ERROR: Do not know how to soft promote this operator's operand!"): the row
    copies of a padded bf16 tensor (a bf16 max pool, zero-padded, read by a VNNI convolution: HF ResNet).
    The number rewritten."""
    from mlir import ir
    from mlir.dialects import llvm

    from workbench.worker.ir_walk import ops_where

    def bf16_vector(t) -> bool:
        t = t.maybe_downcast() if hasattr(t, "maybe_downcast") else t
        return isinstance(t, ir.VectorType) and _is_bf16(t)

    def bits(t):
        return ir.VectorType.get(t.maybe_downcast().shape, ir.IntegerType.get_signless(16))

    def memory(op) -> bool:
        if op.name == "llvm.load":
            return bf16_vector(op.results[0].type)
        return op.name == "llvm.store" and bf16_vector(op.operands[0].type)

    found = ops_where(module, memory)
    for op in found:
        attributes = {}
        for i in range(len(op.attributes)):
            named = op.attributes[i]
            attributes[named.name] = named.attr
        with ir.InsertionPoint(op), op.location:
            if op.name == "llvm.load":
                new = ir.Operation.create("llvm.load", results=[bits(op.results[0].type)],
                                          operands=list(op.operands), attributes=attributes)
                op.results[0].replace_all_uses_with(llvm.BitcastOp(op.results[0].type, new.results[0]).result)
            else:
                value = llvm.BitcastOp(bits(op.operands[0].type), op.operands[0]).result
                ir.Operation.create("llvm.store", results=[], operands=[value, *list(op.operands)[1:]],
                                    attributes=attributes)
        op.erase()
    return len(found)


def expand_conversions(module) -> int:
    """Every `arith.extf` bf16 -> f32 and `arith.truncf` f32 -> bf16 (scalars, vectors) as integer ops:
    extf is the bf16 bits shifted into the high half of an f32 (exact); truncf rounds to nearest even
    (bits + 0x7fff + the lowest kept bit, shifted down), NaN -> a quiet NaN of its sign. Without
    AVX512-BF16, LLVM lowers a vector truncf to one `__truncsfbf2` library call per element; integer
    shifts and adds are vector instructions on every x86 (on AVX512-BF16 hosts as fast as its
    vcvtneps2bf16, measured). The number rewritten."""
    from mlir import ir
    from mlir.dialects import arith

    from workbench.worker.ir_walk import ops_where

    def conversion(op) -> bool:
        if op.name not in ("arith.extf", "arith.truncf") or _in_named_op(op):
            return False
        if op.name == "arith.extf":
            return _is_bf16(op.operands[0].type) and _is_f32(op.results[0].type)
        if op.name == "arith.truncf":
            return _is_f32(op.operands[0].type) and _is_bf16(op.results[0].type) and "roundingmode" not in op.attributes
        return False

    found = ops_where(module, conversion)
    for op in found:
        with ir.InsertionPoint(op), op.location:
            b = _IntBuilder(op.results[0].type if op.name == "arith.extf" else op.operands[0].type)
            if op.name == "arith.extf":
                bits16 = arith.BitcastOp(b.like(16), op.operands[0]).result
                wide = arith.ExtUIOp(b.like(32), bits16).result
                y = arith.BitcastOp(op.results[0].type, arith.ShLIOp(wide, b.c(32, 16)).result).result
            else:
                x = op.operands[0]
                bits = arith.BitcastOp(b.like(32), x).result
                lsb = arith.AndIOp(arith.ShRUIOp(bits, b.c(32, 16)).result, b.c(32, 1)).result
                rounded = arith.AddIOp(arith.AddIOp(bits, b.c(32, 0x7FFF)).result, lsb).result
                quiet = arith.OrIOp(bits, b.c(32, 0x00400000)).result     # a NaN stays a NaN (quiet)
                isnan = arith.CmpFOp(arith.CmpFPredicate.UNO, x, x).result
                chosen = arith.SelectOp(isnan, quiet, rounded).result
                high = arith.ShRUIOp(chosen, b.c(32, 16)).result
                y = arith.BitcastOp(op.results[0].type, arith.TruncIOp(b.like(16), high).result).result
        op.results[0].replace_all_uses_with(y)
        op.erase()
    return len(found)


def _is_f32(t) -> bool:
    from mlir import ir

    return isinstance(_element(t), ir.F32Type)


class _IntBuilder:
    """Integer types and splat constants of the shape of a scalar or vector type."""

    def __init__(self, like):
        from mlir import ir

        self.ir = ir
        self.shape = list(like.maybe_downcast().shape) if isinstance(like.maybe_downcast(), ir.VectorType) else None

    def like(self, width: int):
        ir = self.ir
        i = ir.IntegerType.get_signless(width)
        return ir.VectorType.get(self.shape, i) if self.shape is not None else i

    def c(self, width: int, value: int):
        from mlir.dialects import arith

        ir = self.ir
        i = ir.IntegerType.get_signless(width)
        attr = ir.IntegerAttr.get(i, value)
        if self.shape is not None:
            return arith.ConstantOp(self.like(width), ir.DenseElementsAttr.get_splat(self.like(width), attr)).result
        return arith.ConstantOp(i, attr).result
