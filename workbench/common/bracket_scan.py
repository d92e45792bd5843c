"""Reading command and pipeline text the way its grammar nests it: the characters outside quotes, each with
the bracket depth it sits at (`a,func.func(b,c)` splits at its first comma only; `{attr=#map}` holds no
comment)."""
from __future__ import annotations

from typing import Iterator

OPENING = "([{"
CLOSING = ")]}"


def unquoted(text: str, opening: str = OPENING, closing: str = CLOSING) -> Iterator[tuple[int, str, int]]:
    """(index, character, depth) for each character of `text` outside single or double quotes (the
    quotes themselves not included); depth counts the brackets open before the character (an opening
    bracket sits at the depth outside it, a closing one at the depth inside), never below 0."""
    quote, depth = "", 0
    for i, ch in enumerate(text):
        if quote:
            if ch == quote:
                quote = ""
            continue
        if ch in "'\"":
            quote = ch
            continue
        if ch in closing:
            yield i, ch, depth
            depth = max(0, depth - 1)
            continue
        yield i, ch, depth
        if ch in opening:
            depth += 1
