"""The results panel: the run's check verdict and statistics beside the timing plot.

`result` (reactive) is the last `Result` that carried a run (`data["run"]`) or a plot
(`data["plot"]`, e.g. tune's progress); setting it redraws the panel. The noise warning is the
run command's (`data["warnings"]`), so the REPL and scripts print the same one.
"""
from __future__ import annotations

from typing import Any, Callable

from rich.console import Group
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.reactive import reactive
from textual.widgets import Static

from workbench.result import Result


def _fmt_s(t: float | None) -> str:
    if t is None:
        return "--"
    return f"{t * 1e3:.3f} ms" if t < 1 else f"{t:.3f} s"


def verdict(res: Result) -> tuple[str, str]:
    """(text, style) of the headline: check passed / FAILED / not checked / run failed."""
    run = res.data.get("run") if isinstance(res.data.get("run"), dict) else None
    if run is None:
        return (res.summary or "results"), "bold"
    chk = run.get("check")
    if run.get("error") and not (chk and chk.get("passed") is False and not chk.get("error")):
        return "✘ RUN FAILED", "bold white on dark_red"
    if chk is None:
        return "not checked (F5: run --check)", "bold yellow"
    if chk.get("passed"):
        return "✔ CHECK PASSED", "bold black on green"
    return "✘ CHECK FAILED", "bold white on dark_red"


def summary_renderable(res: Result, scrub: Callable[[str], str] = lambda s: s):
    title, style = verdict(res)
    parts: list[Any] = [Text(f" {title} ", style=style)]
    run = res.data.get("run") if isinstance(res.data.get("run"), dict) else None
    if run is not None:
        t = Table.grid(padding=(0, 1))
        t.add_column(style="cyan")
        t.add_column()
        chk = run.get("check")
        if chk and not chk.get("error") and chk.get("max_abs_err") is not None:
            t.add_row("error", f"abs {chk['max_abs_err']:.2g}  rel {chk.get('max_rel_err', 0):.2g}")
        if run.get("median_s") is not None:
            for key in ("median", "min", "mean"):
                t.add_row(key, scrub(_fmt_s(run.get(f"{key}_s"))))
            median, stddev = run.get("median_s"), run.get("stddev_s")
            spread = f" ({stddev / median:.0%})" if median and stddev is not None else ""
            t.add_row("stddev", scrub(_fmt_s(stddev) + spread))
            if run.get("gflops"):
                t.add_row("GFLOP/s", scrub(f"{run['gflops']:.2f}"))
            per_sample = run.get("calls_per_sample") or 1
            t.add_row("calls", f"{run.get('iterations', '?')}{f' x {per_sample}' if per_sample > 1 else ''} "
                               f"on {run.get('target', '?')}")
        parts.append(t)
        err = run.get("error") or (chk or {}).get("error")
        if err:
            parts.append(Text(scrub(err), style="red"))
    for w in res.data.get("warnings") or []:
        if w.startswith("noisy timings") and run is not None and run.get("median_s"):
            w = f"noisy: stddev {run['stddev_s'] / run['median_s']:.0%} of the median"
        parts.append(Text("⚠ " + scrub(w), style="bold yellow"))
    return Group(*parts)


class ResultsPanel(Horizontal):
    result: reactive[Result | None] = reactive(None, init=False)

    def __init__(self, scrub: Callable[[str], str] = lambda s: s, **kw: Any) -> None:
        super().__init__(**kw)
        self.scrub = scrub

    def compose(self) -> ComposeResult:
        yield Static("", id="verdict")
        yield _plot_widget()

    def verdict_text(self, width: int = 60) -> str:
        """The verdict and statistics as plain text (what the panel's left side shows)."""
        import io

        from rich.console import Console

        if self.result is None:
            return ""
        console = Console(file=io.StringIO(), width=width, color_system=None)
        console.print(summary_renderable(self.result, self.scrub))
        return console.file.getvalue()

    def watch_result(self, res: Result | None) -> None:
        self.display = res is not None
        if res is None:
            return
        self.query_one("#verdict", Static).update(summary_renderable(res, self.scrub))
        self._plot(res)

    def _plot(self, res: Result) -> None:
        run = res.data.get("run") if isinstance(res.data.get("run"), dict) else None
        series, title = None, ""
        if run and run.get("times_s"):
            series = [t * 1e3 for t in run["times_s"]]
            title = "time per call (ms)"
        plot_data = res.data.get("plot")
        if series is None and isinstance(plot_data, dict) and plot_data.get("y"):
            series = list(plot_data["y"])
            title = plot_data.get("title", "")
        plot = self.query_one("#plot")
        plot.display = series is not None
        plt = getattr(plot, "plt", None)
        if series is None or plt is None:
            return
        plt.clear_data()
        plt.clear_figure()
        plt.plot(list(range(1, len(series) + 1)), series, marker="braille")
        plt.title(self.scrub(title))
        plot.refresh()


def _plot_widget():
    try:
        from textual_plotext import PlotextPlot

        return PlotextPlot(id="plot")
    except ImportError:  # plots are optional
        return Static("", id="plot")
