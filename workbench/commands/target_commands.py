"""Targets: `target` (alias `targets`). Each handler takes (ctx, args) and returns a Result."""
from __future__ import annotations


from workbench.commands.registry import Arg, Args, Command, CommandContext, Registry
from workbench.commands.step_results import fail
from workbench.result import Result
from workbench.session import SessionError
from workbench.targets import all_targets


def cmd_target(ctx: CommandContext, a: Args) -> Result:
    s = ctx.session
    if a.get("name"):
        try:
            s.select_target(a["name"])
        except SessionError as e:
            return fail(e)
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


def register(reg: Registry) -> None:
    add = reg.register
    add(Command("target", "show targets or select one", cmd_target,
                [Arg("name", "target name", optional=True, complete="target")], category="5-run",
                aliases=("targets",)))
