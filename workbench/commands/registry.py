"""The command registry: one table of commands used by the TUI, the REPL and scripts.

Each command has a name, typed arguments, help text and completion, and returns a
`Result`. `Registry.dispatch(line)` parses a command line and never raises for
user errors: bad input becomes a failed `Result` with a one-line error.
"""
from __future__ import annotations

import math
import re
import threading
from dataclasses import dataclass, field
from typing import Any, Callable

from workbench.common.integers import decimal_digits
from workbench.common.suggest import did_you_mean
from workbench.result import Result

#: how deep this thread is in `Registry.dispatch` (a script's lines are dispatched inside its command)
_dispatching = threading.local()


#: a command's parsed arguments: argument and flag names -> values
Args = dict[str, Any]


class UsageError(ValueError):
    pass


@dataclass
class Arg:
    name: str
    help: str = ""
    type: str = "str"        # str | int | rest (raw remainder of the line) | kv (key=val tokens)
    optional: bool = False
    complete: str = ""       # what completion offers: path | step | command | spec | param | target | ''


@dataclass
class Flag:
    name: str                # "--json"
    help: str = ""
    takes_value: bool = False
    type: str = "str"
    complete: str = ""
    metavar: str = ""        # the value's name in usage lines (default: the flag's name in capitals)
    minimum: float | None = None   # int/float values below it are a usage error (`--iterations 0`)
    maximum: float | None = None   # ... and above it (`--iterations 10**20`: the wrapper's i64 loop bound)


@dataclass
class Command:
    name: str
    summary: str
    handler: Callable[["CommandContext", Args], Result]
    args: list[Arg] = field(default_factory=list)
    flags: list[Flag] = field(default_factory=list)
    details: str = ""
    aliases: tuple[str, ...] = ()
    category: str = "session"

    @property
    def usage(self) -> str:
        return self._usage(brief=False)

    @property
    def brief_usage(self) -> str:
        """The usage line for the command list: up to two options spelled out, more as [OPTIONS]."""
        return self._usage(brief=True)

    def _usage(self, brief: bool) -> str:
        parts = [self.name]
        if brief and len(self.flags) > 2:
            parts.append("[OPTIONS]")
        else:
            for f in self.flags:
                parts.append(f"[{f.name}{' ' + (f.metavar or f.name.strip('-').upper()) if f.takes_value else ''}]")
        for a in self.args:
            label = a.name.upper() + ("..." if a.type in ("rest", "kv") else "")
            parts.append(f"[{label}]" if a.optional else label)
        return " ".join(parts)

    def usage_hint(self) -> str:
        """`usage: ...` for an error line, or where the options are when that line would be long
        (`run`'s usage is 400 characters)."""
        return f"usage: {self.usage}" if len(self.usage) <= 80 else f"`help {self.name}` lists its options"

    def help_text(self) -> str:
        lines = [f"usage: {self.usage}", "", self.summary]
        if self.details:
            lines += ["", self.details.strip()]
        if self.args or self.flags:
            lines.append("")
        for a in self.args:
            lines.append(f"  {a.name.upper():<14} {a.help}")
        for f in self.flags:
            lines.append(f"  {f.name:<14} {f.help}")
        return "\n".join(lines)


class CommandContext:
    """What a command handler may use: the session and front-end callbacks."""

    def __init__(self, session, registry: "Registry", interactive: bool = False,
                 confirm: Callable[[str], bool] | None = None,
                 progress: Callable[[str], None] | None = None):
        self.session = session
        self.registry = registry
        self.interactive = interactive
        self.confirm = confirm or (lambda question: False)
        self.progress = progress or (lambda message: None)
        self.quit_requested = False


class Registry:
    def __init__(self) -> None:
        self.commands: dict[str, Command] = {}
        self._aliases: dict[str, str] = {}

    def register(self, cmd: Command) -> Command:
        self.commands[cmd.name] = cmd
        for a in cmd.aliases:
            self._aliases[a] = cmd.name
        return cmd

    def get(self, name: str) -> Command | None:
        return self.commands.get(self._aliases.get(name, name))

    def names(self) -> list[str]:
        return sorted(self.commands)

    def unknown_command(self, name: str) -> str:
        """The one-line error for a command name that is not one: the close names, or where the list is."""
        hint = did_you_mean(name, [*self.names(), *self._aliases]) or " (type `help` for the list)"
        return f"unknown command '{name}'{hint}"   # as typed: no repr escapes (`\\.`)

    # -- parsing -------------------------------------------------------------------------
    def parse(self, line: str) -> tuple[Command, dict[str, Any]]:
        line = line.strip()
        name, _, rest = line.partition(" ")
        cmd = self.get(name)
        if cmd is None:
            raise UsageError(self.unknown_command(name))
        return cmd, parse_args(cmd, rest)

    def dispatch(self, line: str, ctx: CommandContext) -> Result:
        from workbench.execution.worker_client import begin_command, command_cancelled

        outermost = not getattr(_dispatching, "depth", 0)
        if outermost:   # a new command (not a script's line): no cancel pending
            begin_command()
        # a cancelled command (Ctrl-C in the REPL, Esc in the TUI) leaves the session as it was, whatever it had
        # done before (`select --apply` had applied some of its steps)
        snapshot = ctx.session.state_snapshot() if outermost and hasattr(ctx.session, "state_snapshot") else None
        _dispatching.depth = getattr(_dispatching, "depth", 0) + 1
        try:
            result = self._dispatch(line, ctx)
        except KeyboardInterrupt:
            if snapshot is not None:
                ctx.session.restore_state(snapshot)
            raise
        finally:
            _dispatching.depth -= 1
        if snapshot is not None and not result.ok and command_cancelled():
            ctx.session.restore_state(snapshot)
        return result

    def _dispatch(self, line: str, ctx: CommandContext) -> Result:
        try:
            cmd, args = self.parse(line)
        except UsageError as e:
            return Result.failure(str(e))
        try:
            result = cmd.handler(ctx, args)
        except UsageError as e:
            return Result.failure(f"{e}; {cmd.usage_hint()}")
        except (OSError, ValueError) as e:   # bad input the handler did not expect: one line, never a traceback
            return Result.failure(f"{cmd.name}: {one_line_error(e)}", command=cmd.name)
        except Exception as e:
            import traceback

            return Result.failure(f"{cmd.name}: internal error: {type(e).__name__}: {one_line_error(e)}",
                                  command=cmd.name, traceback=traceback.format_exc())
        result.data.setdefault("command", cmd.name)
        return result


def one_line_error(e: BaseException) -> str:
    """An exception as one readable line (OS errors with their file name, decode errors with the byte)."""
    if isinstance(e, OSError) and e.strerror:
        return f"{e.filename}: {e.strerror}" if e.filename else e.strerror
    if isinstance(e, UnicodeDecodeError):
        return f"not UTF-8 text (byte {e.start}: {e.object[e.start:e.start + 1]!r})"
    text = str(e).strip().splitlines()
    return text[0] if text else type(e).__name__


#: the largest integer an int option or argument takes: every one ends up a C or MLIR integer somewhere
MAX_INT = 2**63 - 1


def _convert(value: str, typ: str, name: str) -> Any:
    if typ == "int":
        try:
            number = int(value)
        except ValueError:
            if decimal_digits(value):   # over Python's 4300 digits: an integer, and too large
                raise UsageError(f"{name} must be an integer that fits in 64 bits, got one of "
                                 f"{decimal_digits(value)} digits")
            raise UsageError(f"{name} must be an integer, got {value!r}")
        if abs(number) > MAX_INT:   # `show 10**20` is "no step", `run --iterations 10**20` was an internal error
            raise UsageError(f"{name} must be an integer that fits in 64 bits, got {value}")
        return number
    if typ == "float":
        try:
            number = float(value)
        except ValueError:
            raise UsageError(f"{name} must be a number, got {value!r}")
        if not math.isfinite(number):   # `run --timeout nan` was "cannot convert float NaN to integer"
            raise UsageError(f"{name} must be a finite number, got {value!r}")
        return number
    return value


def _first_token(text: str, where: str) -> tuple[str, str]:
    text = text.lstrip()
    if text[:1] in ("'", '"'):
        end = text.find(text[0], 1)
        if end < 0:
            raise UsageError(f"{where}: unbalanced quote in {text!r}")
        return text[1:end], text[end + 1:]
    parts = re.split(r"\s+", text, maxsplit=1)
    return parts[0], (parts[1] if len(parts) > 1 else "")


def parse_args(cmd: Command, rest: str) -> dict[str, Any]:
    """Flags first (anywhere before a `rest` argument, and after a `kv` list), then positionals in order."""
    out: dict[str, Any] = {f.name.lstrip("-").replace("-", "_"): (None if f.takes_value else False) for f in cmd.flags}
    flags = {f.name: f for f in cmd.flags}
    positionals = list(cmd.args)
    text = rest.strip()
    while positionals or text:
        text = text.lstrip()
        if not text:
            break
        # flags (a command without options whose next argument takes the rest of the line gets `--x` as
        # text: `pass --pass-pipeline=...` is mlir-opt's flag, not the command's)
        rest_next = bool(positionals) and positionals[0].type == "rest" and not cmd.flags
        if text.startswith("--") and not rest_next:
            key = re.match(r"--[^\s=]*", text).group(0)
            after = text[len(key):]
            flag = flags.get(key)
            if flag is None:
                hint = did_you_mean(key, flags) or f" (options: {', '.join(flags) or 'none'})"
                raise UsageError(f"{cmd.name}: unknown option {key}{hint}; `help {cmd.name}` explains them")
            dest = flag.name.lstrip("-").replace("-", "_")
            if flag.takes_value:
                # the value: the next word, or a quoted string (spaces and | kept, quotes dropped)
                inline = after.startswith("=")
                value, remainder = ("", after[1:]) if inline and after[1:2] in ("", " ") else \
                    _first_token(after[1:] if inline else after, cmd.name)
                if not value.strip():
                    raise UsageError(f"{cmd.name}: option {key} needs a value")
                out[dest] = _convert(value, flag.type, f"{cmd.name}: {key}")   # as the range errors name it
                if flag.minimum is not None and out[dest] < flag.minimum:
                    raise UsageError(f"{cmd.name}: {key} must be >= {flag.minimum:g}, got {value}")
                if flag.maximum is not None and out[dest] > flag.maximum:
                    most = int(flag.maximum) if float(flag.maximum).is_integer() else flag.maximum
                    raise UsageError(f"{cmd.name}: {key} must be <= {most}, got {value}")
            else:
                out[dest] = True
                remainder = after.partition(" ")[2] if after.startswith("=") else after
            text = remainder
            continue
        if not positionals:
            raise UsageError(f"{cmd.name}: unexpected argument {text.split()[0]!r} ({cmd.usage_hint()})")
        arg = positionals.pop(0)
        if arg.type == "rest":
            out[arg.name] = text.strip()
            text = ""
            continue
        if arg.type == "kv":
            from workbench.steps.spec import SpecError, tokenize

            try:
                tokens = tokenize(text)
            except SpecError as e:
                raise UsageError(str(e))
            # options may follow the values (`tune 1 tile=[16,32] --trials 8`): they end the key=value list
            first_flag = next((i for i, t in enumerate(tokens) if t.startswith("--") and cmd.flags), len(tokens))
            out[arg.name] = tokens[:first_flag]
            text = " ".join(tokens[first_flag:])
            continue
        tok, text = _first_token(text, cmd.name)
        if not tok.strip():   # `save ""` was "cannot write : Is a directory", `save "  "` a file named two spaces
            raise UsageError(f"{cmd.name}: {arg.name.upper()} is empty ({cmd.usage_hint()})")
        out[arg.name] = _convert(tok, arg.type, f"{cmd.name}: {arg.name}")
    for arg in positionals:
        if arg.optional:
            out.setdefault(arg.name, [] if arg.type == "kv" else None)
        else:
            raise UsageError(f"{cmd.name}: missing {arg.name.upper()} ({cmd.usage_hint()})")
    return out
