"""Did-you-mean hints for a mistyped name (command, option, parameter, key, pipeline, pass, file).

One rule for every front end and error: the candidates that start like the word, then the ones
`difflib` finds close (a swapped, missing or doubled letter), at most three, best first.
"""
from __future__ import annotations

import difflib
from pathlib import Path
from typing import Iterable

from workbench.common.files import broken_link_reason


def close_matches(word: str, candidates: Iterable[str], n: int = 3) -> list[str]:
    """The candidates a typo of `word` most likely meant (none for an empty word)."""
    pool = list(dict.fromkeys(str(c) for c in candidates if c))
    word = "" if word is None else str(word)   # a YAML key may be a bool or a number (`true: 1`)
    if not word or not pool:
        return []
    lowered = word.lower()
    found = difflib.get_close_matches(lowered, pool, n=n, cutoff=0.7)
    if len(lowered) >= 2:   # `ap` -> apply: a prefix the user stopped typing
        found += [c for c in pool if c.lower().startswith(lowered) and c not in found]
    return found[:n]


def did_you_mean(word: str, candidates: Iterable[str], n: int = 3) -> str:
    """` (did you mean a, b?)` for an error message, or '' when nothing is close."""
    close = close_matches(word, candidates, n)
    return f" (did you mean {', '.join(close)}?)" if close else ""


def did_you_mean_path(path: str | Path, shown_as: str | Path | None = None) -> str:
    """For a file that does not exist: the close names in its folder (the folder exists), as a hint,
    spelled with the folder of `shown_as` (the path as the user wrote it; default `path`)."""
    p = Path(path)
    broken = broken_link_reason(p)
    if broken:     # the name is right: the link is not (its own name is no suggestion)
        return f" ({broken})"
    folder = p.parent
    shown_folder = Path(shown_as).parent if shown_as is not None else folder
    try:
        names = [q.name for q in folder.iterdir()] if folder.is_dir() else []
    except OSError:
        return ""
    close = close_matches(p.name, names)
    if not close:
        return ""
    shown = [str(shown_folder / c) if str(shown_folder) not in ("", ".") else c for c in close]
    return f" (did you mean {', '.join(shown)}?)"
