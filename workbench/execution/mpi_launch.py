"""Host side of MPI runs (numpy only, no MLIR): find `mpiexec`, launch N ranks, collect their answers.

`run_ranks` writes the run request and each rank's inputs to a temporary directory, starts
`mpiexec -n N python -m workbench.worker.mpi.rank DIR` in a new session (its own process
group), waits and reads `rank{R}.pkl`. The wait has a run's two limits (runner.RunPhases): the JIT
compile's, until every rank has said it has compiled (`compiled{R}`, written by the rank's
`protocol.compiled()`), then the calls'. Whatever happens (a rank aborts, a hang in either phase,
Ctrl-C), mpiexec, its proxies and every rank are killed before returning, so no rank outlives
the run; failures come back as an answer with `ok: False` and a one-line `error`.
"""
from __future__ import annotations

import collections
import ctypes.util
import importlib.util
import os
import pickle
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from workbench.common.spawn import child_env, module_command
from workbench.execution.runner import RunPhases
from workbench.execution.worker_client import COMPILE_PHASE, RUN_PHASE, command_cancelled, describe_exit

MPIEXEC_ENV = "LH_WORKBENCH_MPIEXEC"
#: the pid of the process that launched the ranks: a rank ends itself when it is gone (worker/mpi/rank.py)
HOST_PID_ENV = "LH_WORKBENCH_MPI_HOST_PID"
#: how often the host looks for the ranks' `compiled{R}` files and mpiexec's exit
POLL_S = 0.1


def find_mpiexec() -> str | None:
    """`$LH_WORKBENCH_MPIEXEC`, else the `mpiexec` next to this Python (PyPI `mpich` in a venv), else PATH."""
    explicit = os.environ.get(MPIEXEC_ENV)
    if explicit is not None:
        return explicit if explicit and shutil.which(explicit) else None
    here = Path(sys.executable).parent / "mpiexec"
    if here.is_file() and os.access(here, os.X_OK):
        return str(here)
    return shutil.which("mpiexec")


def mpi_implementation(mpiexec: str) -> str:
    """"MPICH", "Open MPI" or "unknown", from `mpiexec --version` (cached per path)."""
    cached = _IMPLEMENTATIONS.get(mpiexec)
    if cached is None:
        try:
            out = subprocess.run([mpiexec, "--version"], capture_output=True, text=True, timeout=20,
                                 stdin=subprocess.DEVNULL)
            text = out.stdout + out.stderr
        except (OSError, subprocess.TimeoutExpired):
            text = ""
        cached = ("Open MPI" if "Open MPI" in text or "OpenRTE" in text or "open-mpi" in text.lower()
                  else "MPICH" if "HYDRA" in text or "MPICH" in text.upper() else "unknown")
        _IMPLEMENTATIONS[mpiexec] = cached
    return cached


_IMPLEMENTATIONS: dict[str, str] = {}


def launcher_options(mpiexec: str) -> list[str]:
    """Options the launcher needs here: Open MPI refuses to start as root without
    --allow-run-as-root, and refuses more ranks than cores without --oversubscribe."""
    if mpi_implementation(mpiexec) != "Open MPI":
        return []
    opts = ["--oversubscribe"]
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        opts.append("--allow-run-as-root")
    return opts


def find_libmpi() -> str | None:
    """The MPI library the generated code links against: the one mpi4py uses (`libmpi.so.12` of mpich)."""
    candidates = []
    mpiexec = find_mpiexec()
    if mpiexec:
        candidates.append(Path(os.path.realpath(mpiexec)).parent.parent / "lib")
    candidates.append(Path(sys.prefix) / "lib")
    for d in candidates:
        for name in ("libmpi.so.12", "libmpi.so"):
            if (d / name).is_file():
                return str(d / name)
    found = ctypes.util.find_library("mpi")
    return found


def availability() -> tuple[bool, str]:
    mpiexec = find_mpiexec()
    if not mpiexec:
        return False, "mpiexec not found (pip install 'lh-workbench[mpi]', or set $LH_WORKBENCH_MPIEXEC)"
    if importlib.util.find_spec("mpi4py") is None:
        return False, "mpi4py is not installed (pip install 'lh-workbench[mpi]')"
    if not find_libmpi():
        return False, "libmpi not found next to mpiexec"
    return True, f"{mpiexec} ({mpi_implementation(mpiexec)})"


def _key_line(lines: list[str]) -> str | None:
    for ln in reversed(lines):
        s = ln.strip()
        if "LLVM ERROR" in s or "Assertion" in s or "KILLED BY SIGNAL" in s or "Segmentation" in s:
            return s
    for ln in reversed(lines):
        if "error" in ln.lower():
            return ln.strip()
    return None


def run_ranks(req: dict, rank_inputs: list[list], *, timeout: float, compile_timeout: float | None = None,
              progress=None, env: dict | None = None) -> dict:
    """Run `req` (see mpi_rank) on len(rank_inputs) ranks; rank R gets rank_inputs[R]. `timeout` limits the
    calls into the compiled code, from when every rank has compiled; the compile before has `compile_timeout`
    (runner.RunPhases: its default, and what `progress` hears).

    Returns {"ok": True, "ranks": [answer of rank 0, ...]} or {"ok": False, "error", "diagnostics"}.
    """
    ranks = len(rank_inputs)
    mpiexec = find_mpiexec()
    if not mpiexec:
        return {"ok": False, "error": availability()[1]}
    phases = RunPhases(timeout, compile_timeout, progress)
    req = dict(req, compile_limit_s=phases.compile_timeout, time_limit_s=phases.timeout)
    full_env = child_env()
    full_env.setdefault("PYTHONUNBUFFERED", "1")
    full_env.update(env or {})
    full_env[HOST_PID_ENV] = str(os.getpid())
    tail: collections.deque[str] = collections.deque(maxlen=80)
    with tempfile.TemporaryDirectory(prefix="lh-mpi-") as tmp:
        wd = Path(tmp)
        with open(wd / "request.pkl", "wb") as f:
            pickle.dump(req, f, protocol=pickle.HIGHEST_PROTOCOL)
        for r, arrays in enumerate(rank_inputs):
            with open(wd / f"inputs{r}.pkl", "wb") as f:
                pickle.dump(list(arrays), f, protocol=pickle.HIGHEST_PROTOCOL)
        cmd = [mpiexec, *launcher_options(mpiexec), "-n", str(ranks),
               *module_command("workbench.worker.mpi.rank", str(wd))]
        try:
            proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                    env=full_env, cwd=str(wd), start_new_session=True)
        except OSError as e:
            return {"ok": False, "error": f"cannot start {mpiexec}: {e.strerror or e}"}

        def drain():
            for raw in proc.stdout:
                tail.append(raw.decode(errors="replace").rstrip("\n"))

        reader = threading.Thread(target=drain, daemon=True)
        reader.start()
        phases.start(f"{ranks} MPI ranks")
        deadline = time.monotonic() + phases.limit
        timed_out = cancelled = False
        not_compiled: list[int] = []
        try:
            while True:
                try:
                    proc.wait(timeout=POLL_S)
                    break
                except subprocess.TimeoutExpired:
                    pass
                if phases.phase == COMPILE_PHASE:
                    not_compiled = [r for r in range(ranks) if not (wd / f"compiled{r}").exists()]
                    if not not_compiled:   # every rank has compiled: the run's own limit starts
                        phases.compiled()
                        deadline = time.monotonic() + phases.limit
                if command_cancelled():   # Escape in the TUI (worker_client.cancel_command)
                    cancelled = True
                    break
                if time.monotonic() > deadline:
                    timed_out = True
                    break
        finally:
            _kill_all(proc, wd)
        if phases.phase == COMPILE_PHASE and not (timed_out or cancelled) and all(
                (wd / f"compiled{r}").exists() for r in range(ranks)):
            phases.compiled()   # (a run over between two looks: the front end hears the compile all the same)
        reader.join(timeout=2)
        lines = [ln for ln in tail if ln.strip()]
        answers: dict[int, dict] = {}
        pids: dict[int, int] = {}
        for r in range(ranks):
            try:
                pids[int((wd / f"pid{r}").read_text())] = r
            except (OSError, ValueError):
                pass
        for r in range(ranks):
            p = wd / f"rank{r}.pkl"
            if p.is_file():
                try:
                    with open(p, "rb") as f:
                        answers[r] = pickle.load(f)
                except Exception:
                    pass
        # (read while the work directory is there: the fault files were read after it was removed)
        crashed = _crashed_ranks(wd, ranks)   # the root cause: ranks that crashed by themselves
        compiled = {r for r in range(ranks) if (wd / f"compiled{r}").exists()}
    diagnostics = "\n".join(lines[-60:])
    missing = [r for r in range(ranks) if r not in answers]
    if cancelled:
        return {"ok": False, "error": f"MPI run on {ranks} ranks cancelled {phases.phase}; all ranks were killed",
                "diagnostics": diagnostics, "crashed": True}
    if timed_out:
        late, done = (not_compiled, "compiled") if phases.phase == COMPILE_PHASE else (missing, "finished")
        where = f" (rank{'s' if len(late) != 1 else ''} {', '.join(map(str, late))} had not {done})" if late else ""
        return {"ok": False, "error": f"MPI run on {ranks} ranks timed out after {phases.limit:g} s {phases.phase}; "
                                      f"all ranks were killed{where}", "diagnostics": diagnostics, "crashed": True}
    failed = [a for _, a in sorted(answers.items()) if not a.get("ok")]
    if failed:
        a = failed[0]
        return {"ok": False, "error": f"rank {a.get('rank')}: {a.get('error')}",
                "diagnostics": (a.get("diagnostics") or "") + "\n" + diagnostics}
    if missing or proc.returncode != 0:
        how = describe_exit(proc.returncode)
        bad = sorted(crashed) or _reported_ranks(lines, pids)
        exit_string = crashed[bad[0]] if crashed else _exit_string(lines)
        if bad:   # in the phase the first of them was in (it had written compiled{R} or not)
            who = (f"rank{'s' if len(bad) != 1 else ''} {', '.join(map(str, bad))} died "
                   f"{RUN_PHASE if bad[0] in compiled else COMPILE_PHASE}")
        elif missing:
            who = f"rank{'s' if len(missing) != 1 else ''} {', '.join(map(str, missing))} did not finish"
        else:
            who = "a rank failed"
        msg = f"MPI run on {ranks} ranks failed: {who}" + (f" ({exit_string})" if exit_string else "") \
            + f"; all ranks were killed (mpiexec {how})"
        key = _key_line(lines)
        if key and key not in msg and "BAD TERMINATION" not in key:
            msg += f": {key}"
        return {"ok": False, "error": msg, "diagnostics": diagnostics, "crashed": True}
    return {"ok": True, "ranks": [answers[r] for r in range(ranks)], "diagnostics": diagnostics}


_FATAL_SIGNALS = {"Aborted": signal.SIGABRT, "Segmentation fault": signal.SIGSEGV,
                  "Floating point exception": signal.SIGFPE, "Bus error": signal.SIGBUS,
                  "Illegal instruction": signal.SIGILL}


def _crashed_ranks(wd: Path, ranks: int) -> dict[int, str]:
    """Ranks whose faulthandler wrote "Fatal Python error: <signal>" (see worker/mpi/rank.py), with
    mpiexec's way of naming it ("Aborted (signal 6)"); ranks killed by the cleanup write nothing."""
    out: dict[int, str] = {}
    for r in range(ranks):
        try:
            text = (wd / f"fault{r}").read_text(errors="replace")
        except OSError:
            continue
        m = re.search(r"Fatal Python error:\s*([A-Za-z ]+)", text)
        if not m:
            continue
        name = m.group(1).strip()
        sig = _FATAL_SIGNALS.get(name)
        out[r] = f"{name} (signal {int(sig)})" if sig is not None else name
    return out


def _reported_ranks(lines: list[str], pids: dict[int, int]) -> list[int]:
    """Ranks mpiexec reports as terminated badly ("PID 123 RUNNING AT host"), by the pids they recorded."""
    bad = []
    for ln in lines:
        m = re.search(r"PID\s+(\d+)\s+RUNNING AT", ln)
        if m and int(m.group(1)) in pids and pids[int(m.group(1))] not in bad:
            bad.append(pids[int(m.group(1))])
    return sorted(bad)


def _exit_string(lines: list[str]) -> str:
    for ln in lines:
        m = re.search(r"EXIT STRING:\s*(.+?)\s*$", ln)
        if m:
            return m.group(1)
    for ln in lines:
        m = re.search(r"KILLED BY SIGNAL:\s*(\d+)", ln)
        if m:
            try:
                return f"killed by signal {signal.Signals(int(m.group(1))).name}"
            except ValueError:
                return f"killed by signal {m.group(1)}"
    return ""


def _kill_all(proc: subprocess.Popen, wd: Path) -> None:
    """Kill mpiexec, its process group, and every rank and proxy it started.

    Hydra starts its proxy and each rank in a session of their own, so killing mpiexec's process
    group is not enough: the ranks are found by the unique work directory on their command line
    (and their proxies as their parents), and killed by pid.
    """
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    try:
        proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    marker = str(wd).encode()
    victims: set[int] = set()
    for pid, cmd, ppid in _processes():
        if marker in cmd:
            victims.add(pid)
            parent = _cmdline(ppid)
            if b"hydra_pmi_proxy" in parent:
                victims.add(ppid)
    for pid in victims:
        for kill in (os.killpg, os.kill):
            try:
                kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
    deadline = time.monotonic() + 5
    while victims and time.monotonic() < deadline:
        victims = {pid for pid in victims if _alive(pid)}
        if victims:
            time.sleep(0.05)


def _processes():
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                cmd = (d / "cmdline").read_bytes()
                ppid = int((d / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
            yield int(d.name), cmd, ppid


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def _alive(pid: int) -> bool:
    """Running (not gone, not a zombie waiting for a parent that was killed)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")
