"""`lh-math-approx`: `math.exp`, `math.tanh`, `math.erf`, `math.log` and `math.log1p` on f32 (scalars and
vectors) -> arith-only polynomial approximations (`lh-math-exp-approx`: exp alone).

Why: LLVM lowers `llvm.exp` / `llvm.log` on vectors to one libm call per element, and `math.tanh` /
`math.erf` have no LLVM intrinsic at all (libm calls per element), so a vectorized schedule that
computes them stays scalar. MLIR 22.1.8's own approximation
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

tanh and erf: odd rational approximations p(x^2) x / q(x^2) on a clamped x (Eigen's float
coefficients, which MLIR's PolynomialApproximation.cpp uses too): tanh on [-7.9988, 7.9988] (x itself
where |x| < 4e-4), erf on [-4, 4]; max relative error about 3e-7 and 4e-7 against float64.
log: Cephes' logf: x = m 2^e with m in [sqrt(1/2), sqrt(2)), log(1 + (m-1)) by a degree-8 polynomial,
e ln2 added in two parts (Cody-Waite); max relative error about 8e-8. x < 0 -> NaN, 0 -> -inf,
+inf -> +inf, NaN -> NaN, subnormals scaled by 2^23 first. log1p(x) = x where 1 + x
rounds to 1, else log(u) x / (u - 1) with u = 1 + x (the division cancels u's rounding error),
+inf for u = +inf.

Only `math.fma` besides arith: `convert-math-to-llvm` turns it into `llvm.intr.fma` (one vfmadd on
FMA hosts). Other element types (f16, f64, ...) and math ops on tensors are left alone.
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

#: tanh(x) ~ x p(x^2) / q(x^2) (highest coefficient first)
TANH_P = (-2.76076847742355e-16, 2.00018790482477e-13, -8.60467152213735e-11, 5.12229709037114e-08,
          1.48572235717979e-05, 6.37261928875436e-04, 4.89352455891786e-03)
TANH_Q = (1.19825839466702e-06, 1.18534705686654e-04, 2.26843463243900e-03, 4.89352518554385e-03)
TANH_CLAMP = 7.99881172180175781   # |tanh| rounds to 1 beyond
TANH_TINY = 0.0004                 # tanh(x) = x in f32 below
#: erf(x) ~ x p(x^2) / q(x^2) on [-4, 4]
ERF_P = (-2.72614225801306e-10, 2.77068142495902e-08, -2.10102402082508e-06, -5.69250639462346e-05,
         -7.34990630326855e-04, -2.95459980854025e-03, -1.60960333262415e-02)
ERF_Q = (-1.45660718464996e-05, -2.13374055278905e-04, -1.68282697438203e-03, -7.37332916720468e-03,
         -1.42647390514189e-02)
ERF_CLAMP = 4.0
#: Cephes logf: log(1 + x) ~ x - x^2/2 + x^3 P(x) for x in [sqrt(1/2) - 1, sqrt(2) - 1]
LOG_P = (7.0376836292e-2, -1.1514610310e-1, 1.1676998740e-1, -1.2420140846e-1, 1.4249322787e-1,
         -1.6668057665e-1, 2.0000714765e-1, -2.4999993993e-1, 3.3333331174e-1)
SQRT_HALF = 0.707106781186547524
MIN_NORMAL = 1.17549435e-38
SUBNORMAL_SCALE = 8388608.0   # 2^23


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

    def _horner(self, x, coefficients):
        from mlir.dialects import math

        p = self.f(coefficients[0])
        for c in coefficients[1:]:
            p = math.FmaOp(p, x, self.f(c)).result
        return p

    def _odd_rational(self, x, clamp: float, p_coefficients, q_coefficients):
        """x p(x^2) / q(x^2) with x clamped to [-clamp, clamp] (NaN stays NaN: the compares are ordered)."""
        from mlir.dialects import arith

        P = arith.CmpFPredicate
        lo, hi = self.f(-clamp), self.f(clamp)
        xc = arith.SelectOp(arith.CmpFOp(P.OLT, x, lo).result, lo, x).result
        xc = arith.SelectOp(arith.CmpFOp(P.OGT, xc, hi).result, hi, xc).result
        x2 = arith.MulFOp(xc, xc).result
        p = arith.MulFOp(self._horner(x2, p_coefficients), xc).result
        return arith.DivFOp(p, self._horner(x2, q_coefficients)).result

    def tanh(self, x):
        from mlir.dialects import arith, math

        y = self._odd_rational(x, TANH_CLAMP, TANH_P, TANH_Q)
        tiny = arith.CmpFOp(arith.CmpFPredicate.OLT, math.AbsFOp(x).result, self.f(TANH_TINY)).result
        return arith.SelectOp(tiny, x, y).result

    def erf(self, x):
        return self._odd_rational(x, ERF_CLAMP, ERF_P, ERF_Q)

    def log(self, x):
        from mlir.dialects import arith, math

        P = arith.CmpFPredicate
        fma = lambda a, b, c: math.FmaOp(a, b, c).result
        # subnormals: scaled by 2^23 into the normal range, 23 taken off the exponent
        sub = arith.CmpFOp(P.OLT, x, self.f(MIN_NORMAL)).result
        xm = arith.SelectOp(sub, arith.MulFOp(x, self.f(SUBNORMAL_SCALE)).result, x).result
        bits = arith.BitcastOp(self.itype, xm).result
        # x = m 2^e with m in [0.5, 1): e = biased exponent - 126, m = mantissa with exponent -1
        e = arith.SubIOp(arith.ShRSIOp(bits, self.i(23)).result, self.i(126)).result
        m = arith.BitcastOp(self.ftype, arith.OrIOp(arith.AndIOp(bits, self.i(0x007FFFFF)).result,
                                                    self.i(0x3F000000)).result).result
        ef = arith.SIToFPOp(self.ftype, e).result
        ef = arith.SelectOp(sub, arith.SubFOp(ef, self.f(23.0)).result, ef).result
        # m < sqrt(1/2): use 2m - 1 and e - 1 (so that the polynomial's argument is in [-0.29, 0.41])
        small = arith.CmpFOp(P.OLT, m, self.f(SQRT_HALF)).result
        one = self.f(1.0)
        ef = arith.SelectOp(small, arith.SubFOp(ef, one).result, ef).result
        t = arith.SubFOp(arith.SelectOp(small, arith.AddFOp(m, m).result, m).result, one).result
        z = arith.MulFOp(t, t).result
        y = arith.MulFOp(arith.MulFOp(self._horner(t, LOG_P), t).result, z).result
        y = fma(ef, self.f(LN2_LO), y)
        y = fma(z, self.f(-0.5), y)
        r = arith.AddFOp(t, y).result
        r = fma(ef, self.f(LN2_HI), r)
        # x < 0 or NaN -> NaN, 0 -> -inf, +inf -> +inf
        r = arith.SelectOp(arith.CmpFOp(P.OEQ, x, self.f(0.0)).result, self.f(float("-inf")), r).result
        r = arith.SelectOp(arith.CmpFOp(P.OEQ, x, self.f(float("inf"))).result, x, r).result
        bad = arith.CmpFOp(P.ULT, x, self.f(0.0)).result   # x < 0, or unordered (NaN)
        return arith.SelectOp(bad, self.f(float("nan")), r).result

    def log1p(self, x):
        from mlir.dialects import arith

        P = arith.CmpFPredicate
        one = self.f(1.0)
        u = arith.AddFOp(x, one).result
        scaled = arith.MulFOp(self.log(u), arith.DivFOp(x, arith.SubFOp(u, one).result).result).result
        y = arith.SelectOp(arith.CmpFOp(P.OEQ, u, self.f(float("inf"))).result, u, scaled).result
        return arith.SelectOp(arith.CmpFOp(P.OEQ, u, one).result, x, y).result

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


#: the math ops approximated, by name -> the _Builder method
APPROXIMATED = {"math.exp": "exp", "math.tanh": "tanh", "math.erf": "erf", "math.log": "log", "math.log1p": "log1p"}


def approximate(module, ops=tuple(APPROXIMATED)) -> int:
    """Replace every f32 / vector-of-f32 math op of `ops` (names from APPROXIMATED) in `module` by its
    approximation; the number replaced."""
    from mlir import ir

    from workbench.worker.ir_walk import ops_where

    unknown = sorted(set(ops) - set(APPROXIMATED))
    if unknown:
        raise ValueError(f"no approximation for {', '.join(unknown)} (known: {', '.join(APPROXIMATED)})")
    found = ops_where(module, lambda op: op.name in ops and _is_f32_or_f32_vector(op.results[0].type))
    for op in found:
        with ir.InsertionPoint(op), op.location:
            y = getattr(_Builder(op.results[0].type), APPROXIMATED[op.name])(op.operands[0])
        op.results[0].replace_all_uses_with(y)
        op.erase()
    return len(found)


def approximate_exp(module) -> int:
    """`approximate` for math.exp alone."""
    return approximate(module, ("math.exp",))
