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


# -- 3 / 16.8: one journal per session, no questions without a terminal, save clears it ----------

def _orphan_journal(session_factory) -> Path:
    """A journal left by a killed session (its lock released with the process)."""
    from workbench.steps.kinds import step_from_command

    s = session_factory()
    s.load(MATMUL)
    s.apply(step_from_command("pass canonicalize", REPO))
    assert s.autosave()
    jp = s.journal_path
    os.close(s._journal_lock)   # what SIGKILL does to the lock
    s._journal_lock = None
    return jp


@pytest.fixture
def new_session(compile_client):
    from workbench.session import Session

    return lambda: Session(client=compile_client)


def test_script_on_the_same_payload_keeps_a_killed_sessions_journal(new_session, tmp_path, state_dir):
    jp = _orphan_journal(new_session)
    script = tmp_path / "s.lhw"
    script.write_text("pass canonicalize\nundo\n")
    p = run_cli([MATMUL, "--script", script], cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert jp.is_file(), "another session's journal was deleted"


def test_piped_commands_are_a_script_no_question_no_noise(new_session, tmp_path, state_dir):
    jp = _orphan_journal(new_session)
    env = _env(state_dir)
    p = subprocess.run(SAFE_CLI + [str(MATMUL), "--json", str(tmp_path / "r.json")],
                       input="pass canonicalize\nbogus-command\n", cwd=tmp_path, env=env,
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 1, p.stderr
    assert "\r" not in p.stdout + p.stderr and "resume it?" not in p.stdout + p.stderr
    import json

    doc = json.loads((tmp_path / "r.json").read_text())
    assert [c["line"] for c in doc["commands"]] == [1, 2]
    assert doc["commands"][0]["ok"] and not doc["commands"][1]["ok"]
    assert jp.is_file()
    # --resume decides without a question
    p = subprocess.run(SAFE_CLI + [str(MATMUL), "--resume", "--json", str(tmp_path / "r2.json")],
                       input="history\n", cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert len(json.loads((tmp_path / "r2.json").read_text())["steps"]) == 1


def _repl(ctx, text, monkeypatch=None, history_file=False):
    import io

    from prompt_toolkit.input import create_pipe_input
    from prompt_toolkit.output import DummyOutput
    from rich.console import Console

    from workbench import repl

    made = []
    if monkeypatch is not None:
        real = repl.make_session
        monkeypatch.setattr(repl, "make_session", lambda *a, **k: made.append(real(*a, **k)) or made[-1])
    out = io.StringIO()
    console = Console(file=out, width=120, force_terminal=False, color_system=None)
    with create_pipe_input() as inp:
        inp.send_text(text)
        failures = repl.run_repl(ctx, input=inp, output=DummyOutput(), console=console, history_file=history_file)
    return failures, out.getvalue(), made


def _ctx(session):
    from workbench.commands import CommandContext, default_registry

    return CommandContext(session, default_registry())


def test_save_clears_the_journal_and_a_refused_resume_gives_the_prompt_back(new_session, tmp_path, monkeypatch):
    from workbench.repl import PROMPT

    s = new_session()
    s.load(MATMUL)
    failures, out, _ = _repl(_ctx(s), f"pass canonicalize\nsave {tmp_path / 'mine.yaml'}\nquit\n")
    assert failures == 0
    s._release_journal_lock()
    assert new_session().journal_for(MATMUL) is None, "the next launch would ask to resume a saved session"

    _orphan_journal(new_session)
    s2 = new_session()
    s2.load(MATMUL)
    failures, out, made = _repl(_ctx(s2), "n\nhistory\nquit\n", monkeypatch)
    assert "resume it?" in out or made  # the question was asked
    assert made[0].message == PROMPT
    assert s2.cursor == 0 and failures == 0


# -- 16.7: what this user applied is trusted for this user's replay; elsewhere still asks ---------

def test_own_python_schedule_replays_and_a_foreign_one_still_needs_consent(new_session, tmp_path, state_dir):
    mine = tmp_path / "mine.py"
    mine.write_text((SCHED / "gens.py").read_text())
    s = new_session()
    s.load(MATMUL)
    ctx = _ctx(s)
    ctx.interactive = True
    ok(ctx, f"apply {mine}[gen=tile]{{tile=16}}")
    ok(ctx, f"save {tmp_path / 'mine.yaml'}")
    s._release_journal_lock()
    p = run_cli(["replay", tmp_path / "mine.yaml"], cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    # the same file changed: not what the user trusted
    mine.write_text(mine.read_text() + "\n# changed\n")
    p = run_cli(["replay", tmp_path / "mine.yaml"], cwd=tmp_path)
    assert p.returncode == 1 and "--allow-python" in p.stderr


# -- 12: a session from elsewhere asks before its payload runs ------------------------------------

def test_running_a_foreign_session_needs_consent_and_own_sessions_do_not(new_session, tmp_path, state_dir):
    sess = _session_file(tmp_path, "- bench: {iterations: 2}\n- pipeline: cpu-lower", name="foreign.yaml")
    p = run_cli(["replay", sess, "--run"], cwd=tmp_path)
    assert p.returncode == 1 and "without consent" in p.stderr and "--allow-run" in p.stderr
    assert "median" not in p.stdout
    # interactive: asked, and a no refuses
    s = new_session()
    ctx = _ctx(s)
    ctx.interactive = True
    asked = []
    ctx.confirm = lambda q: asked.append(q) or False
    ok(ctx, f"replay {sess}")
    res = do(ctx, "run")
    assert not res.ok and asked and "from elsewhere" in asked[0]
    # saved by this user: not from elsewhere
    ok(ctx, f"save {tmp_path / 'own.yaml'}")
    s._release_journal_lock()
    p = run_cli(["replay", tmp_path / "own.yaml", "--run"], cwd=tmp_path)
    assert p.returncode == 0, p.stderr


# -- 6: Ctrl-C cancels the step, the REPL goes on -------------------------------------------------

def test_ctrl_c_during_a_step_cancels_it_and_the_repl_goes_on(new_session, tmp_path):
    import _thread
    import signal
    import threading

    sleepy = tmp_path / "sleepy.py"
    started = tmp_path / "step-started"
    # the generator (run by the compile worker) says when the step is under way
    sleepy.write_text(SLEEPY.replace("    time.sleep(600)", f"    open({str(started)!r}, 'w').close()\n    time.sleep(600)"))
    s = new_session()
    s.load(MATMUL)

    def interrupt_once_the_step_runs():
        # (not after a fixed delay: on a loaded machine the REPL may still be reading its input, where
        # Ctrl-C clears the line, and the sleeping step then runs to its timeout)
        deadline = time.monotonic() + 50
        while not started.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.2)
        _thread.interrupt_main()

    # Python's own Ctrl-C handler, which a shell's background job starts without (SIGINT ignored:
    # interrupt_main would do nothing)
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    threading.Thread(target=interrupt_once_the_step_runs, daemon=True).start()
    t0 = time.monotonic()
    try:
        failures, out, _ = _repl(_ctx(s), f"apply {sleepy}[gen=g]\nhistory\nquit\n")
    finally:
        signal.signal(signal.SIGINT, previous)
    assert time.monotonic() - t0 < 60
    assert failures == 1 and "cancelled" in out and s.cursor == 0
    assert "Traceback" not in out
    ok(_ctx(s), "pass canonicalize")   # the worker came back


# -- 7: a full disk under the state directory ----------------------------------------------------

def test_full_disk_warns_once_keeps_working_and_fails_the_status(new_session, tmp_path, monkeypatch):
    import errno

    from workbench import session as session_module

    real = session_module.atomic_write

    def full(path, text):
        if "journal" in str(path):
            raise OSError(errno.ENOSPC, "No space left on device", str(path))
        return real(path, text)

    monkeypatch.setattr(session_module, "atomic_write", full)
    s = new_session()
    s.load(MATMUL)
    warnings = []
    s.warn = warnings.append
    from workbench.commands.script import run_script_text

    outcome = run_script_text("pass canonicalize\npass cse\nundo\nredo\n", _ctx(s))
    assert outcome.ok and s.cursor == 2 and len(warnings) == 1 and "No space left" in warnings[0]
    assert s.journal_error
    # the REPL's history cannot be written (ENOSPC): warned once, every line still runs
    from prompt_toolkit.history import FileHistory

    def no_space(self, string):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(FileHistory, "store_string", no_space)
    s2 = new_session()
    s2.load(MATMUL)
    failures, out, _ = _repl(_ctx(s2), "pass canonicalize\npass cse\nquit\n", history_file=tmp_path / "hist")
    assert failures == 0 and s2.cursor == 2 and out.count("cannot write the command history") == 1


def test_full_disk_makes_the_script_exit_non_zero(tmp_path, state_dir):
    import errno  # noqa: F401

    script = tmp_path / "s.lhw"
    script.write_text("pass canonicalize\n")
    (state_dir / "journal").parent.mkdir(parents=True, exist_ok=True)
    (state_dir / "journal").write_text("a file where the journal folder should be")
    p = run_cli([MATMUL, "--script", script, "--json", tmp_path / "r.json"], cwd=tmp_path)
    assert p.returncode == 1 and "crash journal" in p.stderr and "Traceback" not in p.stderr
    assert p.stderr.count("cannot write the crash journal") == 2   # the warning, then the final status line


# -- 10: file modes, fsync, bad output paths -----------------------------------------------------

def test_atomic_write_uses_the_umask_and_fsyncs(tmp_path, monkeypatch):
    from workbench.common import files

    synced = []
    real_fsync = os.fsync
    monkeypatch.setattr(files.os, "fsync", lambda fd: synced.append(fd) or real_fsync(fd))
    old = os.umask(0o022)
    try:
        files.atomic_write(tmp_path / "a.yaml", "x")
        assert (tmp_path / "a.yaml").stat().st_mode & 0o777 == 0o644
        os.umask(0o077)
        files.atomic_write(tmp_path / "b.yaml", "x")
        assert (tmp_path / "b.yaml").stat().st_mode & 0o777 == 0o600
    finally:
        os.umask(old)
    assert len(synced) == 4   # file and folder, twice


def test_bad_output_paths_and_scripts_are_one_line_errors(tmp_path):
    regular = tmp_path / "regular.txt"
    regular.write_text("x")
    script = tmp_path / "s.lhw"
    script.write_text("pass canonicalize\n")
    for args in ([MATMUL, "--script", script, "--json", regular / "out.json"],
                 [MATMUL, "--script", script, "--emit", "/"],
                 [MATMUL, "--script", "/bin/ls"],
                 ["replay", REPO / "sessions/matmul-tile.yaml", "--json", regular / "x" / "out.json"]):
        p = run_cli(args, cwd=tmp_path)
        assert p.returncode == 2, (args, p.stderr)
        assert "Traceback" not in p.stderr and len(p.stderr.strip().splitlines()) == 1, p.stderr


# -- 9: tune trials killed mid-run -----------------------------------------------------------------

def test_trial_killed_mid_run_is_failed_and_measured_on_resume(new_session, tmp_path):
    import optuna
    from optuna.distributions import CategoricalDistribution

    from conftest import matmul_payload

    s = new_session()
    s.build_ctx.allow_python = True
    s.journal_enabled = False
    ctx = _ctx(s)
    ok(ctx, f"load {matmul_payload(tmp_path / 'mm.mlir', 64, 64, 64)}")
    ok(ctx, "apply pipelines/cpu/matmul.py[gen=matmul_tiling]{block_m=64 block_n=64 block_k=64}")
    ok(ctx, "bench iterations=2")
    ok(ctx, "apply cpu-matmul-lower")
    db = tmp_path / "t.db"
    first = ok(ctx, f"tune 1 --sampler grid --trials 1 --no-baseline --iterations 2 --storage {db} "
                    "reg_k=[1,2]").data["tune"]
    measured = {t["params"]["reg_k"] if isinstance(t.get("params"), dict) else None for t in first["trials"]}
    # a tune process dies in the middle of the other combination's trial
    study = optuna.load_study(study_name=first["study"], storage=f"sqlite:///{db}")
    other = 2 if 1 in measured or first["trials"][0].get("reg_k") == 1 else 1
    study.enqueue_trial({"reg_k": other})
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    trial = study.ask({"reg_k": CategoricalDistribution([1, 2])})
    trial.set_user_attr("host", __import__("socket").gethostname())
    trial.set_user_attr("pid", dead.pid)
    second = ok(ctx, f"tune 1 --sampler grid --trials 4 --no-baseline --iterations 2 --storage {db} "
                     "reg_k=[1,2]").data["tune"]
    study = optuna.load_study(study_name=first["study"], storage=f"sqlite:///{db}")
    states = [(t.params.get("reg_k"), t.state.name) for t in study.trials]
    assert (other, "FAIL") in states, states         # the killed trial: failed, never the best
    assert (other, "COMPLETE") in states, states     # ... and its parameters measured on resume
    assert not any(st == "RUNNING" for _, st in states)


# -- 11: MPI root cause and launcher ----------------------------------------------------------------

def test_mpi_blames_the_rank_that_crashed_not_the_one_cleanup_killed(tmp_path):
    from workbench.execution import mpi_launch

    (tmp_path / "fault0").write_text("")                                  # rank 0: killed by the cleanup
    (tmp_path / "fault1").write_text("Fatal Python error: Aborted\n\nCurrent thread ...\n")
    assert mpi_launch._crashed_ranks(tmp_path, 2) == {1: "Aborted (signal 6)"}


def test_open_mpi_launcher_gets_the_options_it_needs(tmp_path):
    from workbench.execution import mpi_launch

    fake = tmp_path / "mpiexec"
    fake.write_text("#!/bin/sh\necho 'mpiexec (OpenRTE) 4.1.2'\n")
    fake.chmod(0o755)
    assert mpi_launch.mpi_implementation(str(fake)) == "Open MPI"
    opts = mpi_launch.launcher_options(str(fake))
    assert "--oversubscribe" in opts and (("--allow-run-as-root" in opts) == (os.geteuid() == 0))
    assert mpi_launch.launcher_options(str(REPO / "no-such-mpiexec")) == []


def test_a_finished_script_leaves_no_journal_to_offer(new_session, tmp_path, state_dir):
    """The README's `--script commands/matmul-cpu.lhw` left its journal, and the next interactive start
    of the payload offered it as an autosaved session; the script is its record. A script that resumed
    a journal keeps its own (those steps are in no file)."""
    script = tmp_path / "s.lhw"
    script.write_text("apply pipelines/lib/tile.mlir\n")
    p = run_cli([MATMUL, "--script", script], cwd=REPO)
    assert p.returncode == 0, p.stderr
    assert new_session().journal_for(MATMUL) is None
    assert not list((state_dir / "journal").glob("*.yaml"))
    jp = _orphan_journal(new_session)
    script.write_text("resume\napply pipelines/lib/tile.mlir\n")
    p = run_cli([MATMUL, "--script", script], cwd=REPO)
    assert p.returncode == 0, p.stderr
    assert not jp.exists() and new_session().journal_for(MATMUL) is not None
