"""Thirteenth QA round: torch models not tried before, upstream MLIR test files not probed before, a new user's
REPL / script lines, hostile saved sessions; each test failed before its fix (docs/qa-round13.md)."""
from __future__ import annotations

import json

import pytest

from conftest import MATMUL, do, failed, ok, run_cli, with_progress


# -- upstream MLIR files: `run --filecheck` after `run-line N` ------------------------------------------------

#: Math/CPU/mathtofuncs_ipowi.mlir's shape: RUN lines of one pipeline, each running another function (`-e`)
#: and checking its printed result under a prefix of its own
TWO_RUNS = """// RUN: mlir-opt %s -pass-pipeline="builtin.module(convert-func-to-llvm,reconcile-unrealized-casts)" \\
// RUN: | mlir-runner -e seven -entry-point-result=i32 | FileCheck %s --check-prefix=CHECK_SEVEN

// RUN: mlir-opt %s -pass-pipeline="builtin.module(convert-func-to-llvm,reconcile-unrealized-casts)" \\
// RUN: | mlir-runner -e eight -entry-point-result=i32 | FileCheck %s --check-prefix=CHECK_EIGHT

func.func @seven() -> i32 {
  %0 = arith.constant 7 : i32
  func.return %0 : i32
}
// CHECK_SEVEN: 7

func.func @eight() -> i32 {
  %0 = arith.constant 8 : i32
  func.return %0 : i32
}
// CHECK_EIGHT: 8
"""


def _filecheck(res):
    fc = res.data["run"]["filecheck"]
    return fc["prefixes"], fc["passed"], res.data["run"]["stdout"].strip()


def test_run_filecheck_after_run_line_n_follows_that_lines_runner_and_prefix(ctx, tmp_path):
    """`run-line 3` then `run --filecheck` ran RUN line 1's function and matched RUN line 1's prefix (the first
    line that pipes mlir-runner into FileCheck), whatever line's passes were applied: mathtofuncs_ipowi.mlir's
    four RUN lines share a pipeline and each checks another function. The RUN line a step came from is kept
    with the step, and in the saved session (`run_line: N`)."""
    payload = tmp_path / "two_runs.mlir"
    payload.write_text(TWO_RUNS)
    ok(ctx, f"load {payload}")
    ok(ctx, "run-line 2")
    assert _filecheck(ok(ctx, "run --filecheck --iterations 1")) == (["CHECK_EIGHT"], True, "8")
    ok(ctx, "undo")
    ok(ctx, "run-line 1")
    assert _filecheck(ok(ctx, "run --filecheck --iterations 1")) == (["CHECK_SEVEN"], True, "7")
    # --run-line still says which line to follow
    assert _filecheck(ok(ctx, "run --filecheck --run-line 2 --iterations 1")) == (["CHECK_EIGHT"], True, "8")
    ok(ctx, "undo")
    ok(ctx, "run-line 2")
    saved = tmp_path / "s.yaml"
    ok(ctx, f"save {saved}")
    assert "run_line: 2" in saved.read_text()
    ok(ctx, f"load {payload}")
    ok(ctx, f"replay {saved}")
    assert _filecheck(ok(ctx, "run --filecheck --iterations 1")) == (["CHECK_EIGHT"], True, "8")


def test_a_saved_run_line_the_edited_file_no_longer_has_is_said(ctx, tmp_path):
    """A session saved after `run-line 2`, replayed on the file edited down to one RUN line: `run --filecheck`
    checked against RUN line 1 without a word; it says the step's RUN line is gone and how to pick one."""
    payload = tmp_path / "two_runs.mlir"
    payload.write_text(TWO_RUNS)
    ok(ctx, f"load {payload}")
    ok(ctx, "run-line 2")
    saved = tmp_path / "s.yaml"
    ok(ctx, f"save {saved}")
    lines = TWO_RUNS.splitlines(keepends=True)
    payload.write_text("".join(lines[:2] + lines[5:]))     # RUN line 1 only
    ok(ctx, f"load {payload}")
    ok(ctx, f"replay {saved}")
    error = failed(ctx, "run --filecheck --iterations 1")
    assert "RUN line 2 of two_runs.mlir, which has 1 RUN line(s) now" in error and "--run-line N" in error
    assert "\n" not in error
    assert _filecheck(ok(ctx, "run --filecheck --run-line 1 --iterations 1")) == (["CHECK_SEVEN"], True, "7")


@pytest.mark.parametrize("entry, why", [
    ("{pass: canonicalize, run_line: 0}", "`run_line:` must be a RUN line number (1, 2, ...), got 0"),
    ("{pass: canonicalize, run_line: two}", "`run_line:` must be a RUN line number (1, 2, ...), got 'two'"),
    ("{pass: canonicalize, run_line: true}", "`run_line:` must be a RUN line number (1, 2, ...), got True"),
    ("{bench: {}, run_line: 1}", "`run_line:` on a `bench:` entry (only a `pass:` entry comes from a RUN line)"),
])
def test_a_sessions_run_line_key_is_checked(ctx, tmp_path, entry, why):
    """The saved `run_line:` of a hand-edited session: one line naming the entry and what it must be."""
    session = tmp_path / "bad.yaml"
    session.write_text(f"Pipeline:\n  - {entry}\n")
    ok(ctx, f"load {MATMUL}")
    error = failed(ctx, f"replay {session}")
    assert why in error and "\n" not in error, error


# -- torch import: where the failure is ----------------------------------------------------------------------

def test_import_json_has_the_detail_its_clipped_line_points_to(tmp_path):
    """A failed `lh-workbench import` printed the exporter's stderr (torch's dump of the traced graph) with its
    long lines clipped: `... (+359 characters; --json has the whole message)`, but `import --json` wrote only
    `ok` and `error`. The document holds the detail now."""
    fake = tmp_path / "fake-python"
    graph = "def forward(self, " + ", ".join(f"arg{i}_1: 'f32[4]'" for i in range(80)) + "):"
    fake.write_text("#!/bin/sh\n"
                    f"echo \"{graph}\" >&2\n"
                    "echo '{\"ok\": false, \"error\": \"m.py:3: torch-mlir export failed: Boom\"}'\n")
    fake.chmod(0o755)
    (tmp_path / "m.py").write_text("import torch\n")
    out = run_cli(["import", "m.py", "--json", "-"], cwd=tmp_path, env_extra={"LH_WORKBENCH_TORCH_PYTHON": str(fake)})
    assert out.returncode == 1
    assert "--json has the whole message" in out.stderr, out.stderr
    doc = json.loads(out.stdout)
    assert doc["ok"] is False and doc["error"] == "import failed: m.py:3: torch-mlir export failed: Boom"
    assert graph in doc["detail"], doc


needs_torch = pytest.mark.skipif(not __import__("test_torch_import")._torch_available(),
                                 reason="torch + torch-mlir not here")

#: a library's model code (installed: under a `site-packages` directory) with Python control flow on a tensor
LIBRARY_PAD = """import torch


def pad_if_short(x):
    if x.abs().sum() > 3.0:
        return x * 2
    return x
"""

LIBRARY_MODEL = """import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).parent / "site-packages"))
import padlib


class Net(torch.nn.Module):
    def forward(self, x):
        return padlib.pad_if_short(x) + 1
"""


@needs_torch
def test_an_import_failing_in_a_librarys_model_code_names_that_line_too(tmp_path):
    """HF Encodec's encoder failed to import at the model file's line that called it (`nets.py:224:
    torch-mlir export failed: GuardOnDataDependentSymNode ...`): the data-dependent `if` was in transformers'
    modeling_encodec.py, which the one line did not name (only the 4 kB graph dump on stderr hinted at it). The
    innermost frame of an installed library's code is named after it: `(in padlib/__init__.py:5,
    pad_if_short: `if x.abs().sum() > 3.0:`)`."""
    from test_torch_import import TORCH_PYTHON

    lib = tmp_path / "site-packages" / "padlib"
    lib.mkdir(parents=True)
    (lib / "__init__.py").write_text(LIBRARY_PAD)
    (tmp_path / "net.py").write_text(LIBRARY_MODEL)
    out = run_cli(["import", "net.py:Net", "--inputs", "4xf32", "--out", "out", "--json", "r.json"], cwd=tmp_path,
                  env_extra={"LH_WORKBENCH_TORCH_PYTHON": TORCH_PYTHON}, timeout=600)
    assert out.returncode == 1, out.stderr
    error = json.loads((tmp_path / "r.json").read_text())["error"]
    assert f"{tmp_path / 'net.py'}:12: " in error, error
    assert error.endswith("(in padlib/__init__.py:5, pad_if_short: `if x.abs().sum() > 3.0:`)"), error


# -- a new user: what a pass or a transform script prints ----------------------------------------------------

PRINT_MATCHED = """module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%arg0: !transform.any_op {transform.readonly}) {
    %0 = transform.structured.match ops{["linalg.matmul"]} in %arg0 : (!transform.any_op) -> !transform.any_op
    transform.print %0 {name = "MATCHED"} : !transform.any_op
    transform.yield
  }
}
"""


def test_what_a_pass_or_a_transform_script_prints_comes_back_with_the_step(ctx, tmp_path):
    """`pass print-op-stats`, `pass print-ir{label=...}` and a script's `transform.print` (how mlir-opt users look
    at IR mid-pipeline) answered `no change (no-op)` and nothing else: MLIR printed on the compile worker's own
    output, which nobody reads. It comes back with the step, as a schedule generator's prints do (the result's
    body, `printed` in --json)."""
    ok(ctx, f"load {MATMUL}")
    res = ok(ctx, "pass print-op-stats")
    assert "linalg.matmul , 1" in res.data["printed"] and "pass print-op-stats printed:" in res.body, res.data
    res = ok(ctx, "pass print-ir{label=HELLO}")
    assert "IR Dump HELLO" in res.data["printed"], res.data
    script = tmp_path / "print.mlir"
    script.write_text(PRINT_MATCHED)
    res = ok(ctx, f"apply {script}")
    assert "[[[ IR printer: MATCHED ]]]" in res.data["printed"] and "linalg.matmul ins(" in res.data["printed"]
    assert "printed" not in ok(ctx, "pass cse").data      # a pass that prints nothing adds nothing
    res = do(ctx, "pass print-ir{label=BEFORE},transform-interpreter{entry-point=nope}")   # failing: in the detail
    assert not res.ok and "IR Dump BEFORE" in res.detail, (res.error, res.detail)


@pytest.mark.parametrize("kind, said", [
    ("3x3xf32", "(shapes are `lh-workbench import --inputs`'s; a run's inputs come from files: --npy a.npy,b.npy)"),
    ("zeroes", "(did you mean zeros?)"),
])
def test_run_inputs_of_an_unknown_kind_are_refused_before_the_lowering(ctx, kind, said):
    """`run --inputs 3x3xf32` (the shape spec `import --inputs` takes, which a new user tries next) lowered the
    module and started the run worker before it said `unknown input kind '3x3xf32' (choose from random, zeros,
    ones)`; `zeroes` got no did-you-mean. Refused as the line is read now, a usage error naming the command."""
    ok(ctx, f"load {MATMUL}")
    res, heard = with_progress(ctx, f"run --inputs {kind} --iterations 1")
    assert not res.ok and not heard, (res.error, heard)
    assert res.error.startswith(f"run: --inputs '{kind}': expected one of random, zeros, ones {said}"), res.error


def test_run_line_completes_the_payloads_own_run_lines(ctx, tmp_path):
    """`run-line <Tab>` offered 1, 2, 3 whatever the payload held (none for examples/matmul.mlir, four for
    mathtofuncs_ipowi.mlir), and `run --run-line <Tab>` nothing: both offer the file's RUN lines now, each with
    the start of its command."""
    from workbench.commands import default_registry
    from workbench.completion import Completer

    payload = tmp_path / "two_runs.mlir"
    payload.write_text(TWO_RUNS)
    ok(ctx, f"load {MATMUL}")
    completer = Completer(default_registry(), ctx.session)
    assert completer.complete("run-line ") == []
    ok(ctx, f"load {payload}")
    for line in ("run-line ", "run --run-line "):
        got = [(c.text, c.meta[:22]) for c in completer.complete(line)]
        assert got == [("1", "line 1: mlir-opt %s -p"), ("2", "line 4: mlir-opt %s -p")], (line, got)


def test_a_check_against_an_all_zero_expected_output_says_what_it_checks(ctx, tmp_path):
    """HF MobileViTV2 at its default init (1x3x64x64): its late activations underflow to subnormals and its
    logits are exactly 0, so `vs expected outputs passed (max abs err 0, max rel err 0)` said nothing while any
    output within atol of 0 passes; outputs below atol but not 0 (round 9) got a note, exact zeros did not."""
    import numpy as np

    from test_qa_round9 import TINY_OUTPUTS

    payload = tmp_path / "tiny.mlir"
    payload.write_text(TINY_OUTPUTS)
    x = np.random.default_rng(0).uniform(-1, 1, 64).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "out.npy", np.zeros(64, np.float32))
    np.save(tmp_path / "zeros.npy", np.zeros(64, np.float32))
    ok(ctx, f"load {payload}")
    run = ok(ctx, f"run --iterations 1 --npy {tmp_path / 'x.npy'},{tmp_path / 'out.npy'} "
                  f"--expect {tmp_path / 'zeros.npy'}").data["run"]
    check = run["expected_check"]
    assert check["passed"] and check["outputs"][0]["below_atol"], check
    assert "expected output 0: every value is 0, so the check says only that the run's values are within atol" \
        in run["warning"], run["warning"]
    largest = float(abs(x * np.float32(1e-12)).max())
    assert f"within atol 0.0001 of 0 (largest |got| {largest:.3g})" in run["warning"], run["warning"]


@pytest.mark.parametrize("argv", [["targets", "--bogus", "--json", "-"], ["targets", "--bogus", "--json"]])
def test_targets_refusing_its_command_line_still_answers_json(argv):
    """`lh-workbench targets --bogus --json -` printed argparse's usage on stderr and nothing on stdout (import,
    replay and a script write the failure document); `targets --json` alone prints, so a bare one does too."""
    out = run_cli(argv)
    assert out.returncode == 2
    doc = json.loads(out.stdout)
    assert doc["ok"] is False and doc["error"] == "unrecognized arguments: --bogus" and doc["usage_error"], doc


def test_a_parameter_edit_that_drops_undone_steps_says_so(ctx):
    """`params 1 tile_m=32` after two `undo`s re-applied step 1 and dropped the two undone steps without a word
    (`redo` then said `nothing to redo`), where a new step after `undo` says `(replaces 2 undone steps: ...)`.
    The edit says it too, and that `undo` (of the edit) brings them back."""
    ok(ctx, f"load {MATMUL}")
    ok(ctx, "apply pipelines/lib/tile.py[gen=tile_matmul]{tile_m=64}")
    ok(ctx, "pass canonicalize")
    ok(ctx, "pass cse")
    ok(ctx, "undo")
    ok(ctx, "undo")
    res = ok(ctx, "params 1 tile_m=32")
    assert res.summary.endswith("(drops 2 undone steps: canonicalize, ...; `undo` brings them back)"), res.summary
    assert res.data["dropped_undone"] == ["canonicalize", "cse"]
    ok(ctx, "undo")
    assert ctx.session.cursor == 1 and len(ctx.session.steps) == 3


TWO_INPUTS = """import torch


class SinkhornOT(torch.nn.Module):
    def forward(self, a, b, eps=0.1):
        return torch.logsumexp(a @ b.transpose(1, 2) / eps, dim=2)
"""


@needs_torch
def test_a_model_named_in_another_case_or_given_too_few_inputs_says_so_before_it_runs(tmp_path):
    """`import nets.py:Sinkhornot` listed the file's classes without the one meant (SinkhornOT); `--inputs` with one
    spec for a forward(a, b) failed in the exporter's own call: `TypeError: SinkhornOT.forward() missing 1 required
    positional argument: 'b'` and a traceback naming no line of the model."""
    from test_torch_import import TORCH_PYTHON

    (tmp_path / "nets.py").write_text(TWO_INPUTS)
    env = {"LH_WORKBENCH_TORCH_PYTHON": TORCH_PYTHON}

    def error(*argv):
        out = run_cli(["import", *argv, "--out", "out", "--json", "-"], cwd=tmp_path, env_extra=env, timeout=600)
        assert out.returncode == 1, out.stderr
        return json.loads(out.stdout)["error"]

    assert "nets.py: no 'Sinkhornot' (did you mean SinkhornOT?)" in error("nets.py:Sinkhornot", "--inputs", "2x3x4xf32")
    assert error("nets.py:SinkhornOT", "--inputs", "2x3x4xf32") == \
        "import failed: nets.py:SinkhornOT: forward(a, b, eps) takes 2 to 3 inputs; --inputs gives 1"
    assert error("nets.py:SinkhornOT", "--inputs", "2x3x4xf32,2x5x4xf32,1xf32,1xf32").endswith(
        "takes 2 to 3 inputs; --inputs gives 4")
