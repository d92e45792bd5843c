"""The default registry: every command group of the workbench, registered in one place."""
from __future__ import annotations

from workbench.commands import (edit_commands, export_commands, file_commands, help_commands, history_commands,
                                import_commands, payload_commands, run_commands, step_commands, target_commands, tune_commands)
from workbench.commands.registry import Registry

#: the command groups, in the order their commands are listed
GROUPS = (payload_commands, import_commands, step_commands, history_commands, file_commands, target_commands, run_commands,
          tune_commands, edit_commands, export_commands, help_commands)


def default_registry() -> Registry:
    reg = Registry()
    for group in GROUPS:
        group.register(reg)
    return reg
