"""Ninth QA round: a new user at the terminal, hostile session files (odd keys, hashes, hand edits, a state
folder that cannot be written) and real torch models; each test failed before its fix (docs/qa-round9.md)."""
from __future__ import annotations

import datetime
import json
import math

import pytest

from conftest import MATMUL, REPO, do, ok, run_cli


# -- the command line -------------------------------------------------------------------------------------

@pytest.mark.parametrize("argv, meant", [
    (["replya", "s.yaml"], "(did you mean replay?)"),     # was: unrecognized arguments: s.yaml
    (["targest"], "(did you mean targets?)"),             # was: error: targest: no such file
    (["imprt", "m.py:Net"], "(did you mean import?)"),
    (["help"], "lh-workbench --help lists the options; subcommands: import, replay, targets"),
])
def test_a_mistyped_subcommand_says_which_was_meant(argv, meant, tmp_path):
    out = run_cli(argv, cwd=tmp_path)
    assert out.returncode == 2, out
    lines = out.stderr.strip().splitlines()
    assert lines == [f"lh-workbench: {argv[0]}: no such file or subcommand {meant}" if meant.startswith("(")
                     else f"lh-workbench: {argv[0]}: no such file or subcommand ({meant}, each with --help)"], lines


def test_a_file_named_like_a_subcommand_is_still_a_payload(tmp_path):
    """Only a word that names no file is taken for a mistyped subcommand."""
    (tmp_path / "targest").write_text(MATMUL.read_text())
    out = run_cli(["targest", "--script", "-"], cwd=tmp_path)
    assert "subcommand" not in out.stderr, out.stderr
    assert out.returncode == 0, out.stderr


def test_an_option_after_double_dash_or_a_file_named_like_an_option_is_explained(tmp_path):
    """`lh-workbench -- -m.mlir --script s.lhw` answered `unrecognized arguments: --script s.lhw (did you mean
    --script?)`; `lh-workbench -m.mlir` (a file of that name) only `unrecognized arguments: -m.mlir`."""
    (tmp_path / "-m.mlir").write_text(MATMUL.read_text())
    (tmp_path / "s.lhw").write_text("inspect\n")
    out = run_cli(["--", "-m.mlir", "--script", "s.lhw"], cwd=tmp_path)
    assert out.returncode == 2
    assert out.stderr.strip().splitlines()[-1] == ("lh-workbench: error: unrecognized arguments: --script s.lhw "
                                                   "(options after `--` are taken as arguments: put them before it)")
    out = run_cli(["-m.mlir"], cwd=tmp_path)
    assert out.stderr.strip().splitlines()[-1].endswith(
        "unrecognized arguments: -m.mlir (-m.mlir is a file: name it ./-m.mlir or after `--`)"), out.stderr
    out = run_cli(["./-m.mlir", "--script", "s.lhw"], cwd=tmp_path)
    assert out.returncode == 0, out.stderr


def test_an_output_that_cannot_be_written_is_named_not_its_temporary_file(monkeypatch, capsys):
    """--json / --emit on a read-only file system named atomic_write's temporary file
    (`cannot write --json ro/o.json: [Errno 30] Read-only file system: '/x/ro/.o.json.1y982ptz'`)."""
    from workbench import cli

    def read_only(path, text):
        raise OSError(30, "Read-only file system", str(path.parent / f".{path.name}.1y982ptz"))

    monkeypatch.setattr(cli, "atomic_write", read_only)
    assert not cli._write_output("--json", "ro/o.json", "{}")
    err = capsys.readouterr().err
    assert err == "lh-workbench: cannot write --json ro/o.json: Read-only file system\n", err


# -- hostile session files --------------------------------------------------------------------------------

def test_strict_json_of_keys_that_are_not_strings():
    """json.dumps refused a NaN key (`ValueError: Out of range float values are not JSON compliant`) and a date
    or tuple key (TypeError): a session file's parameter dict may have any YAML key."""
    from workbench.result import json_text

    doc = {"params": {float("nan"): 1, float("-inf"): 2, datetime.date(2001, 12, 14): 3, (1, 2): 4, 5: 6,
                      True: 7, None: 8, "k": [float("inf")]}}
    back = json.loads(json_text(doc), parse_constant=lambda c: pytest.fail(f"not strict JSON: {c}"))
    assert back == {"params": {"nan": 1, "-inf": 2, "2001-12-14": 3, "(1, 2)": 4, "5": 6, "true": 7, "null": 8,
                               "k": ["inf"]}}


def _saved_session(ctx, tmp_path):
    ok(ctx, f"load {MATMUL}")
    ok(ctx, "apply pipelines/lib/tile.py[gen=tile_matmul]{tile_m=64}")
    ok(ctx, "pass canonicalize")
    path = tmp_path / "saved.yaml"
    ok(ctx, f"save {path}")
    return path, path.read_text()


@pytest.mark.parametrize("key", [".nan", "2001-12-14"])
def test_a_parameter_key_that_is_no_string_fails_its_step_with_strict_json(key, tmp_path):
    """`params: {.nan: 64}` failed the step in one line, then `--json` ended in json.dumps' traceback."""
    session = tmp_path / "odd_key.yaml"
    session.write_text("Pipeline:\n- schedule: pipelines/lib/tile.py[gen=tile_matmul]\n"
                       f"  params: {{tile_m: 64, {key}: 3}}\n")
    out = run_cli(["replay", session, "--payload", MATMUL, "--json", "-"])
    assert out.returncode == 1 and "Traceback" not in out.stderr, out.stderr
    doc = json.loads(out.stdout, parse_constant=lambda c: pytest.fail(f"not strict JSON: {c}"))
    assert "unknown parameter" in doc["error"], doc["error"]
    assert doc["steps"][0]["params"]["tile_m"] == 64


@pytest.mark.parametrize("bad", ["abc", "upper"])
def test_a_step_record_hash_that_is_no_sha256_is_refused(ctx, tmp_path, bad):
    """Workbench.steps[].ir_sha256 took any string (`abc`, the hash in capitals) and compared it with the
    replayed IR's; Workbench.ir_sha256 `0000` was refused (an int), `abc` taken."""
    path, text = _saved_session(ctx, tmp_path)
    first = text.split("steps:\n  - {index: 1, ir_sha256: ", 1)[1][:64]
    wrong = "abc" if bad == "abc" else first.upper()
    path.write_text(text.replace(f"ir_sha256: {first}", f"ir_sha256: {wrong}", 1))
    res = do(ctx, f"replay {path}")
    assert not res.ok and "Workbench.steps must be a list of step records" in res.error, res.error
    final = text.split("\n  ir_sha256: ", 1)[1][:64]
    path.write_text(text.replace(f"\n  ir_sha256: {final}", "\n  ir_sha256: abc", 1))
    res = do(ctx, f"replay {path}")
    assert not res.ok and "Workbench.ir_sha256 must be a sha256 hex string, not 'abc'" in res.error, res.error


def test_a_step_whose_ir_differs_from_its_record_is_said_when_the_final_ir_matches(ctx, tmp_path):
    """A step record whose ir_sha256 is not what the step gives (hand-edited) replayed as `reproduced: true`
    without a word: only a differing final IR was compared with the records."""
    path, text = _saved_session(ctx, tmp_path)
    first = text.split("steps:\n  - {index: 1, ir_sha256: ", 1)[1][:64]
    other = ("0" if first[0] != "0" else "1") + first[1:]
    path.write_text(text.replace(f"ir_sha256: {first}", f"ir_sha256: {other}", 1))
    res = ok(ctx, f"replay {path}")
    assert res.data["reproduced"] is True
    assert any("the IR after a step differs from the session's record of it (first after step 1: "
               "pipelines/lib/tile.py[gen=tile_matmul]" in w and "the final IR is as recorded" in w
               for w in res.data["warnings"]), res.data
    path.write_text(text)
    assert "warnings" not in ok(ctx, f"replay {path}").data


def test_a_hand_edit_of_a_references_parameter_beside_params_is_said(ctx, tmp_path):
    """`save` writes a step's parameters twice (the reference's {k=v} and `params:`), and `params:` wins; an edit
    of {tile_m=16} was replayed as tile_m=64 without a word (and `reproduced: true`)."""
    path, text = _saved_session(ctx, tmp_path)
    assert "{tile_m=64 tile_n=32" in text and "params: {tile_m: 64," in text
    path.write_text(text.replace("{tile_m=64 tile_n=32", "{tile_m=16 tile_n=32", 1))
    res = ok(ctx, f"replay {path}")
    assert ctx.session.active_steps[0].step.params["tile_m"] == 64
    assert f"{path}: entry 1: tile_m is 16 in the `schedule:` reference's {{...}} and 64 in `params:`; " \
           "`params:` is used" in res.data["warnings"], res.data
    assert "tile_m is 16" in res.summary
    ok(ctx, "undo")


def test_a_state_folder_that_cannot_be_made_leaves_sessions_working(tmp_path):
    """A state folder that cannot be made (a read-only home, a file in its path) failed every `load`
    (`error: load: .../state: Read-only file system`); a full disk there was only warned about."""
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("")
    script = tmp_path / "s.lhw"
    saved = tmp_path / "saved.yaml"
    script.write_text(f"apply pipelines/lib/tile.py[gen=tile_matmul]{{tile_m=64}}\nsave {saved}\nhistory\n")
    out = run_cli([MATMUL, "--script", script], env_extra={"LH_WORKBENCH_STATE_DIR": str(blocker / "state")})
    assert "Traceback" not in out.stderr, out.stderr
    assert "cannot write the crash journal" in out.stderr, out.stderr
    assert "saved 1 steps" in out.stdout and saved.is_file(), out.stdout + out.stderr
    assert out.returncode == 1    # as with a full disk: the journal could not be kept


# -- checks against torch's outputs ------------------------------------------------------------------------

TINY_OUTPUTS = """\
#id = affine_map<(d0) -> (d0)>
func.func @tiny(%x: tensor<64xf32>, %out: tensor<64xf32>) -> tensor<64xf32> {
  %s = arith.constant 1.0e-12 : f32
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%x : tensor<64xf32>) outs(%out : tensor<64xf32>) {
  ^bb0(%a: f32, %o: f32):
    %m = arith.mulf %a, %s : f32
    linalg.yield %m : f32
  } -> tensor<64xf32>
  return %r : tensor<64xf32>
}
"""


def test_a_check_against_outputs_below_its_absolute_tolerance_says_it_cannot_fail(ctx, tmp_path):
    """torchvision's EfficientNet-B0, MnasNet and MobileNetV3-small at their default init give logits of 1e-14 ..
    1e-8: `run --check` passed `vs expected outputs` with atol 1e-3 whatever the run computed, without a word."""
    import numpy as np

    payload = tmp_path / "tiny.mlir"
    payload.write_text(TINY_OUTPUTS)
    x = np.random.default_rng(0).uniform(-1, 1, 64).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "out.npy", np.zeros(64, np.float32))
    np.save(tmp_path / "right.npy", (x * np.float32(1e-12)).astype(np.float32))
    np.save(tmp_path / "wrong.npy", (x * np.float32(-3e-12)).astype(np.float32))
    ok(ctx, f"load {payload}")
    for want in ("right", "wrong"):
        run = ok(ctx, f"run --iterations 1 --npy {tmp_path / 'x.npy'},{tmp_path / 'out.npy'} "
                      f"--expect {tmp_path / want}.npy").data["run"]
        check = run["expected_check"]
        assert check["passed"] and check["outputs"][0]["below_atol"], check   # allclose's verdict, as documented
        assert "expected output 0: every value is below atol (largest |want| " in run["warning"], run
        assert "so the elementwise check cannot fail there; its error relative to that largest value is" \
            in run["warning"]
        assert check["max_rel_err"] < 1e-6 if want == "right" else check["max_rel_err"] > 1.0, check
    np.save(tmp_path / "big.npy", x)
    run = do(ctx, f"run --iterations 1 --npy {tmp_path / 'x.npy'},{tmp_path / 'out.npy'} "
                  f"--expect {tmp_path / 'big.npy'}").data["run"]
    assert not run["expected_check"]["passed"] and "below atol" not in (run.get("warning") or "")


def test_a_run_killed_at_its_time_limit_says_the_limit_covers_the_calls_not_the_compile(ctx):
    """torchvision's DenseNet-121 (64x64) failed `run --check` with `run worker timed out after 120 s ... (it makes
    1 + 10 calls)`: 67 s of the limit went to the JIT compile of its 320k-line module, 0.5 s to the calls. The
    compile has its own limit since (tests/test_run_phases.py); the hint says what `--timeout` covers."""
    from conftest import failed

    ok(ctx, f"load {REPO / 'tests' / 'payloads' / 'spin.mlir'}")
    err = failed(ctx, "run --iterations 1 --warmup 0 --timeout 3")
    assert "while running the compiled code" in err and err.endswith(
        "it covers the 0 + 1 calls of the compiled code, not its compile)"), err


def test_a_replay_report_has_its_warnings_key_whether_or_not_there_are_warnings(tmp_path):
    """`replay --json` had `warnings` only when there were some: a consumer reading `doc["warnings"]` failed on a
    clean replay (README: the same keys whether it worked or where it stopped, null when nothing to say)."""
    session = tmp_path / "s.yaml"
    session.write_text("Pipeline:\n- pass: canonicalize\n")
    keys = []
    for payload in (MATMUL, tmp_path / "missing.mlir"):
        out = run_cli(["replay", session, "--payload", payload, "--json", "-"])
        doc = json.loads(out.stdout)
        assert doc["warnings"] is None, doc
        keys.append(set(doc))
    assert keys[0] == keys[1], keys


# -- a torch model file as the payload ---------------------------------------------------------------------

def test_a_model_payload_takes_its_input_specs_on_the_command_line(tmp_path):
    """`lh-workbench model.py:Net` on a model without get_inputs() was refused with `no --inputs and the file has no
    get_inputs()`, and `--inputs` was an unrecognized argument of that form."""
    import argparse

    from workbench.cli import _load_line

    args = argparse.Namespace(payload="model.py:Net", inputs="2x16xi64[0:1000],1x3xf32", chunk=None,
                              allow_unregistered_dialects=False)
    assert _load_line(args) == "import model.py:Net --inputs 2x16xi64[0:1000],1x3xf32"
    out = run_cli([MATMUL, "--inputs", "1x2xf32", "--json", tmp_path / "r.json"], cwd=tmp_path)
    assert out.returncode == 2 and out.stderr.strip().splitlines() == [
        "lh-workbench: --inputs gives the input specs of a torch model payload (MODEL.py[:NAME]); an MLIR "
        "payload's inputs are `run --inputs random|zeros|ones` or `run --npy`"], out.stderr
    assert json.loads((tmp_path / "r.json").read_text())["usage_error"] is True


NO_GET_INPUTS = '''
import torch

class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = torch.nn.Embedding(50, 8)
        self.lin = torch.nn.Linear(8, 4)

    def forward(self, idx):
        return self.lin(self.emb(idx)).relu()
'''


@pytest.mark.skipif(not __import__("test_torch_import")._torch_available(), reason="torch + torch-mlir not here")
def test_a_model_payload_without_get_inputs_imports_with_inputs_given(tmp_path):
    from test_torch_import import TORCH_PYTHON

    (tmp_path / "net.py").write_text(NO_GET_INPUTS)
    (tmp_path / "s.lhw").write_text("run --check --iterations 2\n")
    env = {"LH_WORKBENCH_TORCH_PYTHON": TORCH_PYTHON}
    out = run_cli(["net.py:Net", "--script", "s.lhw"], cwd=tmp_path, env_extra=env, timeout=600)
    assert out.returncode == 1 and "no --inputs and the file has no get_inputs()" in out.stderr, out.stderr
    out = run_cli(["net.py:Net", "--inputs", "2x5xi64[0:50]", "--script", "s.lhw", "--json", "r.json"],
                  cwd=tmp_path, env_extra=env, timeout=600)
    assert out.returncode == 0, out.stderr
    run = json.loads((tmp_path / "r.json").read_text())["run"]
    assert run["check"]["passed"] and run["expected_check"]["passed"], run
