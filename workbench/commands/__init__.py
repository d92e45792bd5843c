"""The command layer: one registry of commands shared by every front end."""
from workbench.commands.builtin import default_registry
from workbench.commands.registry import Arg, Command, CommandContext, Flag, Registry, UsageError

__all__ = ["default_registry", "Arg", "Command", "CommandContext", "Flag", "Registry", "UsageError"]
