"""Adding and editing steps: `apply`, `pass`, `bench`, `params`. Each handler takes (ctx, args) and returns a Result."""
from __future__ import annotations

from pathlib import Path

import yaml

from workbench.commands.registry import Arg, Args, Command, CommandContext, Flag, Registry, UsageError
from workbench.commands.step_results import apply_step, applied_result, fail
from workbench.common import split_input, trust_store
from workbench.common.files import output_file
from workbench.result import Result
from workbench.session import SessionError, StepReport
from workbench.steps import spec as S
from workbench.steps.kinds import Step, StepError, step_from_command
from workbench.steps.params import schema_json, schema_table
from workbench.targets import TargetError


def cmd_apply(ctx: CommandContext, a: Args) -> Result:
    s = ctx.session
    text = a["spec"]
    if not text:
        raise UsageError("apply needs a stage reference")
    base = Path.cwd()
    try:
        step = step_from_command(text, base)
    except (StepError, S.SpecError, TargetError) as e:
        return fail(e)
    if step.kind == "schedule" and ctx.interactive:
        # typing the file name is consent to run it (remembered by content for this user's replay
        # and resume); a script file read from elsewhere is not
        s.build_ctx.trusted.add(str(step.resolve()))
        if step.resolve().is_file():
            trust_store.record(step.resolve(), trust_store.PYTHON)
    return apply_step(ctx, step)


def cmd_pass(ctx: CommandContext, a: Args) -> Result:
    text = (a["pipeline"] or "").strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":   # pasted from a shell: `"builtin.module(...)"`
        text = text[1:-1].strip()
    if not text:
        raise UsageError("pass needs a pass pipeline")
    if text.startswith("-"):   # mlir-opt's own flags: `--pass-pipeline=...`, `-canonicalize -cse`, as run-line reads them
        try:
            pipelines = split_input.RunLine(0, "mlir-opt " + text).mlir_opt_pipelines()
        except split_input.ChunkError:
            return Result.failure(f"pass: {text} names no pass (mlir-opt flags like `--pass-pipeline=...` or "
                                  "`-canonicalize -cse`, or a pipeline like `func.func(canonicalize),cse`)")
        return _apply_pipelines(ctx, pipelines, "these flags")
    return apply_step(ctx, Step("pass", text, {}, {}, Path.cwd()))


def _apply_pipelines(ctx: CommandContext, pipelines: list[str], what: str, run_line: int | None = None) -> Result:
    """One pass step per pipeline of mlir-opt flags, nested as mlir-opt nests them (`-affine-loop-tile`:
    `func.func(affine-loop-tile)`), all or nothing: on a failure the earlier ones are undone (redo brings
    them back)."""
    s = ctx.session
    results = []
    for pipeline in pipelines:
        pipeline = s.nested_as_mlir_opt_does(pipeline)
        res = apply_step(ctx, Step("pass", pipeline, {}, {}, Path.cwd(), run_line=run_line))
        if not res.ok:
            for _ in results:
                s.undo()
            if results:
                res.error = f"{res.error} ({what}: the first {len(results)} step(s) were undone)"
            return res
        results.append(res)
    if len(results) == 1:
        return results[0]
    return Result(True, "; ".join(r.summary for r in results), data={"steps": [r.data for r in results]})


def cmd_run_line(ctx: CommandContext, a: Args) -> Result:
    """The payload file's `// RUN: mlir-opt ...` line N as pass steps (one per mlir-opt of its `|` chain)."""
    s = ctx.session
    try:
        s.require_loaded()
        text = s.payload_path.read_text()
    except SessionError as e:
        return fail(e)
    except (OSError, UnicodeDecodeError) as e:
        return Result.failure(f"cannot read {s.payload_path}: {getattr(e, 'strerror', None) or e}")
    runs = split_input.find_run_lines(text)
    if not runs:
        return Result.failure(f"{s.payload_path.name} has no `// RUN:` line")
    number = a["n"] if a.get("n") is not None else 1
    listing = "; ".join(f"{i}: line {r.number}" for i, r in enumerate(runs, start=1))
    if not 1 <= number <= len(runs):
        return Result.failure(f"{s.payload_path.name} has {len(runs)} RUN line{'s' if len(runs) != 1 else ''} "
                              f"({listing}), no RUN line {number}")
    run = split_input.compiling_run_line(runs, runs[number - 1])   # `mlir-runner %t`: the line that wrote %t
    try:
        pipelines = run.mlir_opt_pipelines()
    except split_input.ChunkError as e:
        return fail(e)
    if not pipelines:
        return Result.failure(f"RUN line {run.number} runs no mlir-opt: {run.command[:80]}")
    res = _apply_pipelines(ctx, pipelines, f"RUN line {run.number}", run_line=number)
    if (not res.ok and res.error and "split-input-file" in run.command and s.payload_chunk is None
            and s.payload_chunks > 1):
        # mlir-opt ran it on each chunk alone: on the whole file a script matches what another chunk holds
        res.error += (f" (the RUN line splits the file, -split-input-file: `load --chunk K "
                      f"{s.payload_path.name}` takes one of its {s.payload_chunks} chunks)")
    return res


def cmd_bench(ctx: CommandContext, a: Args) -> Result:
    try:
        params = S.parse_params(" ".join(a["params"]), step="bench")
    except S.SpecError as e:
        return fail(e)
    return apply_step(ctx, Step("bench", "bench", params, {}, Path.cwd()))


def cmd_params(ctx: CommandContext, a: Args) -> Result:
    s = ctx.session
    try:
        s.require_loaded()
    except SessionError as e:
        return fail(e)
    index = a["step"] if a.get("step") is not None else s.cursor
    if index == 0 and s.cursor > 0:
        return Result.failure("step 0 is the payload as loaded: it has no parameters "
                              f"(active steps: 1..{s.cursor})")
    if not 1 <= index <= s.cursor:
        return Result.failure(s.no_active_step(index))
    step = s.steps[index - 1].step
    given = [f"--{k}" for k in ("export", "import") if a.get(k)] + (["KEY=VALUE"] if a.get("values") else [])
    if len(given) > 1:   # one of them was silently dropped: --export won, --import ignored the values
        raise UsageError(f"params: {' and '.join(given)} do different things: give one of them")
    if a.get("export"):
        try:
            out = output_file(a["export"])
        except OSError as e:
            return Result.failure(f"cannot write {a['export']}: {e.strerror}")
        return _export_params(step, index, out)
    selected_by = None
    if a.get("import"):
        try:
            updates = S.check_params(_read_params_file(Path(a["import"])), f"step {index}")
        except (OSError, ValueError, yaml.YAMLError) as e:
            why = e.strerror if isinstance(e, OSError) and e.strerror else str(e).splitlines()[0]
            return Result.failure(f"cannot import parameters from {a['import']}: {why}")
        selected_by = f"file:{Path(a['import']).name}"
    elif not a["values"]:
        try:
            schema = step.schema(s.build_ctx)
        except StepError as e:
            return fail(e)
        data = {"step": index, "params": step.params, "table": schema_table(schema, step.params),
                "schema": schema_json(schema)}
        if step.selected_by:
            data["selected_by"] = step.selected_by
        if not schema.params and not schema.open:   # an empty table says nothing: say it, and where to look
            others = _steps_with_parameters(s)
            where = f"; steps with parameters: {', '.join(map(str, others))}" if others else ""
            return Result(True, f"step {index}: {step.label()} has no parameters{where}", data=data)
        return Result(True, f"step {index}: {step.label()}"
                      + (f" (selected by {step.selected_by})" if step.selected_by else ""), kind="table", data=data)
    else:
        try:
            updates = S.parse_params(" ".join(a["values"]), where="params", step=f"step {index}: {step.label()[:60]}")
        except S.SpecError as e:
            return fail(e)
    undone = [a.step.label() for a in s.steps[s.cursor:]]
    try:
        replaced = s.set_params(index, updates, selected_by=selected_by)
    except SessionError as e:
        return _with_steps_having(s, e, index, updates)
    res = applied_result(ctx, replaced[0], index)
    res.summary = f"re-applied steps {index}..{s.cursor}; " + res.summary
    if undone:   # the edit drops the undone steps, as a new step does: say so (`undo` of the edit brings them back)
        shown = undone[0] if len(undone) == 1 else f"{undone[0]}, ..."
        res.summary += (f" (drops {len(undone)} undone step{'s' if len(undone) > 1 else ''}: {shown}; `undo` "
                        "brings them back)")
        res.data["dropped_undone"] = undone
    res.data["reapplied"] = [StepReport(index + i, r.step.kind, r.step.label(), r.step.params, True, r.seconds,
                                        r.output_sha, noop=r.noop).to_json() for i, r in enumerate(replaced)]
    return res


def _schema_keys(s, index: int) -> set[str] | None:
    """The parameter names of active step `index` (None: its schema cannot be read or takes any key)."""
    try:
        schema = s.steps[index - 1].step.schema(s.build_ctx)
    except (StepError, OSError, ValueError):
        return None
    return None if schema.open else set(schema.params)


def _steps_with_parameters(s) -> list[int]:
    return [i for i in range(1, s.cursor + 1) if _schema_keys(s, i)]


def _with_steps_having(s, error: Exception, index: int, updates: dict) -> Result:
    """A failed edit; for a key this step does not have, the active steps that do (`params 1 tile_m=..`
    where step 2 is the tiling)."""
    message = str(error).strip()
    mine = _schema_keys(s, index)
    unknown = [k for k in updates if mine is not None and k not in mine]
    if unknown:
        having = [i for i in range(1, s.cursor + 1) if i != index and unknown[0] in (_schema_keys(s, i) or ())]
        if having:
            first, _, rest = message.partition("\n")
            message = (f"{first}; step {' and '.join(map(str, having))} has `{unknown[0]}`: "
                       f"params {having[0]} {unknown[0]}=...") + (f"\n{rest}" if rest else "")
    return Result.failure(message, getattr(error, "detail", None) or None)


def _export_params(step, index: int, path: Path) -> Result:
    """The step's parameter dict as JSON (.json) or YAML (anything else): a plain mapping."""
    import json

    from workbench.common import safe_yaml

    try:
        text = (json.dumps(step.params, indent=2) + "\n" if path.suffix == ".json"
                else safe_yaml.dump(dict(step.params), sort_keys=False))
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    except OSError as e:
        return Result.failure(f"cannot write {path}: {e.strerror}")
    return Result(True, f"step {index}: {len(step.params)} parameters written to {path}",
                  data={"step": index, "params": step.params, "path": str(path)})


def _read_params_file(path: Path) -> dict:
    """A parameter dict from JSON/YAML: a mapping, or {"params": mapping} (what a cost model writes)."""
    from workbench.common import safe_yaml

    doc = safe_yaml.load_file(path)  # JSON is YAML
    if isinstance(doc, dict) and isinstance(doc.get("params"), dict) and set(doc) <= {"params", "spec", "step",
                                                                                      "selected_by"}:
        doc = doc["params"]
    if not isinstance(doc, dict) or not doc:
        raise ValueError("expected a mapping of parameter names to values")
    return doc


def register(reg: Registry) -> None:
    add = reg.register
    add(Command("apply", "apply a stage: transform .mlir, schedule .py[gen=fn]{k=v}, pipeline .yaml, named pipeline",
                cmd_apply, [Arg("spec", "stage reference", type="rest", complete="spec")],
                details="Examples:\n  apply pipelines/lib/tile.mlir\n  apply pipelines/lib/tile.py[gen=tile_matmul]{tile_m=64}\n"
                        "  apply pipelines/lib/bufferization.yaml\n  apply cpu-lower",
                category="2-steps"))
    add(Command("pass", "apply an MLIR pass pipeline as a step", cmd_pass,
                [Arg("pipeline", "e.g. canonicalize,cse or func.func(convert-linalg-to-loops); mlir-opt's flags "
                                 "work too: -canonicalize -cse, --pass-pipeline=\"builtin.module(...)\"", type="rest",
                     complete="pass")], category="2-steps"))
    add(Command("run-line", "apply the passes of the payload file's `// RUN: mlir-opt ...` line N (default 1) "
                "as pass steps", cmd_run_line,
                [Arg("n", "which RUN line (1-based)", type="int", optional=True, complete="run_line")],
                details="Upstream test files say how mlir-opt runs them: `run-line` turns each mlir-opt of the "
                        "RUN line's `|` chain into a pass step (--pass-pipeline=... or --pass-name{options} "
                        "flags; output options such as --split-input-file are left out: `load --chunk K` "
                        "picks a chunk). FileCheck and other tools after the chain are ignored.",
                category="2-steps"))
    add(Command("bench", "insert the benchmark wrapper around the entry function as it is now", cmd_bench,
                [Arg("params", "warmup=N iterations=N entry=NAME", type="kv", optional=True, complete="param")],
                category="2-steps"))
    add(Command("params", "show or edit a step's parameters; editing re-applies from that step", cmd_params,
                [Arg("step", "step index (default: current)", type="int", optional=True, complete="step:applied"),
                 Arg("values", "key=value ...", type="kv", optional=True, complete="param")],
                [Flag("--export", "write the step's parameter dict to FILE (.json or .yaml)", True, complete="path:"),
                 Flag("--import", "set the step's parameters from a JSON/YAML mapping (selected_by: file:NAME)",
                      True, complete="path:")],
                details="Without values: the schema (types, constraints, defaults) with the current values. "
                        "Values are checked against the schema's constraints (ranges, choices, divisibility "
                        "by payload dimensions, relations such as reg_m <= block_m) before anything is applied.",
                category="2-steps"))
