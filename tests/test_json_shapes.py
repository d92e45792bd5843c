"""Every headless form's `--json` is a JSON document with the same keys whether it worked or where it
stopped: a consumer reads doc["run"], doc["error"], doc["commands"] without checking first (a replay of
a missing session had no `payload`/`reproduced`, a script on a missing payload no `commands`,
`targets --cpu bogus --json` and a failed `import --json` printed no JSON at all)."""
from __future__ import annotations

import json

from conftest import MATMUL, REPO, run_cli

REPLAY_KEYS = {"ok", "ir_sha256", "steps", "target", "run", "error", "payload", "session", "expected_ir_sha256",
               "reproduced", "warnings"}
SCRIPT_KEYS = {"ok", "ir_sha256", "steps", "target", "run", "error", "commands"}


def json_of(args, tmp_path, rc):
    p = run_cli(list(args) + ["--json", "-"], cwd=tmp_path)
    assert p.returncode == rc, p.stderr
    return json.loads(p.stdout)


def test_replay_has_the_same_keys_when_it_works_and_when_it_cannot_start(tmp_path, state_dir):
    good = json_of(["replay", REPO / "sessions" / "matmul-cpu.yaml", "-q"], tmp_path, 0)
    missing = json_of(["replay", tmp_path / "nowhere.yaml"], tmp_path, 1)
    assert set(good) == REPLAY_KEYS == set(missing)
    assert good["ok"] and good["error"] is None and good["run"] is None and good["reproduced"] is True
    assert not missing["ok"] and "nowhere.yaml" in missing["error"] and missing["reproduced"] is None


def test_script_has_the_same_keys_when_it_works_and_when_the_payload_is_missing(tmp_path, state_dir):
    script = tmp_path / "s.lhw"
    script.write_text("apply pipelines/lib/tile.mlir\n")
    good = json_of([MATMUL, "--script", script, "-q"], tmp_path, 0)
    missing = json_of([tmp_path / "nowhere.mlir", "--script", script], tmp_path, 1)
    assert set(good) == SCRIPT_KEYS == set(missing)
    assert good["ok"] and len(good["commands"]) == 1 and good["error"] is None
    assert missing["commands"] == [] and "no such file" in missing["error"]


def test_targets_and_import_answer_json_when_they_fail(tmp_path, state_dir):
    listing = json.loads(run_cli(["targets", "--json"], cwd=tmp_path).stdout)
    assert any(t["name"] == "cpu" for t in listing)
    p = run_cli(["targets", "--cpu", "bogus", "--json"], cwd=tmp_path)
    assert p.returncode == 2 and json.loads(p.stdout) == {"ok": False, "error": json.loads(p.stdout)["error"]}
    assert "unknown cpu 'bogus'" in json.loads(p.stdout)["error"]
    p = run_cli(["import", tmp_path / "nowhere.py", "--json", "-"], cwd=tmp_path,
                env_extra={"LH_WORKBENCH_TORCH_PYTHON": "/nonexistent/python"})
    doc = json.loads(p.stdout)
    assert p.returncode == 1 and doc["ok"] is False and doc["error"]


def test_a_mistyped_command_line_option_gets_a_suggestion(tmp_path):
    p = run_cli([MATMUL, "--scrpit", "x.lhw"], cwd=tmp_path)
    assert p.returncode == 2 and "unrecognized arguments: --scrpit x.lhw (did you mean --script?)" in p.stderr
    p = run_cli(["replay", "s.yaml", "--chek"], cwd=tmp_path)
    assert p.returncode == 2 and "(did you mean --check?)" in p.stderr
