"""Upstream MLIR test files: `// -----` chunks (`load --chunk K`, `--chunk K`) and `// RUN:` lines (`run-line`)."""
from __future__ import annotations

import json

import pytest
import yaml

from conftest import do, ok, run_cli
from workbench.common import split_input

TWO_CHUNKS = """\
// RUN: mlir-opt %s --split-input-file --canonicalize="test-convergence" -cse | \\
// RUN:   mlir-opt --pass-pipeline="builtin.module(func.func(convert-linalg-to-loops))" | FileCheck %s
// RUN: mlir-opt %s --this-pass-does-not-exist | FileCheck %s

func.func @f(%a: memref<4xf32>, %b: memref<4xf32>) {
  %unused = arith.constant 0 : index
  linalg.copy ins(%a : memref<4xf32>) outs(%b : memref<4xf32>)
  return
}

// -----

func.func @f(%a: memref<8xf32>, %b: memref<8xf32>) {
  linalg.copy ins(%a : memref<8xf32>) outs(%b : memref<8xf32>)
  return
}

// -----

func.func @g() {
  %0 = arith.addi %x, %x : i32
  return
}
"""


@pytest.fixture
def upstream_file(tmp_path):
    path = tmp_path / "upstream.mlir"
    path.write_text(TWO_CHUNKS)
    return path


def test_chunks_found_with_their_lines_and_symbols():
    chunks = split_input.find_chunks(TWO_CHUNKS)
    assert [(c.first_line, c.last_line, c.symbols) for c in chunks] == [
        (1, 10, ("f",)), (12, 17, ("f",)), (19, 23, ("g",))]
    text = split_input.chunk_text(TWO_CHUNKS, 2)
    lines = text.splitlines()
    assert len(lines) == len(TWO_CHUNKS.splitlines())            # line numbers are the file's own
    assert lines[12].startswith("func.func @f(%a: memref<8xf32>")
    assert not any("memref<4xf32>" in line or "@g" in line for line in lines)
    with pytest.raises(split_input.ChunkError, match=r"has 3 chunks .*no chunk 4 .*1: lines 1-10 \(@f\)"):
        split_input.chunk_text(TWO_CHUNKS, 4)
    assert len(split_input.find_chunks("func.func @h() {\n  return\n}\n")) == 1
    # counted from the bytes (every load does it) as find_chunks splits the text
    for text in (TWO_CHUNKS, "// -----\nfunc.func @h() {\n  return\n}\n", "func.func @h()  // ----- no\n"):
        assert split_input.count_chunks(text.encode()) == len(split_input.find_chunks(text))


def test_whole_file_fails_with_the_way_out_and_a_chunk_loads(ctx, upstream_file):
    res = do(ctx, f"load {upstream_file}")
    assert not res.ok
    assert "upstream.mlir:21:19" in res.error and "has 3 chunks" in res.error and "--chunk K" in res.error
    assert "\n" not in res.error
    res = ok(ctx, f"load --chunk 2 {upstream_file}")
    assert "chunk 2" in res.summary and res.data["chunk"] == 2
    ir = ctx.session.current_ir
    assert "memref<8xf32>" in ir and "memref<4xf32>" not in ir


def test_errors_in_a_chunk_point_at_the_files_own_line(ctx, upstream_file):
    res = do(ctx, f"load --chunk 3 {upstream_file}")
    assert not res.ok and "upstream.mlir:21:" in res.error      # %x is undefined on line 21 of the file
    res = do(ctx, f"load --chunk 9 {upstream_file}")
    assert not res.ok and "no chunk 9" in res.error and "\n" not in res.error


def test_chunk_is_saved_and_replayed(ctx, upstream_file, tmp_path):
    ok(ctx, f"load --chunk 2 {upstream_file}")
    ok(ctx, "pass func.func(convert-linalg-to-loops)")
    ok(ctx, f"save {tmp_path / 's.yaml'}")
    meta = yaml.safe_load((tmp_path / "s.yaml").read_text())["Workbench"]
    assert meta["payload"]["chunk"] == 2
    out = run_cli(["replay", tmp_path / "s.yaml", "--json", tmp_path / "r.json"])
    assert out.returncode == 0, out.stderr
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["ir_sha256"] == meta["ir_sha256"]


@pytest.mark.parametrize("bad", ["'two'", "0", "true", "[2]"])
def test_hostile_chunk_in_a_session_file_is_one_line(ctx, upstream_file, tmp_path, bad):
    path = tmp_path / "bad.yaml"
    path.write_text(f"Pipeline: []\nWorkbench:\n  payload: {{path: {upstream_file}, chunk: {bad}}}\n")
    res = do(ctx, f"replay {path}")
    assert not res.ok and "chunk must be a positive integer" in res.error and "\n" not in res.error
    path.write_text("Pipeline: []\nWorkbench:\n  payload: just-a-string\n")
    res = do(ctx, f"replay {path}")
    assert not res.ok and "payload must be a mapping" in res.error


def test_run_lines_are_joined_and_turned_into_pipelines():
    runs = split_input.find_run_lines(TWO_CHUNKS)
    assert [r.number for r in runs] == [1, 3]
    assert runs[0].mlir_opt_pipelines() == ["canonicalize{test-convergence},cse",
                                            "func.func(convert-linalg-to-loops)"]
    assert runs[1].mlir_opt_pipelines() == ["this-pass-does-not-exist"]
    with pytest.raises(split_input.ChunkError, match="runs no pass"):
        split_input.RunLine(7, "mlir-opt %s -split-input-file -verify-diagnostics").mlir_opt_pipelines()


def test_run_line_applies_the_same_steps_as_typing_them(ctx, upstream_file):
    ok(ctx, f"load --chunk 1 {upstream_file}")
    ok(ctx, "run-line")
    s = ctx.session
    assert [a.step.spec for a in s.active_steps] == ["canonicalize{test-convergence},cse",
                                                    "func.func(convert-linalg-to-loops)"]
    by_run_line = s.current_ir
    assert "scf.for" in by_run_line and "arith.constant" not in s.ir_at(1)   # canonicalize dropped %unused
    ok(ctx, f"load --chunk 1 {upstream_file}")
    ok(ctx, "pass canonicalize{test-convergence},cse")
    ok(ctx, "pass func.func(convert-linalg-to-loops)")
    assert s.current_ir == by_run_line
    # a RUN line whose pass does not exist: one line, the session as it was
    before = (s.cursor, s.current_sha)
    res = do(ctx, "run-line 2")
    assert not res.ok and "this-pass-does-not-exist" in res.error
    assert (s.cursor, s.current_sha) == before
    res = do(ctx, "run-line 5")
    assert not res.ok and "has 2 RUN lines" in res.error


def test_command_line_chunk_and_note(upstream_file, tmp_path):
    script = tmp_path / "t.lhw"
    script.write_text("run-line\n")
    out = run_cli([upstream_file, "--chunk", "1", "--script", script, "--emit", tmp_path / "o.mlir"])
    assert out.returncode == 0, out.stderr
    assert "scf.for" in (tmp_path / "o.mlir").read_text()
    whole = tmp_path / "two.mlir"
    whole.write_text("func.func @a() {\n  return\n}\n// -----\nfunc.func @b() {\n  return\n}\n")
    (tmp_path / "empty.lhw").write_text("")
    out = run_cli([whole, "--script", tmp_path / "empty.lhw"])
    assert out.returncode == 0, out.stderr
    assert "2 chunks" in out.stderr and "--chunk K" in out.stderr
