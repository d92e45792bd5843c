"""Client side of the worker processes: start, talk, time out, restart after a crash.

Every request goes to a child process; if the child dies (an MLIR assertion, an
`LLVM ERROR`, a segfault in generated code) or exceeds its time limit, the client
kills it, answers with a failure that quotes the child's output tail, and starts
a fresh child on the next request. The caller's state is never touched.
"""
from __future__ import annotations

import collections
import os
import signal
import subprocess
import threading
import time
import weakref
from multiprocessing import Pipe
from typing import Callable

from workbench.common.compact_text import BlobStore, CompactText
from workbench.common.spawn import PACKAGE_ROOT, child_env, module_command  # noqa: F401  (PACKAGE_ROOT re-exported)
from workbench.common.spawn import output_spill_path

DEFAULT_TIMEOUT_S = 600.0


def compile_timeout_s() -> float:
    """How long one compile-worker request may take: `--compile-timeout` / $LH_WORKBENCH_COMPILE_TIMEOUT
    (a Python schedule that never returns is stopped then; Esc / Ctrl-C stop it sooner)."""
    try:
        value = float(os.environ.get("LH_WORKBENCH_COMPILE_TIMEOUT", "") or DEFAULT_TIMEOUT_S)
    except ValueError:
        return DEFAULT_TIMEOUT_S
    return value if value > 0 else DEFAULT_TIMEOUT_S


def describe_exit(returncode: int) -> str:
    if returncode < 0:
        try:
            return f"killed by signal {signal.Signals(-returncode).name}"
        except ValueError:
            return f"killed by signal {-returncode}"
    return f"exited with status {returncode}"


#: the phases of a two-phase request (`WorkerProcess.request(compile_timeout=...)`), as its failures name them
COMPILE_PHASE, RUN_PHASE = "while JIT-compiling the module", "while running the compiled code"


class WorkerCrashed(RuntimeError):
    pass


#: the workers with a request in flight (compile, run, reference and tune workers alike)
_in_flight: "weakref.WeakSet[WorkerProcess]" = weakref.WeakSet()
_in_flight_lock = threading.Lock()   # tune's workers add and remove themselves from their own threads
_cancel = threading.Event()
_command_thread: int | None = None


def begin_command() -> None:
    """A front end starts a command on this thread: a cancel asked for earlier no longer applies."""
    global _command_thread
    _command_thread = threading.get_ident()
    _cancel.clear()


def cancel_command() -> None:
    """Cancel the command in progress (Escape in the TUI, Ctrl-C in the REPL): every worker with a request
    in flight is killed, whichever object started it (a run's fresh run worker, the reference's, a tune's),
    and the command's thread gets no new request through until the next command begins: a command of
    several requests (lower, run, lower the reference, run it) stops at the one it was on."""
    _cancel.set()
    with _in_flight_lock:
        workers = list(_in_flight)
    for worker in workers:
        try:
            worker.kill()
        except OSError:
            pass


def _cancelled_here() -> bool:
    return _cancel.is_set() and threading.get_ident() == _command_thread


def command_cancelled() -> bool:
    """Whether the command this thread runs was cancelled (Esc, Ctrl-C)."""
    return _cancelled_here()


class WorkerProcess:
    """One child process speaking the request/answer protocol over a socket pair."""

    def __init__(self, module: str, env: dict | None = None, name: str = "worker"):
        self.module = module
        self.name = name
        self.env = env
        self.proc: subprocess.Popen | None = None
        self.conn = None
        self.output_tail: collections.deque[str] = collections.deque(maxlen=60)
        self._reader: threading.Thread | None = None
        self.lock = threading.Lock()
        self.restarts = 0
        self.timeout_s: float | None = None   # default time limit of a request (None: compile_timeout_s())
        #: follow-up messages still due: (handler, deadline), oldest first
        self._follow_ups: collections.deque[tuple[Callable[[dict], None], float]] = collections.deque()

    # -- lifecycle ------------------------------------------------------------
    def start(self) -> None:
        parent, child = Pipe(duplex=True)
        env = child_env()
        env.setdefault("PYTHONUNBUFFERED", "1")
        # the worker dies with us (see workbench/worker/protocol.py): the parent-death signal follows
        # the thread that forks, so it is asked for only when that is our main thread
        env["LH_WORKBENCH_PARENT_PID"] = str(os.getpid())
        env["LH_WORKBENCH_PDEATHSIG"] = "1" if threading.current_thread() is threading.main_thread() else "0"
        if self.env:
            env.update(self.env)
        self.output_tail.clear()
        self.proc = subprocess.Popen(
            module_command(self.module, str(child.fileno())),
            pass_fds=(child.fileno(),), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL, env=env, start_new_session=True)
        child.close()
        self.conn = parent
        self._reader = threading.Thread(target=self._drain, args=(self.proc,), daemon=True)
        self._reader.start()

    def _drain(self, proc: subprocess.Popen) -> None:
        assert proc.stdout is not None
        for raw in proc.stdout:
            self.output_tail.append(raw.decode(errors="replace").rstrip("\n"))

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def kill(self) -> None:
        """Stop the process now. Safe from another thread (a cancel) while its own thread kills it too:
        the connection is taken once, and closing one that is already closed is not an error."""
        proc = self.proc
        if proc is not None and proc.poll() is None:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                try:
                    proc.kill()
                except ProcessLookupError:
                    pass
            proc.wait()
        if proc is not None:   # killed mid-step (a time limit, Esc): its spill file, if it left one
            try:
                os.unlink(output_spill_path(proc.pid))
            except OSError:
                pass
        conn, self.conn = self.conn, None
        if conn is not None:
            try:
                conn.close()
            except OSError:
                pass

    def close(self) -> None:
        if self.alive() and self.conn is not None:
            try:
                self.conn.send({"op": "exit"})
                self.proc.wait(timeout=2)
            except Exception:
                pass
        self.kill()

    # -- requests -------------------------------------------------------------------
    def request(self, req: dict, timeout: float | None = None,
                on_follow_up: Callable[[dict], None] | None = None, compile_timeout: float | None = None,
                on_progress: Callable[[dict], None] | None = None) -> dict:
        """Send one request; on crash/timeout return a failure answer (never raise). An answer marked
        `follow_up` is followed by a second message (workbench/worker/protocol.py), handed to
        `on_follow_up` before the next request goes out (or by `settle()`); a failure dict when the
        worker died first. `compile_timeout`: the request runs in two phases (a run worker's JIT compile,
        then its calls): `compile_timeout` holds until the worker reports its code compiled (a progress
        message, handed to `on_progress`), then `timeout` starts; a failure names the phase it ended in."""
        timeout = (self.timeout_s or compile_timeout_s()) if timeout is None else timeout
        if _cancelled_here():
            return self._failure(f"{self.name} request cancelled")
        with self.lock:
            self._settle()
            if not self.alive():
                if self.proc is not None:
                    self.restarts += 1
                self.start()
            with _in_flight_lock:
                _in_flight.add(self)
            try:
                limits = {"time_limit_s": timeout, **({"compile_limit_s": compile_timeout} if compile_timeout else {})}
                try:
                    self.conn.send(dict(req, **limits))
                except (BrokenPipeError, ConnectionResetError, OSError, AttributeError):
                    return self._failure(f"{self.name} request cancelled") if self.conn is None else self._crashed()
                if compile_timeout:
                    answer = self._receive(compile_timeout, COMPILE_PHASE)
                    if answer.get("progress") == "compiled":
                        if on_progress is not None:
                            on_progress(answer)
                        answer = self._receive(timeout, RUN_PHASE)
                else:
                    answer = self._receive(timeout)
            except BaseException:
                # interrupted while the worker works on it (Ctrl-C, a test's timeout): its answer would come
                # back as the answer to the next request, so the worker goes (the next request starts one)
                self.kill()
                raise
            finally:
                with _in_flight_lock:
                    _in_flight.discard(self)
            if answer.get("follow_up"):
                self._follow_ups.append((on_follow_up or (lambda message: None), time.monotonic() + timeout))
            return answer

    def settle(self) -> None:
        """Wait for the follow-up messages still due (see `request`)."""
        with self.lock:
            self._settle()

    def _settle(self) -> None:
        while self._follow_ups:
            handler, deadline = self._follow_ups.popleft()
            message = self._receive(max(deadline - time.monotonic(), 0.001)) if self.alive() else \
                self._failure(f"{self.name} stopped before it sent the rest of its answer")
            handler(message)

    def _receive(self, timeout: float, phase: str = "") -> dict:
        """The next message from the worker, or a failure answer (timed out: killed; crashed; cancelled);
        `phase` (COMPILE_PHASE, RUN_PHASE) is named in a failure."""
        during = f" {phase}" if phase else ""
        try:
            deadline = time.monotonic() + timeout
            while True:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    self.kill()
                    return self._failure(f"{self.name} timed out after {timeout:g} s{during} and was killed")
                conn, proc = self.conn, self.proc
                if conn is None or proc is None:  # cancel() killed the worker from another thread
                    return self._failure(f"{self.name} request cancelled")
                if conn.poll(min(remaining, 0.2)):
                    return self._absorb(conn.recv())
                if proc.poll() is not None and not conn.poll(0):
                    return self._crashed(during)
        except (EOFError, BrokenPipeError, ConnectionResetError, OSError, AttributeError):
            if self.conn is None:
                return self._failure(f"{self.name} request cancelled")
            return self._crashed(during)

    def _absorb(self, message: dict) -> dict:
        """A message as the caller gets it (a subclass takes what it keeps for itself out of it)."""
        return message

    def _crashed(self, during: str = "") -> dict:
        proc = self.proc
        code = proc.wait() if proc is not None else -1
        if self._reader is not None:
            self._reader.join(timeout=1)
        if proc is not None:   # what it printed in a step that captures the output (the assertion that killed it)
            spill = output_spill_path(proc.pid)
            try:
                with open(spill, "rb") as f:
                    self.output_tail.extend(f.read().decode(errors="replace").splitlines())
                os.unlink(spill)
            except OSError:
                pass
        self.kill()
        if _cancel.is_set():   # killed by cancel_command, not a crash
            return self._failure(f"{self.name} request cancelled")
        return self._failure(f"{self.name} process {describe_exit(code)}{during}")

    def _failure(self, message: str) -> dict:
        tail = [ln for ln in self.output_tail if ln.strip()]
        key = next((ln.strip() for ln in reversed(tail) if "LLVM ERROR" in ln or "Assertion" in ln
                    or "error" in ln.lower()), None)
        if key:
            message = f"{message}: {key}"
        return {"ok": False, "error": message, "diagnostics": "\n".join(tail[-40:]), "crashed": True}

    def cancel(self) -> None:
        """Abort the request in flight (used by front ends on Escape)."""
        self.kill()


class CompileClient(WorkerProcess):
    def __init__(self) -> None:
        super().__init__("workbench.worker.compile_worker", name="compile worker")
        #: every blob of the compact IR the worker sent (workbench/common/compact_text.py); the worker sends
        #: each blob once, so it is kept here, with every message, whoever reads the message
        self.blobs = BlobStore()

    def _absorb(self, message: dict) -> dict:
        if "ir_parts" in message:
            self.blobs.add(message.pop("ir_blobs", None) or {})
            message["ir"] = CompactText(message.pop("ir_parts"), self.blobs)
        return message


_prestarted: CompileClient | None = None


def prestart_compile_worker() -> None:
    """Start a compile worker now (`lh-workbench` does, before importing its front end); the next
    `take_prestarted_compile_worker()` hands it over. One that nobody takes is closed at exit."""
    global _prestarted
    if _prestarted is None:
        import atexit

        _prestarted = CompileClient()
        _prestarted.start()
        atexit.register(_close_prestarted)


def take_prestarted_compile_worker() -> CompileClient | None:
    global _prestarted
    client, _prestarted = _prestarted, None
    return client


def _close_prestarted() -> None:
    client = take_prestarted_compile_worker()
    if client is not None:
        client.close()
