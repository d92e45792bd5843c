"""The Textual front end. Every action goes through `ctx.registry.dispatch` in a worker thread;
the app only reads session state to display it (steps, IR, diffs, parameter schemas). Costly
views (diffs of big IR, indexing, search) are computed in thread workers and cached, so the
UI thread only ever renders the lines on screen."""
from __future__ import annotations

import dataclasses
import re
import sys
import threading
import time
from collections import OrderedDict
from functools import partial
from pathlib import Path
from concurrent.futures import Future
from typing import Any, Callable

from rich.text import Text
from textual import on, work
from textual.app import App, ComposeResult, SystemCommand
from textual.binding import Binding
from textual.command import DiscoveryHit, Hit, Hits, Provider
from textual.containers import Horizontal, Vertical
from textual.css.query import NoMatches
from textual.reactive import reactive
from textual.widgets import Footer, Label, ProgressBar, Static

from workbench.common import textdiff
from workbench.commands.registry import CommandContext
from workbench.commands.script import without_comment
from workbench.completion import Completer
from workbench.result import Result
from workbench.tui.keymap import key_clashes, keymap_path, load_keymap
from workbench.tui.screens import ConfirmScreen, HelpScreen, OutlineScreen
from workbench.tui.widgets import (CommandInput, IRView, LogView, ParamForm, ResultsPanel, SearchBar, StepsTable,
                                   short_spec)

VIEWS = ("ir", "diff", "side")
_TIME_RE = re.compile(r"\b\d+(?:\.\d+)?\s?(?:ms|us|µs|s)\b")
_PATH_RE = re.compile(r"(?<![\w.~])/(?:[^\s/'\"]+/)+([^\s/'\"]+)")

__all__ = ["WorkbenchApp", "run_app", "scrub", "short_spec"]


def scrub(text: str) -> str:
    """Hide what changes between runs (timings, absolute paths): for snapshots and demos."""
    return _PATH_RE.sub(r"…/\1", _TIME_RE.sub("-- ms", text))


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


class DiffCache:
    """The last few diffs / side-by-side alignments, keyed by (kind, sha before, sha after)."""

    def __init__(self, size: int = 6) -> None:
        self.size = size
        self.items: OrderedDict = OrderedDict()
        self.lock = threading.Lock()

    def get(self, key):
        with self.lock:
            if key in self.items:
                self.items.move_to_end(key)
                return self.items[key]
        return None

    def put(self, key, value) -> None:
        with self.lock:
            self.items[key] = value
            self.items.move_to_end(key)
            while len(self.items) > self.size:
                self.items.popitem(last=False)


class WorkbenchApp(App):
    TITLE = "lh-workbench"
    CSS_PATH = "app.tcss"
    COMMANDS = App.COMMANDS | {RegistryCommands}
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (120, "-wide")]
    VERTICAL_BREAKPOINTS = [(0, "-short"), (36, "-tall")]
    #: the command line running (None: idle); the progress bar shows while there is one
    busy: reactive[str | None] = reactive(None, init=False)
    #: what the IR pane shows for the selected step: its IR, the diff against the step before, side by side
    view: reactive[str] = reactive("ir", init=False)

    BINDINGS = [
        Binding("f1", "help", "Help", id="app.help"),
        Binding("question_mark", "help", "Help", show=False, id="app.help_question_mark"),
        Binding("f5", "run", "Run", id="app.run"),
        Binding("ctrl+z", "undo", "Undo", priority=True, id="app.undo"),
        Binding("ctrl+y", "redo", "Redo", priority=True, show=False, id="app.redo"),
        Binding("ctrl+d", "toggle_view", "View", priority=True, id="app.toggle_view"),
        Binding("ctrl+f", "find", "Find", priority=True, show=False, id="app.find"),
        Binding("ctrl+o", "go_to_symbol", "Symbol", priority=True, id="app.go_to_symbol"),
        Binding("f6", "focus_pane(1)", "Pane", id="app.next_pane"),
        Binding("shift+f6", "focus_pane(-1)", "Previous pane", show=False, id="app.previous_pane"),
        Binding("f4", "edit_params", "Parameters", show=False, id="app.parameters"),
        Binding("ctrl+b", "toggle_steps", "Steps panel", show=False, priority=True, id="app.toggle_steps"),
        Binding("f2", "apply", "Apply", show=False, id="app.apply"),
        Binding("ctrl+s", "save", "Save", priority=True, show=False, id="app.save"),
        Binding("ctrl+e", "edit", "Edit IR", priority=True, show=False, id="app.edit"),
        Binding("escape", "cancel", "Cancel / back", show=False, id="app.cancel"),
        Binding("ctrl+q", "quit", "Quit", priority=True, id="app.quit"),
    ]

    def __init__(self, ctx: CommandContext, hide_volatile: bool = False,
                 editor: Callable[[Path], None] | None = None, offer_resume: bool = True,
                 pending_load: "Future[Result] | None" = None) -> None:
        super().__init__()
        self.ctx = ctx
        #: the payload's `load`, still running in the front end's background thread when the app starts
        #: (`lh-workbench PAYLOAD`); a failure ends the app with `load_error` set and exit status 1
        self.pending_load = pending_load
        self.load_error: Result | None = None
        self.hide_volatile = hide_volatile
        self.editor = editor
        self.offer_resume = offer_resume
        self.completer = Completer(ctx.registry, ctx.session)
        self.selected = 0
        self.cancelled = False
        self.last_result: Result | None = None
        self.results: list[Result] = []
        self.diffs = DiffCache()
        self._started = time.perf_counter()
        self.first_screen_s: float | None = None
        self._keep_selection: int | None = None
        self._form_want: tuple | None = None
        self._form_running = False
        self._diff_pending: set = set()
        self.keymap_warnings: list[str] = []
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
                yield StepsTable(id="steps")
                yield Label("Parameters (F4)", classes="pane-title", id="params-title")
                yield ParamForm(id="params")
            with Vertical(id="center"):
                with Horizontal(id="view-header", classes="pane-title"):
                    yield Label("", id="view-title")
                    yield Label("", id="view-status")
                yield IRView(id="ir")
                with Horizontal(id="side"):
                    yield IRView(id="side-left", mode="side")
                    yield IRView(id="side-right", mode="side")
        with Horizontal(id="bottom"):
            yield LogView(id="log")
            yield ResultsPanel(scrub=self._t, id="results")
        yield SearchBar(id="search")
        with Horizontal(id="statusbar"):
            yield Static("", id="status")
            yield ProgressBar(id="progress", total=None, show_eta=False, show_percentage=False)
            yield Static("", id="focus-pane")
        yield CommandInput(self.completer, id="cmd",
                           placeholder="command (Tab completes, Ctrl+P palette, F1 keys, `help`)")
        yield Static("", id="completions")
        yield Footer(compact=True)

    def on_mount(self) -> None:
        self.query_one("#steps", StepsTable).hide_times = self.hide_volatile
        self.query_one("#side").display = False
        self.query_one("#progress").visible = False
        self.query_one("#results").display = False
        self.query_one("#search").display = False
        self.query_one("#completions").display = False
        left, right = self.query_one("#side-left", IRView), self.query_one("#side-right", IRView)
        left.partner, right.partner = right, left
        for view in self.query(IRView).results(IRView):
            self.watch(view, "status", partial(self._view_status, view), init=False)
        self.watch(self.screen, "focused", self._show_focused_pane)
        self.query_one("#cmd").focus()
        self._apply_keymap()
        if self.pending_load is not None:
            self.busy = "load"
            self._set_status("loading the payload…   (Escape cancels)")
            self.run_worker(self._await_initial_load, thread=True, group="command", exit_on_error=False)
        else:
            self._greet()
        self.refresh_all()
        self.call_after_refresh(self._first_paint)
        # the diff helper process, forked while this process is still small
        self.run_worker(textdiff.start_helper, thread=True, group="diff-helper", exit_on_error=False)

    def _greet(self) -> None:
        s = self.ctx.session
        if s.loaded:
            self.log_line(f"payload {self._path(s.payload_path)} ({s.line_count_at(s.cursor)} lines); "
                          "type a command, Tab completes, Ctrl+P lists every command, F1 the keys")
            journal = s.journal_for(s.payload_path, s.payload_chunk) if self.offer_resume else None
            if journal is not None and not s.steps:
                self.log_line(f"an autosaved session of this payload exists ({s.describe_journal(journal)}): "
                              "type `resume` to restore it", style="yellow")
                self.notify("an autosaved session of this payload exists: `resume` restores it",
                            title="resume?", timeout=8)
        else:
            self.log_line("no payload loaded: `load FILE.mlir`")

    def _await_initial_load(self) -> None:
        res = self.pending_load.result()
        self.call_from_thread(self._initial_load_done, res)

    def _initial_load_done(self, res: Result) -> None:
        self.pending_load = None
        self.busy = None
        if not res.ok:   # nothing to work on: the front end prints the error and exits 1
            self.load_error = res
            self.exit(return_code=1)
            return
        self._set_status("ok")
        with self.batch_update():
            self._greet()
            for warning in res.extra_warnings():
                self.log_line("warning: " + warning, style="yellow")
            if res.data.get("chunks"):
                self.log_line(f"the payload has {res.data['chunks']} chunks separated by `// -----` lines, loaded "
                              "as one module: `load --chunk K FILE` takes one", style="yellow")
            self.refresh_all()

    def _first_paint(self) -> None:
        self.first_screen_s = time.perf_counter() - self._started

    # -- keymap and help ----------------------------------------------------------------------------
    @classmethod
    def binding_sections(cls) -> list[tuple[str, list]]:
        from workbench.tui.screens.confirm import ConfirmScreen as _Confirm

        return [("Everywhere", cls.BINDINGS), ("IR view", IRView.BINDINGS), ("Log", LogView.BINDINGS),
                ("Command input", CommandInput.BINDINGS), ("Steps", StepsTable.BINDINGS),
                ("Parameters", ParamForm.BINDINGS), ("Search bar", SearchBar.BINDINGS),
                ("Go to symbol", OutlineScreen.BINDINGS), ("Questions", _Confirm.BINDINGS)]

    @classmethod
    def binding_ids(cls) -> set[str]:
        return {b.id for _, bindings in cls.binding_sections() for b in bindings if isinstance(b, Binding) and b.id}

    def _apply_keymap(self) -> None:
        keymap, self.keymap_warnings = load_keymap(self.binding_ids())
        self.keymap_warnings += key_clashes(self.binding_sections(), keymap)
        for warning in self.keymap_warnings:
            self.log_line(warning, style="yellow")
            self.notify(warning, severity="warning", timeout=8)
        if keymap:
            self.set_keymap(keymap)

    def action_help(self) -> None:
        if isinstance(self.screen, HelpScreen):
            return
        self.push_screen(HelpScreen(self.binding_sections(),
                                    footer=f"Remap keys in {keymap_path()} (TOML or YAML: \"binding id\" = "
                                           f"\"keys\"; $LH_WORKBENCH_KEYMAP overrides the path). "
                                           "Commands: `help`, or Ctrl+P."))

    def get_system_commands(self, screen):
        yield SystemCommand("Go to symbol", "jump to a function, global or op of the IR shown (Ctrl+O)",
                            self.action_go_to_symbol)
        yield SystemCommand("Find in the IR", "regex search in the IR view (Ctrl+F, then n/N)", self.action_find)
        yield SystemCommand("Keys", "every key binding and its id (F1)", self.action_help)
        yield SystemCommand("Toggle the steps panel", "more columns for the IR (Ctrl+B)", self.action_toggle_steps)
        yield SystemCommand("Run with check", "run --check: timings and the check against the reference (F5)",
                            self.action_run)
        yield from super().get_system_commands(screen)

    # -- helpers --------------------------------------------------------------------------------
    def _path(self, p) -> str:
        text = str(p)
        return scrub(text) if self.hide_volatile else text

    def _t(self, text: str) -> str:
        return scrub(text) if self.hide_volatile else text

    def log_line(self, text: str, style: str = "") -> None:
        self.query_one("#log", LogView).write(Text(self._t(text), style=style))

    def log_result(self, line: str, res: Result) -> None:
        log = self.query_one("#log", LogView)
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
            if res.data.get("warnings"):
                shown.data = dict(shown.data, warnings=[scrub(w) for w in res.data["warnings"]])
        if res.ok and res.kind in ("ir", "diff") and res.body:
            # big bodies go to the IR view, not the log
            log.write(Text(shown.summary, style="green"))
            return
        if res.ok and isinstance(res.data.get("run"), dict):
            # the statistics are in the results panel: the log keeps the one-line summary and what the
            # panel has no room for (`run --profile`'s bars, what the program printed)
            log.write(Text(shown.summary, style="green"))
            for w in shown.extra_warnings():
                log.write(Text("warning: " + w, style="yellow"))
            if shown.body:
                log.write(Text(shown.body))
            return
        log.write(shown.rich())

    # -- state -> screen --------------------------------------------------------------------------
    def refresh_all(self, select: int | None = None) -> None:
        s = self.ctx.session
        table = self.query_one("#steps", StepsTable)
        history = s.history() if s.loaded else []
        if s.loaded:
            self.selected = s.cursor if select is None else max(0, min(select, len(s.steps)))
            table.selected = self.selected
        if history != table.history:
            table.history = history
        self.refresh_view()
        self.refresh_form()
        self.sub_title = self._subtitle()

    def _subtitle(self) -> str:
        s = self.ctx.session
        if not s.loaded:
            return "no payload"
        return f"{s.payload_path.name} · step {s.cursor}/{len(s.steps)} · target {s.target_name}"

    def _view_status(self, view: IRView, status: str) -> None:
        if view.display and (view.id == "ir" or view.has_focus or view.id == "side-right"):
            self.query_one("#view-status", Label).update(status, layout=False)   # fixed size: no relayout
        bar = self.query_one("#search", SearchBar)
        result = view.search_result
        if bar.target is view and result is not None and result.count and view.current_match >= 0:
            bar.result_text = f"{view.current_match + 1}/{result.count} matches"

    #: the panes by id, as the status bar names the one that has the focus (F6 moves it)
    PANE_NAMES = {"steps": "steps", "params": "parameters", "ir": "IR", "side-left": "diff (left)",
                  "side-right": "diff (right)", "log": "log", "results": "results", "cmd": "command",
                  "search": "search"}

    def _show_focused_pane(self, focused) -> None:
        node = focused
        while node is not None and getattr(node, "id", None) not in self.PANE_NAMES:
            node = node.parent
        name = self.PANE_NAMES[node.id] if node is not None else ""
        self.query_one("#focus-pane", Static).update(f"focus: {name}" if name else "", layout=False)

    def _set_title(self, text: str) -> None:
        self.query_one("#view-title", Label).update(text, layout=False)   # fixed size (app.tcss): no relayout

    def refresh_view(self) -> None:
        s = self.ctx.session
        ir = self.query_one("#ir", IRView)
        side = self.query_one("#side")
        if not s.loaded:
            self._set_title("IR")
            ir.show("", key=None)
            return
        i = self.selected
        if self.view == "ir" or i == 0:
            side.display, ir.display = False, True
            suffix = "" if self.view == "ir" else " (payload: nothing to diff)"
            elided = " (long constants elided: `show --full`)" if s.elides_at(i) else ""
            self._set_title(f"IR after step {i}" + (" (payload)" if i == 0 else "") + suffix + elided + "  [^D diff]")
            ir.show(s.view_at(i), "mlir", key=("ir", s.sha_at(i)))
            return
        key = (self.view, s.sha_at(i - 1), s.sha_at(i))
        cached = self.diffs.get(key)
        if cached is None:
            self._set_title(f"{'diff' if self.view == 'diff' else 'side by side'} step {i - 1} → step {i}: "
                            "computing…")
            if self.view == "side":   # the panes now (one layout pass, at the key press), the diff when it comes
                ir.display, side.display = False, True
                for pane in ("#side-left", "#side-right"):
                    self.query_one(pane, IRView).show("computing the side-by-side diff…", "side", key=None)
            if key not in self._diff_pending:
                self._diff_pending.add(key)
                # (not @work: it describes a worker by the repr of its arguments, megabytes of IR here)
                self.run_worker(partial(self._diff_worker, key, s.view_at(i - 1), s.view_at(i), i), thread=True,
                                group="diff", description=f"{self.view} of steps {i - 1} and {i}",
                                exit_on_error=False)
            return
        if self.view == "diff":
            side.display, ir.display = False, True
            self._set_title(f"diff step {i - 1} → step {i}" + (" (no-op: identical IR)" if not cached else "")
                            + "  [^D side by side]")
            ir.show(cached or "(identical IR)", "diff", key=key)
        else:
            ir.display, side.display = False, True
            left, right, lm, rm = cached
            self._set_title(f"step {i - 1} | step {i}  [^D IR]")
            self.query_one("#side-left", IRView).show(left, "side", lm, key=key + ("left",))
            self.query_one("#side-right", IRView).show(right, "side", rm, key=key + ("right",))

    def _diff_worker(self, key: tuple, before: str, after: str, step: int) -> None:
        """A diff of two steps' IR, off the UI thread (difflib on 40k lines takes seconds)."""
        value: Any
        try:
            if key[0] == "diff":
                # `apply` computed this diff already (its +/- line counts): the session caches it
                session_key = (key[1], key[2], step - 1, step, 3)
                value = self.ctx.session.diff_cache.get(session_key)
                if value is None:
                    value = textdiff.unified_diff(before, after, f"step {step - 1}", f"step {step}")
                    self.ctx.session.diff_cache.put(session_key, value)
            else:
                value = textdiff.side_by_side(before, after)
        except Exception as e:  # never retry forever
            why = f"(cannot diff: {type(e).__name__}: {e})"
            value = why if key[0] == "diff" else (why, why, {}, {})
        self.diffs.put(key, value)
        try:
            self.call_from_thread(self._diff_done, key)
        except RuntimeError:  # the app has gone
            pass

    def _diff_done(self, key: tuple) -> None:
        self._diff_pending.discard(key)
        try:
            with self.batch_update():
                self.refresh_view()
        except NoMatches:  # the app is closing
            pass

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

    @on(StepsTable.RowHighlighted, "#steps")
    def _row(self, event: StepsTable.RowHighlighted) -> None:
        if event.row_key is None or event.row_key.value is None:
            return
        index = int(event.row_key.value)
        if index != self.selected:
            self.selected = index
            event.data_table.selected = index
            self.refresh_view()
            self.refresh_form()

    @on(StepsTable.RowSelected, "#steps")
    def _row_selected(self, event: StepsTable.RowSelected) -> None:
        """Enter on a step: its parameters (if it has any), else its IR."""
        self.action_edit_params()

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
        line = without_comment(line)
        if line:
            self.submit(line)

    @on(ParamForm.Submitted)
    def _param_submitted(self, event: ParamForm.Submitted) -> None:
        if event.error or not event.command:
            self.log_line(f"params {event.step}: {event.error}", style="yellow")
            return
        self._keep_selection = event.step
        self.submit(event.command)
        # the next thing typed is a command: focus where commands are typed
        self.query_one("#cmd", CommandInput).focus()

    @on(CommandInput.Candidates)
    def _candidates(self, event: CommandInput.Candidates) -> None:
        box = self.query_one("#completions", Static)
        box.display = bool(event.items)
        if event.items:
            shown = []
            for k, item in enumerate(event.items[:16]):
                shown.append(f"[reverse]{_escape(item)}[/reverse]" if k == event.current else _escape(item))
            more = f"  … {len(event.items) - 16} more" if len(event.items) > 16 else ""
            box.update("  ".join(shown) + more + "   [dim](Tab: next)[/dim]")

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
        with self.batch_update():   # one repaint for the log, the steps, the view
            self._show_finished(line, res)

    def _show_finished(self, line: str, res: Result) -> None:
        self.busy = None
        if self.cancelled and not res.ok:
            res = Result.failure(f"cancelled: {line} (session unchanged)", res.error)
        # the error itself is in the log (once); the status line only says where to look
        self._set_status("cancelled" if self.cancelled else ("ok" if res.ok else "✘ failed: the error is in the log"))
        self.cancelled = False
        self.last_result = res
        self.results.append(res)
        # the panel first: it takes width from the log, whose lines are wrapped at the width they are written at
        self.show_results(res)
        self.log_result(line, res)
        clip = res.data.get("clipboard") if res.ok else None
        if clip:
            self.copy_text(clip)
        select, self._keep_selection = self._keep_selection, None
        if res.ok and res.kind == "ir" and isinstance(res.data.get("step"), int):
            select = res.data["step"]
        if res.ok and res.kind == "diff" and isinstance(res.data.get("to"), int):
            select = res.data["to"]
            self.set_reactive(WorkbenchApp.view, "diff")   # refresh_all shows it, at the new selection
        self.refresh_all(select=select)
        if self.ctx.quit_requested:   # `quit` typed: the same question as Ctrl+Q
            self.ctx.quit_requested = False
            self.run_worker(self.action_quit(), group="quit")

    def _set_status(self, text: str) -> None:
        self.query_one("#status", Static).update(self._t(text), layout=False)   # fixed size: no relayout

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

    def show_results(self, res: Result) -> None:
        """A run (or a plot, e.g. tune's) goes to the results panel: verdict, statistics, plot."""
        has_run = isinstance(res.data.get("run"), dict)
        has_plot = isinstance(res.data.get("plot"), dict) and res.data["plot"].get("y")
        if has_run or has_plot:
            self.query_one("#results", ResultsPanel).result = res

    show_plot = show_results

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
        from workbench.commands.run_commands import check_possible

        ok, why = check_possible(self.ctx.session)
        if not ok:
            self.log_line(f"no reference run possible here ({why}): running without --check", style="yellow")
        self.submit("run --check" if ok else "run")

    def _prefill(self, text: str) -> None:
        inp = self.query_one("#cmd", CommandInput)
        inp.value = text
        inp.cursor_position = len(text)
        inp.focus()

    def action_apply(self) -> None:
        self._prefill("apply ")

    def action_save(self) -> None:
        s = self.ctx.session
        if s.saved_path is not None:
            self._prefill(f"save {_relative(s.saved_path)}")
            return
        stem = s.payload_path.stem if s.payload_path else "session"
        self._prefill(f"save {stem}-session.yaml")

    def action_toggle_view(self) -> None:
        self.view = VIEWS[(VIEWS.index(self.view) + 1) % len(VIEWS)]

    def watch_busy(self, busy: str | None) -> None:
        self.query_one("#progress").visible = busy is not None

    def watch_view(self, view: str) -> None:
        self.refresh_view()

    def action_toggle_steps(self) -> None:
        left = self.query_one("#left")
        left.display = not left.display

    def _visible_view(self) -> IRView:
        focused = self.focused
        if isinstance(focused, IRView) and focused.display and focused.parent.display:
            return focused
        if self.query_one("#side").display:
            return self.query_one("#side-right", IRView)
        return self.query_one("#ir", IRView)

    def action_find(self) -> None:
        view = self._visible_view()
        view.focus()
        self.query_one("#search", SearchBar).open(view)

    @on(IRView.SearchRequested)
    @on(LogView.SearchRequested)
    def _search_requested(self, event) -> None:
        self.query_one("#search", SearchBar).open(event.view)

    @on(SearchBar.Search)
    def _search(self, event: SearchBar.Search) -> None:
        bar = self.query_one("#search", SearchBar)
        target = bar.target or self._visible_view()
        bar.result_text = "searching…"
        target.run_search(event.query)

    @on(IRView.SearchDone)
    @on(LogView.SearchDone)
    def _search_done(self, event) -> None:
        bar = self.query_one("#search", SearchBar)
        if bar.target is not event.view:
            return
        if event.error:
            bar.result_text = event.error
        elif not event.query:
            bar.result_text = ""
        else:
            current = getattr(event.view, "current_match", -1)
            bar.result_text = f"{current + 1}/{event.count} matches" if event.count else "no match"
            if event.count:  # n / N now work in the view
                event.view.focus()

    @on(SearchBar.Closed)
    def _search_closed(self) -> None:
        target = self.query_one("#search", SearchBar).target
        if target is not None:
            target.focus()

    def action_go_to_symbol(self) -> None:
        view = self._visible_view()
        symbols = view.symbols()
        if not symbols:
            self.notify("no symbols in the IR shown", severity="warning", timeout=3)
            return

        def jump(line: int | None) -> None:
            if line is not None:
                view.go_to_line(line)
                view.focus()

        self.push_screen(OutlineScreen(symbols), callback=jump)

    def _panes(self) -> list:
        panes: list = [self.query_one("#cmd")]
        if self.query_one("#side").display:
            panes += [self.query_one("#side-left"), self.query_one("#side-right")]
        else:
            panes.append(self.query_one("#ir"))
        if self.query_one("#left").display:
            panes += [self.query_one("#steps"), self.query_one("#params")]
        panes.append(self.query_one("#log"))
        return panes

    def action_focus_pane(self, delta: int) -> None:
        panes = self._panes()
        current = 0
        node = self.focused
        while node is not None:
            if node in panes:
                current = panes.index(node)
                break
            node = node.parent
        target = panes[(current + delta) % len(panes)]
        if isinstance(target, ParamForm):
            if not target.focus_first():
                target = panes[(panes.index(target) + delta) % len(panes)]
            else:
                return
        target.focus()

    def action_edit_params(self) -> None:
        if not self.query_one("#left").display:
            self.query_one("#left").display = True
        if not self.query_one("#params", ParamForm).focus_first():
            self.notify(f"step {self.selected} has no parameters to edit", timeout=3)

    def action_cancel(self) -> None:
        """Escape: close what is open (completions, keys panel, search), cancel the running step,
        else go back to the command input."""
        if self.query_one("#completions").display:
            self.query_one("#completions").display = False
            return
        if self.screen.query("HelpPanel"):
            self.action_hide_help_panel()
            return
        bar = self.query_one("#search", SearchBar)
        if bar.display:
            bar.action_close()
            return
        if not self.busy:
            self.query_one("#cmd").focus()
            return
        self.cancelled = True
        self._set_status(f"cancelling: {self.busy}")
        from workbench.execution.worker_client import cancel_command

        cancel_command()   # every worker in flight: a run's own run worker too
        for name in ("client", "run_client", "runner"):
            target = getattr(self.ctx.session, name, None)
            cancel = getattr(target, "cancel", None)
            if callable(cancel):
                try:
                    cancel()
                except Exception:
                    pass

    async def action_quit(self) -> None:
        unsaved = _unsaved_steps(self.ctx.session)
        if not unsaved:
            self.exit()
            return

        def answered(yes: bool | None) -> None:
            if yes:
                self.exit()

        self.push_screen(ConfirmScreen(f"{unsaved} step(s) not saved (`save FILE.yaml` keeps them). Quit anyway?"),
                         callback=answered)

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


def _unsaved_steps(session) -> int:
    fn = getattr(session, "unsaved_steps", None)
    return fn() if callable(fn) else 0


def _relative(path: Path) -> str:
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def _escape(text: str) -> str:
    from rich.markup import escape

    return escape(text)


def run_app(ctx: CommandContext, **kw: Any) -> "WorkbenchApp":
    # the UI thread gets the GIL back sooner while a worker thread computes (diffs, indexing)
    sys.setswitchinterval(0.002)
    app = WorkbenchApp(ctx, **kw)
    app.run()
    return app
