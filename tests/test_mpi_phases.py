"""The mpi target's run has a run worker's two time limits (tests/test_run_phases.py): the ranks' JIT compile
(`run --compile-timeout`) until every rank has said it has compiled (worker/protocol.py `compiled()`, a file the
host watches: execution/mpi_launch.py), then the calls (`run --timeout`). A hang in either phase kills every rank
(mpiexec, its proxies, the ranks: none is left), and the error names the phase and the ranks that had not got
through it. Session 22 left the ranks under one limit for both."""
from __future__ import annotations

import tempfile
import time
from pathlib import Path

import pytest

from conftest import do, ok, rank_processes, with_progress
from workbench.execution.mpi_launch import availability

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
PAYLOADS = Path(__file__).parent / "payloads"
DELAY = "LH_WORKBENCH_TEST_COMPILE_DELAY_S"        # protocol.COMPILE_DELAY_ENV: the compile phase sleeps this long
DELAYED_RANKS = "LH_WORKBENCH_TEST_DELAYED_RANKS"  # worker/mpi/rank.py: only these ranks sleep

_ok, _why = availability()
pytestmark = pytest.mark.skipif(not _ok, reason=f"mpi target unavailable: {_why}")


def test_a_rank_hanging_after_a_slow_compile_times_out_in_its_run(ctx, tmp_path, monkeypatch):
    """Every rank's compile sleeps 6 s, past the 3 s run limit (and the ranks' own 5 s grace) but within the
    compile limit: the run is killed 3 s after the ranks compiled, in its run, naming the rank that hung."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))   # the ranks' work directory: ours alone
    ok(ctx, f"load {PAYLOADS / 'mpi_rank_hang.mlir'}")
    monkeypatch.setenv(DELAY, "6")
    t0 = time.monotonic()
    res, heard = with_progress(ctx, "run --target mpi --ranks 2 --iterations 1 --warmup 0 --timeout 3 "
                                     "--compile-timeout 60")
    took = time.monotonic() - t0
    assert not res.ok
    assert "MPI run on 2 ranks timed out after 3 s while running the compiled code; all ranks were killed " \
           "(rank 1 had not finished)" in res.error, res.error
    assert "(`run --timeout 600` allows longer; it covers the 0 + 1 calls of the compiled code" in res.error
    assert "JIT-compiling the module (2 MPI ranks) ..." in heard, heard
    compiled = [m for m in heard if m.startswith("compiled in ")]
    assert compiled and float(compiled[0].split()[2]) >= 6 and compiled[0].endswith("; running ..."), heard
    assert 9 <= took < 40, took
    assert not rank_processes(tmp_path)
    ok(ctx, "history")


def test_a_compile_past_its_limit_names_the_compile_and_the_rank(ctx, tmp_path, monkeypatch):
    """Rank 1's compile sleeps 60 s under --compile-timeout 3: killed at 3 s (not at --timeout 60), naming the
    compile and rank 1; every process of the run is gone, and the next run of the session works."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    ok(ctx, f"load {EXAMPLES / 'sharded_matmul.mlir'}")
    ok(ctx, "apply mpi-partition")
    monkeypatch.setenv(DELAY, "60")
    monkeypatch.setenv(DELAYED_RANKS, "1")
    t0 = time.monotonic()
    res, heard = with_progress(ctx, "run --target mpi --iterations 1 --warmup 0 --timeout 60 --compile-timeout 3")
    assert time.monotonic() - t0 < 30
    assert not res.ok
    assert "MPI run on 2 ranks timed out after 3 s while JIT-compiling the module; all ranks were killed " \
           "(rank 1 had not compiled)" in res.error, res.error
    assert "(`run --compile-timeout 12` allows longer; it covers the JIT compile of the module of " in res.error
    assert not [m for m in heard if m.startswith("compiled in ")], heard
    assert not rank_processes(tmp_path)
    monkeypatch.delenv(DELAY)
    run = ok(ctx, "run --target mpi --iterations 1 --warmup 0 --check").data["run"]
    assert run["error"] is None and run["check"]["passed"]


def test_ranks_end_themselves_when_the_workbench_is_killed(tmp_path):
    """`lh-workbench` SIGKILLed while rank 1 hangs in its run (it cannot kill the ranks then): the ranks watch the
    process that launched them and end themselves, and mpiexec with them; they used to spin on forever."""
    import os
    import signal
    import subprocess

    from conftest import CLI, REPO

    script = tmp_path / "hang.lhw"
    script.write_text("run --target mpi --ranks 2 --iterations 1 --warmup 0 --timeout 600\n")
    runs = tmp_path / "runs"
    runs.mkdir()
    env = dict(os.environ, TMPDIR=str(runs), PYTHONPATH=str(REPO))
    host = subprocess.Popen(CLI + [str(PAYLOADS / "mpi_rank_hang.mlir"), "--script", str(script)], cwd=REPO, env=env,
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while not (list(runs.glob("lh-mpi-*/rank0.pkl")) and list(runs.glob("lh-mpi-*/pid1"))):
            assert host.poll() is None and time.monotonic() < deadline, "the ranks did not start"
            time.sleep(0.2)
        time.sleep(1)   # rank 0 has finished its run; rank 1 spins in its own
        assert rank_processes(runs)
        os.killpg(host.pid, signal.SIGKILL)   # the workbench and its compile worker
        host.wait()
        deadline = time.monotonic() + 15
        while rank_processes(runs) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not rank_processes(runs)
    finally:
        for pid in _pids(runs):
            os.kill(pid, signal.SIGKILL)


def _pids(workdir: Path) -> list[int]:
    out = []
    for d in Path("/proc").iterdir():
        try:
            if d.name.isdigit() and str(workdir) in (d / "cmdline").read_bytes().decode(errors="replace"):
                out.append(int(d.name))
        except OSError:
            pass
    return out


def test_a_cancel_kills_the_ranks_at_once(ctx, tmp_path, monkeypatch):
    """Escape in the TUI (worker_client.cancel_command) while rank 1 hangs: the run stops at once, its ranks
    killed, instead of at --timeout (the host waited on mpiexec, which no cancel reached)."""
    import threading

    from workbench.execution import worker_client

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    ok(ctx, f"load {PAYLOADS / 'mpi_rank_hang.mlir'}")
    result = {}
    thread = threading.Thread(target=lambda: result.update(
        res=do(ctx, "run --target mpi --ranks 2 --iterations 1 --warmup 0 --timeout 120")))
    t0 = time.monotonic()
    thread.start()
    deadline = time.monotonic() + 60
    while not list(tmp_path.glob("lh-mpi-*/rank0.pkl")):   # rank 0 is done, rank 1 spins
        assert time.monotonic() < deadline and thread.is_alive(), result
        time.sleep(0.05)
    worker_client.cancel_command()
    thread.join(30)
    assert not thread.is_alive() and time.monotonic() - t0 < 60
    res = result["res"]
    assert not res.ok and "MPI run on 2 ranks cancelled while running the compiled code; all ranks were killed" \
        in res.error, res.error
    assert not rank_processes(tmp_path)
    ok(ctx, "history")
