"""The worker side of the request/answer protocol shared by the compile and run workers.

A worker never outlives the front end that started it, and never runs a request much past the
time limit the client gave it, even when the client is gone (SIGKILL) and cannot kill it:
- on Linux, PR_SET_PDEATHSIG makes the kernel send SIGKILL when the parent dies (set only when
  the client started us from its main thread: the signal follows the *thread* that forked);
- a watchdog thread checks every 0.25 s that the parent is still ours and that the request in
  flight is within its limit (+ a grace period), and ends the process otherwise. Generated code
  runs through ctypes, which releases the GIL, so the watchdog runs while a kernel spins.

A request in two phases (a run worker's: compile the module, then run it) carries `compile_limit_s` beside
`time_limit_s`: the first limit holds until the handler calls `compiled()`, which tells the client (a
`{"progress": "compiled"}` message before the answer) and starts the second.

An MPI rank (workbench/worker/mpi/rank.py) is started by mpiexec, not by the client, and answers through files:
`guard_rank()` gives it the same two limits and the same `compiled()`, which it reports through a function of
its own (a file in the run's work directory, which the host watches); its watchdog ends it when the host
process is gone (mpiexec's proxy is its parent, not the host).
"""
from __future__ import annotations

import os
import sys
import threading
import time
import traceback
from multiprocessing.connection import Connection
from typing import Callable

#: how long past its time limit a request may go before the worker ends itself (the client
#: normally kills the worker at the limit; this is for when the client is gone)
GRACE_S = 5.0
PDEATHSIG_ENV, PARENT_PID_ENV = "LH_WORKBENCH_PDEATHSIG", "LH_WORKBENCH_PARENT_PID"

_deadline: list[float | None] = [None]
#: the run limit of a two-phase request still in its compile phase (see compiled())
_run_limit: list[float | None] = [None]
#: how the client hears of `compiled()` (set per request: see serve_requests, guard_rank)
_report: list[Callable[[dict], None] | None] = [None]
#: test hook: seconds `compiled()` sleeps first, as a slow compile would (tests/test_run_phases.py)
COMPILE_DELAY_ENV = "LH_WORKBENCH_TEST_COMPILE_DELAY_S"
#: the answer key of a function whose result is sent after the answer (see serve_requests)
FOLLOW_UP = "_follow_up"


def _set_parent_death_signal() -> None:
    if not sys.platform.startswith("linux") or os.environ.get(PDEATHSIG_ENV) != "1":
        return
    try:
        import ctypes
        import signal

        libc = ctypes.CDLL(None, use_errno=True)
        PR_SET_PDEATHSIG = 1
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):
        pass


def _watchdog(parent_pid: int | None, host_pid: int | None = None) -> None:
    while True:
        time.sleep(0.25)
        if (parent_pid is not None and os.getppid() != parent_pid) or (host_pid is not None and not _running(host_pid)):
            os._exit(70)
        deadline = _deadline[0]
        if deadline is not None and time.monotonic() > deadline:
            sys.stderr.write("error: worker request exceeded its time limit; the worker ends itself\n")
            sys.stderr.flush()
            os._exit(71)


def _running(pid: int) -> bool:
    """Whether process `pid` exists and is not a zombie (a host killed while its parent lives on)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except (OSError, IndexError):
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            pass
        return True


def guard_worker() -> None:
    """Tie this process's life to its parent (see the module docstring)."""
    expected = os.environ.get(PARENT_PID_ENV)
    parent = os.getppid()
    _set_parent_death_signal()
    if expected and expected.isdigit() and int(expected) != os.getppid():
        os._exit(70)  # the parent died before we were set up
    threading.Thread(target=_watchdog, args=(parent,), name="lh-worker-watchdog", daemon=True).start()


def compiled(**info) -> None:
    """The request's code is compiled (a run worker forced the JIT's code generation): where the request came in
    two phases, the client hears so (`{"progress": "compiled", **info}`) and the run's own time limit starts now.
    Any run worker calls this once, between its compile and its first call into the compiled code."""
    delay = os.environ.get(COMPILE_DELAY_ENV)
    if delay:
        time.sleep(float(delay))
    limit, _run_limit[0] = _run_limit[0], None
    report, _report[0] = _report[0], None
    if limit is not None:
        _deadline[0] = time.monotonic() + limit + GRACE_S
    if report is not None:
        report({"progress": "compiled", **info})


def guard_rank(host_pid: int | None, compile_limit: float | None, run_limit: float | None,
               report: Callable[[dict], None]) -> None:
    """A process of a run that the client did not start itself (an MPI rank, started by mpiexec): its
    compile has `compile_limit`, then `compiled()` hands `report` the compiled message and `run_limit` starts;
    past either (+ GRACE_S), or once the process `host_pid` (the client) is gone, the watchdog ends it."""
    if compile_limit and run_limit:
        _run_limit[0] = float(run_limit)
        _deadline[0] = time.monotonic() + float(compile_limit) + GRACE_S
    _report[0] = report
    threading.Thread(target=_watchdog, args=(None, host_pid), name="lh-rank-watchdog", daemon=True).start()


def serve_requests(fd: int, handle: Callable[[dict], dict]) -> None:
    """Answer request dicts from the connection on `fd` until EOF or {"op": "exit"}.

    A Python exception in `handle` becomes a failure answer; only a real crash ends the process.
    A request may carry `time_limit_s`: past it (+ GRACE_S) the watchdog ends the process; with
    `compile_limit_s` too, that one holds until the handler calls `compiled()` (see the module docstring).
    An answer may carry `FOLLOW_UP`, a function: the answer goes out marked `"follow_up": True`, then
    the function runs (within the same time limit) and what it returns goes out as a second message,
    which the client reads before its next request (work the caller need not wait for).
    """
    guard_worker()
    conn = Connection(fd)
    while True:
        try:
            req = conn.recv()
        except EOFError:
            return
        if req.get("op") == "exit":
            return
        if req.get("op") == "ping":
            conn.send({"ok": True})
            continue
        limit = req.pop("time_limit_s", None)
        compile_limit = req.pop("compile_limit_s", None)
        _run_limit[0] = float(limit) if limit and compile_limit else None
        _report[0] = conn.send if _run_limit[0] is not None else None   # a one-phase client expects no message
        limit = compile_limit or limit
        _deadline[0] = time.monotonic() + float(limit) + GRACE_S if limit else None
        try:
            try:
                answer = handle(req)
            except Exception as e:
                answer = _failure(e)
            follow_up = answer.pop(FOLLOW_UP, None)
            if follow_up is not None:
                answer["follow_up"] = True
            conn.send(answer)
            if follow_up is not None:
                try:
                    message = follow_up()
                except Exception as e:
                    message = _failure(e)
                conn.send(message)
        finally:
            _deadline[0] = _run_limit[0] = _report[0] = None


def _failure(e: Exception) -> dict:
    return {"ok": False, "error": f"{type(e).__name__}: {e}".splitlines()[0], "diagnostics": traceback.format_exc()}
