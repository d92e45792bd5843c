"""Hand edits as steps: verified, saved next to the session, replayed exactly, refused on other IR."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ok

from workbench.commands import CommandContext, default_registry
from workbench.session import Session

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture()
def ctx(tmp_path, monkeypatch):
    monkeypatch.setenv("LH_WORKBENCH_STATE_DIR", str(tmp_path / "state"))
    s = Session()
    yield CommandContext(s, default_registry())
    s.close()



def test_edit_saved_and_replayed_byte_identical(ctx, tmp_path):
    ok(ctx, f"load {ROOT / 'examples/matmul.mlir'}")
    ok(ctx, "apply pipelines/lib/tile.mlir")
    edited = tmp_path / "edited.mlir"
    edited.write_text(ctx.session.current_ir.replace("@matmul", "@matmul_by_hand"))
    res = ok(ctx, f"edit-apply {edited}")
    assert res.data["step"]["kind"] == "edit"
    ok(ctx, "pass canonicalize")
    final = ctx.session.current_sha
    session_file = tmp_path / "sess" / "s.yaml"
    ok(ctx, f"save {session_file}")
    copies = list((tmp_path / "sess" / "s.edits").glob("*.mlir"))
    assert len(copies) == 1 and "@matmul_by_hand" in copies[0].read_text()
    assert "edit: " in session_file.read_text() and "[base=" in session_file.read_text()
    env = dict(os.environ, LH_WORKBENCH_STATE_DIR=str(tmp_path / "state2"))
    p = subprocess.run([sys.executable, "-m", "workbench.cli", "replay", str(session_file), "--json", "-"],
                       cwd=ROOT, capture_output=True, text=True, env=env, timeout=300)
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)  # with `--json -` stdout holds only the JSON document
    assert doc["reproduced"] and doc["ir_sha256"] == final


def test_invalid_edit_changes_nothing(ctx, tmp_path):
    ok(ctx, f"load {ROOT / 'examples/matmul.mlir'}")
    bad = tmp_path / "bad.mlir"
    bad.write_text(ctx.session.current_ir.replace("return %0", "return %nope"))
    res = ctx.registry.dispatch(f"edit-apply {bad}", ctx)
    assert not res.ok and "bad.mlir:" in res.error and ctx.session.cursor == 0


def test_edit_refuses_other_input(ctx, tmp_path):
    ok(ctx, f"load {ROOT / 'examples/matmul.mlir'}")
    ok(ctx, "apply pipelines/lib/tile.mlir")
    edited = tmp_path / "edited.mlir"
    edited.write_text(ctx.session.current_ir.replace("@matmul", "@m2"))
    ok(ctx, f"edit-apply {edited}")
    before = [a.output_sha for a in ctx.session.steps]
    # re-applying from step 1 with another sequence changes step 2's input: the edit must refuse
    res = ctx.registry.dispatch("undo", ctx)
    assert res.ok
    ctx.registry.dispatch("redo", ctx)
    step1 = ctx.session.steps[0].step
    step1.options["seq"] = "tile_parallel"
    from workbench.session import SessionError

    with pytest.raises(SessionError, match="made on different IR"):
        ctx.session.set_params(1, {})
    assert [a.output_sha for a in ctx.session.steps] == before
