"""The command layer: one registry of commands shared by every front end.

One module per command group (`payload_commands`, `step_commands`, `history_commands`,
`file_commands`, `target_commands`, `run_commands`, `tune_commands`, `edit_commands`,
`export_commands`, `help_commands`), each with a `register(reg)`; `catalog.default_registry()`
registers them all.
"""
from workbench.commands.catalog import default_registry
from workbench.commands.registry import Arg, Args, Command, CommandContext, Flag, Registry, UsageError

__all__ = ["default_registry", "Arg", "Args", "Command", "CommandContext", "Flag", "Registry", "UsageError"]
