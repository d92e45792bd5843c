"""`lh-math-exp-approx`: `math.exp` on f32 (scalars and vectors) -> an arith-only polynomial approximation.

Why: LLVM lowers `llvm.exp` on vectors to one libm `expf` call per element, so a vectorized
schedule that computes exp stays scalar. MLIR 22.1.8's own approximation
(PolynomialApproximation.cpp) is only reachable through the unregistered test pass
`test-math-polynomial-approximation`, so the workbench does it itself (compile worker, Python).

The approximation (written from the math; the structure follows the usual Cody-Waite scheme):

    x' = clamp(x, -104, 89)                 (NaN -> -104 here; the result is replaced by x at the end)
    n  = round(x' * log2(e))                (round-to-nearest via the 1.5 * 2^23 "magic" addend: the
                                             integer is the bit difference of the sum and the addend)
    r  = x' - n * ln2_hi - n * ln2_lo       (Cody-Waite: ln2_hi has 9 significant bits, n * ln2_hi is
                                             exact for |n| <= 150, so r is exact up to the lo term)
    exp(r) ~ 1 + r + r^2 * q(r)             (q: degree-5 polynomial, Horner with FMAs; coefficients fitted
                                             for minimax relative error on [-ln2/2, ln2/2], rounded to f32)
    exp(x) = exp(r) * 2^n1 * 2^n2           (n1 = n >> 1, n2 = n - n1; each 2^k is (k + 127) << 23
                                             bitcast to f32: both factors stay normal for n in
                                             [-150, 128], so subnormal results are rounded once,
                                             x >= 88.73 overflows to +inf, x <= -104 gives +0)
    NaN -> NaN (select on x unordered with itself), +inf -> +inf, -inf -> +0.

Accuracy (tests/test_math_approx.py, numpy.exp in float64 as reference): max relative error about
8e-8 (under 1.4 * 2^-24) over [-87, 88]; subnormal results within one subnormal step.

Only `math.fma` besides arith: `convert-math-to-llvm` turns it into `llvm.intr.fma` (one vfmadd on
FMA hosts). Other element types (f16, f64, ...) and `math.exp` on tensors are left alone.
"""
from __future__ import annotations

#: exp(r) ~ 1 + r + r^2 * (C[0] + C[1] r + ... + C[5] r^5) on [-ln2/2, ln2/2] (Lawson-weighted
#: least squares on the relative error, then rounded to f32; max rel. error of the f64 fit ~5e-11)
POLY = (0.5, 0.1666666567325592, 0.04166629537940025, 0.008333497680723667,
        0.0013944703387096524, 0.00019790299120359123)
LOG2E = 1.4426950408889634
LN2_HI = 0.693359375          # 355/512: n * LN2_HI is exact for |n| < 2^15
LN2_LO = -2.12194440e-4       # ln(2) - LN2_HI
MAGIC = 12582912.0            # 1.5 * 2^23: adding it rounds |v| < 2^22 to an integer in the low mantissa bits
CLAMP_LO = -104.0             # exp(-104) < 2^-150 / 2: rounds to +0
CLAMP_HI = 89.0               # exp(89) > FLT_MAX: +inf


def _is_f32_or_f32_vector(t) -> bool:
    from mlir import ir

    t = t.maybe_downcast()
    if isinstance(t, ir.F32Type):
        return True
    return isinstance(t, ir.VectorType) and not t.scalable and isinstance(t.element_type.maybe_downcast(), ir.F32Type)


class _Builder:
    """Builds the approximation for one value type (f32 or vector<...xf32>) at the current insertion point."""

    def __init__(self, ftype):
        from mlir import ir

        self.ir = ir
        self.ftype = ftype
        self.f32 = ir.F32Type.get()
        self.i32 = ir.IntegerType.get_signless(32)
        ftype = ftype.maybe_downcast()
        if isinstance(ftype, ir.VectorType):
            self.itype = ir.VectorType.get(ftype.shape, self.i32)
        else:
            self.itype = self.i32
        self._consts: dict = {}

    def _const(self, value, typ, scalar):
        from mlir.dialects import arith

        ir = self.ir
        key = (str(typ), value)
        if key not in self._consts:
            attr = ir.FloatAttr.get(scalar, value) if scalar == self.f32 else ir.IntegerAttr.get(scalar, value)
            if typ != scalar:
                attr = ir.DenseElementsAttr.get_splat(typ, attr)
            self._consts[key] = arith.ConstantOp(typ, attr).result
        return self._consts[key]

    def f(self, value: float):
        return self._const(float(value), self.ftype, self.f32)

    def i(self, value: int):
        return self._const(int(value), self.itype, self.i32)

    def exp(self, x):
        from mlir.dialects import arith, math

        P = arith.CmpFPredicate
        fma = lambda a, b, c: math.FmaOp(a, b, c).result
        # clamp (NaN compares unordered: ULT is true, so NaN becomes CLAMP_LO; fixed up at the end)
        lo, hi = self.f(CLAMP_LO), self.f(CLAMP_HI)
        xc = arith.SelectOp(arith.CmpFOp(P.ULT, x, lo).result, lo, x).result
        xc = arith.SelectOp(arith.CmpFOp(P.OGT, xc, hi).result, hi, xc).result
        # n = round(x * log2 e): the magic addend puts n in the low mantissa bits
        magic = self.f(MAGIC)
        t = fma(xc, self.f(LOG2E), magic)
        n = arith.SubIOp(arith.BitcastOp(self.itype, t).result, arith.BitcastOp(self.itype, magic).result).result
        nf = arith.SubFOp(t, magic).result
        # r = x - n ln2 (Cody-Waite)
        r = fma(nf, self.f(-LN2_HI), xc)
        r = fma(nf, self.f(-LN2_LO), r)
        # exp(r) = 1 + r + r^2 q(r)
        q = self.f(POLY[-1])
        for c in reversed(POLY[:-1]):
            q = fma(q, r, self.f(c))
        r2 = arith.MulFOp(r, r).result
        p = arith.AddFOp(fma(q, r2, r), self.f(1.0)).result
        # * 2^n as two normal factors 2^(n>>1) * 2^(n - (n>>1))
        n1 = arith.ShRSIOp(n, self.i(1)).result
        n2 = arith.SubIOp(n, n1).result
        bias, shift = self.i(127), self.i(23)
        s1 = arith.BitcastOp(self.ftype, arith.ShLIOp(arith.AddIOp(n1, bias).result, shift).result).result
        s2 = arith.BitcastOp(self.ftype, arith.ShLIOp(arith.AddIOp(n2, bias).result, shift).result).result
        y = arith.MulFOp(arith.MulFOp(p, s1).result, s2).result
        isnan = arith.CmpFOp(P.UNO, x, x).result
        return arith.SelectOp(isnan, x, y).result


def approximate_exp(module) -> int:
    """Replace every f32 / vector-of-f32 `math.exp` in `module` by the approximation; the number replaced."""
    from mlir import ir

    from workbench.worker.ir_walk import ops_where

    exps = ops_where(module, lambda op: op.name == "math.exp" and _is_f32_or_f32_vector(op.results[0].type))
    for op in exps:
        with ir.InsertionPoint(op), op.location:
            y = _Builder(op.results[0].type).exp(op.operands[0])
        op.results[0].replace_all_uses_with(y)
        op.erase()
    return len(exps)
