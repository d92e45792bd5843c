"""The prompt-toolkit REPL (`--repl`, or stdin not a terminal): same registry, same completion.

Every line goes through `ctx.registry.dispatch`; the session is autosaved after each
command; the history file lives in the state directory; IR is printed highlighted.
"""
from __future__ import annotations

from pathlib import Path

from prompt_toolkit import PromptSession
from prompt_toolkit.completion import Completer as PTCompleter
from prompt_toolkit.completion import Completion as PTCompletion
from prompt_toolkit.history import FileHistory, InMemoryHistory

from workbench.commands.registry import CommandContext
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


def render(res: Result, console) -> None:
    """Print a result: IR with MLIR highlighting, run timings as a terminal plot."""
    if res.ok and res.kind == "ir" and res.body:
        from rich.syntax import Syntax

        from workbench.highlight import mlir_lexer

        if res.summary:
            console.print(res.summary, style="bold green", highlight=False)
        console.print(Syntax(res.body, mlir_lexer(), line_numbers=False, word_wrap=False,
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


def make_session(ctx: CommandContext, input=None, output=None, history_file: Path | None = None) -> PromptSession:
    history = FileHistory(str(history_file or history_path())) if history_file is not False else InMemoryHistory()
    return PromptSession(PROMPT, completer=RegistryCompleter(Completer(ctx.registry, ctx.session)),
                         complete_while_typing=False, history=history, input=input, output=output)


def run_repl(ctx: CommandContext, input=None, output=None, console=None, history_file: Path | None = None) -> int:
    """Read-dispatch-print until `quit` or EOF. Returns the number of failed commands."""
    from rich.console import Console

    from workbench.commands import edit_commands, export_commands

    edit_commands.register(ctx.registry)
    export_commands.register(ctx.registry)
    console = console or Console()
    ctx.interactive = True
    prompt = make_session(ctx, input=input, output=output, history_file=history_file)

    def ask(question: str) -> bool:
        try:
            answer = prompt.prompt(f"{question} [y/N] ", completer=None)
        except (EOFError, KeyboardInterrupt):
            return False
        return answer.strip().lower() in ("y", "yes")

    ctx.confirm = ask
    ctx.progress = lambda message: console.print(f"  .. {message}", style="dim", highlight=False)
    s = ctx.session
    failures = 0
    if s.loaded and s.payload_path is not None and not s.steps:
        journal = s.journal_for(s.payload_path)
        if journal is not None and ask(f"an autosaved session of {s.payload_path.name} exists ({journal}); resume it?"):
            res = ctx.registry.dispatch("resume", ctx)
            render(res, console)
            failures += not res.ok
    console.print("lh-workbench REPL: `help` lists commands, Tab completes, `quit` leaves", style="dim",
                  highlight=False)
    while not ctx.quit_requested:
        try:
            line = prompt.prompt()
        except KeyboardInterrupt:
            continue
        except EOFError:
            break
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        res = ctx.registry.dispatch(line, ctx)
        try:
            s.autosave()
        except Exception as e:  # never lose the REPL over a journal write
            console.print(f"warning: autosave failed: {e}", style="yellow")
        render(res, console)
        failures += not res.ok
    return failures
