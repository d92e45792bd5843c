"""`help` and `quit`. Each handler takes (ctx, args) and returns a Result."""
from __future__ import annotations


from workbench.commands.registry import Arg, Args, Command, CommandContext, Registry
from workbench.result import Result
from workbench.steps.kinds import kind_help


def cmd_help(ctx: CommandContext, a: Args) -> Result:
    reg = ctx.registry
    name = a.get("command")
    if name:
        cmd = reg.get(name)
        if cmd is None:
            return Result.failure(reg.unknown_command(name))
        return Result(True, "", kind="help", body=cmd.help_text(), data={"help": cmd.name})
    rows = [[c.brief_usage, c.summary] for c in sorted(reg.commands.values(), key=lambda c: (c.category, c.name))]
    kinds = "\n".join(f"  {k:<10} {v}" for k, v in kind_help().items())
    return Result(True, "commands (help COMMAND for its options and details):", kind="table",
                  body="step kinds (for apply and pipeline files):\n" + kinds,
                  data={"table": {"columns": ["usage", "what it does"], "rows": rows}})


def cmd_quit(ctx: CommandContext, a: Args) -> Result:
    # (the TUI asks before it exits with unsaved steps; the REPL's journal keeps them for `resume`)
    ctx.quit_requested = True
    s = ctx.session
    unsaved = s.unsaved_steps() if s.loaded else 0
    if unsaved and ctx.interactive and s.journal_enabled and not s.journal_error:   # say where the work went
        return Result(True, f"bye; {unsaved} unsaved step{'s' if unsaved != 1 else ''} kept in the autosave "
                            f"journal: `lh-workbench {s.payload_path} --resume` restores them",
                      data={"unsaved_steps": unsaved})
    return Result(True, "bye")


def register(reg: Registry) -> None:
    add = reg.register
    add(Command("help", "list commands, or `help COMMAND`", cmd_help,
                [Arg("command", "command name", optional=True, complete="command")], category="9-misc"))
    add(Command("quit", "leave the workbench", cmd_quit, category="9-misc", aliases=("exit",)))
