"""Fifteenth QA round: torch models and ops not tried before, upstream MLIR test files not probed before, a new
user's REPL / script lines, hostile saved sessions; each test failed before its fix (docs/qa-round15.md)."""
from __future__ import annotations

import json

import pytest

from conftest import MATMUL, import_and_check_net, run_cli

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
    return import_and_check_net(tmp_path, OPS_MODEL.format(body=body), OPS_INPUTS)


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
    "torch.isfinite(torch.log(x)), torch.isfinite(1.0 / (x * (x.abs() > 0.5))), torch.isfinite(a)",
    "a ** 3, torch.pow(a, b.clamp(-2, 45)), 3 ** b.clamp(0, 20), torch.pow(a.int(), 2)"])
def test_isfinite_and_integer_powers_import(tmp_path, body):
    """torch.isfinite (`failed to legalize operation 'torch.aten.isfinite'`) and pow of integer tensors
    (`unimplemented: non-floating point dtype`: `i ** 2`, `torch.pow(a, b)`, `3 ** b`) failed the import;
    decomposed in torch now, and checked against torch's outputs (integer pow wraps as torch's). isfinite is not
    `x == x & ...`: torch-mlir folds an eq of a tensor with itself to true, NaN or not (a first fix did that)."""
    run = _imported_and_checked(tmp_path, body)
    assert run["check"]["passed"] and run["expected_check"]["passed"], run


# -- hostile session files and a new user's lines -----------------------------------------------------------------

@pytest.mark.parametrize("entry, col", [("{bench: {iterations: %s}}", 24),
                                        ("{include: part.yaml, params: {x: %s}}", 36)])
def test_an_integer_of_more_than_4300_digits_is_refused_at_its_line(tmp_path, entry, col):
    """A session integer of 5000 digits: Python's int() refuses it (`Exceeds the limit (4300 digits) for integer
    string conversion`), and replay ended in `internal error: ValueError`. Refused as the file is read, at its
    line and column."""
    (tmp_path / "part.yaml").write_text("Pipeline:\n- {pass: $x}\n")
    session = tmp_path / "s.yaml"
    session.write_text("Pipeline:\n- {pass: canonicalize}\n- " + entry % ("9" * 5000) + "\n")
    res = run_cli(["replay", session, "--payload", MATMUL, "--json", "-"], cwd=tmp_path)
    error = json.loads(res.stdout)["error"]
    assert res.returncode == 1 and f"s.yaml:3:{col}: invalid YAML: an integer of 5000 digits (Python reads" in error, error
    assert "internal error" not in error and "Traceback" not in res.stderr


def test_an_integer_of_more_than_4300_digits_on_a_command_line_is_too_large_not_a_non_integer(tmp_path):
    """`bench iterations=999...` (5000 digits) said `iterations='999...': expected int`, `run --iterations 999...`
    `must be an integer, got '999...'`: it is an integer, one that does not fit in 64 bits."""
    big = "9" * 5000
    script = tmp_path / "s.lhw"
    for line, said in [(f"bench iterations={big}", "iterations: an integer of 5000 digits does not fit in 64 bits"),
                       (f"apply pipelines/cpu/matmul.py[gen=matmul_tiling]{{block_m=-{big}}}",
                        "block_m: an integer of 5000 digits does not fit in 64 bits"),
                       (f"run --iterations {big}", "--iterations must be an integer that fits in 64 bits, got one "
                                                   "of 5000 digits")]:
        script.write_text(line + "\n")
        res = run_cli([MATMUL, "--script", script, "--json", "-"])
        error = json.loads(res.stdout)["error"]
        assert res.returncode == 1 and said in error, error


def test_a_newline_in_a_step_is_escaped_in_its_one_line_error(tmp_path):
    """`pass: "cse\\ncanonicalize"` in a session: the progress line and the error line were printed with the newline
    as it is, so the error was two lines (and the CLI took the second half for its detail). The step's label is
    one line: `\\n` written as an escape."""
    session = tmp_path / "s.yaml"
    session.write_text('Pipeline:\n- {pass: "cse\\ncanonicalize"}\n')
    res = run_cli(["replay", session, "--payload", MATMUL, "--json", "-"])
    error = json.loads(res.stdout)["error"]
    assert res.returncode == 1 and error.startswith("step 1 (cse\\ncanonicalize) failed: bad pass pipeline"), error
    said = [line for line in res.stderr.splitlines() if not line.startswith("  ..")]
    assert said == [f"error: {error}"], res.stderr


@needs_torch
def test_a_reciprocal_of_zero_is_inf_as_in_torch_not_an_abort(tmp_path):
    """`1.0 / x` (torch: aten.reciprocal) on an input holding zeros: torch-mlir lowers it with a `cf.assert` of a
    nonzero divisor in the op's body, so `run` of the imported payload (and `run --check`'s reference) died:
    `run worker process killed by signal SIGABRT`, where torch gives inf. And the check against torch's outputs,
    comparing inf with inf, wrote numpy's `RuntimeWarning: invalid value encountered in subtract` on stderr."""
    run = _imported_and_checked(tmp_path, "1.0 / (x * (x.abs() > 0.5)) + torch.reciprocal(a)")
    assert run["check"]["passed"] and run["expected_check"]["passed"], run
    p = run_cli([tmp_path / "o" / "net.mlir", "--script", tmp_path / "s.lhw", "--json", "-"], cwd=tmp_path)
    assert "RuntimeWarning" not in p.stderr and "invalid value" not in p.stderr, p.stderr


# -- upstream MLIR files of another version ----------------------------------------------------------------------

@pytest.mark.parametrize("op, line, renamed", [
    ("%1, %loops:3 = transform.structured.tile %0 [0, 5, 5, 5] : (!transform.any_op) -> (!transform.any_op, "
     "!transform.any_op, !transform.any_op, !transform.any_op)", "transform.structured.tile",
     "transform.structured.tile_using_for"),
    ("%1 = transform.structured.masked_vectorize %0 vector_sizes [4] : !transform.any_op",
     "transform.structured.masked_vectorize", "transform.structured.vectorize")])
def test_an_op_renamed_before_this_mlir_names_its_new_name(tmp_path, op, line, renamed):
    """Integration/Dialect/Linalg/CPU/test-conv-3d-ndhwc-dhwcf-call.mlir of an older tree (`transform.structured.tile`,
    renamed tile_using_for in LLVM 18), and `tensor.pack` (linalg.pack since LLVM 21): the load said `custom op ...
    is unknown (MLIR 22.1.8's transform dialect has no such op ...)`, not what the op is called now."""
    f = tmp_path / "old.mlir"
    f.write_text("module attributes {transform.with_named_sequence} {\n"
                 "  transform.named_sequence @__transform_main(%0: !transform.any_op) {\n"
                 f"    {op}\n    transform.yield\n  }}\n}}\n")
    (tmp_path / "empty.lhw").write_text("")
    res = run_cli([f, "--script", tmp_path / "empty.lhw", "--json", "-"])
    error = json.loads(res.stdout)["error"]
    assert f"old.mlir:3:" in error and f"custom op '{line}' is unknown (did you mean {renamed}? MLIR " in error, error


def test_tensor_pack_names_linalg_pack(tmp_path):
    f = tmp_path / "p.mlir"
    f.write_text("func.func @f(%a: tensor<16x16xf32>, %b: tensor<2x2x8x8xf32>) -> tensor<2x2x8x8xf32> {\n"
                 "  %0 = tensor.pack %a inner_dims_pos = [0, 1] inner_tiles = [8, 8] into %b"
                 " : tensor<16x16xf32> -> tensor<2x2x8x8xf32>\n  return %0 : tensor<2x2x8x8xf32>\n}\n")
    (tmp_path / "empty.lhw").write_text("")
    res = run_cli([f, "--script", tmp_path / "empty.lhw", "--json", "-"])
    error = json.loads(res.stdout)["error"]
    assert "p.mlir:2:8: custom op 'tensor.pack' is unknown (did you mean linalg.pack?" in error, error


QUANTIZED_CONV = """func.func @conv(%input: tensor<{i}>, %filter: tensor<{f}>, %init: tensor<{o}>, %input_zp: i32,
                %filter_zp: i32) -> tensor<{o}> {{
  %result = linalg.{op} {{strides = dense<1> : tensor<2xi64>, dilations = dense<1> : tensor<2xi64>}}
      ins(%input, %filter, %input_zp, %filter_zp : tensor<{i}>, tensor<{f}>, i32, i32)
      outs(%init : tensor<{o}>) -> tensor<{o}>
  return %result : tensor<{o}>
}}
"""


@pytest.mark.parametrize("op, i, f, o", [
    ("conv_2d_nchw_fchw_q", "2x2x3x3xi8", "3x2x2x2xi8", "2x3x2x2xi32"),   # upstream's test-conv-2d-nchw-fchw-q-img2col
    ("conv_2d_nchw_fchw_q", "1x8x10x18xi8", "16x8x3x3xi8", "1x16x8x16xi32")])
def test_a_quantized_convolution_is_selected_and_checked(tmp_path, op, i, f, o):
    """Integration/Dialect/Linalg/CPU/test-conv-2d-nchw-fchw-q-img2col.mlir's @conv through `select --apply`: the
    selector specialized its folded tile to a named contraction, which a body with zero points is not:
    `transform.structured.specialize failed to apply` and select --apply failed. Vectorized as it is now."""
    payload = tmp_path / "q.mlir"
    payload.write_text(QUANTIZED_CONV.format(op=op, i=i, f=f, o=o))
    script = tmp_path / "s.lhw"
    script.write_text("select --apply\nbench\napply cpu-lower\nrun --check\n")
    res = run_cli([payload, "--script", script, "--json", tmp_path / "r.json"])
    answer = json.loads((tmp_path / "r.json").read_text())
    assert res.returncode == 0 and answer["run"]["check"]["passed"], answer["error"]


@pytest.mark.parametrize("where, said", [("/dev/full", "a character device exists there, not a folder"),
                                         ("afile", "a file exists there, not a folder"),
                                         ("afile/x", "afile is a file, not a folder")])
def test_run_save_outputs_that_is_no_folder_is_refused_before_the_run(tmp_path, where, said):
    """`run --save-outputs /dev/full` ran, then failed making the folder: `run: /dev/full: File exists` (`Not a
    directory` under a file), the run's timings gone with it. Refused before the run, saying what is there."""
    (tmp_path / "afile").write_text("")
    script = tmp_path / "s.lhw"
    script.write_text(f"run --save-outputs {where}\n")
    res = run_cli([MATMUL, "--script", script, "--json", "-"], cwd=tmp_path)
    error = json.loads(res.stdout)["error"]
    assert res.returncode == 1 and f"run: --save-outputs {where}: {said}" in error, error
    assert "compiled in" not in res.stderr, res.stderr   # refused before the run
