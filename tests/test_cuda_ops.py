"""cuda target, non-matmul ops (issue 14 item 3): strided copies on the device, the row-reduction and
elementwise schedules, the torch corpus on the GPU. Lowering is checked everywhere (PTX, no GPU
needed); runs on a GPU are checked against the CPU reference and torch's outputs (skipped without one)."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from conftest import load_npys, ok
from cuda_helpers import needs_gpu, ptx_of

ROOT = Path(__file__).resolve().parents[1]
TORCH = ROOT / "tests" / "fixtures" / "torch"

SLICE = """func.func @slice(%a: tensor<4x24xf32>) -> tensor<4x8xf32> {
  %s = tensor.extract_slice %a[0, 8] [4, 8] [1, 1] : tensor<4x24xf32> to tensor<4x8xf32>
  return %s : tensor<4x8xf32>
}
"""


def test_strided_copy_becomes_a_kernel(ctx, tmp_path):
    """A slice returned from the payload is a copy of a strided view: no single gpu.memcpy can do it,
    cuda-lower runs it as a kernel of its own (before: `memref.copy of a non-contiguous buffer`)."""
    p = tmp_path / "slice.mlir"
    p.write_text(SLICE)
    ok(ctx, f"load {p}")
    ok(ctx, "bench iterations=2")
    ok(ctx, "apply cuda-lower{chip=sm_90}")
    ir = ctx.session.current_ir
    assert "gpu.binary @" in ir and ir.count("gpu.launch_func ") >= 1
    assert ".entry" in ptx_of(ir)


@needs_gpu
def test_strided_copy_runs(ctx, tmp_path):
    p = tmp_path / "slice.mlir"
    p.write_text(SLICE)
    ok(ctx, f"load {p}")
    res = ok(ctx, f"run --target cuda --check --iterations 2 --save-outputs {tmp_path / 'o'}")
    assert res.data["run"]["check"]["passed"], res.data["run"]["check"]
    (a,), (got,) = load_npys(tmp_path / "o", "input"), load_npys(tmp_path / "o", "output")
    np.testing.assert_array_equal(got, a[:, 8:16])
