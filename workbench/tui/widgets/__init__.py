"""Widgets of the workbench TUI, one per file."""
from workbench.tui.text_model import side_by_side
from workbench.tui.widgets.command_input import CommandInput
from workbench.tui.widgets.ir_view import IRView
from workbench.tui.widgets.log_view import LogView
from workbench.tui.widgets.param_form import ParamForm
from workbench.tui.widgets.results_panel import ResultsPanel
from workbench.tui.widgets.search_bar import SearchBar
from workbench.tui.widgets.steps_table import StepsTable, short_spec

__all__ = ["CommandInput", "IRView", "LogView", "ParamForm", "ResultsPanel", "SearchBar", "StepsTable",
           "short_spec", "side_by_side"]
