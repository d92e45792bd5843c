"""Tenth QA round: models not tried before, upstream MLIR test files, a session replayed for another machine,
the TUI as a new user; each test failed before its fix (docs/qa-round10.md)."""
from __future__ import annotations

import json

import pytest

from conftest import MATMUL, REPO, do, ok, run_cli


# -- a huge option string -----------------------------------------------------------------------------------

def test_a_word_longer_than_any_name_has_no_edits_to_try_on_the_parser(monkeypatch):
    """A 20 kB option string (`canonicalize{xxx...}`) had its did-you-mean try every word one edit from it on the
    MLIR parser: 1.5 million 20 kB strings, minutes of the compile worker (tests/test_hostile_sessions.py's
    huge-label test ran 50-147 s, 10 min here under load). A short typo still finds its option."""
    from mlir import ir

    from workbench.worker import compile_worker as cw

    assert cw._one_edit_away("x" * 20000, "abc-") == set()
    assert cw._one_edit_away("x" * 65, "abc-") == set()
    assert "max-iterations" in cw._one_edit_away("max-iteration", "abcdefghijklmnopqrstuvwxyz-")
    asked = []
    real = cw.has_option
    monkeypatch.setattr(cw, "has_option", lambda name, option: asked.append(option) or real(name, option))
    with ir.Context():
        assert cw.close_options("canonicalize", "x" * 20000) == []
        assert len(asked) <= 16, len(asked)    # the word itself and the few names close_matches gives
        assert "max-iterations" in cw.close_options("canonicalize", "max-iteratoins")


# -- torch models: refusals that name the model's line ------------------------------------------------------

needs_torch = pytest.mark.skipif(not __import__("test_torch_import")._torch_available(),
                                 reason="torch + torch-mlir not here")

MASKED = '''
import torch

class Head(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(8, 4)

    def forward(self, x):
        y = self.lin(x)
        return y[y.sum(-1) > 0]

class Selected(torch.nn.Module):
    def forward(self, x):
        return torch.masked_select(x, x > 0)

class MissingPackage(torch.nn.Module):
    def forward(self, x):
        import no_such_package_here
        return x

class WithNone(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(3, 4)

    def forward(self, x):
        return {"logits": self.lin(x), "aux": None, "hidden": [x * 2]}

class Quantized(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.m = torch.ao.quantization.quantize_dynamic(torch.nn.Sequential(torch.nn.Linear(3, 4)),
                                                        {torch.nn.Linear}, dtype=torch.qint8)

    def forward(self, x):
        return self.m(x)

class Exits(torch.nn.Module):
    def forward(self, x):
        raise SystemExit(3)

class Scalar(torch.nn.Module):
    def forward(self, x):
        return x.sum().item()

class Branchy(torch.nn.Module):
    def forward(self, x):
        if x.sum() > 0:
            return x * 2
        return x - 1
'''


def _import(tmp_path, spec: str, inputs: str):
    from test_torch_import import TORCH_PYTHON

    (tmp_path / "net.py").write_text(MASKED)
    return run_cli(["import", spec, "--inputs", inputs, "--out", "out", "--json", "i.json"], cwd=tmp_path,
                   env_extra={"LH_WORKBENCH_TORCH_PYTHON": TORCH_PYTHON}, timeout=600)


def _run_check(tmp_path, name: str) -> dict:
    """`run --check` of the imported out/NAME.mlir from a script (against the payload and torch's outputs):
    the run's JSON record, after asserting the command succeeded."""
    from test_torch_import import TORCH_PYTHON

    (tmp_path / "s.lhw").write_text("run --check --iterations 2\n")
    out = run_cli([tmp_path / "out" / f"{name}.mlir", "--script", "s.lhw", "--json", "r.json"], cwd=tmp_path,
                  env_extra={"LH_WORKBENCH_TORCH_PYTHON": TORCH_PYTHON}, timeout=600)
    assert out.returncode == 0, out.stderr
    return json.loads((tmp_path / "r.json").read_text())["run"]


@needs_torch
@pytest.mark.parametrize("spec, line, op", [("net.py:Head", 11, "aten.index.Tensor gives a u0x4 tensor"),
                                            ("net.py:Selected", 15, "aten.masked_select.default gives a u0 tensor")])
def test_a_boolean_mask_read_is_refused_at_the_models_line(tmp_path, spec, line, op):
    """A detection head's `boxes[scores > t]` exported with an unbacked size and failed in torch-mlir's lowering
    with `'arith.cmpi' op requires all operands to have the same type` (README: ops whose output size depends
    on the data fail the import with one line saying what has a static shape)."""
    out = _import(tmp_path, spec, "6x8xf32")
    assert out.returncode == 1
    error = json.loads((tmp_path / "i.json").read_text())["error"]
    assert error.startswith(f"import failed: {tmp_path / 'net.py'}:{line}: {op}: its size depends on the input's values"), error
    assert "torch.where(mask, x, 0) keeps the shape" in error and "arith.cmpi" not in out.stderr, out.stderr


@needs_torch
def test_a_model_that_raises_in_torch_names_its_line(tmp_path):
    """A model whose forward raised (here an import torchvision that the torch Python lacks) said only
    `import failed: ModuleNotFoundError: No module named 'torchvision'`, the traceback after it."""
    out = _import(tmp_path, "net.py:MissingPackage", "2x3xf32")
    assert out.returncode == 1
    error = json.loads((tmp_path / "i.json").read_text())["error"]
    assert error == (f"import failed: {tmp_path / 'net.py'}:19: ModuleNotFoundError: No module named 'no_such_package_here'"), error


# -- a session replayed for another machine -----------------------------------------------------------------

def test_a_replay_for_another_machine_says_the_steps_were_selected_for_the_recorded_one(tmp_path):
    """`replay --cpu znver4` of a session selected with `--cpu avx2` compiled the avx2 parameters for znver4
    without a word (round 9's left open)."""
    (tmp_path / "a.lhw").write_text("target cpu --cpu avx2\nselect --apply\nsave s.yaml\n")
    env = {"LH_WORKBENCH_STATE_DIR": str(tmp_path / "state")}
    assert run_cli([MATMUL, "--script", "a.lhw"], cwd=tmp_path, env_extra=env).returncode == 0
    out = run_cli(["replay", "s.yaml", "--cpu", "znver4", "--json", "r.json"], cwd=tmp_path, env_extra=env)
    assert out.returncode == 0, out.stderr
    note = ("the session was built for --cpu avx2; its steps (1 with parameters a selector or tune chose for that "
            "machine) are compiled for --cpu znver4 as recorded, not selected again (`select --apply` picks "
            "parameters for --cpu znver4)")
    assert f"warning: {note}" in out.stdout.splitlines(), out.stdout
    doc = json.loads((tmp_path / "r.json").read_text())
    assert doc["ok"] and doc["reproduced"] and doc["warnings"] == [note], doc
    # the machine it was built for: nothing to say
    out = run_cli(["replay", "s.yaml", "--cpu", "avx2", "--json", "r2.json"], cwd=tmp_path, env_extra=env)
    assert out.returncode == 0 and "warning" not in out.stdout, out.stdout
    assert json.loads((tmp_path / "r2.json").read_text())["warnings"] is None


@needs_torch
def test_python_control_flow_on_a_tensor_value_names_the_models_line(tmp_path):
    """`if x.sum() > 0:` failed with torch.export's `GuardOnDataDependentSymNode: Could not guard on
    data-dependent expression Eq(u0, 1)` and nothing said where or why."""
    out = _import(tmp_path, "net.py:Branchy", "2x3xf32")
    assert out.returncode == 1
    error = json.loads((tmp_path / "i.json").read_text())["error"]
    assert error.startswith(f"import failed: {tmp_path / 'net.py'}:49: torch-mlir export failed: "
                            "GuardOnDataDependentSymNode"), error
    assert error.endswith("(Python control flow on a tensor's value: torch.export traces one path; torch.where "
                          "or torch.cond keeps both)"), error


@needs_torch
def test_a_model_whose_outputs_hold_none_imports_and_checks_against_torch(tmp_path):
    """HF-style outputs with a None (`{"logits": y, "aux": None, ...}`): torch's outputs were written without
    it, while torch-mlir's function returned `!torch.none` and failed the backend contract (`failed to
    legalize operation 'func.func'`)."""
    out = _import(tmp_path, "net.py:WithNone", "2x3xf32")
    assert out.returncode == 0, out.stderr
    run = _run_check(tmp_path, "with_none")
    assert run["check"]["passed"] and run["expected_check"]["passed"], run
    assert [o["size"] for o in run["expected_check"]["outputs"]] == [8, 6], run   # logits 2x4, hidden 2x3


@needs_torch
def test_a_quantized_module_is_refused_by_name(tmp_path):
    """quantize_dynamic's Linear failed with `AttributeError: __torch__.torch.classes.quantized.
    LinearPackedParamsBase ... does not have a field with name '__obj_flatten__'`, located in contextlib.py."""
    out = _import(tmp_path, "net.py:Quantized", "2x3xf32")
    assert out.returncode == 1
    error = json.loads((tmp_path / "i.json").read_text())["error"]
    assert error == ("import failed: m.0 is a quantized torch.ao.nn.quantized.dynamic.modules.linear.Linear: "
                     "torch.export cannot export torch.ao's packed quantized weights; import the float model "
                     "(QAT's fake_quantize ops on float modules import)"), error


def test_the_model_line_of_a_failure_skips_the_standard_library(tmp_path):
    """The innermost frame outside torch was taken for the model's line even in Python's own library
    (`contextlib.py:137: torch-mlir export failed: ...`)."""
    import importlib.util

    from workbench.importers.torch_export import _model_frame

    (tmp_path / "model.py").write_text("import json\n\ndef forward():\n    return json.loads('{')\n")
    spec = importlib.util.spec_from_file_location("qa10_model", tmp_path / "model.py")
    model = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(model)
    with pytest.raises(ValueError) as info:
        model.forward()
    assert _model_frame(info.value) == f"{tmp_path / 'model.py'}:4: "


# -- the selector and ops nothing reads -------------------------------------------------------------------

def test_an_op_read_only_by_a_reshape_nothing_reads_is_unread():
    """A bf16 Conformer (`import --dtype bf16`) failed `select --apply` at a group step, `expected parameter
    to be equal to 1, got 0`: lh-vnni-contractions left the f32 widening (extf) of a contraction's input read
    only by a collapse_shape nothing reads; inspect counted that a read, the selector grouped it with live
    ops, and the conv step before it canonicalized it away. Such an op is unread now (the selector skips
    unread ops)."""
    from mlir import ir

    from workbench.worker.payload_inspect import inspect_module

    with ir.Context():
        module = ir.Module.parse((REPO / "tests" / "fixtures" / "unread_through_reshape.mlir").read_text())
        ops = inspect_module(module, loops=False)["ops"]
    generics = [o for o in ops if o["id"].startswith("generic")]
    assert [o["unread"] for o in generics] == [True, False], generics
    assert not any(o["unread"] for o in ops if o["id"].startswith("matmul"))


@needs_torch
def test_a_model_that_exits_says_so_at_its_line(tmp_path):
    """`sys.exit()` in a model's forward: `torch export (...) exited with status 3 and no answer`."""
    out = _import(tmp_path, "net.py:Exits", "2x3xf32")
    assert out.returncode == 1
    error = json.loads((tmp_path / "i.json").read_text())["error"]
    assert error == f"import failed: {tmp_path / 'net.py'}:41: the model called sys.exit(3)", error


# -- a scalar result against torch's -------------------------------------------------------------------------

def test_a_scalar_result_compares_with_a_zero_dimensional_expected_output(tmp_path):
    """A function returning a scalar (`-> f64`, torch's `x.sum().item()`) has its result stored in a
    memref<1xT>: `run --check` failed with `output 0: shape [1] vs expected []`."""
    import numpy as np

    from workbench.execution.expected import ExpectedOutputs, compare_expected

    np.save(tmp_path / "e.npy", np.array(2.5))
    exp = ExpectedOutputs([tmp_path / "e.npy"], source="e.npy")
    assert compare_expected([np.array([2.5])], exp)["passed"]
    bad = compare_expected([np.array([2.75])], exp)
    assert not bad["passed"] and bad["outputs"][0]["mismatched"] == 1, bad
    assert not compare_expected([np.array([2.5, 2.5])], exp)["passed"]   # two values are no scalar


@needs_torch
def test_a_model_returning_a_python_float_checks_against_torch(tmp_path):
    """`.item()` of a float32 sum is a Python float, which torch-mlir returns as an f64; the expected output
    was written as a float32 0-d array."""
    out = _import(tmp_path, "net.py:Scalar", "2x3xf32")
    assert out.returncode == 0, out.stderr
    import numpy as np
    assert np.load(tmp_path / "out" / "scalar.expected0.npy").dtype == np.float64
    run = _run_check(tmp_path, "scalar")
    assert run["check"]["passed"] and run["expected_check"]["passed"], run
