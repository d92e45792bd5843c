"""The Target interface and its registry."""
from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

from workbench.paths import LIBRARY_DIR


class TargetError(RuntimeError):
    pass


class Target:
    """A place code runs. Subclasses set the class attributes and override the hooks."""

    name: ClassVar[str] = ""
    description: ClassVar[str] = ""
    #: named pipelines this target provides: name -> YAML file under pipelines/
    named_pipelines: ClassVar[dict[str, str]] = {}
    #: the named pipeline `run` applies to whatever is not lowered yet
    default_lowering: ClassVar[str] = ""

    def can_run(self) -> tuple[bool, str]:
        return False, "not implemented"

    def pipeline_path(self, name: str) -> Path:
        return LIBRARY_DIR / self.named_pipelines[name]

    def select_params(self, info: dict[str, Any]) -> dict[str, dict[str, Any]]:
        """Payload inspection -> {schedule spec: parameter dict} for the shipped schedules."""
        return {}


_REGISTRY: dict[str, Target] = {}


def register(cls: type[Target]) -> type[Target]:
    _REGISTRY[cls.name] = cls()
    return cls


def get_target(name: str) -> Target:
    try:
        return _REGISTRY[name]
    except KeyError:
        raise TargetError(f"unknown target {name!r} (known: {', '.join(sorted(_REGISTRY))})")


def all_targets() -> list[Target]:
    return [_REGISTRY[k] for k in sorted(_REGISTRY)]


def find_named_pipeline(name: str) -> Path:
    for t in _REGISTRY.values():
        if name in t.named_pipelines:
            return t.pipeline_path(name)
    known = sorted(n for t in _REGISTRY.values() for n in t.named_pipelines)
    raise TargetError(f"unknown named pipeline {name!r} (known: {', '.join(known)})")
