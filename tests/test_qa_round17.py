"""QA round 17 (s31-qa): torch modules, upstream-style MLIR files and hostile session files not tried before
(docs/qa-round17.md). Each test fails without its fix."""
from __future__ import annotations

import json

import pytest

from conftest import import_and_check_net, run_cli

needs_torch = pytest.mark.skipif(not __import__("test_torch_import")._torch_available(),
                                 reason="torch + torch-mlir not here")

ADAPTIVE_MAX_POOLS = """import torch
import torch.nn as nn
import torch.nn.functional as F


class Net(nn.Module):
    def forward(self, x, y, z):
        v1, i1 = F.adaptive_max_pool1d(x, 5, return_indices=True)
        v2, i2 = F.adaptive_max_pool2d(y, (3, 4), return_indices=True)
        v3, i3 = F.adaptive_max_pool2d(z, (4, 3), return_indices=True)
        return v1, i1, v2, i2, nn.AdaptiveMaxPool2d((2, 1))(y), v3, i3
"""


@needs_torch
def test_adaptive_max_pool_with_sizes_that_do_not_divide_imports(tmp_path):
    """nn.AdaptiveMaxPool1d(5) of a length-7 signal, AdaptiveMaxPool2d((3, 4)) of a 7x5 plane: torch-mlir lowers
    adaptive max pooling only where the sizes divide, and the import failed: `'tensor.cast' op operand type
    'tensor<2x3x1x6xf32>' and result type 'tensor<2x3x1x5xf32>' are cast incompatible`. Each window's max (and
    its index) is taken as torch takes the windows now. Sizes that divide (8x6 -> 4x3) keep torch-mlir's own
    lowering: a pooling op, not a slice and a max per output element."""
    run = import_and_check_net(tmp_path, ADAPTIVE_MAX_POOLS, "2x3x7xf32,2x3x7x5xf32,2x3x8x6xf32")
    assert run["check"]["passed"] and run["expected_check"]["passed"], run
    payload = (tmp_path / "o" / "net.mlir").read_text()
    assert "linalg.pooling_nchw_max" in payload or "linalg.max_pool" in payload, payload[:2000]


UINT16_MODEL = """import torch


class Net(torch.nn.Module):
    def forward(self, a):
        b = a + 1
        u = b.to(torch.uint16)
        return u.to(torch.int32)
"""


@needs_torch
def test_a_uint16_value_is_refused_in_one_line_at_the_models_line(tmp_path):
    """`.to(torch.uint16)` (torch 2.3+; uint32 / uint64 alike): torch-mlir has no MLIR type for it, and the import
    said only `torch-mlir export failed: KeyError: torch.uint16`. Refused before torch-mlir runs now, at the
    model's line, with what to use instead."""
    from test_torch_import import TORCH_PYTHON

    (tmp_path / "net.py").write_text(UINT16_MODEL)
    out = run_cli(["import", "net.py:Net", "--inputs", "3x4xi32[0:1000]", "--out", "o", "--json", "-"],
                  cwd=tmp_path, env_extra={"LH_WORKBENCH_TORCH_PYTHON": TORCH_PYTHON}, timeout=600)
    error = json.loads(out.stdout)["error"]
    assert out.returncode != 0 and "\n" not in error
    assert "net.py:7: " in error and "no MLIR type for uint16" in error, error
