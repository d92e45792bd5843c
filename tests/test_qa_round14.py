"""Fourteenth QA round: torch models not tried before, upstream MLIR test files not probed before, a new user's
REPL / script lines, hostile saved sessions; each test failed before its fix (docs/qa-round14.md)."""
from __future__ import annotations

import json

import pytest

from conftest import MATMUL, do, failed, ok, run_cli


# -- hostile session files --------------------------------------------------------------------------------------

def test_a_lone_surrogate_in_a_session_string_is_refused_at_its_line(tmp_path):
    """`pass: "\\ud800"` (a YAML escape of a lone UTF-16 surrogate) reached MLIR's pipeline parser, which takes
    UTF-8: `TypeError: parse(): incompatible function arguments` and a 20-line traceback. Refused as the file is
    read, at the string's line and column."""
    session = tmp_path / "s.yaml"
    session.write_text('Pipeline:\n- {pass: canonicalize}\n- {pass: "cse\\udc80"}\n')
    res = run_cli(["replay", str(session), "--payload", str(MATMUL), "--json", "-"])
    assert res.returncode == 1
    doc = json.loads(res.stdout)
    assert doc["ok"] is False and doc["steps"] == []
    assert "s.yaml:3:10: invalid YAML: '\\udc80' at character 4 of a string is a lone UTF-16 surrogate" in doc["error"]
    assert "Traceback" not in res.stderr and len(res.stderr.strip().splitlines()) == 1



@pytest.mark.parametrize("entry", ['{include: "a\\0b.yaml"}', '{transform: "a\\0b.mlir"}',
                                   '{schedule: "a\\0b.py[gen=f]"}', '{edit: "a\\0b.mlir"}'])
def test_a_nul_in_a_session_path_is_refused_at_its_line(tmp_path, entry):
    """A `\\0` escape in a path of a session (include, transform, schedule, edit, the payload's): `replay: internal
    error: ValueError: embedded null byte`. Refused as the file is read, at the string's line and column."""
    session = tmp_path / "s.yaml"
    session.write_text(f"Pipeline:\n- {entry}\n")
    res = run_cli(["replay", str(session), "--payload", str(MATMUL), "--json", "-"])
    error = json.loads(res.stdout)["error"]
    assert res.returncode == 1 and "s.yaml:2:" in error, error
    assert "invalid YAML: '\\x00' at character 2 of a string is a NUL character" in error
    assert "internal error" not in error
    session.write_text(f"Pipeline:\n- {{pass: cse}}\nWorkbench:\n  payload: {{path: \"a\\0b.mlir\"}}\n")
    error = json.loads(run_cli(["replay", str(session), "--json", "-"]).stdout)["error"]
    assert "s.yaml:4:19: invalid YAML: '\\x00' at character 2 of a string is a NUL character" in error, error



def test_an_include_variable_given_a_mapping_is_refused_by_name(tmp_path):
    """`{include: part.yaml, params: {x: {a: 1}}}` with `pass: $x` in part.yaml: the mapping's repr went into the
    text and on to MLIR's pass parser: `'' does not refer to a registered pass or pass pipeline`, and `{'a': 1}`
    on a stray line of stderr. The variable is named, with what a value may be."""
    (tmp_path / "part.yaml").write_text("Pipeline:\n- {pass: $x}\n")
    session = tmp_path / "s.yaml"
    session.write_text("Pipeline:\n- {include: part.yaml, params: {x: {a: 1}}}\n")
    res = run_cli(["replay", str(session), "--payload", str(MATMUL), "--json", "-"])
    error = json.loads(res.stdout)["error"]
    assert "variable $x is a mapping ({'a': 1}): a variable's value is put into the text as it is" in error, error
    assert "registered pass" not in error
    assert [line for line in res.stderr.splitlines() if not line.startswith("  ..")] == [f"error: {error}"]



def test_a_bidi_override_in_a_session_is_escaped_on_the_terminal(tmp_path):
    """`pass: "\\u202ecse"` (RIGHT-TO-LEFT OVERRIDE): the JSON escaped it, but the progress and error lines on
    stderr printed it raw, which turns the rest of the terminal line around (what is shown is not the text). It
    is written as `\\u202e` there, as a control character is written `\\x1b`."""
    session = tmp_path / "s.yaml"
    session.write_text('Pipeline:\n- {pass: "\\u202ecse"}\n- {pass: "\\u2067canonicalize"}\n')
    res = run_cli(["replay", str(session), "--payload", str(MATMUL)])
    assert res.returncode == 1
    assert "\u202e" not in res.stderr and "\u2067" not in res.stderr
    assert "error: step 1 (\\u202ecse) failed: bad pass pipeline: '\\u202ecse'" in res.stderr, res.stderr


# -- a new user's lines -------------------------------------------------------------------------------------------

@pytest.mark.parametrize("line", ["save {d}/", "export reproducer {d}/", "export cmdline {d}/",
                                  "params --export {d}/ 1", "asm --out {d}/"])
def test_an_output_path_ending_in_a_slash_is_not_written_as_a_file(ctx, tmp_path, line):
    """`save out/` (a folder meant: the slash) wrote a file named `out`, as did `export reproducer dir/`, `export
    cmdline dir/`, `params --export dir/` and `asm --out dir/` (Path() drops the slash): each is refused in one
    line now, and nothing is written."""
    ok(ctx, f"load {MATMUL}")
    ok(ctx, "pass canonicalize")
    target = tmp_path / "out"
    error = failed(ctx, line.format(d=target))
    assert f"cannot write {target}/: that is a folder's name (it ends in '/'): name a file in it" in error
    assert not target.exists()


# -- upstream MLIR files ------------------------------------------------------------------------------------------

#: Integration/Dialect/Vector/CPU/X86/AMX/mulf.mlir's first kernel (upstream's tree after 22 spells the amx
#: dialect's ops `x86.amx.*`)
X86_AMX = """func.func @kernel1(%arg0: memref<2x4xbf16>, %arg1: memref<2x4xbf16>, %arg2: memref<2x2xf32>) {
  %0 = arith.constant 0 : index
  %1 = x86.amx.tile_load %arg0[%0, %0] : memref<2x4xbf16>  into vector<2x4xbf16>
  return
}
"""


def test_an_op_of_a_dialect_folded_into_x86_names_its_op_in_this_mlir(ctx, tmp_path):
    """`x86.amx.tile_load` (upstream folded amx into the x86 dialect after MLIR 22): the load said `did you mean
    x86vector?`, a dialect that has no such op; MLIR 22.1.8's op is `amx.tile_load`, now named."""
    payload = tmp_path / "mulf.mlir"
    payload.write_text(X86_AMX)
    error = failed(ctx, f"load {payload}")
    assert "mulf.mlir:3:8: Dialect `x86' not found for custom op 'x86.amx.tile_load'" in error
    assert "(did you mean amx.tile_load? MLIR 22.1.8 has it in its amx dialect" in error
    assert "x86vector" not in error


# -- Ctrl-C, then the next command -------------------------------------------------------------------------------

def test_a_run_after_the_compile_worker_was_stopped_sends_the_module_again(ctx):
    """Ctrl-C during `run` (`.. lowering and running on cpu ...`) stops the compile worker; the next `run` failed:
    `error: TypeError: parse(): incompatible function arguments ... Invoked with types: bool` and a traceback.
    prepare_run's flag for a bytecode answer was named "bytecode", which is also the field that carries a module's
    bytecode to a worker that does not hold it: the fresh worker parsed the flag as the module."""
    ok(ctx, f"load {MATMUL}")
    ok(ctx, "pass canonicalize")
    ctx.session.client.cancel()          # what Ctrl-C / Esc do to the worker in flight
    res = ok(ctx, "run --iterations 1")
    assert "median" in res.summary
    ok(ctx, "pass cse")
    ctx.session.client.cancel()
    res = ok(ctx, "run --check --iterations 1")
    assert "check passed" in res.summary


# -- import: input specs torch refuses later ---------------------------------------------------------------------

needs_torch = pytest.mark.skipif(not __import__("test_torch_import")._torch_available(),
                                 reason="torch + torch-mlir not here")

TWO_INPUTS = """import torch


class Net(torch.nn.Module):
    def forward(self, x, ids):
        return x * 2, ids + 1
"""


@needs_torch
@pytest.mark.parametrize("specs, said", [
    ("2x0x3xf32,4xi64", "'2x0x3xf32': a dimension of size 0"),
    ("2x3xf32,4xi64[5:1]", "'4xi64[5:1]': the range [5:1] is empty"),
    ("2x3xf32[0:1],4xi64", "'2x3xf32[0:1]': a [lo:hi] range is for integer inputs"),
    ("2x3xf32,4xi8[0:1000]", "'4xi8[0:1000]': the range [0:1000] does not fit in i8 (-128 to 127)"),
    ("99999999x99999999x99999xf32,4xi64", "1e+21 elements, more than a tensor can hold"),
])
def test_an_input_spec_torch_cannot_draw_is_refused_in_one_line(tmp_path, specs, said):
    """`--inputs` that torch refused while drawing the inputs, with a traceback (`RuntimeError: random_ expects
    'from' to be less than 'to'`, `Storage size calculation overflowed`), or that the exporter died of (a
    dimension of 0: status -8, SIGFPE, and stray FutureWarnings), or that was dropped without a word (a range on
    a float input): one line each, naming the spec."""
    from test_torch_import import TORCH_PYTHON

    (tmp_path / "net.py").write_text(TWO_INPUTS)
    out = run_cli(["import", "net.py:Net", "--inputs", specs, "--out", "out", "--json", "-"], cwd=tmp_path,
                  env_extra={"LH_WORKBENCH_TORCH_PYTHON": TORCH_PYTHON}, timeout=600)
    assert out.returncode == 1, out.stderr
    error = json.loads(out.stdout)["error"]
    assert error.startswith("import failed: bad input spec ") and said in error, error
    assert "Traceback" not in out.stderr and "status -8" not in error
