"""The workbench commands. Each handler takes (ctx, args) and returns a Result."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from workbench.commands.registry import Arg, Command, CommandContext, Flag, Registry, UsageError
from workbench.result import Result
from workbench.session import SessionError, StepReport, read_session_file, replay_into
from workbench.steps import spec as S
from workbench.steps.kinds import Step, StepError, kind_help, step_from_command
from workbench.steps.params import schema_json, schema_table
from workbench.targets import TargetError, all_targets


def _fail(e: Exception) -> Result:
    return Result.failure(str(e), getattr(e, "detail", None) or None)


def _diffstat(diff: str) -> tuple[int, int]:
    plus = sum(1 for ln in diff.splitlines() if ln.startswith("+") and not ln.startswith("+++"))
    minus = sum(1 for ln in diff.splitlines() if ln.startswith("-") and not ln.startswith("---"))
    return plus, minus


def _apply_result(ctx: CommandContext, applied, index: int) -> Result:
    s = ctx.session
    diff = s.diff(index - 1, index)
    plus, minus = _diffstat(diff)
    rep = StepReport(index, applied.step.kind, applied.step.label(), applied.step.params, True,
                     applied.seconds, applied.output_sha, noop=applied.noop)
    change = "no change (no-op)" if applied.noop else f"+{plus} -{minus} lines"
    return Result(True, f"step {index}: {applied.step.label()}  [{change}, {applied.seconds * 1000:.1f} ms]",
                  kind="step", data={"step": rep.to_json()})


def _apply_step(ctx: CommandContext, step: Step) -> Result:
    s = ctx.session
    try:
        applied = s.apply(step)
    except SessionError as e:
        res = _fail(e)
        # the failed step's record (headless --json lists it with ok=false)
        res.data["step"] = StepReport(s.cursor + 1, step.kind, step.label(), step.params, False, 0.0, None,
                                      str(e)).to_json()
        return res
    return _apply_result(ctx, applied, s.cursor)


# -- handlers -----------------------------------------------------------------------------

def cmd_load(ctx, a):
    s = ctx.session
    try:
        s.load(a["file"])
    except SessionError as e:
        return _fail(e)
    msg = f"loaded {a['file']} ({len(s.current_ir.splitlines())} lines)"
    journal = s.journal_for(Path(a["file"]))
    data = {"payload": str(s.payload_path), "ir_sha256": s.current_sha}
    if journal is not None:
        msg += f"; an autosaved session exists ({journal}): `resume` to restore it"
        data["journal"] = str(journal)
    return Result(True, msg, data=data)


def cmd_inspect(ctx, a):
    try:
        info = ctx.session.inspect(a.get("step"))
    except SessionError as e:
        return _fail(e)
    rows = []
    for f in info["funcs"]:
        if f["declaration"]:
            continue
        rows.append(["func", "@" + f["name"], "(" + ", ".join(f["args"]) + ") -> (" + ", ".join(f["results"]) + ")", ""])
    for o in info["ops"]:
        if o["kind"] == "contraction":
            shape = " ".join(f"{k}={v}" for k, v in o["dims"].items())
        else:
            shape = "x".join(map(str, o.get("domain") or o.get("shape") or []))
        rows.append([o["kind"], o["op"] + (f" in @{o['func']}" if o.get("func") else ""),
                     f"{shape} {o['dtype']}".strip(), _human_flops(o["flops"]) if o["flops"] else ""])
    return Result(True, f"{len(info['ops'])} linalg ops, {_human_flops(info['total_flops'])} per call",
                  kind="table", data={"inspect": info,
                                      "table": {"columns": ["what", "name", "type / shape", "FLOP"], "rows": rows}})


def _human_flops(n: float) -> str:
    for unit, scale in (("GFLOP", 1e9), ("MFLOP", 1e6), ("kFLOP", 1e3)):
        if n >= scale:
            return f"{n / scale:.3g} {unit}"
    return f"{int(n)} FLOP"


def cmd_apply(ctx, a):
    s = ctx.session
    text = a["spec"]
    if not text:
        raise UsageError("apply needs a stage reference")
    base = Path.cwd()
    try:
        step = step_from_command(text, base)
    except (StepError, S.SpecError, TargetError) as e:
        return _fail(e)
    if step.kind == "schedule" and ctx.interactive:
        # typing the file name is consent to run it; a script file read from elsewhere is not
        s.build_ctx.trusted.add(str(step.resolve()))
    return _apply_step(ctx, step)


def cmd_pass(ctx, a):
    if not a["pipeline"]:
        raise UsageError("pass needs a pass pipeline")
    return _apply_step(ctx, Step("pass", a["pipeline"], {}, {}, Path.cwd()))


def cmd_bench(ctx, a):
    try:
        params = S.parse_params(" ".join(a["params"]))
    except S.SpecError as e:
        return _fail(e)
    return _apply_step(ctx, Step("bench", "bench", params, {}, Path.cwd()))


def cmd_params(ctx, a):
    s = ctx.session
    try:
        s.require_loaded()
    except SessionError as e:
        return _fail(e)
    index = a.get("step") or s.cursor
    if not 1 <= index <= s.cursor:
        return Result.failure(f"no active step {index} (active steps: 1..{s.cursor})")
    step = s.steps[index - 1].step
    if a.get("export"):
        return _export_params(step, index, Path(a["export"]))
    selected_by = None
    if a.get("import"):
        try:
            updates = _read_params_file(Path(a["import"]))
        except (OSError, ValueError) as e:
            return Result.failure(f"cannot import parameters from {a['import']}: {e}")
        selected_by = f"file:{Path(a['import']).name}"
    elif not a["values"]:
        try:
            schema = step.schema()
        except StepError as e:
            return _fail(e)
        data = {"step": index, "params": step.params, "table": schema_table(schema, step.params),
                "schema": schema_json(schema)}
        if step.selected_by:
            data["selected_by"] = step.selected_by
        return Result(True, f"step {index}: {step.label()}"
                      + (f" (selected by {step.selected_by})" if step.selected_by else ""), kind="table", data=data)
    else:
        try:
            updates = S.parse_params(" ".join(a["values"]))
        except S.SpecError as e:
            return _fail(e)
    try:
        replaced = s.set_params(index, updates, selected_by=selected_by)
    except SessionError as e:
        return _fail(e)
    res = _apply_result(ctx, replaced[0], index)
    res.summary = f"re-applied steps {index}..{s.cursor}; " + res.summary
    res.data["reapplied"] = [StepReport(index + i, r.step.kind, r.step.label(), r.step.params, True, r.seconds,
                                        r.output_sha, noop=r.noop).to_json() for i, r in enumerate(replaced)]
    return res


def _export_params(step, index: int, path: Path) -> Result:
    """The step's parameter dict as JSON (.json) or YAML (anything else): a plain mapping."""
    import json

    import yaml

    try:
        text = (json.dumps(step.params, indent=2) + "\n" if path.suffix == ".json"
                else yaml.safe_dump(dict(step.params), sort_keys=False))
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    except OSError as e:
        return Result.failure(f"cannot write {path}: {e.strerror}")
    return Result(True, f"step {index}: {len(step.params)} parameters written to {path}",
                  data={"step": index, "params": step.params, "path": str(path)})


def _read_params_file(path: Path) -> dict:
    """A parameter dict from JSON/YAML: a mapping, or {"params": mapping} (what a cost model writes)."""
    import yaml

    doc = yaml.safe_load(path.read_text())  # JSON is YAML
    if isinstance(doc, dict) and isinstance(doc.get("params"), dict) and set(doc) <= {"params", "spec", "step",
                                                                                      "selected_by"}:
        doc = doc["params"]
    if not isinstance(doc, dict) or not doc:
        raise ValueError("expected a mapping of parameter names to values")
    return doc


def cmd_undo(ctx, a):
    try:
        c = ctx.session.undo()
    except SessionError as e:
        return _fail(e)
    return Result(True, f"undone: now at step {c} of {len(ctx.session.steps)}", data={"cursor": c})


def cmd_redo(ctx, a):
    try:
        c = ctx.session.redo()
    except SessionError as e:
        return _fail(e)
    return Result(True, f"redone: now at step {c} of {len(ctx.session.steps)}", data={"cursor": c})


def cmd_show(ctx, a):
    s = ctx.session
    try:
        index = s.cursor if a.get("step") is None else a["step"]
        text = s.ir_at(index)
    except SessionError as e:
        return _fail(e)
    return Result(True, f"IR after step {index} ({len(text.splitlines())} lines)", kind="ir", body=text,
                  data={"step": index, "ir_sha256": s.sha_at(index)})


def cmd_diff(ctx, a):
    s = ctx.session
    try:
        s.require_loaded()
        if a.get("a") is None:
            if s.cursor == 0:
                return Result.failure("no step applied yet: nothing to diff")
            i, j = s.cursor - 1, s.cursor
        elif a.get("b") is None:
            i, j = a["a"] - 1, a["a"]
        else:
            i, j = a["a"], a["b"]
        diff = s.diff(i, j)
    except SessionError as e:
        return _fail(e)
    if not diff:
        return Result(True, f"step {i} -> step {j}: identical IR (no-op)", kind="diff", data={"from": i, "to": j,
                                                                                              "noop": True})
    plus, minus = _diffstat(diff)
    return Result(True, f"step {i} -> step {j}: +{plus} -{minus} lines", kind="diff", body=diff,
                  data={"from": i, "to": j, "noop": False})


def cmd_history(ctx, a):
    s = ctx.session
    if not s.loaded:
        return Result.failure("no payload loaded: use `load FILE.mlir`")
    rows = []
    for h in s.history():
        marker = ">" if h["current"] else (" " if h["active"] else "~")
        rows.append([f"{marker}{h['index']}", h["kind"], h["spec"],
                     "no-op" if h["noop"] else "", f"{h['seconds'] * 1000:.1f} ms" if h["index"] else ""])
    return Result(True, f"{s.cursor} of {len(s.steps)} steps active ('>' current, '~' undone)", kind="table",
                  data={"history": s.history(), "cursor": s.cursor,
                        "table": {"columns": ["#", "kind", "step", "", "time"], "rows": rows}})


def cmd_save(ctx, a):
    s = ctx.session
    if not s.loaded:
        return Result.failure("no payload loaded: nothing to save")
    try:
        path = s.save(a["file"])
    except OSError as e:
        return Result.failure(f"cannot write {a['file']}: {e.strerror}")
    return Result(True, f"saved {len(s.active_steps)} steps to {path}", data={"path": str(path)})


def cmd_target(ctx, a):
    s = ctx.session
    if a.get("name"):
        try:
            s.select_target(a["name"])
        except SessionError as e:
            return _fail(e)
        return Result(True, f"target: {a['name']}", data={"target": a["name"]})
    rows = []
    listing = []
    for t in all_targets():
        ok, why = t.can_run()
        rows.append([("* " if t.name == s.target_name else "  ") + t.name, "yes" if ok else "no", why])
        listing.append({"name": t.name, "can_run": ok, "reason": why})
    return Result(True, f"target: {s.target_name}", kind="table",
                  data={"target": s.target_name, "targets": listing,
                        "table": {"columns": ["target", "can run", "why"], "rows": rows}})


def cmd_trust(ctx, a):
    p = Path(a["file"]).resolve()
    if not p.is_file():
        return Result.failure(f"{a['file']}: no such file")
    ctx.session.build_ctx.trusted.add(str(p))
    return Result(True, f"trusted {p} for this session")


def cmd_resume(ctx, a):
    s = ctx.session
    if s.payload_path is None:
        return Result.failure("no payload loaded: `load` it first, then `resume`")
    journal = s.journal_for(s.payload_path)
    if journal is None:
        return Result.failure(f"no autosaved session for {s.payload_path}")
    return replay_file(ctx, journal, payload=s.payload_path)


def replay_file(ctx: CommandContext, path: Path, payload: Path | None = None) -> Result:
    """Load a session file's payload (or `payload`) and apply its steps: shared by `replay` and `resume`."""
    s = ctx.session
    try:
        loaded = read_session_file(path)
    except (SessionError, StepError, S.SpecError) as e:
        return _fail(e)
    payload = payload or loaded.payload
    if payload is None:
        return Result.failure(f"{path} names no payload: pass --payload FILE.mlir")
    try:
        s.load(payload)
    except SessionError as e:
        return _fail(e)
    expected_payload = (loaded.meta.get("payload") or {}).get("sha256")
    warnings = []
    if expected_payload and expected_payload != s.payload_file_sha:
        warnings.append(f"payload {payload} changed since the session was saved (sha256 differs)")
    try:
        reports = replay_into(s, loaded, on_step=lambda r: ctx.progress(
            f"step {r.index}/{len(loaded.steps)} {'ok' if r.ok else 'FAILED'}: {r.spec}"))
    except SessionError as e:  # e.g. the session names an unknown target
        return _fail(e)
    ok = all(r.ok for r in reports) and len(reports) == len(loaded.steps)
    expected = loaded.meta.get("ir_sha256")
    data: dict[str, Any] = {"steps": [r.to_json() for r in reports], "ir_sha256": s.current_sha,
                            "payload": str(payload), "session": str(path)}
    if expected:
        data["expected_ir_sha256"] = expected
        data["reproduced"] = ok and expected == s.current_sha
        if ok and expected != s.current_sha:
            warnings.append("final IR differs from the one recorded in the session")
    if warnings:
        data["warnings"] = warnings
    if not ok:
        bad = next(r for r in reports if not r.ok)
        return Result(False, bad.error or "replay failed", error=bad.error, detail=bad.detail, data=data)
    summary = f"replayed {len(reports)} steps from {path}"
    if warnings:
        summary += " (warning: " + "; ".join(warnings) + ")"
    return Result(True, summary, data=data)


def cmd_replay(ctx, a):
    return replay_file(ctx, Path(a["file"]), Path(a["payload"]) if a.get("payload") else None)


def cmd_help(ctx, a):
    reg = ctx.registry
    name = a.get("command")
    if name:
        cmd = reg.get(name)
        if cmd is None:
            return Result.failure(f"no command {name!r} (type `help` for the list)")
        return Result(True, "", kind="help", body=cmd.help_text(), data={"help": cmd.name})
    rows = [[c.usage, c.summary] for c in sorted(reg.commands.values(), key=lambda c: (c.category, c.name))]
    kinds = "\n".join(f"  {k:<10} {v}" for k, v in kind_help().items())
    return Result(True, "commands (help COMMAND for details):", kind="table",
                  body="step kinds (for apply and pipeline files):\n" + kinds,
                  data={"table": {"columns": ["usage", "what it does"], "rows": rows}})


def cmd_quit(ctx, a):
    ctx.quit_requested = True
    return Result(True, "bye")


def register_builtin(reg: Registry) -> Registry:
    add = reg.register
    add(Command("load", "load a payload .mlir file (parse + verify)", cmd_load,
                [Arg("file", "payload file", complete="path:.mlir")], category="1-session"))
    add(Command("inspect", "functions, linalg ops with shapes, FLOP count", cmd_inspect,
                [Arg("step", "step index (default: current)", type="int", optional=True, complete="step")],
                category="1-session"))
    add(Command("apply", "apply a stage: transform .mlir, schedule .py[gen=fn]{k=v}, pipeline .yaml, named pipeline",
                cmd_apply, [Arg("spec", "stage reference", type="rest", complete="spec")],
                details="Examples:\n  apply pipelines/lib/tile.mlir\n  apply pipelines/lib/tile.py[gen=tile_matmul]{tile_m=64}\n"
                        "  apply pipelines/lib/bufferization.yaml\n  apply cpu-lower",
                category="2-steps"))
    add(Command("pass", "apply an MLIR pass pipeline as a step", cmd_pass,
                [Arg("pipeline", "e.g. canonicalize,cse or func.func(convert-linalg-to-loops)", type="rest",
                     complete="pass")], category="2-steps"))
    add(Command("bench", "insert the benchmark wrapper around the entry function as it is now", cmd_bench,
                [Arg("params", "warmup=N iterations=N entry=NAME", type="kv", optional=True, complete="param")],
                category="2-steps"))
    add(Command("params", "show or edit a step's parameters; editing re-applies from that step", cmd_params,
                [Arg("step", "step index (default: current)", type="int", optional=True, complete="step"),
                 Arg("values", "key=value ...", type="kv", optional=True, complete="param")],
                [Flag("--export", "write the step's parameter dict to FILE (.json or .yaml)", True, complete="path:"),
                 Flag("--import", "set the step's parameters from a JSON/YAML mapping (selected_by: file:NAME)",
                      True, complete="path:")],
                details="Without values: the schema (types, constraints, defaults) with the current values. "
                        "Values are checked against the schema's constraints (ranges, choices, divisibility "
                        "by payload dimensions, relations such as reg_m <= block_m) before anything is applied.",
                category="2-steps"))
    add(Command("undo", "step back (the IR of every step is kept)", cmd_undo, category="3-history"))
    add(Command("redo", "step forward again", cmd_redo, category="3-history"))
    add(Command("show", "print the IR after step N (0 = payload)", cmd_show,
                [Arg("step", "step index", type="int", optional=True, complete="step")], category="3-history"))
    add(Command("diff", "unified diff: `diff` (last step), `diff N` (step N), `diff N M`", cmd_diff,
                [Arg("a", "step", type="int", optional=True, complete="step"),
                 Arg("b", "step", type="int", optional=True, complete="step")], category="3-history"))
    add(Command("history", "list the steps (current, undone, no-op, time)", cmd_history, category="3-history",
                aliases=("steps",)))
    add(Command("save", "save the session as a replayable pipeline YAML", cmd_save,
                [Arg("file", "session file", complete="path:.yaml")], category="4-files"))
    add(Command("replay", "load a saved session (its payload) and re-apply its steps", cmd_replay,
                [Arg("file", "session file", complete="path:.yaml")],
                [Flag("--payload", "use this payload instead of the recorded one", True, complete="path:.mlir")],
                category="4-files"))
    add(Command("resume", "restore the autosaved session of the loaded payload", cmd_resume, category="4-files"))
    add(Command("trust", "allow running a Python schedule file from outside the library", cmd_trust,
                [Arg("file", "schedule .py file", complete="path:.py")], category="4-files"))
    add(Command("target", "show targets or select one", cmd_target,
                [Arg("name", "target name", optional=True, complete="target")], category="5-run",
                aliases=("targets",)))
    add(Command("help", "list commands, or `help COMMAND`", cmd_help,
                [Arg("command", "command name", optional=True, complete="command")], category="9-misc"))
    add(Command("quit", "leave the workbench", cmd_quit, category="9-misc", aliases=("exit",)))
    return reg


def default_registry() -> Registry:
    reg = Registry()
    register_builtin(reg)
    from workbench.commands import run_commands

    run_commands.register(reg)
    from workbench.commands import tune_commands  # parameters issue 5: select, tune

    tune_commands.register(reg)
    from workbench.commands import edit_commands, export_commands  # front-end issue 4
    edit_commands.register(reg)
    export_commands.register(reg)
    return reg
