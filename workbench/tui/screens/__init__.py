"""Modal screens of the workbench TUI: one per file."""
from workbench.tui.screens.confirm import ConfirmScreen
from workbench.tui.screens.help import HelpScreen
from workbench.tui.screens.outline import OutlineScreen

__all__ = ["ConfirmScreen", "HelpScreen", "OutlineScreen"]
