"""QA round 19 (s33-qa): torch modules, upstream MLIR files and hostile sessions not tried before
(docs/qa-round19.md). Each test fails without its fix."""
from __future__ import annotations

import pytest

from conftest import MATMUL, import_and_check_net, run_cli

needs_torch = pytest.mark.skipif(not __import__("test_torch_import")._torch_available(),
                                 reason="torch + torch-mlir not here")

GELU_TANH_F64 = """import torch
import torch.nn as nn
import torch.nn.functional as F


class Net(nn.Module):
    def forward(self, x):
        return F.gelu(x, approximate="tanh"), F.gelu(x.float(), approximate="tanh")
"""


@needs_torch
def test_gelu_tanh_uses_torchs_constant(tmp_path):
    """F.gelu(x, approximate="tanh") (GPT-2's gelu_new): torch-mlir's lowering writes sqrt(2 / pi) as
    0.7977240352174656 (pi taken as 22 / 7): an f64 model missed torch by 2e-5 relative (f64 tolerance 1e-6),
    and f32 models carried the same error under their tolerance."""
    run = import_and_check_net(tmp_path, GELU_TANH_F64, "6x40xf64")
    assert run["check"]["passed"] and run["expected_check"]["passed"], run
    assert "0.79772" not in (tmp_path / "o" / "net.mlir").read_text()


GAUSSIAN_NLL = """import torch
import torch.nn as nn
import torch.nn.functional as F


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.loss = nn.GaussianNLLLoss(full=True, reduction="none")

    def forward(self, x, y, v):
        return (F.gaussian_nll_loss(x, y, v.abs() + 0.1), self.loss(x, y, v[:, :1].abs()),
                F.gaussian_nll_loss(x, y, v[:, 0].abs(), reduction="sum"))
"""


@needs_torch
def test_gaussian_nll_loss_imports(tmp_path):
    """F.gaussian_nll_loss / nn.GaussianNLLLoss with a tensor var: torch's Python checks `torch.any(var < 0)`
    before computing, and torch.export refused the branch: `GuardOnDataDependentSymNode: Could not guard on
    data-dependent expression` at the model's call."""
    run = import_and_check_net(tmp_path, GAUSSIAN_NLL, "5x4xf32,5x4xf32,5x4xf32")
    assert run["check"]["passed"] and run["expected_check"]["passed"], run


def _generic_step_session(tmp_path, params: str) -> str:
    (tmp_path / "m.mlir").write_text(MATMUL.read_text())
    (tmp_path / "s.yaml").write_text(
        "Pipeline:\n- {rewrite: tag-ops}\n- schedule: pipelines/cpu/generic.py[gen=tile_vectorize]\n"
        f"  params: {params}\nWorkbench: {{payload: {{path: {tmp_path / 'm.mlir'}}}}}\n")
    return str(tmp_path / "s.yaml")


@pytest.mark.parametrize("params, expect", [
    ("{op: matmul_0, tile: [null, 8, 0]}", "tile[0]=None: expected int"),
    ("{op: matmul_0, tile: [4, [8], 0]}", "tile[1]=[8]: expected int"),
    ("{op: {a: 1}, tile: [4, 8, 0]}", "op={'a': 1}: expected str | list[str]"),
    ("{op: matmul_0, interchange: [a, 1, 2]}", "interchange[0]='a': expected int"),
])
def test_a_generator_parameter_of_the_wrong_type_is_one_line(tmp_path, params, expect):
    """A saved session's `tile: [null, 8, 0]` (or a list where an int goes, a mapping for `op`) reached
    tile_vectorize, whose `int(t)` raised a TypeError: the error line and then its Python traceback (11
    lines). The generators' annotations say the element types now (`list[int]`, `str | list[str]`), and the
    schema checks them before the generator runs."""
    out = run_cli(["replay", _generic_step_session(tmp_path, params)], cwd=tmp_path)
    assert out.returncode == 1, out.stderr
    assert "Traceback" not in out.stderr and expect in out.stderr, out.stderr
    errors = [ln for ln in out.stderr.splitlines() if not ln.lstrip().startswith("..")]
    assert len(errors) == 1, out.stderr


PACKED_SEQUENCE = """import torch
import torch.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.gru = nn.GRU(8, 16, batch_first=True)

    def forward(self, x, lengths):
        p = nn.utils.rnn.pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False)
        y, h = self.gru(p)
        return nn.utils.rnn.pad_packed_sequence(y, batch_first=True, total_length=x.shape[1])[0], h
"""


@needs_torch
def test_a_packed_sequence_is_refused_with_its_reason(tmp_path):
    """nn.utils.rnn.pack_padded_sequence (lengths from an input): the import failed with `TypeError: zeros():
    argument 'size' failed to unpack the object at pos 2 with error "type must be tuple of ints,but got
    FakeTensor"` from inside nn.GRU, which says nothing of why. A packed sequence's batch sizes are the
    lengths' values: refused in one line that says so and what to do instead."""
    import json

    from test_torch_import import TORCH_PYTHON

    (tmp_path / "net.py").write_text(PACKED_SEQUENCE)
    out = run_cli(["import", "net.py:Net", "--inputs", "3x6x8xf32,3xi64[1:7]", "--out", "o", "--json", "-"],
                  cwd=tmp_path, env_extra={"LH_WORKBENCH_TORCH_PYTHON": TORCH_PYTHON}, timeout=600)
    assert out.returncode == 1
    error = json.loads(out.stdout)["error"]
    assert "pack_padded_sequence" in error and "depends on the input's values" in error, error


COMBINATIONS = """import torch
import torch.nn as nn


class Net(nn.Module):
    def forward(self, x, i):
        return (torch.combinations(x[0, :5], r=2), torch.combinations(x[1, :4], r=3, with_replacement=True),
                torch.combinations(i[0], r=2), torch.combinations(x[2, :3], r=1))
"""


@needs_torch
def test_combinations_imports(tmp_path):
    """torch.combinations (pairs of a 1-D tensor's entries): torch builds it with masked_select, and the
    import failed with `PendingUnbackedSymbolNotFound: Pending unbacked symbols {u1} not in returned
    outputs` (r=1: `aten.masked_select.default gives a u0 tensor`), though the count depends on the length
    alone."""
    run = import_and_check_net(tmp_path, COMBINATIONS, "4x9xf32,2x4xi64[0:9]")
    assert run["check"]["passed"] and run["expected_check"]["passed"], run


def test_a_union_parameter_takes_a_list_typed_as_text():
    """The TUI's parameter form hands typed text to the schema: `[generic_1, generic_2]` for tile_vectorize's
    `op: str | list[str]` is the list of two ids, not one id of 24 characters."""
    from pathlib import Path

    from workbench.steps.params import generator_schema

    schema, _ = generator_schema(Path(__file__).parents[1] / "pipelines" / "cpu" / "generic.py", "tile_vectorize")
    op = schema.params["op"]
    assert op.type == "str | list[str]" and schema.params["tile"].type == "list[int]"
    assert op.coerce("[generic_1, generic_2]") == ["generic_1", "generic_2"] and op.coerce("generic_1") == "generic_1"
