"""Thirteenth QA round: torch models not tried before, upstream MLIR test files not probed before, a new user's
REPL / script lines, hostile saved sessions; each test failed before its fix (docs/qa-round13.md)."""
from __future__ import annotations

import json

import pytest

from conftest import MATMUL, do, failed, ok, run_cli


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
