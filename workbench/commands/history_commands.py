"""Moving through and looking at the steps: `undo`, `redo`, `show`, `diff`, `history`. Each handler takes (ctx, args) and returns a Result."""
from __future__ import annotations


from workbench.commands.registry import Arg, Args, Command, CommandContext, Flag, Registry
from workbench.commands.step_results import diffstat, fail, line_count
from workbench.result import Result
from workbench.session import SessionError


def cmd_undo(ctx: CommandContext, a: Args) -> Result:
    return _history_move(ctx, ctx.session.undo, "undone")


def cmd_redo(ctx: CommandContext, a: Args) -> Result:
    return _history_move(ctx, ctx.session.redo, "redone")


def _history_move(ctx: CommandContext, move, done: str) -> Result:
    """undo / redo: a step (the cursor moved) or a `params` edit (the edited step's dict came back)."""
    try:
        c = move()
    except SessionError as e:
        return fail(e)
    s = ctx.session
    edit = s.last_edit_moved
    if edit is None:
        return Result(True, f"{done}: now at step {c} of {len(s.steps)}", data={"cursor": c})
    params = s.steps[edit.index - 1].step.params
    what = edit.changed(undone=done == "undone")
    return Result(True, f"{done}: the parameter edit of step {edit.index} ({what}); now at step {c} of {len(s.steps)}",
                  data={"cursor": c, "params_edit": {"step": edit.index, "params": params}})


def cmd_show(ctx: CommandContext, a: Args) -> Result:
    s = ctx.session
    try:
        index = s.cursor if a.get("step") is None else a["step"]
        full = bool(a.get("full"))
        text = s.ir_at(index) if full else s.view_at(index)
        elided = not full and s.elides_at(index)
    except SessionError as e:
        return fail(e)
    note = "; long constants elided: `show --full` prints them" if elided else ""
    return Result(True, f"IR after step {index} ({line_count(text)} lines{note})", kind="ir", body=text,
                  data={"step": index, "ir_sha256": s.sha_at(index), "elided": elided})


def cmd_diff(ctx: CommandContext, a: Args) -> Result:
    s = ctx.session
    try:
        s.require_loaded()
        if a.get("a") is None:
            if s.cursor == 0:
                return Result.failure("no step applied yet: nothing to diff")
            i, j = s.cursor - 1, s.cursor
        elif a.get("b") is None:
            if a["a"] == 0:
                return Result.failure("step 0 is the payload: nothing before it to diff "
                                      "(`diff N` compares step N with the step before it; `diff 0 N` the payload with N)")
            s.key_at(a["a"])   # `diff 5` of a session of 1 step: "no step 5", not the step before it it would compare with
            i, j = a["a"] - 1, a["a"]
        else:
            i, j = a["a"], a["b"]
        diff = s.diff(i, j, full=bool(a.get("full")))
    except SessionError as e:
        return fail(e)
    if not diff:
        return Result(True, f"step {i} -> step {j}: identical IR (no-op)", kind="diff",
                      data={"from": i, "to": j, "noop": True, "added": 0, "removed": 0, "diff": ""})
    plus, minus = diffstat(diff)
    # --json has the diff too (it had only from / to / noop: a script's `diff 1 3` gave nothing to read)
    return Result(True, f"step {i} -> step {j}: +{plus} -{minus} lines", kind="diff", body=diff,
                  data={"from": i, "to": j, "noop": False, "added": plus, "removed": minus, "diff": diff})


def cmd_history(ctx: CommandContext, a: Args) -> Result:
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


def register(reg: Registry) -> None:
    add = reg.register
    add(Command("undo", "step back (the IR of every step is kept)", cmd_undo, category="3-history"))
    add(Command("redo", "step forward again", cmd_redo, category="3-history"))
    add(Command("show", "print the IR after step N (0 = payload)", cmd_show,
                [Arg("step", "step index", type="int", optional=True, complete="step")], category="3-history",
                flags=[Flag("--full", "long constants (weights) too; by default each shows as `__elided__ SIZE, sha256 ...`")]))
    add(Command("diff", "unified diff: `diff` (last step), `diff N` (step N), `diff N M`", cmd_diff,
                [Arg("a", "step", type="int", optional=True, complete="step"),
                 Arg("b", "step", type="int", optional=True, complete="step")], category="3-history",
                flags=[Flag("--full", "long constants (weights) too; by default a changed one shows as its placeholder's sha256")]))
    add(Command("history", "list the steps (current, undone, no-op, time)", cmd_history, category="3-history",
                aliases=("steps",)))
