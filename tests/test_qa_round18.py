"""QA round 18 (s32-qa): torch modules, upstream-style MLIR files and REPL sessions not tried before
(docs/qa-round18.md). Each test fails without its fix."""
from __future__ import annotations

import pytest

from conftest import import_and_check_net

needs_torch = pytest.mark.skipif(not __import__("test_torch_import")._torch_available(),
                                 reason="torch + torch-mlir not here")

STATE_UPDATES = """import torch
import torch.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("acc", torch.zeros(3))
        self.register_buffer("calls", torch.zeros((), dtype=torch.int64))

    def forward(self, x, y):
        self.acc.add_(x.mean(0))
        self.calls += 1
        y.mul_(2)
        return x * self.acc + y, self.calls * 2
"""


@needs_torch
def test_a_forward_that_updates_its_buffers_and_inputs_in_place_imports_as_one_call(tmp_path):
    """A forward that writes in place (a running sum buffer, a call counter, `y.mul_(2)` of an input):
    torch.export returns those writes as outputs before the model's own, and @main had 5 results where torch
    gave 2 (`run --check`: the run has 5 outputs, ... expects 2); and torch's reference run had already
    updated the buffers when torch.export read them, so `calls * 2` was 4 in the payload, 2 in torch."""
    run = import_and_check_net(tmp_path, STATE_UPDATES, "4x3xf32,4x3xf32")
    assert run["check"]["passed"] and run["expected_check"]["passed"], run
    payload = (tmp_path / "o" / "net.mlir").read_text()
    assert "-> (tensor<4x3xf32>, tensor<i64>)" in payload, payload[:1500]


EMBEDDING_MAX_NORM = """import torch
import torch.nn as nn
import torch.nn.functional as F


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.e = nn.Embedding(20, 8, max_norm=1.0)
        self.w = nn.Parameter(torch.randn(12, 4))

    def forward(self, ids):
        return self.e(ids).sum(1), F.embedding(ids % 12, self.w, max_norm=0.5, norm_type=1.0)
"""


@needs_torch
def test_embedding_with_max_norm_imports(tmp_path):
    """nn.Embedding(max_norm=1.0) (and F.embedding with max_norm, norm_type=1): torch renormalizes the rows it
    looks up (aten.embedding_renorm, in place on the weight), which torch-mlir does not lower: the import failed
    with `failed to legalize operation 'torch.operator' ... torch.aten.embedding_renorm`."""
    run = import_and_check_net(tmp_path, EMBEDDING_MAX_NORM, "3x5xi64[0:20]")
    assert run["check"]["passed"] and run["expected_check"]["passed"], run
