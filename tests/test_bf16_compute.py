"""`lh-bf16-compute-f32` (workbench/worker/cpu/bf16_compute.py): pointwise bf16 arithmetic and math
computed in f32 and rounded once per chain (torch's opmath), so that a bf16 GELU's erf gets
lh-math-approx's f32 polynomial instead of a libm call per element.

The payload is a GELU as torch-mlir writes it for bf16 (every op on bf16), vectorized by the CPU
selector, plus a bf16 row sum whose accumulator crosses loop iterations (it keeps its per-step
rounding). Results are compared with numpy: the GELU in float64 rounded once to bf16, and the
per-op-rounded form the payload spells out."""
from __future__ import annotations

import numpy as np
import pytest

from conftest import load_npys, ok

ml_dtypes = pytest.importorskip("ml_dtypes")
BF16 = ml_dtypes.bfloat16
ROWS, COLS = 64, 256

GELU = f"""#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
func.func @main(%x: tensor<{ROWS}x{COLS}xbf16>) -> (tensor<{ROWS}x{COLS}xbf16>, tensor<{ROWS}xbf16>) {{
  %two = arith.constant 2.0 : bf16
  %one = arith.constant 1.0 : bf16
  %half = arith.constant 0.5 : bf16
  %zero = arith.constant 0.0 : bf16
  %e = tensor.empty() : tensor<{ROWS}x{COLS}xbf16>
  %g = linalg.generic {{indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}}
      ins(%x : tensor<{ROWS}x{COLS}xbf16>) outs(%e : tensor<{ROWS}x{COLS}xbf16>) {{
  ^bb0(%in: bf16, %out: bf16):
    %s = math.sqrt %two : bf16
    %d = arith.divf %in, %s : bf16
    %f = math.erf %d : bf16
    %a = arith.addf %f, %one : bf16
    %m = arith.mulf %a, %half : bf16
    %y = arith.mulf %in, %m : bf16
    linalg.yield %y : bf16
  }} -> tensor<{ROWS}x{COLS}xbf16>
  %re = tensor.empty() : tensor<{ROWS}xbf16>
  %r0 = linalg.fill ins(%zero : bf16) outs(%re : tensor<{ROWS}xbf16>) -> tensor<{ROWS}xbf16>
  %r = linalg.generic {{indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}}
      ins(%x : tensor<{ROWS}x{COLS}xbf16>) outs(%r0 : tensor<{ROWS}xbf16>) {{
  ^bb0(%in: bf16, %acc: bf16):
    %t = arith.addf %in, %acc : bf16
    linalg.yield %t : bf16
  }} -> tensor<{ROWS}xbf16>
  return %g, %r : tensor<{ROWS}x{COLS}xbf16>, tensor<{ROWS}xbf16>
}}
"""


def _bf16(v) -> np.ndarray:
    return np.asarray(v, np.float32).astype(BF16).astype(np.float64)


def _erf(v: np.ndarray) -> np.ndarray:
    from math import erf

    return np.vectorize(erf)(v)


def test_bf16_gelu_is_computed_in_f32_rounded_once_and_vectorized(ctx, tmp_path):
    (tmp_path / "gelu.mlir").write_text(GELU)
    rng = np.random.default_rng(3)
    x = rng.normal(0.0, 2.0, (ROWS, COLS)).astype(np.float32).astype(BF16)
    np.save(tmp_path / "x.npy", x)
    ok(ctx, f"load {tmp_path / 'gelu.mlir'}")
    ok(ctx, "select --apply")
    assert "vector<" in ctx.session.current_ir and "xbf16>" in ctx.session.current_ir
    ok(ctx, "bench warmup=0 iterations=1")
    ok(ctx, "pass lh-bf16-compute-f32")
    ir = ctx.session.current_ir
    # no arithmetic or math on bf16 is left: the erf is on f32 vectors, the chain rounded once
    for line in ir.splitlines():
        if any(f"{name} " in line for name in ("arith.addf", "arith.mulf", "arith.divf", "math.erf", "math.sqrt")):
            assert "bf16" not in line, line
    assert "math.erf %" in ir and "xf32>" in ir and "arith.shrui" in ir   # (conversions: integer ops)
    ok(ctx, "apply cpu-lower")
    lowered = ctx.session.current_ir
    assert "erff" not in lowered and "llvm.intr.fma" in lowered   # lh-math-approx took the f32 erf
    out = tmp_path / "out"
    res = ok(ctx, f"run --check --npy 0={tmp_path / 'x.npy'} --iterations 1 --warmup 0 --save-outputs {out}")
    assert res.data["run"]["check"]["passed"]   # against the unscheduled payload (per-op rounding, libm)
    gelu, rowsum = (a.view(BF16) for a in load_npys(out, "output"))   # (np.save writes bf16 as |V2)
    got = gelu.astype(np.float64)
    xd = x.astype(np.float64)
    once = _bf16(xd * 0.5 * (1.0 + _erf(xd / np.sqrt(2.0))))          # exact GELU, one rounding
    s = _bf16(np.sqrt(2.0))                                            # the payload's per-op rounding
    per_op = _bf16(xd * _bf16(_bf16(_bf16(_erf(_bf16(xd / s))) + 1.0) * 0.5))
    # within a bf16 ulp (plus f32's cancellation in 1 + erf(x) for x < -3: ~1e-7 absolute)
    bound = np.abs(once) * 2.0 ** -7 + 1e-6
    assert np.all(np.abs(got - once) <= bound), np.max(np.abs(got - once) / bound)
    # rounded once (but where f32's own error straddles a bf16 rounding boundary), not once per op
    # (|x| <= 2: away from the cancellation in 1 + erf)
    central = np.abs(xd) <= 2.0
    off_once = np.count_nonzero(got[central] != once[central])
    off_per_op = np.count_nonzero(got[central] != per_op[central])
    assert off_once <= np.count_nonzero(central) // 200 and off_per_op > 10 * max(off_once, 1), (off_once, off_per_op)
    # the row sum's accumulator (bf16, across loop iterations and vector partials) keeps its rounding
    # at every step, as written: most rows differ from the exact sum rounded once, each by a few ulps
    exact = xd.sum(axis=1)
    sums = rowsum.astype(np.float64)
    assert np.count_nonzero(sums != _bf16(exact)) > ROWS // 2
    assert np.all(np.abs(sums - exact) <= COLS * 2.0 ** -8 * np.abs(xd).max())


def test_the_pass_leaves_f32_alone_and_is_idempotent(ctx, tmp_path):
    from workbench.targets.cpu import CpuTarget  # noqa: F401  (the cpu target is registered)

    (tmp_path / "gelu.mlir").write_text(GELU.replace("bf16", "f32"))
    ok(ctx, f"load {tmp_path / 'gelu.mlir'}")
    ok(ctx, "apply cpu-bufferize")
    before = ctx.session.current_ir
    ok(ctx, "pass lh-bf16-compute-f32")
    assert ctx.session.current_ir == before or "arith.extf" not in ctx.session.current_ir
    (tmp_path / "b.mlir").write_text(GELU)
    ok(ctx, f"load {tmp_path / 'b.mlir'}")
    ok(ctx, "apply cpu-bufferize")
    ok(ctx, "pass lh-bf16-compute-f32")
    once = ctx.session.current_ir
    ok(ctx, "pass lh-bf16-compute-f32")
    assert ctx.session.current_ir == once


CONVERT = """#id = affine_map<(d0) -> (d0)>
func.func @main(%x: tensor<4096xf32>, %b: tensor<4096xbf16>) -> (tensor<4096xbf16>, tensor<4096xf32>) {
  %e = tensor.empty() : tensor<4096xbf16>
  %t = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%x : tensor<4096xf32>) outs(%e : tensor<4096xbf16>) {
  ^bb0(%in: f32, %out: bf16):
    %r = arith.truncf %in : f32 to bf16
    linalg.yield %r : bf16
  } -> tensor<4096xbf16>
  %f = tensor.empty() : tensor<4096xf32>
  %w = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%b : tensor<4096xbf16>) outs(%f : tensor<4096xf32>) {
  ^bb0(%in: bf16, %out: f32):
    %r = arith.extf %in : bf16 to f32
    linalg.yield %r : f32
  } -> tensor<4096xf32>
  return %t, %w : tensor<4096xbf16>, tensor<4096xf32>
}
"""


def test_conversions_are_integer_vector_ops_rounding_to_nearest_even(ctx, tmp_path):
    """f32 -> bf16 and back as shifts and adds on vectors (no __truncsfbf2 per element on AVX2):
    bit-exact with ml_dtypes (round to nearest even; ties, the largest finite values, infinities,
    subnormals, NaN)."""
    rng = np.random.default_rng(5)
    bits = rng.integers(0, 1 << 32, 4096, dtype=np.uint64).astype(np.uint32)
    # ties (low half exactly 0x8000) with both parities, just below and above them
    bits[:64] = (bits[:64] & 0xFFFF0000) | 0x8000
    bits[64:128] = (bits[64:128] & 0xFFFF0000) | 0x7FFF
    bits[128:192] = (bits[128:192] & 0xFFFF0000) | 0x8001
    x = bits.view(np.float32).copy()
    x[192:200] = [np.inf, -np.inf, 0.0, -0.0, 3.4028235e38, -3.4028235e38, 1e-45, -1e-40]
    x[200:204] = np.nan
    b = rng.normal(0, 100, 4096).astype(np.float32).astype(BF16)
    b[:3] = np.array([np.inf, -np.inf, np.nan], np.float32).astype(BF16)
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "b.npy", b)
    (tmp_path / "c.mlir").write_text(CONVERT)
    ok(ctx, f"load {tmp_path / 'c.mlir'}")
    ok(ctx, "select --apply")
    ok(ctx, "bench warmup=0 iterations=1")
    ok(ctx, "pass lh-bf16-compute-f32")
    ir = ctx.session.current_ir
    assert "arith.truncf" not in ir and "arith.extf" not in ir and "arith.shrui" in ir and "xi32>" in ir
    ok(ctx, "apply cpu-lower")
    out = tmp_path / "out"
    ok(ctx, f"run --npy 0={tmp_path / 'x.npy'},1={tmp_path / 'b.npy'} --iterations 1 --warmup 0 --save-outputs {out}")
    narrow, wide = load_npys(out, "output")
    with np.errstate(invalid="ignore"):
        want = x.astype(BF16)
    got = narrow.view(np.uint16)
    finite = ~np.isnan(x)
    np.testing.assert_array_equal(got[finite], want.view(np.uint16)[finite])
    assert np.isnan(narrow.view(BF16)[200:204].astype(np.float32)).all()
    np.testing.assert_array_equal(wide.view(np.uint32)[3:], b.astype(np.float32).view(np.uint32)[3:])
    assert wide[0] == np.inf and wide[1] == -np.inf and np.isnan(wide[2])


def test_f16_chains_are_computed_in_f32_too(ctx, tmp_path):
    """f16 (no f16 arithmetic on x86 without AVX512-FP16 either): the GELU chain on f32, its erf the
    f32 polynomial, rounded once to f16 (f16's conversions stay LLVM's: F16C)."""
    (tmp_path / "g16.mlir").write_text(GELU.replace("bf16", "f16"))
    rng = np.random.default_rng(4)
    x = rng.normal(0.0, 2.0, (ROWS, COLS)).astype(np.float16)
    np.save(tmp_path / "x.npy", x)
    ok(ctx, f"load {tmp_path / 'g16.mlir'}")
    ok(ctx, "select --apply")
    ok(ctx, "bench warmup=0 iterations=1")
    ok(ctx, "pass lh-bf16-compute-f32")
    ir = ctx.session.current_ir
    erf = [line for line in ir.splitlines() if "math.erf" in line]
    assert erf and all("f16" not in line and "f32" in line for line in erf), erf
    assert "arith.truncf" in ir   # f16 conversions are left to LLVM
    ok(ctx, "apply cpu-lower")
    assert "erff" not in ctx.session.current_ir
    out = tmp_path / "out"
    res = ok(ctx, f"run --check --npy 0={tmp_path / 'x.npy'} --iterations 1 --warmup 0 --save-outputs {out}")
    assert res.data["run"]["check"]["passed"]
    gelu, _ = load_npys(out, "output")
    xd = x.astype(np.float64)
    once = (xd * 0.5 * (1.0 + _erf(xd / np.sqrt(2.0)))).astype(np.float16).astype(np.float64)
    got = gelu.astype(np.float64)
    assert np.all(np.abs(got - once) <= np.abs(once) * 2.0 ** -10 + 1e-6)
    central = np.abs(xd) <= 2.0
    assert np.count_nonzero(got[central] != once[central]) <= np.count_nonzero(central) // 100


# a strided bf16 convolution into f32 as torch-mlir writes a bf16 model's (HF ResNet's downsampling 3x3):
# not the VNNI layout (stride 2), so the f32 window schedule vectorizes it on bf16 operands
STRIDED_CONV = """func.func @main(%x: tensor<1x16x10x10xbf16>, %w: tensor<32x16x3x3xbf16>) -> tensor<1x32x4x4xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x32x4x4xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<1x32x4x4xf32>) -> tensor<1x32x4x4xf32>
  %c = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<2> : vector<2xi64>}
      ins(%x, %w : tensor<1x16x10x10xbf16>, tensor<32x16x3x3xbf16>) outs(%f : tensor<1x32x4x4xf32>) -> tensor<1x32x4x4xf32>
  return %c : tensor<1x32x4x4xf32>
}
"""


def _selected_with_bf16_inputs(ctx, tmp_path, text: str, x_shape: tuple, w_shape: tuple, seed: int):
    """`text` (a payload of an input and a filter) loaded and selected on the host's cpu target, with random bf16
    input and filter saved as tmp_path/x.npy and w.npy (what `run --npy` reads); (x, w)."""
    (tmp_path / "payload.mlir").write_text(text)
    rng = np.random.default_rng(seed)
    x = rng.normal(0.0, 1.0, x_shape).astype(np.float32).astype(BF16)
    w = rng.normal(0.0, 0.3, w_shape).astype(np.float32).astype(BF16)
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "w.npy", w)
    ok(ctx, f"load {tmp_path / 'payload.mlir'}")
    ok(ctx, "target cpu")
    ok(ctx, "select --apply")
    return x, w


def test_bf16_element_moves_of_a_strided_conv_window_are_moves_of_bits(ctx, tmp_path):
    """The vectorized window takes the filter (vector<16x8x3xbf16>) apart tap by tap and regathers the taps
    (vector.from_elements of bf16), and transposes input rows (vector.shuffle of vector<72xbf16>): LLVM's
    x86 backend aborted on those bf16 element moves ("Do not know how to soft promote this operator's
    operand!"); the pass moves their i16 bits instead, and the result is torch's (f32 accumulation)."""
    x, w = _selected_with_bf16_inputs(ctx, tmp_path, STRIDED_CONV, (1, 16, 10, 10), (32, 16, 3, 3), seed=5)
    ok(ctx, "pass lh-bf16-compute-f32")
    ir = ctx.session.current_ir
    for line in ir.splitlines():   # no element move on bf16 is left
        if any(f"{name} " in line for name in ("vector.extract", "vector.from_elements", "vector.shuffle",
                                               "vector.insert_strided_slice", "vector.insert")):
            assert "bf16" not in line.split(":")[-1], line
    assert "xi16>" in ir
    out = tmp_path / "out"
    res = ok(ctx, f"run --check --npy 0={tmp_path / 'x.npy'},1={tmp_path / 'w.npy'} --iterations 1 --warmup 0 "
                  f"--save-outputs {out}")
    assert res.data["run"]["check"]["passed"]
    got = load_npys(out, "output")[0].astype(np.float64)
    xd, wd = x.astype(np.float64), w.astype(np.float64)
    want = np.zeros((1, 32, 4, 4))
    for i in range(4):
        for j in range(4):
            patch = xd[0, :, 2 * i:2 * i + 3, 2 * j:2 * j + 3]
            want[0, :, i, j] = np.tensordot(wd, patch, axes=([1, 2, 3], [0, 1, 2]))
    assert np.allclose(got, want, rtol=1e-5, atol=1e-4), np.max(np.abs(got - want))


# a bf16 max pool, zero-padded, read by a VNNI convolution (HF ResNet's stem in bf16): the padded rows are
# copied as vector<17xbf16>
POOL_PAD_CONV = """func.func @main(%x0: tensor<1x16x18x18xbf16>, %w: tensor<16x16x3x3xbf16>) -> tensor<1x16x8x8xf32> {
  %zero = arith.constant 0.0 : f32
  %zb = arith.constant 0.0 : bf16
  %ninf = arith.constant 0xFF80 : bf16
  %pw = tensor.empty() : tensor<3x3xbf16>
  %pe = tensor.empty() : tensor<1x16x8x8xbf16>
  %pf = linalg.fill ins(%ninf : bf16) outs(%pe : tensor<1x16x8x8xbf16>) -> tensor<1x16x8x8xbf16>
  %p = linalg.pooling_nchw_max {dilations = dense<1> : vector<2xi64>, strides = dense<2> : vector<2xi64>}
      ins(%x0, %pw : tensor<1x16x18x18xbf16>, tensor<3x3xbf16>) outs(%pf : tensor<1x16x8x8xbf16>) -> tensor<1x16x8x8xbf16>
  %x = tensor.pad %p low[0, 0, 1, 1] high[0, 0, 1, 1] {
  ^bb0(%a: index, %b: index, %c: index, %d: index):
    tensor.yield %zb : bf16
  } : tensor<1x16x8x8xbf16> to tensor<1x16x10x10xbf16>
  %e = tensor.empty() : tensor<1x16x8x8xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<1x16x8x8xf32>) -> tensor<1x16x8x8xf32>
  %c = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>}
      ins(%x, %w : tensor<1x16x10x10xbf16>, tensor<16x16x3x3xbf16>) outs(%f : tensor<1x16x8x8xf32>) -> tensor<1x16x8x8xf32>
  return %c : tensor<1x16x8x8xf32>
}
"""


def test_bf16_vector_loads_and_stores_of_any_length_lower(ctx, tmp_path):
    """LLVM's x86 backend aborted on loads / stores of bf16 vectors of 8k+1 elements (here the padded rows'
    vector<17xbf16> copies: "Do not know how to soft promote this operator's operand!"); the lowering
    (lh-bf16-memory-as-bits) loads and stores their i16 bits, and the result is numpy's."""
    import re

    x, w = _selected_with_bf16_inputs(ctx, tmp_path, POOL_PAD_CONV, (1, 16, 18, 18), (16, 16, 3, 3), seed=7)
    ok(ctx, "bench warmup=0 iterations=1")
    ok(ctx, "apply cpu-lower")
    lowered = ctx.session.current_ir
    assert not re.search(r"llvm\.(load|store)[^\n]*vector<\d+xbf16>", lowered)
    assert re.search(r"llvm\.(load|store)[^\n]*vector<17xi16>", lowered)   # (the rows the backend refused)
    out = tmp_path / "out"
    res = ok(ctx, f"run --check --npy 0={tmp_path / 'x.npy'},1={tmp_path / 'w.npy'} --iterations 1 --warmup 0 "
                  f"--save-outputs {out}")
    assert res.data["run"]["check"]["passed"]
    got = load_npys(out, "output")[0].astype(np.float64)
    xd, wd = x.astype(np.float64), w.astype(np.float64)
    pooled = np.full((16, 8, 8), -np.inf)
    for i in range(8):
        for j in range(8):
            pooled[:, i, j] = xd[0, :, 2 * i:2 * i + 3, 2 * j:2 * j + 3].max(axis=(1, 2))
    padded = np.pad(pooled, ((0, 0), (1, 1), (1, 1)))
    want = np.zeros((1, 16, 8, 8))
    for i in range(8):
        for j in range(8):
            want[0, :, i, j] = np.tensordot(wd, padded[:, i:i + 3, j:j + 3], axes=([1, 2, 3], [0, 1, 2]))
    assert np.allclose(got, want, rtol=1e-5, atol=1e-4), np.max(np.abs(got - want))
