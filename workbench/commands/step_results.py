"""What applying a step reports: the Result of a step (diffstat, timing) and of a failure."""
from __future__ import annotations


from workbench.commands.registry import CommandContext
from workbench.result import Result
from workbench.session import SessionError, StepReport
from workbench.steps.kinds import Step


def fail(e: Exception) -> Result:
    return Result.failure(str(e), getattr(e, "detail", None) or None)


def line_count(text: str) -> int:
    """Lines of `text` (as splitlines counts them, without building the list: 640k-line IR)."""
    return text.count("\n") + (0 if not text or text.endswith("\n") else 1)


def diffstat(diff: str) -> tuple[int, int]:
    """(+lines, -lines) of a unified diff, counted in C (the diff of big IR has 100k's of lines)."""
    if not diff:
        return 0, 0
    body = "\n" + diff
    headers = 1 if diff.startswith("--- ") else 0   # the "--- a" / "+++ b" lines
    return body.count("\n+") - headers, body.count("\n-") - headers


def confirm_losing_steps(ctx: CommandContext, what: str) -> bool:
    """Interactive only: True when there are no unsaved steps, or the user agrees to lose them."""
    unsaved = ctx.session.unsaved_steps() if ctx.interactive else 0
    return not unsaved or ctx.confirm(f"{unsaved} step(s) not saved (`save FILE.yaml` keeps them): {what} anyway?")


def applied_result(ctx: CommandContext, applied, index: int) -> Result:
    s = ctx.session
    diff = s.diff(index - 1, index)
    plus, minus = diffstat(diff)
    rep = StepReport(index, applied.step.kind, applied.step.label(), applied.step.params, True,
                     applied.seconds, applied.output_sha, noop=applied.noop)
    change = "no change (no-op)" if applied.noop else f"+{plus} -{minus} lines"
    printed = getattr(applied, "printed", "")
    return Result(True, f"step {index}: {applied.step.label()}  [{change}, {applied.seconds * 1000:.1f} ms]",
                  kind="step", data={"step": rep.to_json(), **({"printed": printed} if printed else {})},
                  body=printed.rstrip("\n") or None)


def apply_step(ctx: CommandContext, step: Step) -> Result:
    s = ctx.session
    undone = [a.step.label() for a in s.steps[s.cursor:]] if s.loaded else []
    try:
        applied = s.apply(step, printed=True)   # its diffstat is shown at once
    except SessionError as e:
        res = fail(e)
        # the failed step's record (headless --json lists it with ok=false)
        res.data["step"] = StepReport(s.cursor + 1, step.kind, step.label(), step.params, False, 0.0, None,
                                      str(e)).to_json()
        return res
    res = applied_result(ctx, applied, s.cursor)
    if undone:   # a new step after `undo` drops the undone ones: say so (`redo` has nothing left)
        shown = undone[0] if len(undone) == 1 else f"{undone[0]}, ..."
        res.summary += f" (replaces {len(undone)} undone step{'s' if len(undone) > 1 else ''}: {shown})"
        res.data["dropped_undone"] = undone
    return res
