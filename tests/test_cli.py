"""The headless contract, through the real CLI in a subprocess."""
import hashlib
import json

import pytest

from conftest import LIGHTHOUSE, MATMUL, MLP, PAYLOADS, REPO, SCHED, run_cli

STEP_KEYS = {"index", "kind", "spec", "params", "ok", "seconds", "ir_sha256", "error"}


def _script(tmp_path, text, name="s.lhw"):
    p = tmp_path / name
    p.write_text(text)
    return p


def test_script_then_replay_is_byte_identical(tmp_path):
    sess = tmp_path / "sessions" / "s.yaml"
    script = _script(tmp_path, "# tile, edit, save\n"
                               "apply pipelines/lib/tile.py[gen=tile_matmul]{tile_m=64}\n"
                               "pass canonicalize\n"
                               "params 1 tile_n=64\n"
                               f"apply {LIGHTHOUSE}/library-only.yaml {{tm=16}}\n"
                               f"save {sess}\n")
    a_ir, a_json = tmp_path / "a.mlir", tmp_path / "a.json"
    p = run_cli([MATMUL, "--script", script, "--emit", a_ir, "--json", a_json])
    assert p.returncode == 0, p.stderr
    doc = json.loads(a_json.read_text())
    assert doc["ok"] is True and len(doc["steps"]) == 3
    for s in doc["steps"]:
        assert STEP_KEYS <= set(s) and s["ok"] and s["error"] is None and s["seconds"] >= 0
    assert doc["steps"][0]["params"] == {"tile_m": 64, "tile_n": 64, "tile_k": 32, "loop": "for"}
    assert doc["ir_sha256"] == hashlib.sha256(a_ir.read_bytes()).hexdigest() == doc["steps"][-1]["ir_sha256"]

    b_ir, b_json = tmp_path / "b.mlir", tmp_path / "b.json"
    p = run_cli(["replay", sess, "--emit", b_ir, "--json", b_json], cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert b_ir.read_bytes() == a_ir.read_bytes()
    doc_b = json.loads(b_json.read_text())
    assert doc_b["ok"] and doc_b["reproduced"] is True and doc_b["ir_sha256"] == doc["ir_sha256"]
    assert [s["ir_sha256"] for s in doc_b["steps"]] == [s["ir_sha256"] for s in doc["steps"]]


def test_replay_json_to_stdout_and_payload_override(tmp_path):
    p = run_cli(["replay", LIGHTHOUSE / "library-only.yaml", "--payload", MATMUL, "--json", "-", "-q"])
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    assert doc["ok"] and [s["kind"] for s in doc["steps"]] == ["schedule", "transform", "include", "pass", "include"]


def test_script_failure_exit_1_names_line(tmp_path):
    script = _script(tmp_path, "apply pipelines/lib/tile.mlir\n# comment\npass no-such-pass\npass canonicalize\n")
    out = tmp_path / "o.json"
    p = run_cli([MATMUL, "--script", script, "--json", out])
    assert p.returncode == 1
    assert f"{script}:3:" in p.stderr and "no-such-pass" in p.stderr
    doc = json.loads(out.read_text())
    assert doc["ok"] is False and "line 3" in doc["error"]
    assert [c["line"] for c in doc["commands"]] == [1, 3]
    ok_steps = [s for s in doc["steps"] if s["ok"]]
    bad_steps = [s for s in doc["steps"] if not s["ok"]]
    assert len(ok_steps) == 1
    assert len(bad_steps) == 1 and STEP_KEYS <= set(bad_steps[0])
    assert bad_steps[0]["index"] == 2 and "no-such-pass" in bad_steps[0]["error"]
    assert bad_steps[0]["ir_sha256"] is None


def test_script_keep_going_exit_1_but_runs_all(tmp_path):
    script = _script(tmp_path, "pass no-such-pass\napply pipelines/lib/tile.mlir\n")
    out = tmp_path / "o.json"
    p = run_cli([MATMUL, "--script", script, "--keep-going", "--json", out])
    assert p.returncode == 1
    doc = json.loads(out.read_text())
    assert [c["ok"] for c in doc["commands"]] == [False, True]
    assert [s["ok"] for s in doc["steps"] if s["ok"]] == [True]


def test_payload_parse_error_exit_1(tmp_path):
    script = _script(tmp_path, "inspect\n")
    p = run_cli([PAYLOADS / "parse_error.mlir", "--script", script])
    assert p.returncode == 1
    assert "parse_error.mlir:3:24: expected non-function type" in p.stderr


@pytest.mark.parametrize("args", [
    ["--script", "x.lhw"],                      # no payload
    [MATMUL, "--script", "no-such-script.lhw"],
    [MATMUL, "--bogus-flag"],
    ["replay"],
    ["replay", "s.yaml", "--nope"],
])
def test_usage_errors_exit_2(args):
    p = run_cli(args)
    assert p.returncode == 2, (p.returncode, p.stderr)
    assert p.stderr.strip()


def test_replay_failing_step_exit_1_with_step_error(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("Pipeline:\n  - transform: ../pipelines/lib/tile.mlir\n"
                   f"  - transform: {SCHED}/too_many_tiles.mlir\n")
    out = tmp_path / "o.json"
    p = run_cli(["replay", bad, "--payload", MATMUL, "--json", out])
    assert p.returncode == 1
    doc = json.loads(out.read_text())
    assert doc["ok"] is False and "too many tiles" in doc["error"]
    assert [s["ok"] for s in doc["steps"]] == [True, False]
    assert doc["steps"][1]["index"] == 2 and "too many tiles" in doc["steps"][1]["error"]


def test_replay_corrupt_session_exit_1_one_line(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("Pipeline: [oops\n")
    p = run_cli(["replay", bad, "--payload", MATMUL])
    assert p.returncode == 1
    lines = [ln for ln in p.stderr.splitlines() if ln.startswith("error:")]
    assert len(lines) == 1 and "invalid YAML" in lines[0] and "bad.yaml:" in lines[0]


def test_replay_unknown_target_exit_1_one_line(tmp_path):
    sess = tmp_path / "s.yaml"
    sess.write_text("Pipeline:\n  - pass: canonicalize\nWorkbench:\n  target: bogus\n")
    p = run_cli(["replay", sess, "--payload", MATMUL])
    assert p.returncode == 1 and "Traceback" not in p.stderr
    lines = [ln for ln in p.stderr.splitlines() if ln.startswith("error:")]
    assert len(lines) == 1 and "unknown target 'bogus'" in lines[0]


def test_trust_headless(tmp_path):
    sess = tmp_path / "s.yaml"
    script = _script(tmp_path, f"apply {SCHED}/gens.py[gen=tile]{{tile=16}}\nsave {sess}\n")
    # a script from elsewhere does not run Python outside pipelines/ without consent
    p = run_cli([MATMUL, "--script", script])
    assert p.returncode == 1 and str(SCHED / "gens.py") in p.stderr and "--allow-python" in p.stderr
    p = run_cli([MATMUL, "--script", script, "--allow-python"])
    assert p.returncode == 0, p.stderr
    p = run_cli(["replay", sess])
    assert p.returncode == 1
    assert "refusing to run Python schedule" in p.stderr and str(SCHED / "gens.py") in p.stderr
    p = run_cli(["replay", sess, "--allow-python", "--json", "-", "-q"])
    assert p.returncode == 0 and json.loads(p.stdout)["reproduced"] is True


@pytest.mark.parametrize("name,payload", [("matmul-tile", MATMUL), ("mlp-fuse", MLP)])
def test_shipped_scripts_reproduce_shipped_sessions(tmp_path, name, payload):
    """commands/NAME.lhw run interactively == sessions/NAME.yaml replayed, byte for byte."""
    a = tmp_path / "a.mlir"
    p = run_cli([payload, "--script", REPO / "commands" / f"{name}.lhw", "--emit", a, "-q"])
    assert p.returncode == 0, p.stderr
    b = tmp_path / "b.mlir"
    out = tmp_path / "b.json"
    p = run_cli(["replay", REPO / "sessions" / f"{name}.yaml", "--emit", b, "--json", out, "-q"])
    assert p.returncode == 0, p.stderr
    assert a.read_bytes() == b.read_bytes()
    assert json.loads(out.read_text())["reproduced"] is True


@pytest.mark.parametrize("name,message", [
    ("nope.mlir", "no such file"),
    ("verify_error.mlir", "verify_error.mlir:2:3"),
])
def test_interactive_bad_payload_exits_1_before_the_ui_starts(tmp_path, name, message):
    # interactive (no --script): the UI would start; a payload that is missing or fails to
    # verify stops before it, with the error and exit status 1
    p = run_cli([PAYLOADS / name], env_extra={"LH_WORKBENCH_STATE_DIR": str(tmp_path)})
    assert p.returncode == 1, (p.returncode, p.stdout, p.stderr)
    assert message in p.stderr.splitlines()[0]
    assert "REPL" not in p.stdout + p.stderr and "no payload loaded" not in p.stdout + p.stderr
    if name.startswith("verify"):
        assert "parsed, but the verifier rejected it" in p.stderr


def test_a_script_that_loads_its_own_payload_needs_none_on_the_command_line(tmp_path):
    """`lh-workbench --script s.lhw` whose first command (after comments and blank lines) is `load` runs it;
    a script that does not load first still gets the usage error, naming both ways."""
    script = tmp_path / "s.lhw"
    script.write_text(f"# loads its own payload\n\nload {MATMUL}\nbench iterations=2\n")
    out = tmp_path / "out.json"
    p = run_cli(["--script", script, "--json", out])
    assert p.returncode == 0, p.stderr
    doc = json.loads(out.read_text())
    assert doc["ok"] and [c["command"] for c in doc["commands"]] == ["load", "bench"]
    assert doc["steps"] and doc["ir_sha256"]
    script.write_text("inspect\n")
    p = run_cli(["--script", script])
    assert p.returncode == 2 and "--script needs a payload" in p.stderr and "`load FILE`" in p.stderr


@pytest.mark.parametrize("order", ["before", "after", "file"])
def test_version_with_json_is_one_json_document(tmp_path, order):
    """`--version --json -` (or `--json - --version`, or --json FILE) writes a JSON document with the version,
    not the text line a script would have to parse; alone, --version prints the line on stdout."""
    out = tmp_path / "v.json"
    argv = {"before": ["--version", "--json", "-"], "after": ["--json", "-", "--version"],
            "file": ["--version", "--json", out]}[order]
    p = run_cli(argv)
    assert p.returncode == 0, p.stderr
    doc = json.loads(out.read_text() if order == "file" else p.stdout)
    assert doc["ok"] is True and doc["version"] and doc["mlir_python_bindings"]
    plain = run_cli(["--version"])
    assert plain.returncode == 0 and plain.stdout.startswith("lh-workbench ") and doc["version"] in plain.stdout
