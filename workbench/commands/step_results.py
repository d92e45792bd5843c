"""What applying a step reports: the Result of a step (diffstat, timing) and of a failure."""
from __future__ import annotations


from workbench.commands.registry import CommandContext
from workbench.result import Result
from workbench.session import SessionError, StepReport
from workbench.steps.kinds import Step


def fail(e: Exception) -> Result:
    return Result.failure(str(e), getattr(e, "detail", None) or None)


def diffstat(diff: str) -> tuple[int, int]:
    plus = sum(1 for ln in diff.splitlines() if ln.startswith("+") and not ln.startswith("+++"))
    minus = sum(1 for ln in diff.splitlines() if ln.startswith("-") and not ln.startswith("---"))
    return plus, minus


def applied_result(ctx: CommandContext, applied, index: int) -> Result:
    s = ctx.session
    diff = s.diff(index - 1, index)
    plus, minus = diffstat(diff)
    rep = StepReport(index, applied.step.kind, applied.step.label(), applied.step.params, True,
                     applied.seconds, applied.output_sha, noop=applied.noop)
    change = "no change (no-op)" if applied.noop else f"+{plus} -{minus} lines"
    return Result(True, f"step {index}: {applied.step.label()}  [{change}, {applied.seconds * 1000:.1f} ms]",
                  kind="step", data={"step": rep.to_json()})


def apply_step(ctx: CommandContext, step: Step) -> Result:
    s = ctx.session
    try:
        applied = s.apply(step)
    except SessionError as e:
        res = fail(e)
        # the failed step's record (headless --json lists it with ok=false)
        res.data["step"] = StepReport(s.cursor + 1, step.kind, step.label(), step.params, False, 0.0, None,
                                      str(e)).to_json()
        return res
    return applied_result(ctx, applied, s.cursor)
