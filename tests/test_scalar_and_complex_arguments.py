"""Entries with scalar arguments and complex tensors (upstream payloads, hand-written kernels).

Before: `bench` refused an entry with a scalar argument ("scalar argument #1 (f32) of @f: the wrapper
supports tensor and memref arguments only"), and `run` refused complex inputs ("element type
complex<f32> has no numpy equivalent for inputs"); once inputs were complex, the check compared them
as float64, which drops the imaginary part. Now a scalar argument arrives as a `memref<1xT>` input
(random like any other, or `--npy` of shape () or (1,)), and complex elements are numpy complex64 /
complex128 with random real and imaginary parts, compared as complex numbers."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from conftest import ok

PAYLOADS = Path(__file__).parent / "payloads"


@pytest.mark.parametrize("route", ["cpu-lower", "select"])
def test_scalar_arguments_reach_the_entry(ctx, tmp_path, route):
    ok(ctx, f"load {PAYLOADS / 'scalar_arguments.mlir'}")
    ok(ctx, "target cpu --threads 1")
    if route == "select":
        ok(ctx, "select --apply")
    ok(ctx, "bench warmup=1 iterations=2")
    ok(ctx, "apply cpu-lower")
    x = np.arange(100, dtype=np.float32).reshape(10, 10)
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "v.npy", np.float32(-7.5))            # shape (): a scalar's value
    np.save(tmp_path / "flag.npy", np.array([True]))          # shape (1,) works too
    np.save(tmp_path / "n.npy", np.array(2, dtype=np.int64))
    out = tmp_path / "out"
    res = ok(ctx, f"run --check --npy 0={tmp_path / 'x.npy'},1={tmp_path / 'v.npy'},2={tmp_path / 'flag.npy'},"
                  f"3={tmp_path / 'n.npy'} --save-outputs {out}")
    assert res.data["run"]["check"]["passed"]
    got = np.load(out / "output0.npy")
    padded = np.full((13, 15), -7.5, np.float32)
    padded[1:11, 2:12] = x
    np.testing.assert_array_equal(got, 2 * padded + 2 * padded)   # doubled (flag), then + padded twice (n = 2)


def test_complex_inputs_are_complex_and_checked_as_complex(ctx, tmp_path):
    ok(ctx, f"load {PAYLOADS / 'complex_multiply.mlir'}")
    ok(ctx, "bench warmup=1 iterations=2")
    ok(ctx, "apply cpu-lower")
    out = tmp_path / "out"
    assert ok(ctx, f"run --check --save-outputs {out}").data["run"]["check"]["passed"]
    a, b, got = (np.load(out / f) for f in ("input0.npy", "input1.npy", "output0.npy"))
    assert a.dtype == np.complex64 and np.abs(a.imag).max() > 0.1 and np.abs(b.imag).max() > 0.1
    np.testing.assert_allclose(got, a * b, rtol=1e-6, atol=1e-6)


def test_the_check_sees_a_wrong_imaginary_part():
    from workbench.execution.runner import compare

    ref = np.array([1 + 2j, 3 - 1j], np.complex64)
    assert compare([ref.copy()], [ref], "complex<f32>").passed
    assert not compare([ref.real.astype(np.complex64)], [ref], "complex<f32>").passed


@pytest.mark.parametrize("payload", ["scalar_arguments", "complex_multiply"])
def test_scalar_and_complex_payloads_lower_for_cuda_and_run_checked_on_a_gpu(ctx, payload):
    """The same payloads through cuda-lower: the scalar arguments' memref<1xT> loads and the host control
    flow stay on the host, complex arithmetic lowers to the kernels' f32 ops (PTX checked everywhere); on a
    GPU the run matches the CPU reference."""
    from cuda_helpers import GPU_MISSING, ptx_of

    ok(ctx, f"load {PAYLOADS / (payload + '.mlir')}")
    ok(ctx, "bench warmup=1 iterations=2")
    ok(ctx, "pass lh-gpu-device-wrapper")
    device_copies = ctx.session.current_ir.split("func.func @_lh_call(")[1].split("return")[0].count("gpu.alloc")
    # the scalars' memref<1xT> inputs stay on the host, which loads them before the entry's call (a device
    # copy read there was a SIGSEGV); the tensors get device copies
    assert device_copies == {"scalar_arguments": 2, "complex_multiply": 3}[payload]
    ok(ctx, "apply cuda-lower{chip=sm_90}")
    assert ".entry" in ptx_of(ctx.session.current_ir)
    if GPU_MISSING:
        pytest.skip(f"no usable NVIDIA GPU: {GPU_MISSING}")
    ok(ctx, "target cuda")
    assert ok(ctx, "run --check").data["run"]["check"]["passed"]
