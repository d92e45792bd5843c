"""Helpers shared by the cuda target's tests (test_cuda.py, test_cuda_f32.py)."""
from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import numpy as np
import pytest

from conftest import load_npys, ok

ROOT = Path(__file__).resolve().parents[1]


def _gpu_reason() -> str:
    from workbench.targets import get_target

    usable, why = get_target("cuda").can_run()
    return "" if usable else why


GPU_MISSING = _gpu_reason()
needs_gpu = pytest.mark.skipif(bool(GPU_MISSING), reason=f"no usable NVIDIA GPU: {GPU_MISSING}")


def ptx_of(ir: str) -> str:
    """The PTX text embedded in the gpu.binary ops (cubin-format=isa)."""
    chunks = re.findall(r'assembly = "((?:[^"\\]|\\.)*)"', ir)
    return "\n".join(re.sub(r"\\([0-9A-Fa-f]{2})", lambda m: chr(int(m.group(1), 16)), c) for c in chunks)


def lowered_host_calls(ir: str) -> dict[str, int]:
    """How often the lowered host code calls each MLIR GPU runtime function (mgpu*) and the kept-buffer
    helpers of lh-cache-gpu-temporaries (lh_cached_gpu_alloc / _free; their own bodies not counted)."""
    calls: dict[str, int] = {}
    ir = re.sub(r"llvm\.func @lh_cached_gpu_\w+\(.*?\n  \}", "", ir, flags=re.S)
    for name in re.findall(r"llvm\.call @(mgpu\w+|lh_cached_gpu_\w+)", ir):
        calls[name] = calls.get(name, 0) + 1
    return calls


def cuda_matmul_module():
    """pipelines/cuda/matmul.py as a module (its generators and selector)."""
    spec = importlib.util.spec_from_file_location("cuda_matmul", ROOT / "pipelines/cuda/matmul.py")
    mm = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mm)
    return mm


def as_float64(x: np.ndarray, one_byte: str = "float8_e4m3fn") -> np.ndarray:
    """A saved array in float64; np.save writes bf16 and fp8 (ml_dtypes) as raw items (`|V2`, `|V1`):
    2-byte items are bf16, 1-byte items the ml_dtypes type `one_byte`."""
    if x.dtype.kind == "V" and x.dtype.itemsize in (1, 2):
        import ml_dtypes

        x = x.view(ml_dtypes.bfloat16 if x.dtype.itemsize == 2 else getattr(ml_dtypes, one_byte))
    return x.astype(np.float64)


def check_matmul_run(ctx, tmp_path: Path, rel_tol: float, transpose_b: bool = False,
                     one_byte: str = "float8_e4m3fn", cpu_check: bool = True) -> dict:
    """Run the loaded matmul on the GPU with --check (cpu_check: the workbench's CPU reference);
    then its output against numpy in float64 (C + A x B, or C + A x B^T with transpose_b) within
    `rel_tol` of the largest magnitude. Returns the run's data."""
    check = "--check " if cpu_check else ""
    res = ok(ctx, f"run --target cuda {check}--iterations 3 --save-outputs {tmp_path / 'o'}")
    if cpu_check:
        assert res.data["run"]["check"]["passed"], res.data["run"]["check"]
    a, b, c = (as_float64(x, one_byte) for x in load_npys(tmp_path / "o", "input"))
    got = as_float64(load_npys(tmp_path / "o", "output")[0], one_byte)
    want = c + a @ (b.T if transpose_b else b)
    assert np.abs(got - want).max() / np.abs(want).max() < rel_tol
    return res.data["run"]


def selected_fixture_matches_torch(ctx, fixture: Path) -> None:
    """An exported torch fixture through `target cuda`, `select --apply` (or nothing to select) and a
    checked GPU run: it matches both the CPU reference and torch's outputs."""
    ok(ctx, f"load {fixture}")
    ok(ctx, "target cuda")
    res = ctx.registry.dispatch("select --apply", ctx)
    assert res.ok or "nothing to select" in res.error, res.error
    run = ok(ctx, "run --target cuda --check --iterations 2").data["run"]
    assert run["check"]["passed"], run["check"]
    assert run["expected_check"]["passed"], run["expected_check"]
