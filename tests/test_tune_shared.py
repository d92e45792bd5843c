"""`tune` scaled out (issue 18): studies in a real PostgreSQL server (started here), two processes
sharing one study without ever measuring the same parameters twice, `--workers N` in one process
with per-worker progress, and RUNNING trials of a killed tune failed when the study is resumed."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import matmul_payload, ok
from pg_server import PostgresServer


REPO = Path(__file__).resolve().parents[1]
SCHEDULE = ("apply pipelines/cpu/matmul.py[gen=matmul_tiling]{block_m=64 block_n=64 block_k=64 reg_m=1 reg_n=8 "
            "reg_k=1 pack_tile_a=32 pack_tile_b=8}")
SPACE = "reg_m=[1,4,8] reg_n=[8,16,32]"


@pytest.fixture(scope="module")
def postgres():
    server = PostgresServer()
    if server.bin is None:
        pytest.skip("no PostgreSQL server: apt-get install postgresql (as .ci/run does) or pip install pgserver")
    server.start()
    yield server
    server.stop()


def mm_payload(path: Path, n: int) -> Path:
    return matmul_payload(path, n, n, n)


@pytest.fixture
def ctx(tune_ctx):
    return tune_ctx


def _prepare(ctx, tmp_path):
    ok(ctx, f"load {mm_payload(tmp_path / 'mm.mlir', 64)}")
    ok(ctx, SCHEDULE)
    ok(ctx, "bench warmup=1 iterations=3")
    ok(ctx, "apply cpu-matmul-lower")


def _script(tmp_path: Path, name: str, tune: str) -> Path:
    path = tmp_path / f"{name}.lhw"
    path.write_text("\n".join([SCHEDULE, "bench warmup=1 iterations=3", "apply cpu-matmul-lower", tune]) + "\n")
    return path


def _cli(args, tmp_path: Path) -> subprocess.Popen:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]),
               LH_WORKBENCH_STATE_DIR=str(tmp_path / "state"))
    return subprocess.Popen([sys.executable, "-m", "workbench.cli", *map(str, args)], cwd=REPO, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            stdin=subprocess.DEVNULL, start_new_session=True)


def _load(url: str, name: str):
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    return optuna.load_study(study_name=name, storage=url.replace("postgresql://", "postgresql+psycopg://"))


def test_two_processes_share_one_postgres_study_and_never_measure_the_same_trial_twice(postgres, tmp_path):
    payload = mm_payload(tmp_path / "mm.mlir", 64)
    # 9 dicts, 2 x 7 trials asked with the random sampler: duplicates are certain, in flight too
    def tune(seed: int) -> str:
        return (f"tune 1 --sampler random --seed {seed} --trials 7 --iterations 2 --no-baseline --confirm 0 "
                f"--storage {postgres.url} --study shared-mm {SPACE}")

    procs = [_cli([payload, "--script", _script(tmp_path, f"p{i}", tune(i))], tmp_path) for i in range(2)]
    outs = [p.communicate(timeout=600)[0] for p in procs]
    for p, out in zip(procs, outs):
        assert p.returncode == 0, out[-3000:]
    study = _load(postgres.url, "shared-mm")
    trials = study.trials
    assert len(trials) == 14 and {t.state.name for t in trials} == {"COMPLETE"}
    pids = {t.user_attrs["pid"] for t in trials}
    assert pids == {p.pid for p in procs}  # both processes worked on the one study
    measured = [t for t in trials if not t.user_attrs.get("reused")]
    keys = [tuple(sorted(t.params.items())) for t in measured]
    assert len(keys) == len(set(keys))  # no dict was measured twice, whichever process asked for it
    assert len({tuple(sorted(t.params.items())) for t in trials}) < 14  # ... though some were asked twice
    for t in trials:
        if t.user_attrs.get("duplicate_of") is not None:
            first = trials[t.user_attrs["duplicate_of"]]
            assert first.params == t.params and first.value == t.value
    # each process's progress lines counted its own trials
    assert all("tune [7/7" in out for out in outs)


def test_workers_in_one_process_report_progress_per_worker(ctx, postgres, tmp_path):
    _prepare(ctx, tmp_path)
    res = ok(ctx, f"tune 1 --workers 2 --sampler grid --trials 6 --iterations 2 --no-baseline --confirm 2 "
                  f"--confirm-rounds 2 --storage {postgres.url} --study workers-mm {SPACE}")
    rep = res.data["tune"]
    assert rep["workers"] == 2 and rep["storage"].startswith("postgresql+psycopg://wb@127.0.0.1")
    assert len(rep["trials"]) == 6 and all(t["state"] == "COMPLETE" for t in rep["trials"])
    assert rep["trials"][0]["params"] == {"reg_m": 1, "reg_n": 8}  # the current dict first
    keys = [tuple(sorted(t["params"].items())) for t in rep["trials"]]
    assert len(set(keys)) == 6  # a grid: six different dicts
    lines = [m for m in ctx.events if m.startswith("tune [")]
    assert len(lines) == 6 and lines[-1].startswith("tune [6/6, 0 failed, 0 running]")
    assert all(" | w0: " in m and ", w1: " in m for m in lines)  # what each worker does
    assert any("running]" in m and "1 running" in m for m in lines)  # the two overlapped
    assert "best " in lines[-1]
    assert len(rep["confirm"]["rows"]) == 3 and rep["best"]["median_s"] > 0
    # timed runs took turns on the machine-wide lock
    assert rep["measure_lock"].endswith("lh-workbench-measure.lock")
    assert "LH_WORKBENCH_MEASURE_LOCK" not in os.environ


def test_a_killed_tune_leaves_no_running_trial_after_resume(ctx, postgres, tmp_path):
    payload = mm_payload(tmp_path / "mm.mlir", 64)
    tune = (f"tune 1 --sampler grid --trials 9 --iterations 2 --no-baseline --storage {postgres.url} "
            f"--study killed-mm {SPACE}")
    import optuna

    def kill_during_a_trial(attempt: int) -> bool:
        """Start the tune, SIGKILL its process group while a trial is RUNNING; whether one stayed
        RUNNING in the server (a fast trial may finish between the last look and the kill)."""
        proc = _cli([payload, "--script", _script(tmp_path, f"k{attempt}", tune)], tmp_path)
        deadline = time.monotonic() + 300
        running = []
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                study = _load(postgres.url, "killed-mm")
                running = [t for t in study.trials if t.state.name == "RUNNING"]
                if running and any(t.state.name == "COMPLETE" for t in study.trials):
                    break
            except (KeyError, optuna.exceptions.StorageInternalError):
                pass
            time.sleep(0.1)
        assert running, "the tune never had a RUNNING trial"
        os.killpg(proc.pid, signal.SIGKILL)  # no chance to clean up: the trial stays RUNNING in the server
        proc.wait()
        return any(t.state.name == "RUNNING" for t in _load(postgres.url, "killed-mm").trials)

    assert any(kill_during_a_trial(attempt) for attempt in range(4)), "no kill landed inside a trial"
    _prepare(ctx, tmp_path)
    rep = ok(ctx, f"tune 1 --sampler grid --trials 1 --iterations 2 --no-baseline --confirm 0 "
                  f"--storage {postgres.url} --study killed-mm {SPACE}").data["tune"]
    assert rep["stale_failed"] and any("stale" in m for m in ctx.events)
    states = {t["number"]: t for t in rep["trials"]}
    for n in rep["stale_failed"]:
        assert states[n]["state"] == "FAIL" and "died" in states[n]["error"]
    assert all(t["state"] != "RUNNING" for t in rep["trials"])


def test_an_unreachable_storage_is_one_clear_line(ctx, tmp_path):
    _prepare(ctx, tmp_path)
    res = ctx.registry.dispatch("tune 1 --trials 1 --no-baseline --storage postgresql://wb@127.0.0.1:1/none "
                                f"--study x {SPACE}", ctx)
    assert not res.ok and res.error.startswith("cannot open the study storage postgresql+psycopg://wb@127.0.0.1:1")
    assert "\n" not in res.error
