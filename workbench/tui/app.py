"""The Textual front end. Every action goes through `ctx.registry.dispatch` in a worker thread;
the app only reads session state to display it (steps, IR, diffs, parameter schemas)."""
from __future__ import annotations

import dataclasses
import re
import threading
import time
from functools import partial
from pathlib import Path
from typing import Any, Callable

from rich.text import Text
from textual import on, work
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.command import DiscoveryHit, Hit, Hits, Provider
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, DataTable, Footer, Label, ProgressBar, RichLog, Static

from workbench.commands.registry import CommandContext
from workbench.completion import Completer
from workbench.result import Result
from workbench.tui.widgets import CommandInput, IRView, ParamForm, side_by_side

VIEWS = ("ir", "diff", "side")
_TIME_RE = re.compile(r"\b\d+(?:\.\d+)?\s?(?:ms|us|µs|s)\b")
_PATH_RE = re.compile(r"(?<![\w.~])/(?:[^\s/'\"]+/)+([^\s/'\"]+)")


def scrub(text: str) -> str:
    """Hide what changes between runs (timings, absolute paths): for snapshots and demos."""
    return _PATH_RE.sub(r"…/\1", _TIME_RE.sub("-- ms", text))


def short_spec(spec: str, width: int = 30) -> str:
    head = re.split(r"[\[{ ]", spec, maxsplit=1)[0]
    if "/" in head:
        spec = spec.replace(head, Path(head).name, 1)
    return spec if len(spec) <= width else spec[: width - 1] + "…"


class RegistryCommands(Provider):
    """The command palette (Ctrl+P): every registry command."""

    def _commands(self):
        app = self.app
        return sorted(app.ctx.registry.commands.values(), key=lambda c: c.name)

    async def discover(self) -> Hits:
        for cmd in self._commands():
            yield DiscoveryHit(cmd.name, partial(self.app.palette_pick, cmd.name), help=cmd.summary)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for cmd in self._commands():
            score = matcher.match(cmd.name)
            if score > 0:
                yield Hit(score, matcher.highlight(cmd.name), partial(self.app.palette_pick, cmd.name),
                          help=cmd.summary)


class ConfirmScreen(ModalScreen[bool]):
    BINDINGS = [Binding("y", "answer(True)", "Yes"), Binding("n,escape", "answer(False)", "No")]

    def __init__(self, question: str) -> None:
        super().__init__()
        self.question = question

    def compose(self) -> ComposeResult:
        with Vertical(id="confirm"):
            yield Label(self.question)
            with Horizontal():
                yield Button("Yes (y)", id="yes", variant="primary")
                yield Button("No (n)", id="no")

    def action_answer(self, value: bool) -> None:
        self.dismiss(value)

    @on(Button.Pressed)
    def _pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "yes")


class WorkbenchApp(App):
    TITLE = "lh-workbench"
    CSS_PATH = "app.tcss"
    COMMANDS = App.COMMANDS | {RegistryCommands}
    BINDINGS = [
        Binding("ctrl+z", "undo", "Undo", priority=True),
        Binding("ctrl+y", "redo", "Redo", priority=True),
        Binding("f2", "apply", "Apply"),
        Binding("f5", "run", "Run"),
        Binding("ctrl+s", "save", "Save", priority=True),
        Binding("ctrl+d", "toggle_view", "IR/diff/side", priority=True),
        Binding("ctrl+e", "edit", "Edit IR", priority=True),
        Binding("escape", "cancel", "Cancel"),
        Binding("ctrl+q", "quit", "Quit", priority=True),
    ]

    def __init__(self, ctx: CommandContext, hide_volatile: bool = False,
                 editor: Callable[[Path], None] | None = None, offer_resume: bool = True) -> None:
        super().__init__()
        self.ctx = ctx
        self.hide_volatile = hide_volatile
        self.editor = editor
        self.offer_resume = offer_resume
        self.completer = Completer(ctx.registry, ctx.session)
        self.view = "ir"
        self.selected = 0
        self.busy: str | None = None
        self.cancelled = False
        self.last_result: Result | None = None
        self.results: list[Result] = []
        self._started = time.perf_counter()
        self.first_screen_s: float | None = None
        self._keep_selection: int | None = None
        self._form_want: tuple | None = None
        self._form_running = False
        ctx.interactive = True
        ctx.progress = self._progress_from_thread
        ctx.confirm = self._confirm_from_thread
        if hasattr(ctx.session, "progress"):
            ctx.session.progress = self._progress_from_thread

    # -- layout -------------------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        with Horizontal(id="main"):
            with Vertical(id="left"):
                yield Label("Steps", classes="pane-title")
                yield DataTable(id="steps", cursor_type="row", zebra_stripes=False)
                yield Label("Parameters (Enter re-applies)", classes="pane-title")
                yield ParamForm(id="params")
            with Vertical(id="center"):
                yield Label("", id="view-title", classes="pane-title")
                yield IRView(id="ir")
                with Horizontal(id="side"):
                    yield IRView(id="side-left", mode="side")
                    yield IRView(id="side-right", mode="side")
        with Horizontal(id="bottom"):
            yield RichLog(id="log", wrap=True, markup=False, highlight=False, max_lines=2000)
            yield _plot_widget()
        with Horizontal(id="statusbar"):
            yield Static("", id="status")
            yield ProgressBar(id="progress", total=None, show_eta=False, show_percentage=False)
        yield CommandInput(self.completer, id="cmd",
                           placeholder="command (Tab completes, Ctrl+P palette, `help`)")
        yield Static("", id="completions")
        yield Footer()

    def on_mount(self) -> None:
        table = self.query_one("#steps", DataTable)
        table.add_columns("#", "kind", "step", "state", "time")
        self.query_one("#side").display = False
        self.query_one("#progress").display = False
        self.query_one("#plot").display = False
        self.query_one("#completions").display = False
        self.query_one("#cmd").focus()
        s = self.ctx.session
        if s.loaded:
            self.log_line(f"payload {self._path(s.payload_path)} ({len(s.current_ir.splitlines())} lines); "
                          "type a command, Tab completes, Ctrl+P lists every command")
            journal = s.journal_for(s.payload_path) if self.offer_resume else None
            if journal is not None and not s.steps:
                msg = "an autosaved session of this payload exists: type `resume` to restore it"
                self.log_line(msg, style="yellow")
                self.notify(msg, title="resume?", timeout=8)
        else:
            self.log_line("no payload loaded: `load FILE.mlir`")
        self.refresh_all()
        self.call_after_refresh(self._first_paint)

    def _first_paint(self) -> None:
        self.first_screen_s = time.perf_counter() - self._started

    # -- helpers --------------------------------------------------------------------------------
    def _path(self, p) -> str:
        text = str(p)
        return scrub(text) if self.hide_volatile else text

    def _t(self, text: str) -> str:
        return scrub(text) if self.hide_volatile else text

    def log_line(self, text: str, style: str = "") -> None:
        self.query_one("#log", RichLog).write(Text(self._t(text), style=style))

    def log_result(self, line: str, res: Result) -> None:
        log = self.query_one("#log", RichLog)
        log.write(Text("wb> " + self._t(line), style="bold"))
        shown = res
        if self.hide_volatile:
            shown = dataclasses.replace(res, summary=scrub(res.summary or ""),
                                        error=scrub(res.error) if res.error else None,
                                        detail=scrub(res.detail) if res.detail else None,
                                        body=scrub(res.body) if res.body and res.kind not in ("ir",) else res.body)
            if res.kind == "table" and res.data.get("table"):
                t = res.data["table"]
                shown.data = dict(res.data, table={"columns": t["columns"],
                                                   "rows": [[scrub(str(c)) for c in r] for r in t["rows"]]})
        if res.ok and res.kind in ("ir", "diff") and res.body:
            # big bodies go to the IR view, not the log
            log.write(Text(shown.summary, style="green"))
            return
        log.write(shown.rich())

    # -- state -> screen --------------------------------------------------------------------------
    def refresh_all(self, select: int | None = None) -> None:
        s = self.ctx.session
        table = self.query_one("#steps", DataTable)
        table.clear()
        if s.loaded:
            for h in s.history():
                i = h["index"]
                if i == 0:
                    state = "▶ cur" if h["current"] else ""
                    table.add_row("0", "payload", short_spec(Path(h["spec"]).name), state, "", key=str(i))
                    continue
                state = "▶ cur" if h["current"] else ("ok" if h["active"] else "undone")
                if h["noop"]:
                    state += " ∅no-op"
                secs = "--" if self.hide_volatile else f"{h['seconds'] * 1000:.1f}ms"
                table.add_row(str(i), h["kind"], short_spec(h["spec"]), state, secs, key=str(i))
            self.selected = s.cursor if select is None else max(0, min(select, len(s.steps)))
            table.move_cursor(row=self.selected, animate=False)
        self.refresh_view()
        self.refresh_form()
        self.sub_title = self._subtitle()

    def _subtitle(self) -> str:
        s = self.ctx.session
        if not s.loaded:
            return "no payload"
        return f"{s.payload_path.name} · step {s.cursor}/{len(s.steps)} · target {s.target_name}"

    def refresh_view(self) -> None:
        s = self.ctx.session
        title = self.query_one("#view-title", Label)
        ir = self.query_one("#ir", IRView)
        side = self.query_one("#side")
        if not s.loaded:
            title.update("IR")
            ir.show("")
            return
        i = self.selected
        if self.view == "ir" or i == 0:
            side.display, ir.display = False, True
            suffix = "" if self.view == "ir" else " (payload: nothing to diff)"
            title.update(f"IR after step {i}" + (" (payload)" if i == 0 else "") + suffix + "   [Ctrl+D: diff]")
            ir.show(s.ir_at(i), "mlir")
        elif self.view == "diff":
            side.display, ir.display = False, True
            diff = s.diff(i - 1, i)
            title.update(f"diff step {i - 1} → step {i}" + (" (no-op: identical IR)" if not diff else "")
                         + "   [Ctrl+D: side by side]")
            ir.show(diff or "(identical IR)", "diff")
        else:
            ir.display, side.display = False, True
            left, right, lm, rm = side_by_side(s.ir_at(i - 1), s.ir_at(i))
            title.update(f"step {i - 1} | step {i}   [Ctrl+D: IR]")
            self.query_one("#side-left", IRView).show(left, "side", lm)
            self.query_one("#side-right", IRView).show(right, "side", rm)

    def refresh_form(self) -> None:
        s = self.ctx.session
        step = s.steps[self.selected - 1].step if s.loaded and 1 <= self.selected <= len(s.steps) else None
        editable = step is not None and self.selected <= s.cursor
        # one form rebuild at a time (cancelling a rebuild mid-mount breaks the DOM): the loop
        # always finishes with the latest request
        self._form_want = (self.selected, step, editable)
        if not self._form_running:
            self._form_running = True
            self.run_worker(self._form_loop, group="form")

    async def _form_loop(self) -> None:
        form = self.query_one("#params", ParamForm)
        try:
            while self._form_want is not None:
                want, self._form_want = self._form_want, None
                await form.show_step(*want)
        finally:
            self._form_running = False

    @on(DataTable.RowHighlighted, "#steps")
    def _row(self, event: DataTable.RowHighlighted) -> None:
        if event.row_key is None or event.row_key.value is None:
            return
        index = int(event.row_key.value)
        if index != self.selected:
            self.selected = index
            self.refresh_view()
            self.refresh_form()

    # -- running commands ----------------------------------------------------------------------------
    @on(CommandInput.Submitted, "#cmd")
    def _submitted(self, event: CommandInput.Submitted) -> None:
        line = event.value.strip()
        cmd = self.query_one("#cmd", CommandInput)
        cmd.value = ""
        self.query_one("#completions").display = False
        if not line:
            return
        cmd.remember(line)
        self.submit(line)

    @on(ParamForm.Submitted)
    def _param_submitted(self, event: ParamForm.Submitted) -> None:
        if event.error or not event.command:
            self.log_line(f"params {event.step}: {event.error}", style="yellow")
            return
        self._keep_selection = event.step
        self.submit(event.command)

    @on(CommandInput.Candidates)
    def _candidates(self, event: CommandInput.Candidates) -> None:
        box = self.query_one("#completions", Static)
        box.display = bool(event.items)
        if event.items:
            more = f"  … {len(event.items) - 16} more" if len(event.items) > 16 else ""
            box.update("  ".join(event.items[:16]) + more)

    def submit(self, line: str) -> None:
        """Run one command line (what Enter in the input does)."""
        name = line.split()[0]
        if name in ("edit",) and len(line.split()) == 1:
            self.action_edit()
            return
        if self.busy:
            self.log_line(f"busy with `{self.busy}` (Escape cancels): `{line}` not run", style="yellow")
            return
        self.busy = line
        self.cancelled = False
        self._set_status(f"running: {line}   (Escape cancels)")
        self.query_one("#progress").display = True
        self._dispatch_worker(line)

    @work(thread=True, group="command", exit_on_error=False)
    def _dispatch_worker(self, line: str) -> None:
        try:
            res = self.ctx.registry.dispatch(line, self.ctx)
        except Exception as e:  # a crash inside a command must not take the UI down
            res = Result.failure(f"{type(e).__name__}: {e}")
        try:
            self.ctx.session.autosave()
        except Exception as e:
            res.data.setdefault("warnings", []).append(f"autosave failed: {e}")
        self.call_from_thread(self._finished, line, res)

    def _finished(self, line: str, res: Result) -> None:
        self.busy = None
        self.query_one("#progress").display = False
        if self.cancelled and not res.ok:
            res = Result.failure(f"cancelled: {line} (session unchanged)", res.error)
        self._set_status("cancelled" if self.cancelled else ("ok" if res.ok else "error: " + (res.error or "")))
        self.cancelled = False
        self.last_result = res
        self.results.append(res)
        self.log_result(line, res)
        clip = res.data.get("clipboard") if res.ok else None
        if clip:
            self.copy_text(clip)
        self.show_plot(res)
        select, self._keep_selection = self._keep_selection, None
        if res.ok and res.kind == "ir" and isinstance(res.data.get("step"), int):
            select = res.data["step"]
        if res.ok and res.kind == "diff" and isinstance(res.data.get("to"), int):
            select = res.data["to"]
            self.view = "diff"
        self.refresh_all(select=select)
        if self.ctx.quit_requested:
            self.exit()

    def _set_status(self, text: str) -> None:
        self.query_one("#status", Static).update(self._t(text))

    def _progress_from_thread(self, message: str) -> None:
        try:
            self.call_from_thread(self._set_status, f"{message}   (Escape cancels)")
        except RuntimeError:
            pass

    def _confirm_from_thread(self, question: str) -> bool:
        done = threading.Event()
        answer: dict[str, bool] = {}

        def ask() -> None:
            self.push_screen(ConfirmScreen(question), callback=lambda v: (answer.setdefault("v", bool(v)), done.set()))

        try:
            self.call_from_thread(ask)
        except RuntimeError:
            return False
        done.wait()
        return answer.get("v", False)

    def copy_text(self, text: str) -> None:
        """OSC 52 clipboard, plus a file fallback for terminals that ignore OSC 52."""
        from workbench.paths import state_dir

        self.copy_to_clipboard(text)
        fallback = state_dir() / "clipboard.txt"
        try:
            fallback.write_text(text + "\n")
            self.log_line(f"copied to the clipboard (also in {fallback})", style="dim")
        except OSError:
            self.log_line("copied to the clipboard", style="dim")

    def show_plot(self, res: Result) -> None:
        run = res.data.get("run") if res.ok else None
        series = None
        title = ""
        if isinstance(run, dict) and run.get("times_s"):
            series = [t * 1e3 for t in run["times_s"]]
            title = "per-iteration time (ms)"
            if run.get("median_s") is not None:
                title += f"  median {run['median_s'] * 1e3:.3g} ms"
            if run.get("gflops"):
                title += f"  {run['gflops']:.3g} GFLOP/s"
        plot_data = res.data.get("plot") if res.ok else None
        if series is None and isinstance(plot_data, dict) and plot_data.get("y"):
            series = list(plot_data["y"])
            title = plot_data.get("title", "")
        if series is None:
            return
        plot = self.query_one("#plot")
        plot.display = True
        plt = getattr(plot, "plt", None)
        if plt is None:
            return
        plt.clear_data()
        plt.clear_figure()
        plt.plot(list(range(1, len(series) + 1)), series, marker="braille")
        plt.title(self._t(title))
        plot.refresh()

    # -- actions ----------------------------------------------------------------------------------------
    def palette_pick(self, name: str) -> None:
        cmd = self.ctx.registry.get(name)
        needs_args = cmd is not None and any(not a.optional for a in cmd.args)
        inp = self.query_one("#cmd", CommandInput)
        if needs_args:
            inp.value = name + " "
            inp.cursor_position = len(inp.value)
            inp.focus()
        else:
            self.submit(name)

    def action_undo(self) -> None:
        self.submit("undo")

    def action_redo(self) -> None:
        self.submit("redo")

    def action_run(self) -> None:
        if self.ctx.registry.get("run") is None:
            self.log_line("no `run` command in this build", style="red")
            return
        self.submit("run")

    def _prefill(self, text: str) -> None:
        inp = self.query_one("#cmd", CommandInput)
        inp.value = text
        inp.cursor_position = len(text)
        inp.focus()

    def action_apply(self) -> None:
        self._prefill("apply ")

    def action_save(self) -> None:
        s = self.ctx.session
        stem = s.payload_path.stem if s.payload_path else "session"
        self._prefill(f"save {stem}-session.yaml")

    def action_toggle_view(self) -> None:
        self.view = VIEWS[(VIEWS.index(self.view) + 1) % len(VIEWS)]
        self.refresh_view()

    def action_cancel(self) -> None:
        if self.query_one("#completions").display:
            self.query_one("#completions").display = False
            return
        if not self.busy:
            return
        self.cancelled = True
        self._set_status(f"cancelling: {self.busy}")
        for name in ("client", "run_client", "runner"):
            target = getattr(self.ctx.session, name, None)
            cancel = getattr(target, "cancel", None)
            if callable(cancel):
                try:
                    cancel()
                except Exception:
                    pass

    def action_edit(self) -> None:
        s = self.ctx.session
        if self.busy:
            self.log_line(f"busy with `{self.busy}`: edit not started", style="yellow")
            return
        if not s.loaded:
            self.log_line("no payload loaded: nothing to edit", style="red")
            return
        from workbench.commands.edit_commands import default_editor_command, edit_scratch_file
        from workbench.session import atomic_write

        path = edit_scratch_file(self.ctx)
        original = s.current_ir
        atomic_write(path, original)
        try:
            if self.editor is not None:
                self.editor(path)
            else:
                import subprocess

                with self.suspend():
                    subprocess.call(default_editor_command() + [str(path)])
        except Exception as e:
            self.log_line(f"edit: cannot open the editor: {e}", style="red")
            return
        if path.read_text() == original:
            self.log_line("edit: no change")
            return
        self.submit(f'edit-apply "{path}"')


def _plot_widget():
    try:
        from textual_plotext import PlotextPlot

        return PlotextPlot(id="plot")
    except ImportError:  # plots are optional
        return Static("", id="plot")


def run_app(ctx: CommandContext, **kw: Any) -> None:
    from workbench.commands import edit_commands, export_commands

    edit_commands.register(ctx.registry)
    export_commands.register(ctx.registry)
    WorkbenchApp(ctx, **kw).run()
