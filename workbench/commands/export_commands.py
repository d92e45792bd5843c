"""`export reproducer [FILE]` and `export cmdline [FILE]`: the session as mlir-opt input.

Pass steps (and pipelines / includes, which expand to passes) become
`--pass-pipeline='builtin.module(...)'`; transform-module steps become
`transform-preload-library` + `transform-interpreter`, one mlir-opt per step.
Python schedules, the benchmark wrapper and hand edits have no mlir-opt spelling:
the reproducer then starts from the IR *after* the last such step and says so.
When every step is a pass, the file also carries MLIR's reproducer block, so
`mlir-opt --run-reproducer FILE` works too.
"""
from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path

from workbench.commands.registry import Args, Arg, Command, CommandContext, Registry, UsageError
from workbench.paths import state_dir
from workbench.result import Result
from workbench.common.files import output_file
from workbench.session import atomic_write

WHAT = ("reproducer", "cmdline")


@dataclass
class Plan:
    start: int                       # the reproducer's input is the IR after this step
    invocations: list[dict] = field(default_factory=list)   # {"pipeline": str} | {"transform": text, "entry", "step"}
    opaque: list[str] = field(default_factory=list)          # labels of the steps that forced `start`


def _legacy_script(stage: dict) -> bool:
    """A transform file of an older upstream test: top-level `transform.sequence` ops and no named sequence
    of the entry, which the worker runs in order but today's transform-interpreter cannot (no mlir-opt
    spelling: `could not find a nested named sequence`)."""
    entry = re.escape(stage.get("entry") or "__transform_main")
    text = stage.get("text") or ""
    return (re.search(rf'transform\.named_sequence\s+@"?{entry}\b', text) is None
            and re.search(r"^\s*transform\.sequence\b", text, re.M) is not None)


#: a pass of the workbench's own (`lh-specialize-shapes`, `lh-erase-transform-schedules`, ...: every one is named
#: `lh-*`, tests/test_qa_round5.py checks it): mlir-opt has none of them
_WORKBENCH_PASS = re.compile(r"(?:^|[\s(,])lh-[A-Za-z0-9_-]+")


def _workbench_pass(stage: dict) -> bool:
    return stage["kind"] == "pass" and _WORKBENCH_PASS.search(stage.get("pipeline") or "") is not None


def plan_for(session) -> Plan:
    stages_per_step: list[list[dict] | None] = []
    for a in session.active_steps:
        try:
            stages = a.step.stages(session.build_ctx)
        except Exception:
            stages = None
        if stages is not None and any(s["kind"] not in ("pass", "transform") or _workbench_pass(s) or
                                      (s["kind"] == "transform" and _legacy_script(s)) for s in stages):
            stages = None
        stages_per_step.append(stages)
    start = 0
    for i, st in enumerate(stages_per_step, start=1):
        if st is None:
            start = i
    plan = Plan(start, opaque=[session.steps[i - 1].step.label() for i, st in
                               enumerate(stages_per_step, start=1) if st is None])
    passes: list[str] = []
    for i in range(start + 1, session.cursor + 1):
        for st in stages_per_step[i - 1]:
            if st["kind"] == "pass":
                p = st["pipeline"].strip()
                if p.startswith("builtin.module(") and p.endswith(")"):
                    p = p[len("builtin.module("):-1]
                passes.append(p)
                continue
            if passes:
                plan.invocations.append({"pipeline": ",".join(passes)})
                passes = []
            plan.invocations.append({"transform": st["text"], "entry": st.get("entry") or "__transform_main",
                                     "step": i, "path": st.get("path")})
    if passes:
        plan.invocations.append({"pipeline": ",".join(passes)})
    return plan


def command_line(plan: Plan, input_path: str, transform_files: dict[int, str], tool: str = "mlir-opt") -> str:
    parts = []
    for n, inv in enumerate(plan.invocations):
        args = [tool] + ([input_path] if n == 0 else [])
        if "pipeline" in inv:
            args.append(f"--pass-pipeline=builtin.module({inv['pipeline']})")
        else:
            lib = transform_files[n]
            args.append(f"--pass-pipeline=builtin.module(transform-preload-library{{transform-library-paths={lib}}},"
                        f"transform-interpreter{{entry-point={inv['entry']}}})")
        parts.append(" ".join(shlex.quote(x) for x in args))
    if not parts:
        parts = [f"{tool} {shlex.quote(input_path)}"]
    return " \\\n  | ".join(parts)


def _write_transforms(plan: Plan, stem: Path) -> dict[int, str]:
    files: dict[int, str] = {}
    for n, inv in enumerate(plan.invocations):
        if "transform" in inv:
            p = stem.with_name(f"{stem.name}.step{inv['step']}.transform.mlir")
            atomic_write(p, inv["transform"])
            files[n] = str(p)
    return files


def _nothing_after_opaque(session, plan: Plan, what: str) -> Result | None:
    """The failure where the last active step has no mlir-opt spelling: there is no step left for
    mlir-opt to run (it said `steps 3..2` and wrote a bare `mlir-opt FILE`)."""
    if plan.start < session.cursor:
        return None
    return Result.failure(f"step {plan.start} ({session.steps[plan.start - 1].step.label()}) has no mlir-opt "
                          f"spelling and no step after it has one: {what} (`show --full {plan.start}` "
                          "prints its IR)")


def export_reproducer(ctx: CommandContext, file: str | None) -> Result:
    s = ctx.session
    if not s.loaded:
        return Result.failure("no payload loaded: nothing to export")
    if s.cursor == 0:
        return Result.failure("no step applied yet: nothing to reproduce")
    plan = plan_for(s)
    refused = _nothing_after_opaque(s, plan, "nothing to reproduce")
    if refused is not None:
        return refused
    stem = s.payload_path.stem if s.payload_path else "module"
    try:
        out = output_file(file) if file else Path(f"{stem}-repro.mlir")
    except OSError as e:
        return Result.failure(f"cannot write {file}: {e.strerror}")
    transforms = _write_transforms(plan, out.with_suffix(""))
    cmd = command_line(plan, str(out), transforms)
    ir_text = s.ir_at(plan.start)
    head = [f"// lh-workbench reproducer: {s.payload_path.name if s.payload_path else 'module'}, "
            f"steps {plan.start + 1}..{s.cursor}",
            "// Reproduce with:"]
    head += ["//   " + ln for ln in cmd.splitlines()]
    if plan.start:
        head.append(f"// This is the IR after step {plan.start}: steps without an mlir-opt spelling "
                    f"({'; '.join(plan.opaque)}) ran before it.")
    for inv in plan.invocations:
        if "transform" in inv and inv.get("path"):
            head.append(f"// step {inv['step']}: transform module from {inv['path']}")
    body = "\n".join(head) + "\n" + ir_text.rstrip("\n") + "\n"
    only_passes = all("pipeline" in inv for inv in plan.invocations)
    if only_passes and len(plan.invocations) == 1 and "{-#" not in ir_text:
        pipeline = f"builtin.module({plan.invocations[0]['pipeline']})".replace('"', '\\"')
        body += ("\n{-#\n  external_resources: {\n    mlir_reproducer: {\n"
                 f"      pipeline: \"{pipeline}\",\n      disable_threading: true,\n      verify_each: true\n"
                 "    }\n  }\n#-}\n")
    try:
        atomic_write(out, body)
    except OSError as e:
        return Result.failure(f"cannot write {out}: {e.strerror}")
    extra = f" (starts after step {plan.start})" if plan.start else ""
    return Result(True, f"wrote reproducer {out}{extra}; run: {cmd.splitlines()[0]}"
                  + (" ..." if "\n" in cmd else ""),
                  data={"path": str(out), "cmdline": cmd, "clipboard": cmd, "start_step": plan.start,
                        "transform_files": list(transforms.values())})


def export_cmdline(ctx: CommandContext, file: str | None) -> Result:
    s = ctx.session
    if not s.loaded:
        return Result.failure("no payload loaded: nothing to export")
    if s.cursor == 0:   # as `export reproducer`: `mlir-opt payload` alone is no command line of the steps
        return Result.failure("no step applied yet: no command line to export")
    plan = plan_for(s)
    refused = _nothing_after_opaque(s, plan, "no command line to export")
    if refused is not None:
        return refused
    exports = state_dir() / "exports"
    stem = s.payload_path.stem if s.payload_path else "module"
    if plan.start == 0 and s.payload_path is not None:
        input_path = str(s.payload_path)
    else:
        p = exports / f"{stem}-after-step{plan.start}.mlir"
        atomic_write(p, s.ir_at(plan.start))
        input_path = str(p)
    transforms = _write_transforms(plan, exports / f"{stem}-cmdline")
    cmd = command_line(plan, input_path, transforms)
    if file:
        try:
            atomic_write(output_file(file), "#!/bin/sh\n" + cmd + "\n")
        except OSError as e:
            return Result.failure(f"cannot write {file}: {e.strerror}")
    note = f" (input: IR after step {plan.start})" if plan.start else ""
    if file:   # `export cmdline FILE` said only "mlir-opt command line for steps 1..3"
        note += f"; wrote {file}"
    return Result(True, f"mlir-opt command line for steps {plan.start + 1}..{s.cursor}{note}", body=cmd,
                  data={"cmdline": cmd, "clipboard": cmd, "start_step": plan.start, "path": file})


def cmd_export(ctx: CommandContext, a: Args) -> Result:
    what = a["what"]
    if what not in WHAT:
        raise UsageError(f"export what? one of: {', '.join(WHAT)}")
    if what == "reproducer":
        return export_reproducer(ctx, a.get("file"))
    return export_cmdline(ctx, a.get("file"))


def register(reg: Registry) -> Registry:
    if reg.get("export") is None:
        reg.register(Command("export", "export reproducer [FILE.mlir] (payload + mlir-opt steps) | export cmdline [FILE]",
                             cmd_export,
                             [Arg("what", "reproducer | cmdline", complete="choice:" + ",".join(WHAT)),
                              Arg("file", "output file", optional=True, complete="path")],
                             details="`export reproducer` writes an .mlir file holding the IR and, in its header, "
                                     "the mlir-opt command line that replays the steps; `export cmdline` prints "
                                     "that command line (the TUI also copies it to the clipboard).",
                             category="4-files"))
    return reg
