"""OpenMP threads on a busy machine: where other tasks have CPUs the run's team sleeps soon at a region's end
(GOMP_SPINCOUNT=1000) instead of libgomp's long spin, which held cores a descheduled team mate needed (a
2-thread mlp ran 20-40x slower beside a one-core load); the run says so; the user's own settings win."""
from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from conftest import ok
from workbench.common import parallel_runtime
from workbench.common.parallel_runtime import BUSY_SPINCOUNT, OTHER_LOAD_ENV, runnable_elsewhere, wait_settings

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_the_team_waits_briefly_only_where_it_would_not_have_the_cpus_to_itself():
    busy = wait_settings(threads=2, cpus=2, others=1, environ={})
    assert busy == {"GOMP_SPINCOUNT": str(BUSY_SPINCOUNT), OTHER_LOAD_ENV: "1"}
    assert wait_settings(threads=16, cpus=16, others=3, environ={})["GOMP_SPINCOUNT"] == str(BUSY_SPINCOUNT)
    assert wait_settings(threads=2, cpus=4, others=2, environ={}) == {}        # room for all
    assert wait_settings(threads=1, cpus=1, others=5, environ={}) == {}        # no team
    assert wait_settings(threads=2, cpus=2, others=None, environ={}) == {}     # load unknown
    for mine in ({"OMP_WAIT_POLICY": "active"}, {"GOMP_SPINCOUNT": "300000"}):
        assert wait_settings(threads=2, cpus=2, others=1, environ=mine) == {}  # the user chose


@pytest.mark.skipif(not os.path.exists("/proc/loadavg"), reason="no /proc/loadavg")
def test_the_load_reading_counts_busy_processes():
    assert runnable_elsewhere() is not None
    spinners = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(3)]
    try:
        time.sleep(0.5)
        assert runnable_elsewhere() >= 2
    finally:
        for p in spinners:
            p.kill()
            p.wait()


@pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="one CPU: no team")
def test_a_run_beside_other_load_sets_the_short_wait_and_says_so(ctx, monkeypatch):
    import workbench.targets.cpu as cpu_target

    for name in parallel_runtime.WAIT_SETTINGS:
        monkeypatch.delenv(name, raising=False)
    ok(ctx, f"load {ROOT}/examples/mlp.mlir")
    ok(ctx, "select --apply")
    ok(ctx, "bench iterations=2")
    monkeypatch.setattr(cpu_target, "runnable_elsewhere", lambda: 7)
    res = ok(ctx, "run --check")
    notes = [w for w in res.data.get("warnings") or [] if "other task" in w]
    # (the worker read the setting back from its environment)
    assert notes and notes[0].startswith("7 other tasks had this machine's CPUs") and "GOMP_SPINCOUNT=1000" in notes[0]
    monkeypatch.setattr(cpu_target, "runnable_elsewhere", lambda: 0)
    res = ok(ctx, "run --check")
    assert not any("other task" in w for w in res.data.get("warnings") or [])
    monkeypatch.setattr(cpu_target, "runnable_elsewhere", lambda: 7)
    monkeypatch.setenv("GOMP_SPINCOUNT", "300000")          # the user's own choice: no change, no note
    res = ok(ctx, "run --check")
    assert not any("other task" in w for w in res.data.get("warnings") or [])
    res = ok(ctx, "run --check --threads 1")                  # no team
    assert not any("other task" in w for w in res.data.get("warnings") or [])
