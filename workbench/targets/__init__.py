"""Targets: one class per target, registered by name. Nothing outside this package
branches on a target's name; everything asks the registry."""
from workbench.targets.base import Target, TargetError, all_targets, get_target, find_named_pipeline, register
from workbench.targets import cpu  # noqa: F401  (registers)
from workbench.targets import sycl  # noqa: F401  (registers)
from workbench.targets import xegpu  # noqa: F401  (registers)
from workbench.targets import mpi  # noqa: F401  (registers)
from workbench.targets import cuda  # noqa: F401  (registers)

__all__ = ["Target", "TargetError", "all_targets", "get_target", "find_named_pipeline", "register"]
