"""Well-known locations: the installed schedule/pipeline library and the state directory."""
from __future__ import annotations

import os
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
LIBRARY_DIR = REPO_ROOT / "pipelines"


def state_dir() -> Path:
    """Where journals and histories live ($LH_WORKBENCH_STATE_DIR, else XDG state)."""
    env = os.environ.get("LH_WORKBENCH_STATE_DIR")
    if env:
        p = Path(env)
    else:
        p = Path(os.environ.get("XDG_STATE_HOME", Path.home() / ".local" / "state")) / "lh-workbench"
    p.mkdir(parents=True, exist_ok=True)
    return p


def in_library(path: Path) -> bool:
    try:
        path.resolve().relative_to(LIBRARY_DIR.resolve())
        return True
    except ValueError:
        return False
