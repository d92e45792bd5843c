"""Element types beyond numpy's: bf16, f16 and fp8 (e4m3, e5m2) through ml_dtypes, end to end on the CPU."""
from __future__ import annotations

import re
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

from conftest import load_npys, ok
from workbench.common.dtypes import dtype_by_name, numpy_dtype, raw_view, tolerance
from workbench.execution.runner import compare, make_inputs

PAYLOADS = Path(__file__).parent / "payloads"
BF16 = np.dtype(ml_dtypes.bfloat16)


@pytest.mark.parametrize("mlir, want", [("bf16", ml_dtypes.bfloat16), ("f8E4M3FN", ml_dtypes.float8_e4m3fn),
                                        ("f8E5M2", ml_dtypes.float8_e5m2), ("f16", np.float16), ("i1", np.bool_)])
def test_element_types_map_to_numpy_dtypes_that_survive_the_trip_by_name(mlir, want):
    dt = numpy_dtype(mlir)
    assert dt == np.dtype(want)
    assert dtype_by_name(dt.name) == dt  # output buffer specs travel by name


def test_random_bf16_and_fp8_inputs_are_floats_in_range():
    specs = [{"shape": [4, 8], "dtype": "bf16"}, {"shape": [16], "dtype": "f8E4M3FN"}, {"shape": [16], "dtype": "f8E5M2"}]
    arrays = make_inputs(specs, seed=3)
    assert [a.dtype for a in arrays] == [BF16, np.dtype(ml_dtypes.float8_e4m3fn), np.dtype(ml_dtypes.float8_e5m2)]
    for a in arrays:
        v = a.astype(np.float32)
        assert -1 <= v.min() < 0 < v.max() <= 1 and len(np.unique(v)) > 4


def test_raw_view_shares_memory_with_the_itemsize_of_the_type():
    a = np.ones((3, 5), BF16)
    raw = raw_view(a)
    assert raw.dtype == np.uint16 and raw.strides == a.strides and np.shares_memory(raw, a)
    raw[0, 0] = np.array([2.0], BF16).view(np.uint16)[0]
    assert float(a[0, 0]) == 2.0


def test_compare_uses_each_outputs_own_tolerance():
    ref = np.linspace(-1, 1, 100, dtype=np.float32)
    off = (ref + 0.01).astype(BF16)  # 1 % off: within bf16's tolerance, far outside f32's
    assert compare([off], [ref.astype(BF16)], "bf16").passed
    assert not compare([off.astype(np.float32)], [ref], "f32").passed
    mixed = compare([off, ref], [ref.astype(BF16), ref + 1e-3], ["bf16", "f32"])
    assert not mixed.passed and "output 1 (f32)" in mixed.details[0]
    assert tolerance("f8E5M2") > tolerance("f8E4M3FN") > tolerance("bf16") > tolerance("f32")


def test_npy_inputs_for_bf16_saved_raw_or_widened(tmp_path):
    a = np.linspace(-1, 1, 8, dtype=np.float32).astype(BF16)
    np.save(tmp_path / "raw.npy", a)                    # np.save writes |V2
    np.save(tmp_path / "wide.npy", a.astype(np.float32))  # what a framework exporting f32 writes
    spec = [{"shape": [8], "dtype": "bf16"}]
    for name in ("raw", "wide"):
        got = make_inputs(spec, npy_files={0: tmp_path / f"{name}.npy"})[0]
        assert got.dtype == BF16 and np.array_equal(got, a)
    np.save(tmp_path / "lossy.npy", np.full(8, 1.001, np.float32))
    with pytest.raises(ValueError, match="expected bfloat16"):
        make_inputs(spec, npy_files={0: tmp_path / "lossy.npy"})


def _run_checked(ctx, payload: Path, out: Path) -> dict:
    ok(ctx, f"load {payload}")
    ok(ctx, "bench iterations=2")
    ok(ctx, "apply cpu-lower")
    run = ok(ctx, f"run --check --save-outputs {out}").data["run"]
    assert run["error"] is None and run["check"]["passed"], run
    return run


def _bf16(arrays):
    return [a.view(BF16) if a.dtype.kind == "V" else a for a in arrays]


def test_bf16_matmul_with_f32_accumulator_runs_and_equals_numpy(ctx, tmp_path):
    _run_checked(ctx, PAYLOADS / "matmul_bf16.mlir", tmp_path)
    a, b = _bf16(load_npys(tmp_path, "input"))
    c = load_npys(tmp_path, "output")[0]
    assert a.dtype == BF16 and c.dtype == np.float32 and c.shape == (64, 32)
    np.testing.assert_allclose(c, a.astype(np.float64) @ b.astype(np.float64), rtol=1e-5, atol=1e-5)


def test_bf16_matmul_bf16_result(ctx, tmp_path):
    run = _run_checked(ctx, PAYLOADS / "matmul_bf16_out.mlir", tmp_path)
    assert run["check"]["tolerance"] == tolerance("bf16")
    a, b, c = _bf16(load_npys(tmp_path, "input"))
    got = _bf16(load_npys(tmp_path, "output"))[0]
    assert got.dtype == BF16
    want = c.astype(np.float64) + a.astype(np.float64) @ b.astype(np.float64)
    assert np.max(np.abs(got.astype(np.float64) - want)) <= 0.05 * np.max(np.abs(want))


def test_bf16_elementwise_runs_and_equals_numpy(ctx, tmp_path):
    _run_checked(ctx, PAYLOADS / "elementwise_bf16.mlir", tmp_path)
    a, b = _bf16(load_npys(tmp_path, "input"))
    got = _bf16(load_npys(tmp_path, "output"))[0]
    want = np.maximum((a * b + a).astype(np.float64), 0)  # each bf16 op rounds: compare at bf16 precision
    np.testing.assert_allclose(got.astype(np.float64), want, rtol=1e-2, atol=1e-2)
    assert (got.astype(np.float32) >= 0).all() and (got.astype(np.float32) > 0).any()


def test_fp8_and_f16_buffers_pass_through_generated_code_bit_exact(ctx, tmp_path):
    _run_checked(ctx, PAYLOADS / "transpose_fp8.mlir", tmp_path)
    types = [np.dtype(ml_dtypes.float8_e4m3fn), np.dtype(ml_dtypes.float8_e5m2), np.dtype(np.float16)]
    ins = [a.view(t) for a, t in zip(load_npys(tmp_path, "input"), types)]
    outs = [a.view(t) for a, t in zip(load_npys(tmp_path, "output"), types)]
    for i, o in zip(ins, outs):
        assert np.array_equal(o.view(np.uint8 if o.itemsize == 1 else np.uint16),
                              i.T.view(np.uint8 if i.itemsize == 1 else np.uint16))
        assert len(np.unique(o.astype(np.float32))) > 4


# -- i1 (bool) tensors: widened to one byte per element before the LLVM lowering -----------------------

def test_bool_result_and_bool_intermediate_lower_and_equal_numpy(ctx, tmp_path):
    _run_checked(ctx, PAYLOADS / "mask_where.mlir", tmp_path)
    x, y = load_npys(tmp_path, "input")
    mask, where = load_npys(tmp_path, "output")
    assert mask.dtype == np.bool_ and 0 < mask.sum() < mask.size
    assert np.array_equal(mask, x > 0) and np.array_equal(where, np.where(x > 0, x, y))


def test_bool_argument_and_bool_constant(ctx, tmp_path):
    _run_checked(ctx, PAYLOADS / "mask_input.mlir", tmp_path)
    x, mask = load_npys(tmp_path, "input")
    assert mask.dtype == np.bool_ and 0 < mask.sum() < mask.size
    keep = np.ones(37, bool)
    keep[[1, 4, 8, 13, 19, 26, 34]] = False
    np.testing.assert_array_equal(load_npys(tmp_path, "output")[0], np.where(~mask & keep, -1, x))


def test_bool_memrefs_are_bytes_at_the_abi(ctx):
    ok(ctx, f"load {PAYLOADS / 'mask_where.mlir'}")
    ok(ctx, "apply cpu-bufferize")
    assert "memref<8x33xi1>" in ctx.session.current_ir
    ok(ctx, "pass lh-widen-i1-memrefs")
    ir_text = ctx.session.current_ir
    assert "xi1>" not in ir_text and "memref<8x33xi8>" in ir_text
    assert "arith.extui" in ir_text  # the comparison's i1 is stored as a byte
    ok(ctx, "apply cpu-lower")  # the rest of the lowering accepts it


@pytest.mark.parametrize("payload", ["mask_where.mlir", "mask_input.mlir"])
def test_bool_operands_vectorized_by_the_selector(ctx, tmp_path, payload):
    """The CPU selector vectorizes ops with bool operands too: the widening then meets vector transfers
    of 2-D bool buffers (their padding value is widened with them) and the result still equals the
    unscheduled payload."""
    ok(ctx, f"load {PAYLOADS / payload}")
    ok(ctx, "select --apply")
    assert "vector<" in ctx.session.current_ir and "xi1>" in ctx.session.current_ir
    ok(ctx, "bench warmup=0 iterations=1")
    ok(ctx, "apply cpu-lower")
    assert ok(ctx, "run --check").data["run"]["check"]["passed"]


MASKED_BOOL_STORE = """func.func @main(%x: memref<8x33xf32>, %out: memref<8x33xi1>) {
  %c0 = arith.constant 0 : index
  %c32 = arith.constant 32 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant dense<0.0> : vector<32xf32>
  %mask = vector.create_mask %c1 : vector<32xi1>
  %v = vector.load %x[%c0, %c32] : memref<8x33xf32>, vector<32xf32>
  %b = arith.cmpf ogt, %v, %zero : vector<32xf32>
  vector.maskedstore %out[%c0, %c32], %mask, %b : memref<8x33xi1>, vector<32xi1>, vector<32xi1>
  return
}
"""


def test_a_masked_bool_store_into_a_2d_buffer_widens_its_value_not_its_mask(ctx, tmp_path):
    """vector.maskedstore's value is its last operand (after one index per memref dim, then the mask): the
    widening extends the stored bools to bytes and leaves the mask i1 (it extended operand 3, the mask of a
    2-D store: a vector of bytes as the mask, which the verifier refuses; a flash attention's row guard,
    8 x 1500 bools in tiles of 32, on 2 threads)."""
    payload = tmp_path / "masked_bool_store.mlir"
    payload.write_text(MASKED_BOOL_STORE)
    ok(ctx, f"load {payload}")
    ok(ctx, "pass lh-widen-i1-memrefs")
    ir_text = ctx.session.current_ir
    assert "memref<8x33xi8>" in ir_text and "xi1>" in ir_text   # (the mask and the comparison stay bools)
    assert re.search(r"vector.maskedstore %\w+\[%\w+, %\w+\], %\w+, %\w+ : memref<8x33xi8>, vector<32xi1>, "
                     r"vector<32xi8>", ir_text), ir_text
