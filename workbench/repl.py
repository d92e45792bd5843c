"""The prompt-toolkit REPL (`--repl`, or stdin not a terminal): same registry, same completion.

Every line goes through `ctx.registry.dispatch`; the session is autosaved after each
command; the history file lives in the state directory; IR is printed highlighted.
"""
from __future__ import annotations

import sys
from pathlib import Path

from prompt_toolkit import PromptSession
from prompt_toolkit.completion import Completer as PTCompleter
from prompt_toolkit.completion import Completion as PTCompletion
from prompt_toolkit.history import FileHistory, InMemoryHistory

from workbench.commands.registry import CommandContext
from workbench.commands.script import without_comment
from workbench.completion import Completer
from workbench.result import Result

PROMPT = "wb> "


class RegistryCompleter(PTCompleter):
    """prompt-toolkit adapter of `workbench.completion.Completer`."""

    def __init__(self, completer: Completer) -> None:
        self.completer = completer

    def get_completions(self, document, complete_event):
        before = document.text_before_cursor
        for c in self.completer.complete(before):
            yield PTCompletion(c.text, start_position=c.start - len(before), display=c.display or c.text,
                               display_meta=c.meta)


def history_path() -> Path:
    from workbench.paths import state_dir

    return state_dir() / "repl_history"


#: IR / diffs longer than this are not highlighted (rich's highlighter is slow on 100k's of
#: lines) and, on a terminal, go through the pager ($PAGER, e.g. `less -R`: search with /)
BIG_BODY_LINES = 3000


def render(res: Result, console) -> None:
    """Print a result: IR with MLIR highlighting, run timings as a terminal plot; big IR or diffs
    plain, through the pager on a terminal. Not on a terminal (piped, a log), the plain text of `--script`:
    rich's code views pad every line to the console's width and cut what is longer (a diff lost the end of
    each line past 80 columns)."""
    if not console.is_terminal:
        console.out(res.plain(), highlight=False)
        return
    if res.ok and res.kind in ("ir", "diff", "asm") and res.body and res.body.count("\n") > BIG_BODY_LINES:
        if res.summary:
            console.print(res.summary, style="bold green", highlight=False)
        if console.is_terminal:
            with console.pager(styles=False):
                console.out(res.body, highlight=False)
        else:
            console.out(res.body.rstrip("\n"), highlight=False)
    elif res.ok and res.kind == "ir" and res.body:
        from rich.syntax import Syntax

        from workbench.highlight import mlir_lexer

        if res.summary:
            console.print(res.summary, style="bold green", highlight=False)
        console.print(Syntax(res.body, mlir_lexer(), line_numbers=False, word_wrap=True,   # not cropped
                             background_color="default"))
    else:
        console.print(res.rich())
    plot = plot_text(res, width=min(console.width, 100))
    if plot:
        from rich.text import Text

        console.print(Text.from_ansi(plot))


def plot_text(res: Result, width: int = 80, height: int = 15) -> str | None:
    """A plotext line plot of `data['run']['times_s']` (ms per iteration), or None."""
    run = res.data.get("run") if res.ok else None
    if not isinstance(run, dict) or not run.get("times_s"):
        return None
    try:
        import plotext as plt
    except ImportError:
        return None
    ys = [t * 1e3 for t in run["times_s"]]
    plt.clear_figure()
    plt.plot(list(range(1, len(ys) + 1)), ys, marker="braille")
    title = "per-iteration time (ms)"
    if run.get("median_s") is not None:
        title += f", median {run['median_s'] * 1e3:.3g} ms"
    if run.get("gflops"):
        title += f", {run['gflops']:.3g} GFLOP/s"
    plt.title(title)
    plt.plotsize(width, height)
    plt.theme("clear")
    return plt.build()


class TolerantFileHistory(FileHistory):
    """A file history that survives a full or read-only disk: the first failed write is reported
    once (`warn`), later lines are kept in memory only; the REPL never loses input over it."""

    def __init__(self, filename: str, warn=None) -> None:
        super().__init__(filename)
        self.warn = warn
        self.failed = False

    def load_history_strings(self):
        try:
            yield from super().load_history_strings()
        except (OSError, UnicodeDecodeError):
            return

    def store_string(self, string: str) -> None:
        if self.failed:
            return
        try:
            super().store_string(string)
        except OSError as e:
            self.failed = True
            if self.warn:
                self.warn(f"warning: cannot write the command history {self.filename}: {e.strerror or e}; "
                          "keeping it in memory")


def make_session(ctx: CommandContext, input=None, output=None, history_file: Path | None = None,
                 warn=None) -> PromptSession:
    history = (TolerantFileHistory(str(history_file or history_path()), warn) if history_file is not False
               else InMemoryHistory())
    return PromptSession(PROMPT, completer=RegistryCompleter(Completer(ctx.registry, ctx.session)),
                         complete_while_typing=False, history=history, input=input, output=output)


class _PipedLines:
    """The REPL's prompt where stdin is a pipe or a file: one line a command, echoed after the prompt so that the
    transcript reads as a session does; EOFError at the end."""

    def __init__(self, console):
        self.console = console
        self.message = PROMPT

    def prompt(self, *args, **kwargs) -> str:
        line = sys.stdin.readline()
        if not line:
            raise EOFError
        line = line.rstrip("\r\n")
        self.console.print(f"{PROMPT}{line}", highlight=False, markup=False, soft_wrap=True)
        return line


def run_repl(ctx: CommandContext, input=None, output=None, console=None, history_file: Path | None = None,
             resume: bool | None = None) -> int:
    """Read-dispatch-print until `quit` or EOF. Returns the number of failed commands.

    `resume`: True restores an autosaved session of the payload without asking, False never
    offers it, None asks (only on a terminal). Ctrl-C during a command cancels it (the worker
    doing it is killed; the session stays as it was), like Esc in the TUI."""
    from rich.console import Console

    # not on a terminal (piped, a log): a message stays one line, not wrapped at 80 columns (grep finds it)
    console = console or Console(soft_wrap=not sys.stdout.isatty())
    ctx.interactive = True

    def warn(message: str) -> None:
        console.print(message, style="yellow", highlight=False)

    # commands piped into the REPL (`... | lh-workbench --repl m.mlir`): a question would take the next
    # command as its answer (the resume offer ate the first command, `load` the one after it); the answer
    # is the default, said so, and the command stays a command
    answers_typed = input is not None or sys.stdin.isatty()
    # prompt-toolkit on a pipe warns "Input is not a terminal", draws its prompt for a screen (carriage
    # returns, blank lines, each command twice): piped lines are read as lines, echoed after the prompt
    prompt = (make_session(ctx, input=input, output=output, history_file=history_file, warn=warn)
              if answers_typed else _PipedLines(console))
    ctx.session.warn = warn

    def ask(question: str) -> bool:
        if not answers_typed:
            console.print(f"{question} [y/N] N (stdin is not a terminal)",
                          highlight=False, markup=False)
            return False
        try:
            # a one-off prompt: PromptSession.prompt(message) would keep the question as the prompt
            answer = prompt.prompt(f"{question} [y/N] ", completer=None)
        except (EOFError, KeyboardInterrupt):
            return False
        finally:
            prompt.message = PROMPT
        answer = answer.strip()
        if answer.lower() in ("y", "yes"):
            return True
        if answer and answer.lower() not in ("n", "no"):
            # a command typed ahead (`aply cse` while the resume offer was on the screen) was taken as "no"
            # and dropped without a word: the answer is still no, and a line that looks like a command (a
            # command's name, or more than one word: `aply cse`) runs as the next command
            command = " " in answer or ctx.registry.get(answer.split()[0]) is not None
            console.print(f"(`{answer}` is no answer to that: taken as N"
                          + ("; it runs as the next command)" if command else ")"),
                          style="dim", highlight=False, markup=False)
            if command:
                typed_ahead.append(answer)
        return False

    typed_ahead: list[str] = []

    ctx.confirm = ask
    ctx.progress = lambda message: console.print(f"  .. {message}", style="dim", highlight=False)
    s = ctx.session
    failures = 0
    if s.loaded and s.payload_path is not None and not s.steps and resume is not False:
        journal = s.journal_for(s.payload_path, s.payload_chunk)
        if journal is not None and (resume or ask(f"an autosaved session of {s.payload_path.name} exists "
                                                  f"({s.describe_journal(journal)}); resume it?")):
            res = _dispatch(ctx, "resume", console)
            render(res, console)
            failures += not res.ok
    console.print("lh-workbench REPL: `help` lists commands, Tab completes, `quit` leaves", style="dim",
                  highlight=False)
    while not ctx.quit_requested:
        try:
            line = typed_ahead.pop(0) if typed_ahead else prompt.prompt()
        except KeyboardInterrupt:
            continue
        except EOFError:   # Ctrl-D leaves as `quit` does (and says where unsaved steps went)
            render(_dispatch(ctx, "quit", console), console)
            break
        line = without_comment(line.strip())
        if not line:
            continue
        res = _dispatch(ctx, line, console)
        s.autosave()   # never raises; a full disk is warned about once
        try:
            render(res, console)
        except Exception as e:  # a result that does not render is still one line
            console.print(f"error: cannot show the result: {type(e).__name__}: {e}", style="red")
        failures += not res.ok
    return failures


def _dispatch(ctx: CommandContext, line: str, console) -> Result:
    """One command; Ctrl-C cancels it: the workers it uses are killed, the session is unchanged."""
    try:
        return ctx.registry.dispatch(line, ctx)
    except KeyboardInterrupt:
        from workbench.execution.worker_client import cancel_command

        cancel_command()
        ctx.session.client.cancel()
        return Result.failure(f"cancelled: {line}")
