"""`tune`: search a step's parameter space with Optuna, each candidate compiled and run isolated.

The live session is never changed by a candidate: each one is applied from its step onwards on a
scratch copy of the session state (copied step list and IR store), lowered, run in a fresh run
worker, and checked against the unscheduled payload. A candidate that violates the schema's
constraints, fails to compile, crashes, hangs or computes a wrong result is recorded as a FAIL
trial and can never be the best. Candidates whose final IR is identical to an already measured one
reuse that measurement.

Never worse than the start: the step's current dict is enqueued as the first trial, and at the end
the best few candidates are re-measured in interleaved rounds together with the live session (the
current dict); the one with the lowest median over the rounds is declared best, which may be the
current dict itself (`kept_current`).

Scale out. The study lives in any Optuna RDB storage: an SQLite file (default, next to the saved
session) or a server URL (`postgresql://...`, `mysql://...`). `workers=N` runs N trials at once in
this process, each worker with its own compile worker (and, as always, a fresh run worker per run);
other processes and machines join the same study by naming the same storage and study. Timings stay
honest by serialising measurements: every run worker of a tune takes one machine-wide lock
(`flock` on MEASURE_LOCK) around its calls of the generated code, after JIT compilation, so
compilations overlap while no two timed runs on one machine do. `--measure-slots K` (opt-in) allows K
timed runs at once, each pinned to a physical core of its own (`measurement_slots`), at the price of
timings taken under each other's load. Identical parameters are never
evaluated twice: a trial whose dict another trial of the study already measured (or is measuring)
takes that trial's value. Trials record their host, pid and an Optuna heartbeat; on start, RUNNING
trials of dead processes on this host, and trials whose heartbeat stopped elsewhere, are failed.
"""
from __future__ import annotations

import copy
import csv
import hashlib
import json
import os
import socket
import tempfile
import threading
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from workbench.common.suggest import did_you_mean
from workbench.paths import state_dir
from workbench.run_session import RunOptions, run_current
from workbench.session import Session, SessionError
from workbench.steps.kinds import StepError
from workbench.steps.params import ParamError, candidate_values, payload_dims

SAMPLERS = ("tpe", "random", "grid")
#: every run worker started by a tune holds this lock (flock) while the generated code runs
MEASURE_LOCK_ENV = "LH_WORKBENCH_MEASURE_LOCK"
#: ... and with measurement slots, the CPUs of each slot ("0;2;4": a timed run holds one slot's lock and
#: runs on that slot's CPUs only)
MEASURE_SLOTS_ENV = "LH_WORKBENCH_MEASURE_SLOTS"
HEARTBEAT_S = 5     # a running trial's Optuna heartbeat period ...
GRACE_S = 60        # ... and how long without one before another process fails it as stale


class TuneError(RuntimeError):
    pass


@dataclass
class TuneOptions:
    trials: int = 20
    timeout_s: float | None = None
    sampler: str = "tpe"
    seed: int = 0
    storage: str | Path | None = None                     # SQLite path or an RDB URL
    study_name: str | None = None
    space: dict[str, list] = field(default_factory=dict)   # explicit candidate lists per parameter
    only: list[str] | None = None                          # tune just these (others stay fixed)
    apply_best: bool = False
    csv: Path | None = None
    baseline: bool = True
    workers: int = 1                                       # trials at once in this process
    measure_slots: int = 1                                 # timed runs at once, each on a core of its own
    confirm: int = 3                                       # best candidates re-measured against the current dict
    confirm_rounds: int = 3
    run: RunOptions = field(default_factory=lambda: RunOptions(check=True))


def scratch_copy(session: Session, client=None) -> Session:
    """A session object with its own step list / store / cursor (and compile worker, if given)."""
    session.client.settle()      # the bytecode of the last lazy apply, for workers that do not hold it
    s = copy.copy(session)
    s.steps = list(session.steps)
    s.irs = session.irs.copy()
    s.journal_enabled = False
    s.progress = None
    s.last_run = None
    if client is not None:
        s.client = client
    return s


def default_storage(session: Session) -> Path:
    if getattr(session, "saved_path", None):
        p = Path(session.saved_path)
        return p.with_name(p.stem + ".tune.db")
    stem = session.payload_path.stem if session.payload_path else "session"
    key = hashlib.sha256(str(session.payload_path).encode()).hexdigest()[:12]
    return state_dir() / "tune" / f"{stem}-{key}.tune.db"


# SQLAlchemy's default driver per dialect, and the ones we fall back to when it is not installed
_DRIVERS = {"postgresql": ("psycopg2", [("psycopg", "psycopg"), ("pg8000", "pg8000")]),
            "mysql": ("MySQLdb", [("pymysql", "pymysql"), ("mysql.connector", "mysqlconnector")])}


def storage_url(storage: str | Path | None, session: Session) -> str:
    """The SQLAlchemy URL of the study storage: a path is an SQLite file; a URL is taken as it is,
    except that `postgresql://` / `mysql://` get an installed driver when the default one is missing."""
    import importlib.util

    text = str(storage) if storage is not None else ""
    if "://" not in text:
        path = Path(text).expanduser() if text else default_storage(session)
        path.parent.mkdir(parents=True, exist_ok=True)
        return f"sqlite:///{path.resolve()}"
    scheme, rest = text.split("://", 1)
    dialect = "postgresql" if scheme == "postgres" else scheme
    if dialect in _DRIVERS:
        default, fallbacks = _DRIVERS[dialect]
        if importlib.util.find_spec(default) is None:
            found = next((name for module, name in fallbacks if importlib.util.find_spec(module)), None)
            if found is None:
                raise TuneError(f"--storage {dialect}://...: no database driver installed (pip install "
                                f"{'psycopg[binary]' if dialect == 'postgresql' else 'pymysql'})")
            dialect = f"{dialect}+{found}"
    return f"{dialect}://{rest}"


def shown_url(url: str) -> str:
    """The storage URL without its password (for reports and progress lines)."""
    try:
        from sqlalchemy.engine import make_url

        return make_url(url).render_as_string(hide_password=True)
    except Exception:
        return url


def search_space(session: Session, index: int, opts: TuneOptions) -> tuple[dict[str, list], dict, Any]:
    """({param: candidate values}, {param: fixed value}, schema) for step `index`."""
    applied = session.steps[index - 1]
    step = applied.step
    try:
        schema = step.schema(session.build_ctx)
    except (StepError, ParamError) as e:
        raise TuneError(str(e))
    dims = {}
    if schema.needs_payload:
        info = session.request_on_ir(applied.input_key, {"op": "inspect"})
        if info["ok"]:
            found = payload_dims(info["info"], schema.payload_op)
            dims = found[0] if found else {}
    current = dict(schema.defaults())
    current.update(step.params)
    only = opts.only if opts.only is not None else (list(opts.space) if opts.space else None)
    unknown = list(dict.fromkeys(k for k in list(opts.space) + list(only or []) if k not in schema.params))
    if unknown and not schema.params:
        raise TuneError(f"step {index} ({step.label()}) has no parameters to tune")
    if unknown:
        raise TuneError(f"step {index} has no parameter {', '.join(unknown)}"
                        f"{did_you_mean(unknown[0], schema.params)} (known: {', '.join(schema.params)})")
    space: dict[str, list] = {}
    pinned: dict[str, Any] = {}   # `tile=[32]`: one candidate given, every trial takes it
    for name, spec in schema.params.items():
        if only is not None and name not in only and name not in opts.space:
            continue
        if name in opts.space:
            try:
                values = [spec.coerce(v) for v in opts.space[name]]
            except ParamError as e:
                raise TuneError(str(e))
            if not values:   # (it read as "no parameter with a finite space to search: give candidates")
                raise TuneError(f"{name}=[] gives no candidates: list the values to try, e.g. {name}=[16,32,64]")
        else:
            values = candidate_values(spec, dims, current.get(name))
        if values and len(set(map(repr, values))) > 1:
            space[name] = values
        elif values and name in opts.space:
            pinned[name] = values[0]
    if not space and pinned:
        given = " ".join(f"{k}={v}" for k, v in pinned.items())
        raise TuneError(f"step {index}: {', '.join(f'{k}=[{v}]' for k, v in pinned.items())} "
                        f"{'is one candidate' if len(pinned) == 1 else 'are one candidate each'}: nothing to "
                        f"search (`params {index} {given}` sets {'it' if len(pinned) == 1 else 'them'})")
    if not space:
        raise TuneError(f"step {index} ({step.label()}) has no parameter with a finite space to search: "
                        "give candidates, e.g. `tune N tile=[16,32,64]`")
    fixed = {k: v for k, v in current.items() if k not in space}
    fixed.update(pinned)
    return space, fixed, schema


def _study_name(session: Session, index: int, space: dict, fixed: dict) -> str:
    step = session.steps[index - 1].step
    key = json.dumps({"input": session.steps[index - 1].input_sha, "kind": step.kind, "spec": step.spec,
                      "options": step.options, "space": space, "fixed": fixed, "target": session.target_name},
                     sort_keys=True, default=str)
    return f"step{index}-{hashlib.sha256(key.encode()).hexdigest()[:12]}"


def _sampler(name: str, seed: int, space: dict):
    import optuna

    if name == "tpe":  # constant liar: running trials (other workers, other machines) count as bad guesses
        return optuna.samplers.TPESampler(seed=seed, n_startup_trials=5, constant_liar=True)
    if name == "random":
        return optuna.samplers.RandomSampler(seed=seed)
    if name == "grid":  # the grid is enqueued by the search (GridSampler's study.stop() needs optimize())
        return optuna.samplers.RandomSampler(seed=seed)
    raise TuneError(f"unknown sampler {name!r} (choose from {', '.join(SAMPLERS)})")


def _measure(session: Session, run_opts: RunOptions) -> dict:
    report = run_current(session, run_opts)
    chk = report.get("check")
    if not report.get("error") and chk is not None and not chk.get("passed"):
        report["error"] = (f"wrong result (max rel err {chk.get('max_rel_err'):.3g} > "
                           f"{chk.get('tolerance', 0):.3g})")
    return report


def _key(params: dict) -> str:
    return json.dumps(params, sort_keys=True, default=str)


def open_study(url: str, name: str, sampler):
    """The Optuna study `name` in the storage at `url` (created if missing), heartbeats enabled."""
    import optuna

    kwargs: dict[str, Any] = {}
    if url.startswith("sqlite"):  # several processes may share the file: wait for its lock
        kwargs["engine_kwargs"] = {"connect_args": {"timeout": 60}}
    from sqlalchemy.exc import IntegrityError, ProgrammingError

    for attempt in range(5):
        try:
            storage = optuna.storages.RDBStorage(url, heartbeat_interval=HEARTBEAT_S, grace_period=GRACE_S,
                                                 **kwargs)
            return optuna.create_study(storage=storage, study_name=name, direction="minimize", sampler=sampler,
                                       load_if_exists=True)
        except (IntegrityError, ProgrammingError) as e:
            # processes that open a fresh database at once race to create Optuna's tables: the
            # loser's CREATE fails, and the tables are there when it tries again
            if attempt == 4:
                raise TuneError(f"cannot open the study storage {shown_url(url)}: {_first_line(e)}")
            time.sleep(0.5 * (attempt + 1))
        except Exception as e:  # unreachable server, bad URL, wrong password, missing driver ...
            raise TuneError(f"cannot open the study storage {shown_url(url)}: {_first_line(e)}")


def _first_line(e: BaseException) -> str:
    return (str(e).strip().splitlines() or [type(e).__name__])[0]


def _stale(trial) -> bool:
    """A trial failed because its run was killed mid-trial: never measured, so a resumed grid tries
    its parameters again."""
    return trial.state.name == "FAIL" and str(trial.user_attrs.get("error", "")).startswith("stale")


def fail_stale_trials(study) -> list[int]:
    """Fail RUNNING trials nobody works on any more: those of dead processes on this host (pid
    check), those without an owner (killed by an older version), and those whose Optuna heartbeat
    stopped (other machines). Returns their numbers."""
    import optuna
    from optuna.trial import TrialState

    import datetime

    host = socket.gethostname()
    failed = []
    old = datetime.datetime.now() - datetime.timedelta(seconds=GRACE_S)
    for t in study.get_trials(deepcopy=False, states=(TrialState.RUNNING,)):
        owner = t.user_attrs.get("host"), t.user_attrs.get("pid")
        # (a trial asked a moment ago has no owner yet: only an old one without owner is stale)
        if ((owner[0] is None and t.datetime_start is not None and t.datetime_start < old)
                or (owner[0] == host and not _alive(owner[1]))):
            why = (f"stale: its process ({host} pid {owner[1]}) died" if owner[0] else
                   "stale: left RUNNING by a killed tune")
            study._storage.set_trial_user_attr(t._trial_id, "error", why)
            if study._storage.set_trial_state_values(t._trial_id, TrialState.FAIL):
                failed.append(t.number)
    failed += optuna.storages.fail_stale_trials(study) or []
    return failed


def _alive(pid) -> bool:
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except (PermissionError, TypeError, ValueError):
        return True
    return True


class _Search:
    """The trials of one `tune` in this process: N workers share the study (under one lock), the
    counters, the per-worker state and the measured-IR cache."""

    def __init__(self, session, index, schema, study, space, fixed, dists, opts, emit):
        self.session, self.index, self.schema, self.study = session, index, schema, study
        self.space, self.fixed, self.dists, self.opts, self.emit = space, fixed, dists, opts, emit
        self.lock = threading.RLock()
        self.started = self.done = self.failed = 0
        self.states: list[str] = ["idle"] * max(1, opts.workers)
        self.running: set[int] = set()   # trial ids (heartbeats)
        self.by_ir: dict[str, tuple[float | None, dict]] = {}
        self.t0 = time.monotonic()
        self.stop = threading.Event()
        self.grid: list[dict] = []
        self.errors: list[BaseException] = []
        self.owner = {"host": socket.gethostname(), "pid": os.getpid()}

    # -- bookkeeping --------------------------------------------------------------------
    def _claim(self) -> bool:
        with self.lock:
            if self.stop.is_set() or self.started >= self.opts.trials:
                return False
            if self.opts.timeout_s is not None and time.monotonic() - self.t0 > self.opts.timeout_s:
                return False
            self.started += 1
            return True

    def _set_state(self, worker: int, state: str) -> None:
        with self.lock:
            self.states[worker] = state

    def progress(self) -> dict:
        """The numbers a progress line shows (also the structured event's fields)."""
        with self.lock:
            best = _best(self.study)
            return {"done": self.done, "failed": self.failed, "running": len(self.running),
                    "total": self.opts.trials, "best_s": best.value if best else None,
                    "best_trial": best.number if best else None,
                    "workers": [f"w{i}: {s}" for i, s in enumerate(self.states)]}

    def heartbeat_loop(self) -> None:
        while not self.stop.wait(HEARTBEAT_S):
            with self.lock:
                for trial_id in list(self.running):
                    try:
                        self.study._storage.record_heartbeat(trial_id)
                    except Exception:
                        pass

    # -- one worker ---------------------------------------------------------------------
    def worker(self, number: int, session: Session) -> None:
        try:
            while self._claim():
                self._one_trial(number, session)
        except BaseException as e:  # noqa: BLE001  (reported by tune_step; the other workers stop)
            self.errors.append(e)
            self.stop.set()
        finally:
            self._set_state(number, "done")

    def _ask(self):
        from optuna.trial import TrialState

        with self.lock:
            if self.opts.sampler == "grid":
                waiting = self.study.get_trials(deepcopy=False, states=(TrialState.WAITING,))
                if not waiting:
                    taken = {_key(t.params) for t in self.study.get_trials(deepcopy=False) if not _stale(t)}
                    while self.grid and _key(self.grid[0]) in taken:  # another process took it
                        self.grid.pop(0)
                    if not self.grid:
                        return None  # the grid is exhausted
                    self.study.enqueue_trial(self.grid.pop(0))
            trial = self.study.ask(self.dists)
            for k, v in self.owner.items():
                trial.set_user_attr(k, v)
            self.study._storage.record_heartbeat(trial._trial_id)
            self.running.add(trial._trial_id)
            return trial

    def _one_trial(self, number: int, session: Session) -> None:
        import optuna
        from optuna.trial import TrialState

        trial = self._ask()
        if trial is None:
            self.stop.set()
            return
        params = dict(trial.params)
        self._set_state(number, f"starting #{trial.number}")
        try:
            state, value, attrs = self._dedup(number, trial, params)
            if state is None:
                candidate = dict(self.fixed)
                candidate.update(params)
                state, value, attrs = self._evaluate(number, trial.number, session, params, candidate)
        except BaseException:
            with self.lock:
                self.running.discard(trial._trial_id)
                try:
                    trial.set_user_attr("error", "interrupted")
                    self.study.tell(trial, state=TrialState.FAIL)
                except Exception:  # noqa: BLE001  (already finished, storage gone: resume fails it)
                    pass
            raise
        with self.lock:
            try:
                for k, v in attrs.items():
                    trial.set_user_attr(k, v)
                if state == "ok":
                    self.study.tell(trial, value)
                else:
                    self.study.tell(trial, state=TrialState.FAIL)
            except optuna.exceptions.UpdateFinishedTrialError:  # another process failed it as stale
                state, attrs = "fail", {"error": "failed as stale by another process"}
            if state == "ok":
                self.done += 1
            else:
                self.failed += 1
            self.running.discard(trial._trial_id)
            self.states[number] = "idle"
            event = {"phase": "trial", "trial": trial.number, "params": params, "worker": number,
                     "state": "COMPLETE" if state == "ok" else "FAIL", "value_s": value,
                     "error": attrs.get("error"), "reused": bool(attrs.get("reused")),
                     "best_so_far": _best_so_far(self.study)}
            event.update(self.progress())
            event["done"] = self.done + self.failed   # trials finished (the bar's position)
            event["completed"] = self.done
        self.emit(event)

    def _dedup(self, number: int, trial, params: dict):
        """(None, ...) to evaluate `trial`; else the result of an earlier trial of the study with the
        same parameters (waiting for it while another worker or process measures it)."""
        from optuna.trial import TrialState

        key = _key(params)
        while True:
            with self.lock:
                same = [t for t in self.study.get_trials(deepcopy=False)
                        if t.number != trial.number and _key(t.params) == key and
                        (t.state == TrialState.COMPLETE or (t.state == TrialState.RUNNING and t.number < trial.number))]
            done = next((t for t in same if t.state == TrialState.COMPLETE), None)
            if done is not None:
                attrs = {k: v for k, v in done.user_attrs.items() if k in ("gflops", "min_s", "ir_sha256")}
                attrs.update(reused=True, duplicate_of=done.number)
                return "ok", done.value, attrs
            if not same:
                return None, None, {}
            self._set_state(number, f"#{trial.number} waits for #{same[0].number} (same parameters)")
            if self.stop.wait(0.5):
                raise KeyboardInterrupt("tune stopped")
            with self.lock:
                fail_stale_trials(self.study)

    def _evaluate(self, number: int, trial_number: int, session: Session, params: dict,
                  candidate: dict) -> tuple[str, float | None, dict]:
        attrs: dict[str, Any] = {}
        try:
            self.schema.validate(candidate)
        except ParamError as e:
            return "fail", None, {"error": f"invalid: {e}"}
        self._set_state(number, f"compiling #{trial_number}")
        scratch = scratch_copy(session)
        try:
            scratch.set_params(self.index, params, selected_by="tune")
        except SessionError as e:
            msg = str(e)
            return "fail", None, {"error": ("invalid: " if "constraint" in msg else "compile: ") + msg.splitlines()[0]}
        sha = scratch.current_sha
        attrs["ir_sha256"] = sha
        with self.lock:
            known = self.by_ir.get(sha)
            if known is None:  # another process may have measured this IR
                from optuna.trial import TrialState

                for t in self.study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,)):
                    if t.user_attrs.get("ir_sha256") == sha:
                        known = (t.value, dict(t.user_attrs))
                        break
        if known is not None:
            value, old = known
            attrs.update({k: v for k, v in old.items() if k in ("gflops",)})
            attrs["reused"] = True
            return "ok", value, attrs
        self._set_state(number, f"running #{trial_number}")
        rep = _measure(scratch, self.opts.run)
        if rep.get("error"):
            attrs["error"] = "run: " + str(rep["error"]).splitlines()[0]
            return "fail", None, attrs
        attrs["gflops"] = rep.get("gflops")
        attrs["min_s"] = rep.get("min_s")
        with self.lock:
            self.by_ir[sha] = (rep["median_s"], dict(attrs))
        return "ok", rep["median_s"], attrs


def _measure_lock_env() -> tuple[str, str | None]:
    """Point every run worker started from now on at the machine-wide measurement lock."""
    old = os.environ.get(MEASURE_LOCK_ENV)
    if not old:
        os.environ[MEASURE_LOCK_ENV] = str(Path(tempfile.gettempdir()) / "lh-workbench-measure.lock")
    return os.environ[MEASURE_LOCK_ENV], old


def measurement_slots(opts: TuneOptions) -> list[list[int]]:
    """The CPU sets on which timed runs may go at once (`--measure-slots K`, opt-in): one physical core
    each, at most one per worker and half the host's cores (the other half compiles: the transform steps
    and the JIT of the next candidates). One slot (the default) or none means the timed runs take turns.
    Runs of multi-threaded code (`--threads` > 1) always take turns: their thread pools would share the
    machine. Measured on the 16-core H100 host (bench/tune_scaling.py): 8 slots ran 1024^3 matmuls about
    40% slower than one at a time (shared L3, memory bandwidth, turbo), which misleads the search; hence
    opt-in."""
    from workbench.common.cpu_topology import physical_core_groups

    if opts.workers <= 1 or (opts.run.threads or 1) > 1 or opts.measure_slots <= 1:
        return []
    cores = physical_core_groups()
    want = min(opts.measure_slots, opts.workers, len(cores) // 2)
    return [[group[0]] for group in cores[:want]] if want > 1 else []


def tune_step(session: Session, index: int, opts: TuneOptions,
              progress: Callable[[dict], None] | None = None) -> dict[str, Any]:
    """Tune step `index`; returns the report (trials, best, confirmation, baselines, best-so-far series)."""
    import optuna
    from optuna.distributions import CategoricalDistribution

    session.require_loaded()
    if not 1 <= index <= session.cursor:
        raise TuneError(session.no_active_step(index))
    if opts.workers < 1:
        raise TuneError("--workers must be >= 1")
    space, fixed, schema = search_space(session, index, opts)
    dists = {k: CategoricalDistribution(v) for k, v in space.items()}
    url = storage_url(opts.storage, session)
    name = opts.study_name or _study_name(session, index, space, fixed)
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    warnings.filterwarnings("ignore", category=optuna.exceptions.ExperimentalWarning)  # heartbeats
    warnings.filterwarnings("ignore", message="Heartbeat of storage is supposed to be used with Study.optimize")
    study = open_study(url, name, _sampler(opts.sampler, opts.seed, space))
    stale = fail_stale_trials(study)
    resumed = len(study.trials)
    emit = progress or (lambda event: None)
    if stale:
        emit({"phase": "resume", "message": f"failed {len(stale)} stale RUNNING trial(s) of killed runs: "
                                            + ", ".join(f"#{n}" for n in stale)})
    current = {k: session.steps[index - 1].step.params.get(k, fixed.get(k)) for k in space}
    current = {k: v for k, v in current.items() if v in space[k]}
    if len(current) == len(space):  # the dict being tuned is trial 0
        study.enqueue_trial(current, skip_if_exists=True)

    search = _Search(session, index, schema, study, space, fixed, dists, opts, emit)
    for t in study.trials:  # resumed: identical IR is not measured twice
        if t.state.name == "COMPLETE" and t.user_attrs.get("ir_sha256"):
            search.by_ir[t.user_attrs["ir_sha256"]] = (t.value, dict(t.user_attrs))

    report: dict[str, Any] = {"step": index, "study": name, "storage": shown_url(url), "sampler": opts.sampler,
                              "seed": opts.seed, "space": space, "fixed": fixed, "resumed_trials": resumed,
                              "stale_failed": stale, "workers": opts.workers}
    lock_path, old_lock = _measure_lock_env()
    report["measure_lock"] = lock_path
    slots = measurement_slots(opts)
    report["measure_slots"] = slots
    old_slots = os.environ.pop(MEASURE_SLOTS_ENV, None)
    if slots:
        os.environ[MEASURE_SLOTS_ENV] = ";".join(",".join(map(str, s)) for s in slots)
    clients = []
    try:
        if opts.baseline:
            emit({"phase": "baseline", "message": "baseline run (current parameters)"})
            report["baseline_before"] = _summary(_measure(session, opts.run))
        if opts.sampler == "grid":
            import itertools
            import random

            seen = {_key(t.params) for t in study.trials if not _stale(t)}   # stale: killed, never measured
            combos = [dict(zip(space, vals)) for vals in itertools.product(*space.values())]
            random.Random(opts.seed).shuffle(combos)
            search.grid = [c for c in combos if _key(c) not in seen and c != current]
        search.t0 = time.monotonic()
        beat = threading.Thread(target=search.heartbeat_loop, daemon=True, name="tune-heartbeat")
        beat.start()
        if opts.workers == 1:
            search.worker(0, session)
        else:
            from workbench.execution.worker_client import CompileClient

            clients = [CompileClient() for _ in range(opts.workers - 1)]
            how = (f"up to {len(slots)} timed runs at once, each pinned to a core of its own: "
                   f"{', '.join(str(s[0]) for s in slots)}" if slots else f"timed runs serialised by {lock_path}")
            emit({"phase": "workers", "message": f"{opts.workers} workers (own compile workers; {how})"})
            threads = [threading.Thread(target=search.worker, args=(0, session), name="tune-w0")]
            threads += [threading.Thread(target=search.worker, args=(i + 1, scratch_copy(session, c)),
                                         name=f"tune-w{i + 1}") for i, c in enumerate(clients)]
            for t in threads:
                t.start()
            try:
                for t in threads:
                    while t.is_alive():
                        t.join(0.2)
            except BaseException:
                search.stop.set()
                for t in threads:
                    t.join()
                raise
        search.stop.set()
        beat.join()
        if search.errors:
            raise search.errors[0]

        trials = study.trials
        report["trials"] = [_trial_row(t) for t in trials]
        report["new_trials"] = search.done + search.failed
        report["best_so_far_ms"] = [v * 1e3 for v in _best_so_far(study)]
        best = _best(study)
        report["best"] = None
        if best is not None:
            best_params = dict(fixed)
            best_params.update(best.params)
            report["best"] = {"trial": best.number, "params": best_params, "tuned": dict(best.params),
                              "median_s": best.value, "gflops": best.user_attrs.get("gflops")}
            if opts.confirm > 0:
                report["confirm"] = _confirm(session, index, study, fixed, current, opts, emit)
                won = report["confirm"]["winner"]
                if won is not None:
                    report["best"] = won
        if opts.baseline:
            emit({"phase": "baseline", "message": "baseline run again (drift check)"})
            report["baseline_after"] = _summary(_measure(session, opts.run))
    finally:
        search.stop.set()
        for c in clients:
            c.close()
        if not old_lock:
            os.environ.pop(MEASURE_LOCK_ENV, None)
        os.environ.pop(MEASURE_SLOTS_ENV, None)
        if old_slots is not None:
            os.environ[MEASURE_SLOTS_ENV] = old_slots
    if opts.csv:
        write_csv(study, Path(opts.csv), list(space))
        report["csv"] = str(opts.csv)
    best = report["best"]
    if opts.apply_best and best is not None:
        if best.get("kept_current"):
            emit({"phase": "apply", "message": f"step {index} keeps its parameters (nothing measured faster)"})
        else:
            emit({"phase": "apply", "message": f"applying the best parameters to step {index}"})
            try:
                session.set_params(index, dict(best["tuned"]), selected_by=f"tune:{name}")
            except SessionError as e:
                raise TuneError(f"applying the best parameters failed: {e}")
        report["applied"] = True
    return report


def _confirm(session: Session, index: int, study, fixed: dict, current: dict, opts: TuneOptions,
             emit) -> dict:
    """Re-measure the `opts.confirm` best candidates (distinct IR) and the live session's current
    dict in `opts.confirm_rounds` interleaved rounds (the order rotates each round); the winner is
    the lowest median of the per-round medians. The current dict wins ties."""
    import statistics

    from optuna.trial import TrialState

    done = sorted((t for t in study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
                   if t.value is not None), key=lambda t: (t.value, t.number))
    picked, seen_ir = [], set()
    for t in done:
        ir = t.user_attrs.get("ir_sha256")
        if t.params == current or (ir and ir in seen_ir):
            if ir:
                seen_ir.add(ir)
            continue
        picked.append(t)
        if ir:
            seen_ir.add(ir)
        if len(picked) >= opts.confirm:
            break
    current_trial = next((t for t in done if t.params == current), None)
    rows = [{"label": "current", "trial": current_trial.number if current_trial else None,
             "tuned": dict(current), "trial_median_s": current_trial.value if current_trial else None,
             "session": session, "medians_s": [], "error": None}]
    for t in picked:
        scratch = scratch_copy(session)
        row = {"label": f"trial {t.number}", "trial": t.number, "tuned": dict(t.params),
               "trial_median_s": t.value, "session": scratch, "medians_s": [], "error": None}
        try:
            scratch.set_params(index, dict(t.params), selected_by="tune")
        except SessionError as e:
            row["error"] = str(e).splitlines()[0]
        rows.append(row)
    emit({"phase": "confirm", "message": f"re-measuring the current dict and the {len(picked)} best candidate(s), "
                                         f"{opts.confirm_rounds} interleaved round(s)"})
    for r in range(opts.confirm_rounds):
        order = rows[r % len(rows):] + rows[:r % len(rows)]
        for row in order:
            if row["error"]:
                continue
            rep = _measure(row["session"], opts.run)
            if rep.get("error"):
                row["error"] = str(rep["error"]).splitlines()[0]
            else:
                row["medians_s"].append(rep["median_s"])
    out = []
    for row in rows:
        row.pop("session")
        row["median_s"] = statistics.median(row["medians_s"]) if row["medians_s"] and not row["error"] else None
        out.append(row)
    ok = [r for r in out if r["median_s"] is not None]
    winner = None
    if ok:
        w = min(ok, key=lambda r: (r["median_s"], r["label"] != "current"))
        params = dict(fixed)
        params.update(w["tuned"])
        gflops = None
        if w["trial"] is not None:
            gflops = study.trials[w["trial"]].user_attrs.get("gflops") if w["trial"] < len(study.trials) else None
        winner = {"trial": w["trial"], "params": params, "tuned": dict(w["tuned"]), "median_s": w["median_s"],
                  "trial_median_s": w["trial_median_s"], "gflops": gflops, "kept_current": w["label"] == "current"}
    return {"rounds": opts.confirm_rounds, "rows": out, "winner": winner}


def _best(study):
    from optuna.trial import TrialState

    done = [t for t in study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,)) if t.value is not None]
    return min(done, key=lambda t: (t.value, t.number)) if done else None


def _best_so_far(study) -> list[float]:
    from optuna.trial import TrialState

    out, best = [], None
    for t in sorted(study.get_trials(deepcopy=False), key=lambda t: t.number):
        if t.state == TrialState.COMPLETE and t.value is not None:
            best = t.value if best is None else min(best, t.value)
            out.append(best)
    return out


def _trial_row(t) -> dict:
    return {"number": t.number, "state": t.state.name, "params": dict(t.params), "median_s": t.value,
            "gflops": t.user_attrs.get("gflops"), "error": t.user_attrs.get("error"),
            "reused": bool(t.user_attrs.get("reused")), "duplicate_of": t.user_attrs.get("duplicate_of"),
            "host": t.user_attrs.get("host"), "pid": t.user_attrs.get("pid")}


def _summary(rep: dict) -> dict:
    return {k: rep.get(k) for k in ("median_s", "min_s", "gflops", "error")} | {
        "check": (rep.get("check") or {}).get("passed")}


def write_csv(study, path: Path, names: list[str]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["trial", "state", *names, "median_s", "gflops", "error"])
        for t in sorted(study.trials, key=lambda t: t.number):
            w.writerow([t.number, t.state.name, *[t.params.get(n, "") for n in names],
                        "" if t.value is None else f"{t.value:.9g}", t.user_attrs.get("gflops") or "",
                        t.user_attrs.get("error") or ""])
