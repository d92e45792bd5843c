"""`tune --workers N`: measurement slots (a core of its own per timed run) and the run worker's side of them."""
from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from workbench import tune
from workbench.run_session import RunOptions
from workbench.tune import TuneOptions, measurement_slots

REPO = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("cores, workers, threads, asked, expect", [
    (16, 8, None, 8, 8),     # as many as asked and workers, at most half the cores
    (16, 12, None, 12, 8),
    (16, 8, None, 1, 0),     # the default, --measure-slots 1: one lock, take turns
    (16, 8, None, 3, 3),
    (16, 1, None, 8, 0),     # a serial tune: nothing to share
    (16, 8, 4, 8, 0),        # multi-threaded runs take turns
    (2, 8, None, 8, 0),      # a 2-core machine: one slot would leave nothing to compile on
    (4, 8, None, 8, 2),
])
def test_slot_count(monkeypatch, cores, workers, threads, asked, expect):
    import workbench.common.cpu_topology as topo

    monkeypatch.setattr(topo, "physical_core_groups", lambda *a, **k: [[c, c + cores] for c in range(cores)])
    slots = measurement_slots(TuneOptions(workers=workers, measure_slots=asked, run=RunOptions(threads=threads)))
    assert len(slots) == expect
    assert [s[0] for s in slots] == list(range(expect))    # one logical CPU of distinct physical cores


HOLD = """
import os, sys, time
from workbench.worker.run_worker import measurement_lock
with measurement_lock():
    print(sorted(os.sched_getaffinity(0)), time.monotonic(), flush=True)
    time.sleep(float(sys.argv[1]))
print(sorted(os.sched_getaffinity(0)), flush=True)
"""


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity") or len(os.sched_getaffinity(0)) < 2,
                    reason="needs CPU affinity and 2 CPUs")
def test_timed_runs_take_free_slots_and_run_on_their_core(tmp_path):
    cpus = sorted(os.sched_getaffinity(0))[:2]
    env = dict(os.environ, PYTHONPATH=str(REPO), LH_WORKBENCH_MEASURE_LOCK=str(tmp_path / "m.lock"),
               **{tune.MEASURE_SLOTS_ENV: f"{cpus[0]};{cpus[1]}"})
    t0 = time.monotonic()
    procs = [subprocess.Popen([sys.executable, "-c", HOLD, "1.0"], env=env, stdout=subprocess.PIPE, text=True)
             for _ in range(3)]
    outs = [p.communicate(timeout=60)[0].splitlines() for p in procs]
    inside = sorted((float(o[0].split("] ")[1]) - t0, o[0].split("] ")[0] + "]") for o in outs)
    pinned = [eval(cpu_list) for _, cpu_list in inside]
    assert all(len(p) == 1 and p[0] in cpus for p in pinned)
    # two slots: two runs hold them at once on different cores, the third waits for one
    assert pinned[0] != pinned[1]
    assert inside[1][0] - inside[0][0] < 0.8 and inside[2][0] - inside[0][0] >= 0.9
    assert all(eval(o[1]) == sorted(os.sched_getaffinity(0)) for o in outs)   # affinity given back


def test_without_slots_one_lock_serialises(tmp_path):
    env = dict(os.environ, PYTHONPATH=str(REPO), LH_WORKBENCH_MEASURE_LOCK=str(tmp_path / "m.lock"))
    env.pop(tune.MEASURE_SLOTS_ENV, None)
    t0 = time.monotonic()
    procs = [subprocess.Popen([sys.executable, "-c", HOLD, "0.6"], env=env, stdout=subprocess.PIPE, text=True)
             for _ in range(2)]
    starts = sorted(float(p.communicate(timeout=60)[0].splitlines()[0].split("] ")[1]) - t0 for p in procs)
    assert starts[1] - starts[0] >= 0.55
