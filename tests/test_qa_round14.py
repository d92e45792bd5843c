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
