"""The user's keymap file: binding id -> keys, applied with Textual's `App.set_keymap`.

Where: `$LH_WORKBENCH_KEYMAP`, else `$XDG_CONFIG_HOME/lh-workbench/keymap.toml` (or `.yaml`;
XDG_CONFIG_HOME defaults to ~/.config). TOML example (dotted ids are nested tables, both work):

    "app.undo" = "ctrl+u"
    [ir]
    search = "slash,ctrl+f"
    fold = ["z", "f"]

Every binding of the app has an id (the help screen, F1, lists them with their keys).
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any

ENV = "LH_WORKBENCH_KEYMAP"


class KeymapError(ValueError):
    pass


def keymap_path() -> Path:
    explicit = os.environ.get(ENV)
    if explicit:
        return Path(explicit).expanduser()
    base = Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config") / "lh-workbench"
    for name in ("keymap.toml", "keymap.yaml", "keymap.yml"):
        if (base / name).is_file():
            return base / name
    return base / "keymap.toml"


def _flatten(doc: Any, prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    if not isinstance(doc, dict):
        raise KeymapError("expected a mapping of binding ids to keys")
    for key, value in doc.items():
        name = f"{prefix}.{key}" if prefix else str(key)
        if isinstance(value, dict):
            out.update(_flatten(value, name))
        else:
            out[name] = value
    return out


def parse_keymap(text: str, suffix: str) -> dict[str, str]:
    """Binding id -> comma-separated keys. Raises KeymapError (one line) on a bad file."""
    if suffix in (".yaml", ".yml"):
        import yaml

        try:
            doc = yaml.safe_load(text) or {}
        except yaml.YAMLError as e:
            mark = getattr(e, "problem_mark", None)
            where = f"{mark.line + 1}:{mark.column + 1}: " if mark else ""
            raise KeymapError(f"{where}{getattr(e, 'problem', None) or e}") from None
    else:
        try:
            import tomllib
        except ImportError:  # Python 3.10
            try:
                import tomli as tomllib  # type: ignore[no-redef]
            except ImportError:
                raise KeymapError("reading TOML needs Python >= 3.11 (or tomli): use keymap.yaml") from None
        try:
            doc = tomllib.loads(text)
        except tomllib.TOMLDecodeError as e:
            raise KeymapError(str(e)) from None
    keymap: dict[str, str] = {}
    for binding_id, keys in _flatten(doc).items():
        if isinstance(keys, str):
            keys = [k for k in keys.split(",")]
        if not isinstance(keys, list) or not keys or not all(isinstance(k, str) and k.strip() for k in keys):
            raise KeymapError(f"{binding_id}: expected a key or a list of keys, got {keys!r}")
        keymap[binding_id] = ",".join(k.strip() for k in keys)
    return keymap


def key_clashes(sections: list[tuple[str, list]], keymap: dict[str, str]) -> list[str]:
    """Warnings for remapped keys that another binding of the same section keeps by default
    (`"app.undo" = "ctrl+q"` took Ctrl+Q from quit without a word: the footer just lost `^q Quit`)."""
    out = []
    for section, bindings in sections:
        default = {}
        for b in bindings:
            bid, keys = getattr(b, "id", None), getattr(b, "key", "")
            if bid and bid not in keymap:
                default.update((k.strip(), bid) for k in keys.split(",") if k.strip())
        ids = {getattr(b, "id", None) for b in bindings}
        for bid, keys in keymap.items():
            if bid not in ids:
                continue
            for k in (k.strip() for k in keys.split(",")):
                if default.get(k) not in (None, bid):
                    out.append(f"keymap: {bid} takes {k}, the key of {default[k]} ({section}): "
                               f"{default[k]} is left without it; give it another in the keymap")
    return out


def load_keymap(known_ids: set[str], path: Path | None = None) -> tuple[dict[str, str], list[str]]:
    """(keymap, warnings): a missing file is an empty keymap; unknown ids are dropped with a warning."""
    path = path or keymap_path()
    if not path.is_file():
        if os.environ.get(ENV):
            return {}, [f"keymap {path}: no such file (from ${ENV})"]
        return {}, []
    try:
        keymap = parse_keymap(path.read_text(), path.suffix)
    except (KeymapError, OSError, UnicodeDecodeError) as e:
        return {}, [f"keymap {path}: {e} (default keys used)"]
    unknown = sorted(k for k in keymap if k not in known_ids)
    warnings = []
    if unknown:
        warnings.append(f"keymap {path}: unknown binding ids {', '.join(unknown)} (F1 lists the ids)")
    return {k: v for k, v in keymap.items() if k in known_ids}, warnings
