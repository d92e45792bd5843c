"""The sycl target: GPU-dialect kernels -> SPIR-V -> dpctl, here on the OpenCL CPU device (issue 6).

CI installs the `sycl` extra (dpctl + the Intel SYCL/OpenCL runtimes), so these run there; without
it they skip with the reason the target gives.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from workbench.common import sycl_devices
from workbench.targets import get_target
from conftest import ok

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"

_can, _why = get_target("sycl").can_run()
needs_sycl = pytest.mark.skipif(not _can, reason=f"sycl target cannot run here: {_why}")


def load(d: Path, prefix: str) -> list[np.ndarray]:
    return [np.load(p) for p in sorted(d.glob(f"{prefix}*.npy"), key=lambda p: int(p.stem[len(prefix):]))]


def _run_json_contract(run: dict, iterations: int) -> None:
    assert run["target"] == "sycl" and run["error"] is None
    assert run["iterations"] == iterations and len(run["times_s"]) == iterations
    assert 0 < run["min_s"] <= run["median_s"] and run["mean_s"] > 0 and run["stddev_s"] >= 0
    assert run["gflops"] > 0
    assert run["check"]["passed"] and run["check"]["max_rel_err"] <= run["check"]["tolerance"]
    assert run["device"] and run["timer"]


@needs_sycl
def test_matmul_runs_and_checks_on_sycl_device(ctx, tmp_path):
    ok(ctx, f"load {EXAMPLES / 'matmul.mlir'}")
    res = ok(ctx, f"run --target sycl --check --iterations 3 --warmup 1 --save-outputs {tmp_path}")
    run = res.data["run"]
    _run_json_contract(run, 3)
    assert run["inserted_wrapper"] is True
    # the timed calls are kernel (device) times, the wall clock is reported beside them
    assert "device" in run["timer"] and len(run["wall_times_s"]) == 3
    a, b, c = [x.astype(np.float64) for x in load(tmp_path, "input")]
    np.testing.assert_allclose(load(tmp_path, "output")[0], c + a @ b, rtol=1e-4, atol=1e-3)
    assert ctx.session.target_name == "sycl"


@needs_sycl
def test_softmax_runs_and_checks_on_sycl_device(ctx, tmp_path):
    ok(ctx, f"load {EXAMPLES / 'softmax.mlir'}")
    res = ok(ctx, f"run --target sycl --check --iterations 2 --save-outputs {tmp_path}")
    _run_json_contract(res.data["run"], 2)
    x = load(tmp_path, "input")[0].astype(np.float64)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    np.testing.assert_allclose(load(tmp_path, "output")[0], e / e.sum(axis=1, keepdims=True), rtol=1e-4, atol=1e-6)


@needs_sycl
def test_explicit_lowering_then_run(ctx, tmp_path):
    """sycl-lower as a visible step: kernels become gpu.binary (SPIR-V), the host keeps the launches;
    run then only extracts the kernels and the host plan."""
    ok(ctx, f"load {EXAMPLES / 'matmul.mlir'}")
    ok(ctx, "target sycl")
    ok(ctx, "bench iterations=2 warmup=0")
    ok(ctx, "apply sycl-lower")
    ir = ctx.session.current_ir
    assert "gpu.binary @matmul_kernel" in ir and "gpu.module" not in ir
    assert "gpu.launch_func  @matmul_kernel::@matmul_kernel blocks in" in ir
    assert "threads in (%c8, %c8, %c1)" in ir  # the default 8x8 work-group of gpu-map.yaml
    res = ok(ctx, f"run --check --save-outputs {tmp_path}")
    run = res.data["run"]
    assert run["inserted_wrapper"] is False and run["iterations"] == 2 and run["check"]["passed"]


@needs_sycl
def test_work_group_size_is_a_parameter(ctx, tmp_path):
    """A different work-group tile reaches the launch (and the result is still right)."""
    ok(ctx, f"load {EXAMPLES / 'matmul.mlir'}")
    ok(ctx, "target sycl")
    ok(ctx, "apply cpu-bufferize")
    ok(ctx, "apply sycl-gpu-map{tile=16,4}")
    assert "threads in (%c16, %c4, %c1)" in ctx.session.current_ir
    res = ok(ctx, f"run --check --iterations 2 --save-outputs {tmp_path}")
    assert res.data["run"]["check"]["passed"]
    a, b, c = [x.astype(np.float64) for x in load(tmp_path, "input")]
    np.testing.assert_allclose(load(tmp_path, "output")[0], c + a @ b, rtol=1e-4, atol=1e-3)


@needs_sycl
def test_host_loops_are_refused_with_the_ops_named(ctx):
    """Loops left on the host (not mapped to the GPU) cannot run through dpctl: one clear line."""
    ok(ctx, f"load {EXAMPLES / 'matmul.mlir'}")
    ok(ctx, "apply cpu-bufferize")
    ok(ctx, "pass func.func(convert-linalg-to-loops)")
    res = ctx.registry.dispatch("run --target sycl --iterations 1", ctx)
    assert not res.ok
    assert "ops remain that the SYCL runtime cannot run" in res.error and "scf.for" in res.error
    assert "\n" not in res.error


def test_opencl_runtime_located_for_the_run_worker(monkeypatch):
    monkeypatch.delenv("OCL_ICD_FILENAMES", raising=False)
    lib = sycl_devices.find_opencl_cpu_runtime()
    env = sycl_devices.sycl_env()
    if lib is None:
        assert "OCL_ICD_FILENAMES" not in env
    else:
        assert env["OCL_ICD_FILENAMES"] == lib and Path(lib).name == "libintelocl.so"
    monkeypatch.setenv("OCL_ICD_FILENAMES", "/somewhere/libOther.so")
    assert "OCL_ICD_FILENAMES" not in sycl_devices.sycl_env()  # the user's choice wins
    assert get_target("sycl").run_env(None).get("OCL_ICD_FILENAMES") is None


@needs_sycl
def test_sycl_device_can_be_chosen_by_filter(ctx, monkeypatch):
    monkeypatch.setenv("LH_WORKBENCH_SYCL_DEVICE", "level_zero:gpu:7")
    ok_, why = get_target("sycl").can_run()
    assert not ok_ and "LH_WORKBENCH_SYCL_DEVICE=level_zero:gpu:7" in why
    ok(ctx, f"load {EXAMPLES / 'softmax.mlir'}")
    res = ctx.registry.dispatch("run --target sycl --iterations 1", ctx)
    assert not res.ok and res.error.startswith("target sycl cannot run here: no SYCL device matches")
