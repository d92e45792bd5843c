"""What this user has consented to, remembered by content (sha256) in the user's state directory.

- Python schedule files outside the installed library that the user applied interactively (or
  named with `trust`): replay and resume of the user's own sessions may run them again, as long as
  the file is byte-identical. A session from elsewhere naming another file still needs consent.
- Session files this user saved: replaying one of them is not "a session from elsewhere", so
  running its payload (`replay --run`) needs no extra consent.

A file changed after it was trusted has another hash and is not trusted any more.
"""
from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path

from workbench.common.files import atomic_write, read_regular_file, resolved
from workbench.paths import state_dir

PYTHON, SESSION = "python", "session"


def store_path() -> Path:
    return state_dir() / "trusted.json"


def file_sha256(path: Path) -> str | None:
    """The sha256 of a regular file's content; None for what is none (a FIFO `save` wrote to: reading it
    back blocked for ever; /dev/zero never ends) or cannot be read."""
    try:
        return hashlib.sha256(read_regular_file(Path(path))).hexdigest()
    except OSError:
        return None


def _read() -> dict:
    try:
        doc = json.loads(store_path().read_text())
    except (OSError, ValueError):
        return {}
    return doc if isinstance(doc, dict) and isinstance(doc.get("files"), dict) else {}


def record(path: Path, kind: str) -> bool:
    """Remember `path`'s current content as trusted for `kind`. False when it could not be stored
    (a full disk): the trust then lasts for this process only (the caller's own set)."""
    sha = file_sha256(path)
    if sha is None:
        return False
    doc = _read() or {"files": {}}
    entry = doc["files"].get(sha)
    if entry and entry.get("kind") == kind and entry.get("path") == str(resolved(path)):
        return True
    doc["files"][sha] = {"kind": kind, "path": str(resolved(path)), "when": time.strftime("%Y-%m-%dT%H:%M:%S")}
    try:
        atomic_write(store_path(), json.dumps(doc, indent=1, sort_keys=True) + "\n")
    except OSError:
        return False
    return True


def is_trusted(path: Path, kind: str) -> bool:
    sha = file_sha256(path)
    entry = _read().get("files", {}).get(sha) if sha else None
    return bool(entry) and entry.get("kind") == kind
