"""Cancelling a command (Escape in the TUI, Ctrl-C in the REPL) stops it where it is.

Before: the TUI's Escape killed the session's compile worker only; `run --check` on vit_tiny kept going in
the fresh run worker its run had started (nobody else held it), then lowered and ran the reference,
"cancelling" for a minute before the check's result came in. Now every worker with a request in flight is
killed (workbench/execution/worker_client.py: cancel_command) and the command's next request fails at once."""
from __future__ import annotations

import threading
import time
from pathlib import Path

from conftest import do, ok

SPIN = Path(__file__).parent / "payloads" / "spin.mlir"


def test_cancel_kills_the_run_worker_of_a_run_and_the_command_stops(ctx):
    from workbench.execution import worker_client

    ok(ctx, f"load {SPIN}")
    before = (ctx.session.current_sha, ctx.session.cursor)
    result = {}

    def command():
        result["res"] = do(ctx, "run --check --iterations 1 --timeout 120")

    thread = threading.Thread(target=command)
    t0 = time.perf_counter()
    thread.start()
    deadline = time.monotonic() + 60
    while not any(w.name.endswith("run worker") for w in list(worker_client._in_flight)):   # the spin is running
        assert time.monotonic() < deadline and thread.is_alive(), result
        time.sleep(0.05)
    worker_client.cancel_command()
    thread.join(30)
    assert not thread.is_alive() and time.perf_counter() - t0 < 60
    res = result["res"]
    assert not res.ok and "cancelled" in res.error and "\n" not in res.error, res.error
    assert (ctx.session.current_sha, ctx.session.cursor) == before
    assert not list(worker_client._in_flight)
    # the next command starts afresh: nothing is cancelled any more
    assert ok(ctx, "inspect").ok


def test_a_cancel_stops_the_commands_later_requests_until_the_next_command(compile_client):
    from workbench.execution import worker_client

    worker_client.begin_command()
    worker_client.cancel_command()
    ans = compile_client.request({"op": "parse", "text": "func.func @f() { return }", "filename": None})
    assert not ans["ok"] and "cancelled" in ans["error"], ans
    seen = {}
    other = threading.Thread(target=lambda: seen.update(ans=compile_client.request(
        {"op": "parse", "text": "func.func @f() { return }", "filename": None})))
    other.start()
    other.join(60)
    assert seen["ans"]["ok"], seen    # another thread (the TUI's IR view) is not the cancelled command
    worker_client.begin_command()
    assert compile_client.request({"op": "parse", "text": "func.func @f() { return }", "filename": None})["ok"]


def test_a_request_interrupted_while_the_worker_works_leaves_no_answer_for_the_next(compile_client):
    """An exception while waiting for the answer (Ctrl-C outside the REPL's handler, a test's timeout) kills
    the worker: its late answer would otherwise be read as the answer to the next request (a CI run got
    `KeyError: 'ir'` in every later test after one such timeout)."""
    import _thread

    from workbench.execution import worker_client

    first = {"op": "parse", "text": "func.func @f() { return }", "filename": None}
    assert compile_client.request(first)["ok"]
    pid = compile_client.proc.pid
    real = worker_client.WorkerProcess._receive

    def interrupted(self, timeout):
        raise KeyboardInterrupt

    worker_client.WorkerProcess._receive = interrupted
    try:
        try:
            compile_client.request(first)
            raise AssertionError("the interrupt did not reach the caller")
        except KeyboardInterrupt:
            pass
    finally:
        worker_client.WorkerProcess._receive = real
    assert not compile_client.alive()
    ans = compile_client.request({"op": "parse", "text": "func.func @g() { return }", "filename": None})
    assert ans["ok"] and compile_client.proc.pid != pid, ans
    assert not list(worker_client._in_flight)
