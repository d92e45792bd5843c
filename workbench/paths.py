"""Well-known locations: the installed schedule/pipeline library and the state directory."""
from __future__ import annotations

import os
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent
REPO_ROOT = PACKAGE_DIR.parent


def _library_dir() -> Path:
    """The schedule/pipeline library: `pipelines/` beside the package in a checkout (or an
    editable install), `workbench/pipelines/` inside an installed wheel."""
    for candidate in (REPO_ROOT / "pipelines", PACKAGE_DIR / "pipelines"):
        if (candidate / "cpu").is_dir():
            return candidate
    return REPO_ROOT / "pipelines"


LIBRARY_DIR = _library_dir()


def state_dir() -> Path:
    """Where journals and histories live ($LH_WORKBENCH_STATE_DIR, else XDG state). Made if it is missing; one
    that cannot be made (a read-only home or file system) is still returned: reading from it finds nothing,
    and each writer says in one line what it could not keep (a read-only state folder failed every `load`)."""
    env = os.environ.get("LH_WORKBENCH_STATE_DIR")
    if env:
        p = Path(env)
    else:
        p = Path(os.environ.get("XDG_STATE_HOME", Path.home() / ".local" / "state")) / "lh-workbench"
    try:
        p.mkdir(parents=True, exist_ok=True)
    except OSError:
        pass
    return p


#: the example sessions shipped with a checkout (replaying them is not "a session from elsewhere")
SHIPPED_SESSIONS_DIR = REPO_ROOT / "sessions"


def in_shipped_sessions(path: Path) -> bool:
    try:
        Path(path).resolve().relative_to(SHIPPED_SESSIONS_DIR.resolve())
        return SHIPPED_SESSIONS_DIR.is_dir()
    except ValueError:
        return False


def in_library(path: Path) -> bool:
    try:
        path.resolve().relative_to(LIBRARY_DIR.resolve())
        return True
    except ValueError:
        return False
