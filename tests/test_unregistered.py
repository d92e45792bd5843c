"""`load --allow-unregistered`: payloads with ops of unknown dialects (upstream's test-dialect payloads)."""
from __future__ import annotations

from pathlib import Path

import yaml

from conftest import do, ok, run_cli

PAYLOADS = Path(__file__).parent / "payloads"
PAYLOAD = PAYLOADS / "unregistered_tile.mlir"


def test_refused_by_default_with_the_way_out(ctx):
    res = do(ctx, f"load {PAYLOAD}")
    assert not res.ok and "unregistered dialect" in res.error and "--allow-unregistered" in res.error
    assert "unregistered_tile.mlir:4:" in res.error


def test_allowed_for_the_session_transform_applies_and_session_records_it(ctx, tmp_path):
    ok(ctx, f"load --allow-unregistered {PAYLOAD}")
    ok(ctx, f"apply {PAYLOADS / 'tile_matmul_16.mlir'}")
    text = ctx.session.current_ir
    assert text.count("scf.for") == 2 and '"test.produce"' in text and '"test.consume"' in text
    ok(ctx, "undo")
    ok(ctx, "redo")
    ok(ctx, f"save {tmp_path / 's.yaml'}")
    meta = yaml.safe_load((tmp_path / "s.yaml").read_text())["Workbench"]
    assert meta["allow_unregistered_dialects"] is True
    final_sha = meta["ir_sha256"]
    # loading another payload without the flag: refused again (the option belongs to that load)
    assert not do(ctx, f"load {PAYLOAD}").ok
    # headless replay reads the option from the session file and gives the same IR
    out = run_cli(["replay", str(tmp_path / "s.yaml"), "--json", str(tmp_path / "r.json")])
    assert out.returncode == 0, out.stderr
    import json
    assert json.loads((tmp_path / "r.json").read_text())["ir_sha256"] == final_sha


def test_command_line_flag(tmp_path):
    script = tmp_path / "t.lhw"
    script.write_text(f"apply {PAYLOADS / 'tile_matmul_16.mlir'}\n")
    refused = run_cli([str(PAYLOAD), "--script", str(script)])
    assert refused.returncode == 1 and "--allow-unregistered" in refused.stderr + refused.stdout
    out = run_cli([str(PAYLOAD), "--allow-unregistered-dialects", "--script", str(script), "--emit", str(tmp_path / "o.mlir")])
    assert out.returncode == 0, out.stderr
    assert '"test.produce"' in (tmp_path / "o.mlir").read_text()
