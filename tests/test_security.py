"""Issue 15 (trust, faults and bad input) and issue 16 items 7-8: each test fails without its fix."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import MATMUL, REPO, SCHED, do, ok, run_cli

SAFE_CLI = [sys.executable, "-P", "-m", "workbench.cli"]   # the front end itself like the console script


def _env(state_dir: Path, **extra) -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO)] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    env["LH_WORKBENCH_STATE_DIR"] = str(state_dir)
    env.update(extra)
    return env


def _session_file(tmp_path: Path, pipeline: str, name: str = "s.yaml") -> Path:
    shutil.copy(MATMUL, tmp_path / "m.mlir")
    p = tmp_path / name
    p.write_text(f"Pipeline:\n{pipeline}\nWorkbench:\n  payload: {{path: m.mlir}}\n  target: cpu\n")
    return p


# -- 1: workers never have the cwd on sys.path ---------------------------------------------------

def test_module_command_keeps_cwd_off_the_path(tmp_path):
    from workbench.common.spawn import child_env, module_command

    (tmp_path / "json.py").write_text("raise SystemExit('cwd module imported')\n")
    probe = tmp_path / "probe.py"
    probe.write_text("")
    for python in (None, sys.executable):   # -P form and the -c bootstrap (Python 3.10 / other interpreters)
        p = subprocess.run(module_command("json.tool", "--help", python=python), cwd=tmp_path, env=child_env(),
                           capture_output=True, text=True, timeout=60)
        assert p.returncode == 0, p.stderr


def test_replay_does_not_import_a_numpy_py_next_to_the_session(tmp_path, state_dir):
    marker = tmp_path / "PWNED"
    (tmp_path / "numpy.py").write_text(f"open({str(marker)!r}, 'a').write('ran\\n')\nraise SystemExit(3)\n")
    sess = _session_file(tmp_path, "- pass: canonicalize\n- bench: {iterations: 2}\n- pipeline: cpu-lower")
    p = subprocess.run(SAFE_CLI + ["replay", sess.name, "--run", "--allow-run"], cwd=tmp_path,
                       env=_env(state_dir), capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL)
    assert p.returncode == 0, p.stderr
    assert not marker.exists(), "a module from the session's folder ran in a worker"
    p = subprocess.run(SAFE_CLI + ["targets"], cwd=tmp_path, env=_env(state_dir), capture_output=True, text=True,
                       timeout=120, stdin=subprocess.DEVNULL)
    assert p.returncode == 0 and not marker.exists()


# -- 2: only declared generators are callable ----------------------------------------------------

def test_undeclared_function_of_a_library_file_is_not_callable(matmul_session, tmp_path):
    from workbench.session import SessionError
    from workbench.steps.kinds import step_from_command

    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    for ref in (f"pipelines/cpu/matmul.py[gen=default_params]{{m=1 n=1 k={victim}}}",
                "pipelines/lib/tile.py[gen=_pick]{dims=[1] target=2}"):
        with pytest.raises(SessionError, match=r"has no generator .* \(declared generators"):
            matmul_session.apply(step_from_command(ref, REPO))
    assert victim.read_text() == "precious" and matmul_session.cursor == 0


def test_worker_refuses_an_undeclared_generator_even_if_asked_directly(matmul_session, compile_client):
    s = matmul_session
    stage = {"kind": "schedule", "path": str(REPO / "pipelines/cpu/matmul.py"), "gen": "default_params",
             "params": {"m": 64, "n": 64, "k": 64}, "entry": "__transform_main", "wants_payload": False}
    ans = compile_client.request({"op": "apply", "text": s.current_ir, "sha": s.current_sha, "stages": [stage]})
    assert not ans["ok"] and "not a declared generator" in ans["error"]


def test_file_without_a_generators_declaration_is_refused(matmul_session, tmp_path):
    from workbench.session import SessionError
    from workbench.steps.kinds import step_from_command

    f = tmp_path / "mine.py"
    f.write_text("def g() -> str:\n    return ''\n")
    matmul_session.build_ctx.allow_python = True
    with pytest.raises(SessionError, match="declares no generators"):
        matmul_session.apply(step_from_command(f"{f}[gen=g]", REPO))


def test_foreign_session_cannot_pass_wrong_types_to_a_generator(tmp_path, state_dir):
    sess = _session_file(tmp_path, "- schedule: pipelines/lib/tile.py[gen=tile_matmul]\n"
                                   "  params: {tile_m: {evil: 1}}")
    p = run_cli(["replay", sess], cwd=tmp_path, env_extra={"LH_WORKBENCH_STATE_DIR": str(state_dir)})
    assert p.returncode == 1 and "tile_m" in p.stderr and "expected int" in p.stderr
    assert "Traceback" not in p.stderr


# -- 5: YAML alias bomb --------------------------------------------------------------------------

ALIAS_BOMB = ("  params:\n    a: &a [x, x, x, x, x, x, x, x, x]\n"
              + "".join(f"    {c}: &{c} [{', '.join(['*' + p] * 9)}]\n"
                        for p, c in zip("abcdefgh", "bcdefghi")))


def test_yaml_alias_bomb_is_refused_fast(tmp_path, state_dir):
    sess = _session_file(tmp_path, "- schedule: pipelines/lib/tile.py[gen=tile_matmul]\n" + ALIAS_BOMB)
    t0 = time.perf_counter()
    p = run_cli(["replay", sess, "--json", tmp_path / "r.json"], cwd=tmp_path,
                env_extra={"LH_WORKBENCH_STATE_DIR": str(state_dir)}, timeout=60)
    assert p.returncode == 1, p.stderr
    assert "alias" in p.stderr and "Traceback" not in p.stderr
    from workbench.common import safe_yaml
    import yaml

    t0 = time.perf_counter()
    with pytest.raises(yaml.YAMLError, match="alias"):
        safe_yaml.load(sess.read_text())
    assert time.perf_counter() - t0 < 1.0


def test_params_given_as_a_list_is_an_error(tmp_path, state_dir):
    sess = _session_file(tmp_path, "- schedule: pipelines/lib/tile.py[gen=tile_matmul]\n  params: [64, 64]")
    p = run_cli(["replay", sess], cwd=tmp_path, env_extra={"LH_WORKBENCH_STATE_DIR": str(state_dir)})
    assert p.returncode == 1 and "`params:` must be a mapping" in p.stderr, p.stderr


# -- 6/10: one-line errors, step 0 --------------------------------------------------------------

def test_undefined_variable_and_non_utf8_yaml_are_one_line_errors(ctx, tmp_path):
    ok(ctx, f"load {MATMUL}")
    inc = tmp_path / "inc.yaml"
    inc.write_text("Pipeline:\n  - pass: $undefined_pass\n")
    res = do(ctx, f"apply {inc}")
    assert not res.ok and "undefined" in res.error and "\n" not in res.error
    bad = tmp_path / "bad.yaml"
    bad.write_bytes(b"Pipeline:\n  - pass: \xff\xfe canonicalize\n")
    for line in (f"apply {bad}", f"replay {bad}"):
        res = do(ctx, line)
        assert not res.ok and "UTF-8" in res.error and "\n" not in res.error, res.error
    assert ctx.session.cursor == 0


def test_params_0_is_refused(ctx):
    ok(ctx, f"load {MATMUL}")
    ok(ctx, "apply pipelines/lib/tile.py[gen=tile_matmul]{tile_m=64}")
    res = do(ctx, "params 0 tile_m=32")
    assert not res.ok and "step 0 is the payload" in res.error
    assert ctx.session.steps[0].step.params["tile_m"] == 64


# -- 4: workers die with their parent and enforce their own time limit ---------------------------

SLEEPY = "import time\nGENERATORS = ['g']\n\ndef g() -> str:\n    time.sleep(600)\n    return ''\n"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:   # a zombie is dead too
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except OSError:
        return False


@pytest.mark.parametrize("from_thread", [False, True])
def test_killed_front_end_takes_its_worker_along(tmp_path, from_thread):
    sleepy = tmp_path / "sleepy.py"
    sleepy.write_text(SLEEPY)
    parent = tmp_path / "front.py"
    parent.write_text(f"""
import sys, threading, time
from workbench.execution.worker_client import CompileClient
c = CompileClient()
stage = {{"kind": "schedule", "path": {str(sleepy)!r}, "gen": "g", "params": {{}}, "entry": "__transform_main",
         "wants_payload": False}}
def go():
    c.start()   # from this thread: the parent-death signal is asked for only from the main thread
    print(c.proc.pid, flush=True)
    c.request({{"op": "apply", "text": "module {{}}", "sha": None, "stages": [stage]}}, timeout=3600)
if {from_thread}:
    threading.Thread(target=go, daemon=True).start()
    time.sleep(3600)
else:
    go()
""")
    proc = subprocess.Popen([sys.executable, "-P", str(parent)], stdout=subprocess.PIPE, text=True,
                            env=_env(tmp_path / "state"))
    try:
        worker = int(proc.stdout.readline())
        time.sleep(1.5)   # the worker is inside the sleeping generator now
        assert _alive(worker)
        proc.kill()
        proc.wait()
        t0 = time.monotonic()
        while _alive(worker) and time.monotonic() - t0 < 10:
            time.sleep(0.1)
        assert not _alive(worker), "the worker outlived its front end"
    finally:
        proc.kill()


def test_worker_ends_a_request_past_its_own_time_limit(tmp_path):
    from workbench.execution.worker_client import CompileClient
    from workbench.worker.protocol import GRACE_S

    sleepy = tmp_path / "sleepy.py"
    sleepy.write_text(SLEEPY)
    c = CompileClient()
    try:
        c.start()
        stage = {"kind": "schedule", "path": str(sleepy), "gen": "g", "params": {}, "entry": "__transform_main",
                 "wants_payload": False}
        # straight on the connection, as if the client were gone: only the worker's own limit stops it
        c.conn.send({"op": "apply", "text": "module {}", "sha": None, "stages": [stage], "time_limit_s": 0.5})
        assert c.proc.wait(timeout=GRACE_S + 10) == 71
    finally:
        c.kill()


def test_compile_timeout_is_a_setting(tmp_path, monkeypatch):
    from workbench.execution.worker_client import CompileClient, compile_timeout_s

    monkeypatch.setenv("LH_WORKBENCH_COMPILE_TIMEOUT", "1.5")
    assert compile_timeout_s() == 1.5
    sleepy = tmp_path / "sleepy.py"
    sleepy.write_text(SLEEPY)
    c = CompileClient()
    try:
        stage = {"kind": "schedule", "path": str(sleepy), "gen": "g", "params": {}, "entry": "__transform_main",
                 "wants_payload": False}
        t0 = time.monotonic()
        ans = c.request({"op": "apply", "text": "module {}", "sha": None, "stages": [stage]})
        assert not ans["ok"] and "timed out after 1.5 s" in ans["error"] and time.monotonic() - t0 < 10
    finally:
        c.close()
