"""QA round 17 (s31-qa): torch modules, upstream-style MLIR files and hostile session files not tried before
(docs/qa-round17.md). Each test fails without its fix."""
from __future__ import annotations

import pytest

from conftest import import_and_check_net

needs_torch = pytest.mark.skipif(not __import__("test_torch_import")._torch_available(),
                                 reason="torch + torch-mlir not here")

ADAPTIVE_MAX_POOLS = """import torch
import torch.nn as nn
import torch.nn.functional as F


class Net(nn.Module):
    def forward(self, x, y):
        v1, i1 = F.adaptive_max_pool1d(x, 5, return_indices=True)
        v2, i2 = F.adaptive_max_pool2d(y, (3, 4), return_indices=True)
        return v1, i1, v2, i2, nn.AdaptiveMaxPool2d((2, 1))(y)
"""


@needs_torch
def test_adaptive_max_pool_with_sizes_that_do_not_divide_imports(tmp_path):
    """nn.AdaptiveMaxPool1d(5) of a length-7 signal, AdaptiveMaxPool2d((3, 4)) of a 7x5 plane: torch-mlir lowers
    adaptive max pooling only where the sizes divide, and the import failed: `'tensor.cast' op operand type
    'tensor<2x3x1x6xf32>' and result type 'tensor<2x3x1x5xf32>' are cast incompatible`. Each window's max (and
    its index) is taken as torch takes the windows now."""
    run = import_and_check_net(tmp_path, ADAPTIVE_MAX_POOLS, "2x3x7xf32,2x3x7x5xf32")
    assert run["check"]["passed"] and run["expected_check"]["passed"], run
