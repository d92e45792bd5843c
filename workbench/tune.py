"""`tune`: search a step's parameter space with Optuna, each candidate compiled and run isolated.

The live session is never changed by a candidate: each one is applied from its step onwards on a
scratch copy of the session state (same compile worker, copied step list and IR store), lowered,
run in a fresh run worker, and checked against the unscheduled payload. A candidate that violates
the schema's constraints, fails to compile, crashes, hangs or computes a wrong result is recorded
as a FAIL trial and can never be the best. The current dict is enqueued as the first trial, so
the winner is at least as fast as it in the same study. Candidates whose final IR is identical to
an already measured one reuse that measurement.

Studies live in an SQLite file (Optuna RDB storage) so that a tune can be resumed; the study name
is derived from the step's input IR, its schedule and the search space.
"""
from __future__ import annotations

import copy
import csv
import hashlib
import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from workbench.paths import state_dir
from workbench.run_session import RunOptions, run_current
from workbench.session import Session, SessionError
from workbench.steps.kinds import StepError
from workbench.steps.params import ParamError, candidate_values, payload_dims

SAMPLERS = ("tpe", "random", "grid")


class TuneError(RuntimeError):
    pass


@dataclass
class TuneOptions:
    trials: int = 20
    timeout_s: float | None = None
    sampler: str = "tpe"
    seed: int = 0
    storage: Path | None = None
    study_name: str | None = None
    space: dict[str, list] = field(default_factory=dict)   # explicit candidate lists per parameter
    only: list[str] | None = None                          # tune just these (others stay fixed)
    apply_best: bool = False
    csv: Path | None = None
    baseline: bool = True
    run: RunOptions = field(default_factory=lambda: RunOptions(check=True))


def scratch_copy(session: Session) -> Session:
    """A session object sharing the compile worker but with its own step list / store / cursor."""
    s = copy.copy(session)
    s.steps = list(session.steps)
    s.store = dict(session.store)
    s.journal_enabled = False
    s.progress = None
    s.last_run = None
    return s


def default_storage(session: Session) -> Path:
    if getattr(session, "saved_path", None):
        p = Path(session.saved_path)
        return p.with_name(p.stem + ".tune.db")
    stem = session.payload_path.stem if session.payload_path else "session"
    key = hashlib.sha256(str(session.payload_path).encode()).hexdigest()[:12]
    return state_dir() / "tune" / f"{stem}-{key}.tune.db"


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
        info = session.client.request({"op": "inspect", "text": session.store[applied.input_sha],
                                       "sha": applied.input_sha})
        if info["ok"]:
            found = payload_dims(info["info"], schema.payload_op)
            dims = found[0] if found else {}
    current = dict(schema.defaults())
    current.update(step.params)
    only = opts.only if opts.only is not None else (list(opts.space) if opts.space else None)
    unknown = [k for k in list(opts.space) + list(only or []) if k not in schema.params]
    if unknown:
        raise TuneError(f"step {index} has no parameter {', '.join(unknown)} (known: {', '.join(schema.params)})")
    space: dict[str, list] = {}
    for name, spec in schema.params.items():
        if only is not None and name not in only and name not in opts.space:
            continue
        if name in opts.space:
            try:
                values = [spec.coerce(v) for v in opts.space[name]]
            except ParamError as e:
                raise TuneError(str(e))
        else:
            values = candidate_values(spec, dims, current.get(name))
        if values and len(values) > 1:
            space[name] = values
    if not space:
        raise TuneError(f"step {index} ({step.label()}) has no parameter with a finite space to search: "
                        "give candidates, e.g. `tune N tile=[16,32,64]`")
    fixed = {k: v for k, v in current.items() if k not in space}
    return space, fixed, schema


def _study_name(session: Session, index: int, space: dict, fixed: dict) -> str:
    step = session.steps[index - 1].step
    key = json.dumps({"input": session.steps[index - 1].input_sha, "kind": step.kind, "spec": step.spec,
                      "options": step.options, "space": space, "fixed": fixed, "target": session.target_name},
                     sort_keys=True, default=str)
    return f"step{index}-{hashlib.sha256(key.encode()).hexdigest()[:12]}"


def _sampler(name: str, seed: int, space: dict):
    import optuna

    if name == "tpe":
        return optuna.samplers.TPESampler(seed=seed, n_startup_trials=5)
    if name == "random":
        return optuna.samplers.RandomSampler(seed=seed)
    if name == "grid":  # the grid is enqueued by tune_step (GridSampler's study.stop() needs optimize())
        return optuna.samplers.RandomSampler(seed=seed)
    raise TuneError(f"unknown sampler {name!r} (choose from {', '.join(SAMPLERS)})")


def _measure(session: Session, run_opts: RunOptions) -> dict:
    report = run_current(session, run_opts)
    chk = report.get("check")
    if not report.get("error") and chk is not None and not chk.get("passed"):
        report["error"] = (f"wrong result (max rel err {chk.get('max_rel_err'):.3g} > "
                           f"{chk.get('tolerance', 0):.3g})")
    return report


def tune_step(session: Session, index: int, opts: TuneOptions,
              progress: Callable[[dict], None] | None = None) -> dict[str, Any]:
    """Tune step `index`; returns the report (trials, best, baselines, best-so-far series)."""
    import optuna
    from optuna.distributions import CategoricalDistribution
    from optuna.trial import TrialState

    session.require_loaded()
    if not 1 <= index <= session.cursor:
        raise TuneError(f"no active step {index} (active steps: 1..{session.cursor})")
    space, fixed, schema = search_space(session, index, opts)
    dists = {k: CategoricalDistribution(v) for k, v in space.items()}
    storage_path = Path(opts.storage) if opts.storage else default_storage(session)
    storage_path.parent.mkdir(parents=True, exist_ok=True)
    name = opts.study_name or _study_name(session, index, space, fixed)
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(storage=f"sqlite:///{storage_path}", study_name=name, direction="minimize",
                                sampler=_sampler(opts.sampler, opts.seed, space), load_if_exists=True)
    resumed = len(study.trials)
    emit = progress or (lambda event: None)
    current = {k: session.steps[index - 1].step.params.get(k, fixed.get(k)) for k in space}
    current = {k: v for k, v in current.items() if v in space[k]}
    if len(current) == len(space) and not any(t.params == current for t in study.trials):
        study.enqueue_trial(current)  # the dict being tuned is trial 0: the winner is never slower than it

    by_ir: dict[str, tuple[float | None, dict]] = {}
    for t in study.trials:  # resumed: identical IR is not measured twice
        if t.state == TrialState.COMPLETE and t.user_attrs.get("ir_sha256"):
            by_ir[t.user_attrs["ir_sha256"]] = (t.value, dict(t.user_attrs))

    report: dict[str, Any] = {"step": index, "study": name, "storage": str(storage_path), "sampler": opts.sampler,
                              "seed": opts.seed, "space": space, "fixed": fixed, "resumed_trials": resumed}
    if opts.baseline:
        emit({"phase": "baseline", "message": "baseline run (current parameters)"})
        report["baseline_before"] = _summary(_measure(session, opts.run))

    grid: list[dict] = []
    if opts.sampler == "grid":
        import itertools
        import random

        seen = {json.dumps(t.params, sort_keys=True, default=str) for t in study.trials}
        combos = [dict(zip(space, vals)) for vals in itertools.product(*space.values())]
        random.Random(opts.seed).shuffle(combos)
        grid = [c for c in combos if json.dumps(c, sort_keys=True, default=str) not in seen]
        if current in grid:  # the current dict first (enqueued already)
            grid.remove(current)
    t0 = time.monotonic()
    done = 0
    total = opts.trials
    while done < total:
        if opts.timeout_s is not None and time.monotonic() - t0 > opts.timeout_s:
            break
        if opts.sampler == "grid":
            waiting = [t for t in study.get_trials(deepcopy=False) if t.state == TrialState.WAITING]
            if not waiting:
                if not grid:
                    break  # the grid is exhausted
                study.enqueue_trial(grid.pop(0))
        trial = study.ask(dists)
        params = dict(trial.params)
        candidate = dict(fixed)
        candidate.update(params)
        state, value, attrs = _evaluate(session, index, schema, params, candidate, opts, by_ir)
        for k, v in attrs.items():
            trial.set_user_attr(k, v)
        if state == "ok":
            study.tell(trial, value)
        else:
            study.tell(trial, state=TrialState.FAIL)
        done += 1
        best = _best(study)
        emit({"phase": "trial", "done": done, "total": total, "trial": trial.number, "params": params,
              "state": "COMPLETE" if state == "ok" else "FAIL", "value_s": value, "error": attrs.get("error"),
              "best_s": best.value if best else None, "best_so_far": _best_so_far(study)})

    best = _best(study)
    report["trials"] = [_trial_row(t) for t in study.trials]
    report["new_trials"] = done
    report["best_so_far_ms"] = [v * 1e3 for v in _best_so_far(study)]
    if best is None:
        report["best"] = None
    else:
        best_params = dict(fixed)
        best_params.update(best.params)
        report["best"] = {"trial": best.number, "params": best_params, "tuned": dict(best.params),
                          "median_s": best.value, "gflops": best.user_attrs.get("gflops")}
    if opts.baseline:
        emit({"phase": "baseline", "message": "baseline run again (drift check)"})
        report["baseline_after"] = _summary(_measure(session, opts.run))
    if opts.csv:
        write_csv(study, Path(opts.csv), list(space))
        report["csv"] = str(opts.csv)
    if opts.apply_best and best is not None:
        emit({"phase": "apply", "message": f"applying the best parameters to step {index}"})
        try:
            session.set_params(index, dict(best.params), selected_by=f"tune:{name}")
        except SessionError as e:
            raise TuneError(f"applying the best parameters failed: {e}")
        report["applied"] = True
    return report


def _evaluate(session: Session, index: int, schema, params: dict, candidate: dict, opts: TuneOptions,
              by_ir: dict) -> tuple[str, float | None, dict]:
    attrs: dict[str, Any] = {}
    try:
        schema.validate(candidate)
    except ParamError as e:
        return "fail", None, {"error": f"invalid: {e}"}
    scratch = scratch_copy(session)
    try:
        scratch.set_params(index, params, selected_by="tune")
    except SessionError as e:
        msg = str(e)
        return "fail", None, {"error": ("invalid: " if "constraint" in msg else "compile: ") + msg.splitlines()[0]}
    sha = scratch.current_sha
    attrs["ir_sha256"] = sha
    if sha in by_ir:
        value, old = by_ir[sha]
        attrs.update({k: v for k, v in old.items() if k in ("gflops",)})
        attrs["reused"] = True
        return "ok", value, attrs
    rep = _measure(scratch, opts.run)
    if rep.get("error"):
        attrs["error"] = "run: " + str(rep["error"]).splitlines()[0]
        return "fail", None, attrs
    attrs["gflops"] = rep.get("gflops")
    attrs["min_s"] = rep.get("min_s")
    by_ir[sha] = (rep["median_s"], dict(attrs))
    return "ok", rep["median_s"], attrs


def _best(study):
    from optuna.trial import TrialState

    done = [t for t in study.trials if t.state == TrialState.COMPLETE and t.value is not None]
    return min(done, key=lambda t: (t.value, t.number)) if done else None


def _best_so_far(study) -> list[float]:
    from optuna.trial import TrialState

    out, best = [], None
    for t in sorted(study.trials, key=lambda t: t.number):
        if t.state == TrialState.COMPLETE and t.value is not None:
            best = t.value if best is None else min(best, t.value)
            out.append(best)
    return out


def _trial_row(t) -> dict:
    return {"number": t.number, "state": t.state.name, "params": dict(t.params), "median_s": t.value,
            "gflops": t.user_attrs.get("gflops"), "error": t.user_attrs.get("error"),
            "reused": bool(t.user_attrs.get("reused"))}


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
