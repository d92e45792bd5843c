"""Fifteenth QA round: torch models and ops not tried before, upstream MLIR test files not probed before, a new
user's REPL / script lines, hostile saved sessions; each test failed before its fix (docs/qa-round15.md)."""
from __future__ import annotations

import json

import pytest

from conftest import MATMUL, run_cli

needs_torch = pytest.mark.skipif(not __import__("test_torch_import")._torch_available(),
                                 reason="torch + torch-mlir not here")

# -- import: integer and float-class ops torch-mlir does not lower (or lowers to poison) ---------------------------

OPS_MODEL = """import torch


class Net(torch.nn.Module):
    def forward(self, a, b, x):
        return {body}
"""
OPS_INPUTS = "4x16xi64[-1000:1000],4x16xi64[-2:70],4x16xf32"


def _imported_and_checked(tmp_path, body: str) -> dict:
    """Net(a, b, x) returning BODY, imported, lowered by cpu-lower and run --check (vs the unscheduled payload and
    vs torch's outputs); the run's --json answer."""
    from test_torch_import import TORCH_PYTHON

    (tmp_path / "net.py").write_text(OPS_MODEL.format(body=body))
    out = run_cli(["import", "net.py:Net", "--inputs", OPS_INPUTS, "--out", "o", "--json", "-"], cwd=tmp_path,
                  env_extra={"LH_WORKBENCH_TORCH_PYTHON": TORCH_PYTHON}, timeout=600)
    assert out.returncode == 0, json.loads(out.stdout)["error"]
    script = tmp_path / "s.lhw"
    script.write_text("apply cpu-lower\nrun --check\n")
    p = run_cli([tmp_path / "o" / "net.mlir", "--script", script, "--json", tmp_path / "r.json"], cwd=tmp_path,
                timeout=600)
    answer = json.loads((tmp_path / "r.json").read_text())
    assert p.returncode == 0, p.stderr
    return answer["run"]


@needs_torch
@pytest.mark.parametrize("body", [
    "torch.bitwise_right_shift(a, b), torch.bitwise_left_shift(a, b)",
    "a >> b, a << b, a >> -1, (a.int() >> b.int()).long(), a << 70, 5 << b.clamp(0, 40)"])
def test_integer_shifts_by_a_tensor_follow_torch_past_the_width(tmp_path, body):
    """`a >> b` / `a << b` with a tensor b (aten.__rshift__/__lshift__.Tensor) failed the import: `failed to
    legalize operation 'torch.operator' that was explicitly marked illegal`; torch.bitwise_right/left_shift(a, b)
    imported to arith.shrsi / shli, poison for shifts past the width (b in [-2, 70)): `run --check` failed
    against the unscheduled payload (max abs err 9.22e+18). `a >> -1` gave a itself (torch: the sign fill).
    Shifts follow torch's rules now (ATen's lshift/rshift wrappers)."""
    run = _imported_and_checked(tmp_path, body)
    assert run["check"]["passed"] and run["expected_check"]["passed"], run


@needs_torch
@pytest.mark.parametrize("body", [
    "torch.isfinite(torch.log(x)) & torch.isfinite(1.0 / x) | torch.isfinite(a)",
    "a ** 3, torch.pow(a, b.clamp(-2, 45)), 3 ** b.clamp(0, 20), torch.pow(a.int(), 2)"])
def test_isfinite_and_integer_powers_import(tmp_path, body):
    """torch.isfinite (`failed to legalize operation 'torch.aten.isfinite'`) and pow of integer tensors
    (`unimplemented: non-floating point dtype`: `i ** 2`, `torch.pow(a, b)`, `3 ** b`) failed the import;
    decomposed in torch now, and checked against torch's outputs (integer pow wraps as torch's)."""
    run = _imported_and_checked(tmp_path, body)
    assert run["check"]["passed"] and run["expected_check"]["passed"], run
