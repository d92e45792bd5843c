"""Parameter commands of issue 5: `select` (the target's selector), `tune` (Optuna search)."""
from __future__ import annotations

from pathlib import Path

from workbench.commands.registry import Args, CommandContext, Arg, Command, Flag, Registry, UsageError
from workbench.common.bench_defaults import MAX_BENCH_CALLS
from workbench.result import Result
from workbench.run_session import RunOptions
from workbench.session import SessionError, StepReport
from workbench.steps import spec as S
from workbench.steps.kinds import StepError, step_from_command


TAG_OPS = "rewrite tag-ops"
#: the default limit of a tune candidate's JIT compile (`run` has max(600 s, 5 x its --timeout)): every candidate
#: compiles alike, and one whose compile blows up should fail the trial, not stall the study
CANDIDATE_COMPILE_TIMEOUT_S = 180.0


def _selection_for(ctx, index: int | None):
    """(selector name, [(spec, params)], inspection) for the input of step `index` (None: the current IR)."""
    s = ctx.session
    target = s.target
    info = s.inspect() if index is None else s.inspect(index - 1)
    return target.selector_name or f"{target.name}-selector", target.select_params(info), info


def _sharded_entries(info: dict) -> list[str]:
    """Functions whose arguments or results are still annotated with a sharding (not yet partitioned)."""
    def annotated(specs) -> bool:
        return any(any(axes for axes in spec) for spec in specs or [] if spec)

    return [name for name, sh in (info.get("shardings") or {}).items()
            if annotated(sh.get("args")) or annotated(sh.get("results"))]


def _same_schedule(step, spec: str) -> bool:
    try:
        sel = step_from_command(spec, Path.cwd())
    except (StepError, S.SpecError):
        return False
    return (sel.kind == step.kind and sel.resolve() == step.resolve()
            and sel.options.get("gen") == step.options.get("gen"))


def _entry_for_step(step, chosen: list[tuple[str, dict]]):
    """The selection entry for an existing step: same schedule and, for a per-op step, same op."""
    op = step.params.get("op", "")
    return next(((sp, p) for sp, p in chosen if _same_schedule(step, sp) and p.get("op", "") == op), None)


def _prepare(ctx) -> list[tuple[str, dict]]:
    """Apply the target's preparation steps (`select` selects for the IR they leave); one that changes
    nothing is taken back. [(command text, step report)] of those kept."""
    s = ctx.session
    kept = []
    # front-end dialects first: the target's preparation reads the linalg ops they become
    for phase, steps_of in (("front end", s.target.frontend_steps), ("preparation", s.target.preparation_steps)):
        lines = steps_of(s.inspect())
        for i, line in enumerate(lines, 1):
            # a big module takes seconds a step: say where select is, as `run` and `tune` do
            ctx.progress(f"select: {phase} step {i}/{len(lines)}: {line}")
            before_steps, before_cursor = list(s.steps), s.cursor
            step = step_from_command(line, Path.cwd())
            step.selected_by = s.target.selector_name or f"{s.target.name}-selector"
            applied = s.apply(step, printed=True)
            if applied.noop:
                s.steps[:], s.cursor = before_steps, before_cursor
            else:
                kept.append((line, _report(s, applied)))
    return kept


def _report(s, applied) -> dict:
    return StepReport(s.cursor, applied.step.kind, applied.step.label(), applied.step.params, True,
                      applied.seconds, applied.output_sha, noop=applied.noop).to_json()


def _nothing_to_schedule(ctx, name: str, index: int | None, prepared: list, apply: bool,
                         saved_cursor: int) -> Result:
    """`select` where no op needs a schedule of its own. A target whose default lowering maps every op
    (cuda-lower: a kernel per op) still gains by its preparation (elementwise chains fused into one
    op, so one kernel): --apply keeps those steps. Elsewhere "nothing to select" is an error."""
    s, target = ctx.session, ctx.session.target
    where = f"step {index}'s input" if index else "the current IR"
    if not target.lowering_maps_unscheduled_ops:
        return Result.failure(f"{name}: nothing to select for {where} (no op its schedules handle)")
    rows = [[line, "(preparation)"] for line, _ in prepared]
    data = {"selected_by": name, "selections": [], "prepared": [line for line, _ in prepared],
            "table": {"columns": ["schedule", "parameters"], "rows": rows}}
    rest = f"{target.default_lowering} maps every op of it"
    if not prepared:
        return Result(True, f"{name}: no op of {where} needs a schedule ({rest})", kind="table", data=data)
    if not apply:
        return Result(True, f"{name}: no op of {where} needs a schedule ({rest}); `select --apply` adds "
                      f"{len(prepared)} preparation step(s) first", kind="table", data=data)
    data["steps"] = [report for _, report in prepared]
    data["step"] = data["steps"][-1]
    span = f"{saved_cursor + 1}" + (f"..{s.cursor}" if s.cursor > saved_cursor + 1 else "")
    return Result(True, f"step{'s' if len(prepared) > 1 else ''} {span}: {', '.join(data['prepared'])} "
                  f"(selected by {name}; no op needs a schedule: {rest})", kind="table", data=data)


def cmd_select(ctx: CommandContext, a: Args) -> Result:
    s = ctx.session
    try:
        s.require_loaded()
    except SessionError as e:
        return Result.failure(str(e))
    index = a.get("step")
    if index is not None and not 1 <= index <= s.cursor:
        return Result.failure(s.no_active_step(index))
    unpartitioned = _sharded_entries(s.inspect() if index is None else s.inspect(index - 1))
    if unpartitioned:
        return Result.failure(f"select: @{unpartitioned[0]} still carries sharding annotations (shard.shard): the "
                              "schedules take the per-rank ops, so partition it first: `target mpi`, `apply mpi-partition`, then "
                              "`select --apply` (commands/sharded-mlp-mpi.lhw shows the whole flow)")
    saved_steps, saved_cursor = list(s.steps), s.cursor
    try:
        prepared = _prepare(ctx) if index is None else []
        ctx.progress("select: reading the ops to schedule ...")
        name, chosen, info = _selection_for(ctx, index)
    except (SessionError, StepError, S.SpecError) as e:
        s.steps[:], s.cursor = saved_steps, saved_cursor
        return Result.failure(f"select: {e}" if isinstance(e, SessionError) else str(e),
                              getattr(e, "detail", None) or None)
    if prepared and not a["apply"]:   # only looked: the IR stays as it was
        s.steps[:], s.cursor = saved_steps, saved_cursor
    if not chosen:
        return _nothing_to_schedule(ctx, name, index, prepared, a["apply"], saved_cursor)
    rows = [[line, "(applied first)"] for line, _ in prepared] + [[spec, S.format_params(params)] for spec, params in chosen]
    data = {"selected_by": name, "selections": [{"schedule": spec, "params": params} for spec, params in chosen],
            "prepared": [line for line, _ in prepared],
            "table": {"columns": ["schedule", "parameters"], "rows": rows}}
    if index is not None:
        step = s.steps[index - 1].step
        match = _entry_for_step(step, chosen)
        if match is None:
            return Result.failure(f"{name} has no parameters for step {index} ({step.label()}); it selects for: "
                                  + ", ".join(S.format_ref(sp, {}, p) for sp, p in chosen))
        spec, params = match
        data["step"] = index
        data["params"] = params
        changed = {k: v for k, v in params.items() if step.params.get(k) != v}
        data["changes"] = changed
        if not a["apply"]:
            return Result(True, f"{name} for step {index}: {S.format_params(params)}"
                          + (f" (differs in {', '.join(changed)})" if changed else " (already set)"),
                          kind="table", data=data)
        try:
            replaced = s.set_params(index, params, selected_by=name)
        except SessionError as e:
            return Result.failure(str(e), e.detail or None)
        r = replaced[0]
        data["reapplied"] = [StepReport(index + i, x.step.kind, x.step.label(), x.step.params, True, x.seconds,
                                        x.output_sha, noop=x.noop).to_json() for i, x in enumerate(replaced)]
        return Result(True, f"step {index}: parameters from {name} applied, re-applied steps {index}..{s.cursor}: "
                      f"{r.step.label()}", kind="table", data=data)
    if not a["apply"]:
        return Result(True, f"{name} for the current IR ({len(chosen)} step(s)); `select --apply` adds them, "
                      "`select N --apply` sets step N", kind="table", data=data)
    # one step per entry (after `rewrite tag-ops` when entries target ops by id and the IR has no ids
    # yet); all or nothing: a failing step takes the steps this command added with it
    try:
        steps = [step_from_command(TAG_OPS, Path.cwd())] if (
            any(p.get("op") for _, p in chosen) and not info.get("tagged")) else []
        for spec, params in chosen:
            step = step_from_command(spec, Path.cwd()).with_params(params)
            step.selected_by = name
            steps.append(step)
    except (StepError, S.SpecError) as e:
        return Result.failure(str(e))
    reports = [report for _, report in prepared]
    for i, step in enumerate(steps, 1):
        ctx.progress(f"select --apply: step {i}/{len(steps)}: {step.label()}")
        try:
            applied = s.apply(step, printed=True)   # its report carries the sha256 at once
        except SessionError as e:
            s.steps[:], s.cursor = saved_steps, saved_cursor
            return Result.failure(f"select --apply: {e} (no step added)", e.detail or None)
        reports.append(_report(s, applied))
    data["steps"] = reports
    data["step"] = reports[-1]
    data["params"] = chosen[-1][1]
    first = saved_cursor + 1
    what = reports[0]["spec"] if len(reports) == 1 else f"{len(reports)} steps"
    return Result(True, f"step{'s' if len(reports) > 1 else ''} {first}"
                  + (f"..{s.cursor}" if len(reports) > 1 else "") + f": {what} (selected by {name})",
                  kind="table", data=data)


def _space_from_tokens(tokens: list[str]) -> dict[str, list]:
    space: dict[str, list] = {}
    for k, v in S.parse_params(" ".join(tokens)).items():
        space[k] = list(v) if isinstance(v, (list, tuple)) else [v]
    return space


def trial_progress_line(ev: dict) -> str:
    """One line per finished trial: counts (finished/total, failed, running), the trial, best so far,
    and with several workers what each one is doing."""
    what = f"{ev['value_s'] * 1e3:.3f} ms" if ev.get("value_s") else f"FAILED ({ev.get('error')})"
    if ev.get("value_s") and ev.get("error") is None and ev.get("reused"):
        what += " (reused)"
    best = f"best {ev['best_s'] * 1e3:.3f} ms (#{ev.get('best_trial')})" if ev.get("best_s") else "no success yet"
    counts = f"{ev['done']}/{ev['total']}, {ev.get('failed', 0)} failed, {ev.get('running', 0)} running"
    line = f"tune [{counts}] trial {ev['trial']} {S.format_params(ev['params'])}: {what}; {best}"
    workers = ev.get("workers") or []
    if len(workers) > 1:
        line += " | " + ", ".join(workers)
    return line


def cmd_tune(ctx: CommandContext, a: Args) -> Result:
    from workbench.commands.run_commands import run_consent
    from workbench.tune import SAMPLERS, TuneError, TuneOptions, tune_step

    s = ctx.session
    refused = run_consent(ctx)
    if refused is not None:
        return refused
    try:
        s.require_loaded()
    except SessionError as e:
        return Result.failure(str(e))
    index = a.get("step") or s.cursor
    sampler = a.get("sampler") or "tpe"
    if sampler not in SAMPLERS:
        raise UsageError(f"--sampler must be one of {', '.join(SAMPLERS)}")
    try:
        space = _space_from_tokens(a.get("space") or [])
    except S.SpecError as e:
        return Result.failure(str(e))
    run = RunOptions(check=not a["no_check"], iterations=a.get("iterations") or 5, warmup=a.get("warmup") or 1,
                     timeout=a.get("run_timeout") or 60.0, seed=a.get("seed") or 0,
                     compile_timeout=a.get("compile_timeout") or CANDIDATE_COMPILE_TIMEOUT_S)
    opts = TuneOptions(trials=a.get("trials") or 20, timeout_s=a.get("timeout"), sampler=sampler,
                       seed=a.get("seed") or 0, storage=a.get("storage") or None,
                       workers=a.get("workers") or 1, measure_slots=a.get("measure_slots") or 1,
                       confirm=a["confirm"] if a.get("confirm") is not None else 3,
                       confirm_rounds=a.get("confirm_rounds") or 3,
                       study_name=a.get("study"), space=space,
                       only=[p for p in (a.get("params") or "").split(",") if p] or None,
                       apply_best=a["apply_best"], csv=Path(a["csv"]) if a.get("csv") else None,
                       baseline=not a["no_baseline"], run=run)
    bar = getattr(ctx, "progress_event", None)

    def on_event(ev: dict) -> None:
        if ev["phase"] == "trial":
            msg = trial_progress_line(ev)
        else:
            msg = "tune: " + ev["message"]
        if bar is not None:
            bar(ev, msg)
        else:
            ctx.progress(msg)

    try:
        rep = tune_step(s, index, opts, on_event)
    except TuneError as e:
        return Result.failure(str(e))
    except SessionError as e:
        return Result.failure(str(e), e.detail or None)
    names = list(rep["space"])
    rows = []
    for t in rep["trials"]:
        rows.append([t["number"], t["state"], *[t["params"].get(n, "") for n in names],
                     "" if t["median_s"] is None else f"{t['median_s'] * 1e3:.3f}",
                     "" if not t["gflops"] else f"{t['gflops']:.1f}", (t["error"] or "")[:60]])
    best = rep["best"]
    summary = tune_summary(index, rep)
    data = {"tune": rep, "plot": {"y": rep["best_so_far_ms"], "title": f"tune step {index}: best so far (ms)"},
            "table": {"columns": ["trial", "state", *names, "ms", "GFLOP/s", "error"], "rows": rows}}
    return Result(best is not None, summary, kind="table", data=data,
                  error=None if best is not None else summary)


def tune_summary(index: int, rep: dict) -> str:
    """The one line a tune ends with: the winner, its median, how much faster than the current dict."""
    best = rep["best"]
    if best is None:
        summary = f"tune step {index}: no candidate succeeded ({len(rep['trials'])} trials)"
    else:
        base = (rep.get("baseline_before") or {}).get("median_s")
        # against the current dict as the confirmation measured it, in the same interleaved rounds as the
        # winner: the one cold baseline run made "the current parameters stay best ... 1.33x vs baseline"
        current = next((r["median_s"] for r in (rep.get("confirm") or {}).get("rows") or []
                        if r.get("label") == "current" and r.get("median_s")), None)
        if best.get("kept_current"):
            speed = ""
        elif current:
            speed = f", {current / best['median_s']:.2f}x vs the current dict"
        else:
            speed = f", {base / best['median_s']:.2f}x vs baseline" if base else ""
        who = ("the current parameters stay best" if best.get("kept_current") else
               f"best trial {best['trial']}")
        confirmed = " (re-measured against the current dict)" if rep.get("confirm") else ""
        summary = (f"tune step {index}: {who} {S.format_params(best['tuned'])} "
                   f"median {best['median_s'] * 1e3:.3f} ms{confirmed}{speed} ({rep['new_trials']} new trials, "
                   f"{rep['workers']} worker(s), study {rep['study']} in {rep['storage']})")
        if rep.get("applied"):
            summary += "; applied"
    return summary


def register(reg: Registry) -> None:
    reg.register(Command(
        "select", "show the target's parameter selection for the payload; --apply records it on a step",
        cmd_select, [Arg("step", "step index (its input is inspected); none: the current IR", type="int",
                         optional=True, complete="step:applied")],
        [Flag("--apply", "set the selection on step N (or add the selected schedule as a new step)")],
        details="The selector (per target: payload shapes, dtypes, op kinds, host vector width, cache sizes) "
                "produces the parameter dict of the shipped schedules. Applying records `selected_by` on the "
                "step; the saved session holds the concrete dict, so replay never asks the selector again.",
        category="2-steps"))
    reg.register(Command(
        "tune", "search a step's parameter space (Optuna), each candidate compiled, run and checked in isolation",
        cmd_tune, [Arg("step", "step index (default: current)", type="int", optional=True,
                       complete="step:applied"),
                   Arg("space", "candidate lists, e.g. reg_m=[4,8] impl=[codegen,ukernel]", type="kv",
                       optional=True, complete="param")],
        [Flag("--trials", "new trials to run (default 20)", True, type="int", minimum=0),
         Flag("--timeout", "time budget in seconds", True, type="float", minimum=0.1),
         Flag("--sampler", "tpe | random | grid", True, complete="choice:tpe,random,grid"),
         Flag("--seed", "sampler and input seed", True, type="int", minimum=0),
         Flag("--params", "comma-separated parameters to tune (others stay fixed)", True),
         Flag("--storage", "SQLite study file or an Optuna RDB URL (postgresql://..., mysql://...; "
                           "default: a file next to the saved session)", True, complete="path:.db"),
         Flag("--study", "study name (default: derived from the step and the space: resumes; "
                         "processes naming the same storage and study share the search)", True),
         Flag("--workers", "trials at once in this process, each with its own compile worker (default 1)",
              True, type="int", minimum=1),
         Flag("--measure-slots", "with --workers: K timed runs at once, each on a physical core of its own, "
                                 "on at most half the cores (default 1: one at a time; faster search, "
                                 "timings under each other's load)", True, type="int", minimum=1),
         Flag("--confirm", "best candidates re-measured against the current dict at the end (default 3, 0: off)",
              True, type="int", minimum=0),
         Flag("--confirm-rounds", "interleaved rounds of that re-measurement (default 3)", True, type="int",
              minimum=1),
         Flag("--csv", "write all trials to this CSV file", True, complete="path:.csv"),
         Flag("--iterations", "timed calls per candidate (default 5)", True, type="int", minimum=1,
              maximum=MAX_BENCH_CALLS),
         Flag("--warmup", "warm-up calls per candidate (default 1)", True, type="int", minimum=0,
              maximum=MAX_BENCH_CALLS),
         Flag("--run-timeout", "seconds before a candidate's run is killed", True, type="float", minimum=0.1),
         Flag("--compile-timeout", f"seconds a candidate's JIT compile may take (default {CANDIDATE_COMPILE_TIMEOUT_S:.0f}: "
              "a candidate whose compile blows up is a FAIL, not ten minutes of the study)", True, type="float",
              minimum=0.1),
         Flag("--apply-best", "set the winning dict on the step (selected_by: tune:<study>)"),
         Flag("--no-baseline", "skip the baseline runs before and after"),
         Flag("--no-check", "do not check candidates' results (not recommended)")],
        details="Flags go before the candidate lists. The live session is unchanged unless --apply-best. "
                "Failed candidates (constraint violated, compile error, crash, timeout, wrong result) are "
                "recorded as FAIL and never chosen. Running again with the same step and space resumes the study. "
                "The current dict is trial 0 and the best candidates are re-measured against it before one is "
                "declared best, so a tune never hands back something slower than where it started. With "
                "--workers N compilations overlap and timed runs take turns (one machine-wide lock; "
                "--measure-slots K lets K run at once, each on a core of its own). Other machines join with the same --storage URL and --study NAME. The Optuna dashboard "
                "(`optuna-dashboard URL`) shows the same study live.",
        category="5-run"))
