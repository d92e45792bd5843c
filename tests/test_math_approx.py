"""`lh-math-exp-approx` (workbench/worker/cpu/math_approx.py): f32 math.exp -> FMA polynomial.

Accuracy is measured by JIT-running exp over many points through the workbench (scalar exp in a
linalg.generic body, and vector<16xf32> exp after tiling + vectorization) against numpy.exp in float64.
"""
from __future__ import annotations

import numpy as np
import pytest

from conftest import load_npys, ok

N = 1 << 15  # points per run (a multiple of the vector tile)

EDGES = np.array([0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 1e-7, -1e-7, 1e-40, -1e-40, 1.4e-45, -1.4e-45,
                  88.72, 88.7228, 88.73, 89.0, 100.0, 1e30, 3.4e38,
                  -87.3, -87.4, -90.0, -100.0, -103.2, -103.9, -104.0, -105.0, -200.0, -1e30, -3.4e38,
                  np.inf, -np.inf, np.nan], np.float32)


def _points() -> np.ndarray:
    rng = np.random.default_rng(1)
    n_dense = N - len(EDGES) - 4096 - 4096
    x = np.concatenate([EDGES,
                        np.linspace(-87.0, 88.0, n_dense, dtype=np.float32),
                        rng.uniform(-1.0, 1.0, 4096).astype(np.float32),       # around 0: r = x, n = 0
                        np.linspace(-103.9, -87.4, 4096, dtype=np.float32)])   # subnormal results
    assert x.shape == (N,)
    return x


def _payload(path):
    t = f"tensor<{N}xf32>"
    path.write_text(
        "#id = affine_map<(d0) -> (d0)>\n"
        f"func.func @exp_points(%x: {t}) -> {t} {{\n"
        f"  %e = tensor.empty() : {t}\n"
        f"  %0 = linalg.generic {{indexing_maps = [#id, #id], iterator_types = [\"parallel\"]}}\n"
        f"      ins(%x : {t}) outs(%e : {t}) {{\n"
        "  ^bb0(%a: f32, %b: f32):\n"
        "    %y = math.exp %a : f32\n"
        "    linalg.yield %y : f32\n"
        f"  }} -> {t}\n"
        f"  return %0 : {t}\n}}\n")
    return path


def _run_exp(ctx, tmp_path, vectorize: bool) -> tuple[np.ndarray, np.ndarray, str]:
    """JIT-run exp on _points() with the pass applied; (x, exp(x), the lowered IR)."""
    x = _points()
    np.save(tmp_path / "x.npy", x)
    ok(ctx, f"load {_payload(tmp_path / 'expf.mlir')}")
    if vectorize:
        ok(ctx, "apply pipelines/lib/tile.py[gen=tile_op]{op=linalg.generic tile_sizes=[16]}")
        ok(ctx, "apply pipelines/lib/vectorize.py[gen=vectorize]")
        assert "math.exp %" in ctx.session.current_ir and "vector<16xf32>" in ctx.session.current_ir
    ok(ctx, "bench warmup=0 iterations=1")
    ok(ctx, "apply cpu-bufferize")
    ok(ctx, "pass lh-math-exp-approx")
    assert "math.exp" not in ctx.session.current_ir
    ok(ctx, "pass func.func(convert-linalg-to-loops)")
    ok(ctx, "apply llvm-lowering")
    lowered = ctx.session.current_ir
    out = tmp_path / "out"
    ok(ctx, f"run --npy 0={tmp_path / 'x.npy'} --iterations 1 --warmup 0 --save-outputs {out}")
    (x_back,) = load_npys(out, "input")
    np.testing.assert_array_equal(x_back, x)
    (y,) = load_npys(out, "output")
    return x, y, lowered


def _check_accuracy(x: np.ndarray, y: np.ndarray) -> None:
    assert y.dtype == np.float32 and y.shape == x.shape
    with np.errstate(over="ignore", under="ignore"):
        ref64 = np.exp(x.astype(np.float64))
        ref32 = ref64.astype(np.float32)
    # normal range: relative error against float64 (a few ulp at most)
    normal = (x >= -87.0) & (x <= 88.0)
    rel = np.abs(y[normal].astype(np.float64) - ref64[normal]) / ref64[normal]
    assert rel.max() <= 2e-7, f"max rel err {rel.max():.3g} at x={x[normal][rel.argmax()]!r}"
    # subnormal results: within one subnormal step (1.4e-45) of the correctly rounded value
    sub = (x > -104.0) & (x < -87.4)
    assert np.count_nonzero(sub) > 4000
    steps = np.abs(y[sub].astype(np.float64) - ref32[sub].astype(np.float64)) / 1.401298464324817e-45
    assert steps.max() <= 1.0, f"subnormal results off by {steps.max()} steps at x={x[sub][steps.argmax()]!r}"
    assert np.any(y[sub] > 0) and np.all(y[sub] < 1.18e-38)
    # edge cases, like expf
    def at(v):
        return y[np.flatnonzero((x == np.float32(v)) & (np.signbit(x) == np.signbit(np.float32(v))))[0]]
    assert at(0.0) == 1.0 and at(-0.0) == 1.0
    assert at(1e-40) == 1.0 and at(-1e-40) == 1.0 and at(1.4e-45) == 1.0
    assert at(1.0) == pytest.approx(np.e, rel=2e-7) and at(-1.0) == pytest.approx(1 / np.e, rel=2e-7)
    assert np.isfinite(at(88.72)) and at(88.72) == pytest.approx(ref64[x == np.float32(88.72)][0], rel=2e-7)
    for big in (88.73, 89.0, 100.0, 1e30, 3.4e38, np.inf):
        assert at(big) == np.inf, big
    for small in (-104.0, -105.0, -200.0, -1e30, -3.4e38, -np.inf):
        assert at(small) == 0.0 and not np.signbit(at(small)), small
    assert np.isnan(y[np.isnan(x)]).all()
    # nothing is NaN except for NaN inputs
    assert np.count_nonzero(np.isnan(y)) == np.count_nonzero(np.isnan(x)) == 1


def test_scalar_exp_accuracy_and_no_libm(ctx, tmp_path):
    x, y, lowered = _run_exp(ctx, tmp_path, vectorize=False)
    _check_accuracy(x, y)
    assert "llvm.intr.exp" not in lowered and "expf" not in lowered and "math.exp" not in lowered
    assert "llvm.intr.fma" in lowered


def test_vector_exp_accuracy_and_no_libm(ctx, tmp_path):
    x, y, lowered = _run_exp(ctx, tmp_path, vectorize=True)
    _check_accuracy(x, y)
    assert "llvm.intr.exp" not in lowered and "expf" not in lowered
    assert "vector<16xf32>" in lowered and "llvm.intr.fma" in lowered


def test_without_the_pass_exp_stays_an_llvm_exp(ctx, tmp_path):
    """The control: the same lowering without lh-math-exp-approx keeps llvm.intr.exp (a libm call per element)."""
    ok(ctx, f"load {_payload(tmp_path / 'expf.mlir')}")
    ok(ctx, "apply cpu-bufferize")
    ok(ctx, "pass func.func(convert-linalg-to-loops)")
    ok(ctx, "apply llvm-lowering")
    assert "llvm.intr.exp" in ctx.session.current_ir


def test_pass_rewrites_only_f32():
    """In the worker's MLIR: f32 and vector<..xf32> exps are replaced, f64 / f16 ones are left alone."""
    from mlir import ir

    from workbench.worker.cpu.math_approx import approximate_exp

    with ir.Context(), ir.Location.unknown():
        m = ir.Module.parse("""
func.func @f(%x: f32, %v: vector<4x16xf32>, %d: f64, %h: vector<8xf16>) -> (f32, vector<4x16xf32>, f64, vector<8xf16>) {
  %a = math.exp %x : f32
  %b = math.exp %v : vector<4x16xf32>
  %c = math.exp %d : f64
  %e = math.exp %h : vector<8xf16>
  return %a, %b, %c, %e : f32, vector<4x16xf32>, f64, vector<8xf16>
}""")
        assert approximate_exp(m) == 2
        assert m.operation.verify()
        text = str(m)
    assert text.count("math.exp") == 2 and "math.exp %arg2 : f64" in text and "math.exp %arg3 : vector<8xf16>" in text
    assert "arith.bitcast" in text and "vector<4x16xi32>" in text and "math.fma" in text


def test_pass_is_registered():
    from workbench.worker import py_passes

    assert "lh-math-exp-approx" in py_passes.PASSES
    assert py_passes.parse("builtin.module(lh-math-exp-approx)") == ("lh-math-exp-approx", {})


# -- tanh, erf, log, log1p (`lh-math-approx`) -------------------------------------------------------------

FUNCTIONS = ("tanh", "erf", "log", "log1p")


def _functions_payload(path):
    """One vectorizable generic computing tanh, erf, log and log1p of every point (four results)."""
    t = f"tensor<{N}xf32>"
    path.write_text(
        "#id = affine_map<(d0) -> (d0)>\n"
        f"func.func @points(%x: {t}) -> ({t}, {t}, {t}, {t}) {{\n"
        f"  %e = tensor.empty() : {t}\n"
        f"  %0:4 = linalg.generic {{indexing_maps = [#id, #id, #id, #id, #id], iterator_types = [\"parallel\"]}}\n"
        f"      ins(%x : {t}) outs(%e, %e, %e, %e : {t}, {t}, {t}, {t}) {{\n"
        "  ^bb0(%a: f32, %b: f32, %c: f32, %d: f32, %f: f32):\n"
        + "".join(f"    %{name} = math.{name} %a : f32\n" for name in FUNCTIONS) +
        f"    linalg.yield {', '.join('%' + n for n in FUNCTIONS)} : f32, f32, f32, f32\n"
        f"  }} -> ({t}, {t}, {t}, {t})\n"
        f"  return %0#0, %0#1, %0#2, %0#3 : {t}, {t}, {t}, {t}\n}}\n")
    return path


def _function_points() -> np.ndarray:
    rng = np.random.default_rng(2)
    edges = np.array([0.0, -0.0, 1.0, -1.0, 1e-7, -1e-7, 3e-4, -3e-4, 5e-4, 7.99, 8.0, -8.0, 20.0, -20.0,
                      1e-40, 1.17e-38, 3.4e38, -0.9999999, -1.0, -2.0, np.inf, -np.inf, np.nan], np.float32)
    rest = N - len(edges)
    x = np.concatenate([edges, np.linspace(-10.0, 10.0, rest // 4, dtype=np.float32),
                        rng.uniform(-1.0, 1.0, rest // 4).astype(np.float32),
                        np.float32(10.0) ** rng.uniform(-30, 30, rest // 4).astype(np.float32),
                        -(np.float32(10.0) ** rng.uniform(-20, 0, rest - 3 * (rest // 4)).astype(np.float32))])
    return x.astype(np.float32)


def test_tanh_erf_log_log1p_vector_accuracy(ctx, tmp_path):
    import math

    x = _function_points()
    np.save(tmp_path / "x.npy", x)
    ok(ctx, f"load {_functions_payload(tmp_path / 'fns.mlir')}")
    ok(ctx, "apply pipelines/lib/tile.py[gen=tile_op]{op=linalg.generic tile_sizes=[16]}")
    ok(ctx, "apply pipelines/lib/vectorize.py[gen=vectorize]")
    assert "math.erf %" in ctx.session.current_ir and "vector<16xf32>" in ctx.session.current_ir
    ok(ctx, "bench warmup=0 iterations=1")
    ok(ctx, "apply cpu-bufferize")
    ok(ctx, "pass lh-math-approx")
    assert not any(f"math.{name} " in ctx.session.current_ir for name in FUNCTIONS)
    ok(ctx, "pass func.func(convert-linalg-to-loops)")
    ok(ctx, "apply llvm-lowering")
    lowered = ctx.session.current_ir
    assert not any(call in lowered for call in ("tanhf", "erff", "logf", "log1pf", "llvm.intr.log"))
    out = tmp_path / "out"
    ok(ctx, f"run --npy 0={tmp_path / 'x.npy'} --iterations 1 --warmup 0 --save-outputs {out}")
    results = dict(zip(FUNCTIONS, load_npys(out, "output")))
    x64 = x.astype(np.float64)
    with np.errstate(all="ignore"):
        refs = {"tanh": np.tanh(x64), "erf": np.array([math.erf(v) if np.isfinite(v) else np.sign(v) if not np.isnan(v) else v for v in x64]),
                "log": np.log(x64), "log1p": np.log1p(x64)}
    for name in FUNCTIONS:
        y, ref = results[name].astype(np.float64), refs[name]
        assert y.shape == x.shape
        finite = np.isfinite(ref)
        # relative error where the result is a normal f32, absolute near zero
        big = finite & (np.abs(ref) > 1e-30)
        rel = np.abs(y[big] - ref[big]) / np.abs(ref[big])
        assert rel.max() <= 5e-7, f"{name}: max rel err {rel.max():.3g} at x={x[big][rel.argmax()]!r}"
        assert np.array_equal(np.isnan(y), np.isnan(ref)), f"{name}: NaNs where the reference has none (or not)"
        inf = np.isinf(ref)
        assert np.array_equal(y[inf], ref[inf]), f"{name}: infinities differ at x={x[inf][y[inf] != ref[inf]]!r}"
    assert results["log"][x == 0.0].tolist() == [-np.inf, -np.inf] and np.isnan(results["log"][x == -1.0]).all()
    assert results["log1p"][x == -1.0][0] == -np.inf and results["tanh"][x == 20.0][0] == 1.0


def test_math_approx_options_pick_the_functions():
    from mlir import ir

    from workbench.worker import py_passes

    with ir.Context(), ir.Location.unknown():
        m = ir.Module.parse("""
func.func @f(%x: vector<8xf32>) -> (vector<8xf32>, vector<8xf32>, vector<8xf32>) {
  %a = math.tanh %x : vector<8xf32>
  %b = math.erf %x : vector<8xf32>
  %c = math.sin %x : vector<8xf32>
  return %a, %b, %c : vector<8xf32>, vector<8xf32>, vector<8xf32>
}""")
        py_passes.lookup("lh-math-approx{ops=tanh}")(m)
        text = str(m)
        assert "math.tanh" not in text and "math.erf" in text and "math.sin" in text
        py_passes.lookup("lh-math-approx")(m)
        text = str(m)
        assert "math.erf" not in text and "math.sin" in text and m.operation.verify()
        with pytest.raises(ValueError, match="no approximation for math.sin"):
            py_passes.lookup("lh-math-approx{ops=sin}")(m)
