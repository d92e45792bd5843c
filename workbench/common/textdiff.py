"""Unified diffs and side-by-side alignments of IR text, fast, and off the caller's process when big.

Up to `DIFFLIB_MAX_LINES` lines: difflib's algorithm and output, with cdifflib's C SequenceMatcher
where it is installed (3-4x faster on a 25k-line diff; the same opcodes, so the same text). Above
it, patience diff (the `patiencediff` package, compiled): on a 40k-line module where every function
changed, difflib takes about a minute, patience diff 0.2 s; its hunks are as valid, aligned on
unique lines. Compiled matchers hold the GIL, so texts of more than `IN_PROCESS_CHARS` are diffed
in a helper process (`python -m workbench.common.textdiff`, started on first use): the TUI's UI
thread keeps running meanwhile. This module imports nothing heavy: the helper imports only it."""
from __future__ import annotations

import atexit
import difflib
import threading
from typing import Iterator

try:
    from cdifflib import CSequenceMatcher as SequenceMatcher
except ImportError:  # pragma: no cover - the pure-Python matcher gives the same result, slower
    SequenceMatcher = difflib.SequenceMatcher


#: texts up to this many characters are diffed in the calling thread (a few ms)
IN_PROCESS_CHARS = 200_000
#: above this many lines (both texts), patience diff instead of difflib's matcher
DIFFLIB_MAX_LINES = 10_000


def _range(start: int, stop: int) -> str:
    """difflib's unified range format: 'start,length' (1-based; 'start' alone for one line)."""
    beginning = start + 1
    length = stop - start
    if length == 1:
        return f"{beginning}"
    if not length:
        beginning -= 1
    return f"{beginning},{length}"


def unified_diff_lines(a: list[str], b: list[str], fromfile: str = "", tofile: str = "",
                       n: int = 3) -> Iterator[str]:
    """difflib.unified_diff(a, b, fromfile, tofile, n=n) for lines that keep their newlines."""
    started = False
    for group in _matcher(a, b).get_grouped_opcodes(n):
        if not started:
            started = True
            yield f"--- {fromfile}\n"
            yield f"+++ {tofile}\n"
        first, last = group[0], group[-1]
        yield f"@@ -{_range(first[1], last[2])} +{_range(first[3], last[4])} @@\n"
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                yield from (" " + line for line in a[i1:i2])
                continue
            if tag in ("replace", "delete"):
                yield from ("-" + line for line in a[i1:i2])
            if tag in ("replace", "insert"):
                yield from ("+" + line for line in b[j1:j2])


def _matcher(a: list[str], b: list[str]):
    """difflib's matcher (same output as difflib) up to DIFFLIB_MAX_LINES lines, patience above."""
    if len(a) + len(b) > DIFFLIB_MAX_LINES:
        try:
            from patiencediff import PatienceSequenceMatcher
        except ImportError:  # pragma: no cover - difflib then: correct, much slower on big IR
            pass
        else:
            return PatienceSequenceMatcher(None, a, b)
    return SequenceMatcher(None, a, b)


def _unified(a_text: str, b_text: str, fromfile: str, tofile: str, n: int) -> str:
    return "".join(unified_diff_lines(a_text.splitlines(True), b_text.splitlines(True), fromfile, tofile, n))


def unified_diff(a_text: str, b_text: str, fromfile: str = "", tofile: str = "", n: int = 3) -> str:
    """difflib.unified_diff's text ('' when equal); big texts in the helper process."""
    if a_text == b_text:
        return ""
    if len(a_text) + len(b_text) > IN_PROCESS_CHARS:
        return _helper.run("unified", a_text, b_text, fromfile, tofile, n)
    return _unified(a_text, b_text, fromfile, tofile, n)


def side_by_side(a: str, b: str) -> tuple[str, str, dict[int, str], dict[int, str]]:
    """Align two texts line by line: (left, right, left_marks, right_marks); marks are
    'del'/'add'/'change'/'pad' per line index. Big texts in the helper process."""
    if len(a) + len(b) > IN_PROCESS_CHARS:
        return _helper.run("aligned", a, b)
    return _aligned(a, b)


def _aligned(a: str, b: str) -> tuple[str, str, dict[int, str], dict[int, str]]:
    la, lb = a.splitlines(), b.splitlines()
    left: list[str] = []
    right: list[str] = []
    lm: dict[int, str] = {}
    rm: dict[int, str] = {}
    for tag, i1, i2, j1, j2 in _matcher(la, lb).get_opcodes():
        if tag == "equal":
            left += la[i1:i2]
            right += lb[j1:j2]
            continue
        n = max(i2 - i1, j2 - j1)
        for k in range(n):
            idx = len(left)
            if i1 + k < i2:
                left.append(la[i1 + k])
                lm[idx] = "del" if tag == "delete" or j1 + k >= j2 else "change"
            else:
                left.append("")
                lm[idx] = "pad"
            if j1 + k < j2:
                right.append(lb[j1 + k])
                rm[idx] = "add" if tag == "insert" or i1 + k >= i2 else "change"
            else:
                right.append("")
                rm[idx] = "pad"
    return "\n".join(left), "\n".join(right), lm, rm


class _Helper:
    """One helper process (`python -m workbench.common.textdiff`, started on first use) that computes big
    diffs; requests and answers are pickled over its stdin/stdout, one at a time."""

    def __init__(self) -> None:
        self._proc = None
        self._lock = threading.Lock()

    def _ensure(self):
        import os
        import subprocess
        import sys

        if self._proc is None or self._proc.poll() is not None:
            env = dict(os.environ)
            root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
            env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
            # a session of its own, as the workers: Ctrl-C at the REPL (SIGINT to the terminal's process group)
            # killed it, left a zombie, and the next big diff forked a new one from a front end then large
            self._proc = subprocess.Popen([sys.executable, "-m", "workbench.common.textdiff"], stdin=subprocess.PIPE,
                                          stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env,
                                          start_new_session=True)
        return self._proc

    def run(self, name: str, *args):
        import pickle

        with self._lock:
            try:
                proc = self._ensure()
                pickle.dump((name, args), proc.stdin, protocol=pickle.HIGHEST_PROTOCOL)
                proc.stdin.flush()
                ok, value = pickle.load(proc.stdout)
            except (OSError, EOFError, pickle.PickleError, ValueError):
                # the helper could not start or died (killed, out of memory): compute here instead
                self._kill()
                return _FUNCTIONS[name](*args)
        if not ok:
            raise RuntimeError(value)
        return value

    def _kill(self) -> None:
        proc, self._proc = self._proc, None
        if proc is not None and proc.poll() is None:
            proc.kill()
            proc.wait()

    def close(self) -> None:
        with self._lock:
            proc, self._proc = self._proc, None
        if proc is not None:
            try:
                proc.stdin.close()
                proc.wait(timeout=2)
            except Exception:
                proc.kill()


_FUNCTIONS = {"unified": _unified, "aligned": _aligned}


def start_helper() -> None:
    """Start the helper process now (a front end calls this at startup, while its memory is small:
    forking a process that holds 640k-line modules takes long, with the GIL held)."""
    with _helper._lock:
        try:
            _helper._ensure()
        except OSError:
            pass
_helper = _Helper()
atexit.register(_helper.close)


def _serve() -> None:
    """The helper process: answer pickled (name, args) requests until stdin closes."""
    import pickle
    import sys

    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    while True:
        try:
            name, args = pickle.load(stdin)
        except EOFError:
            return
        try:
            answer = (True, _FUNCTIONS[name](*args))
        except Exception as e:  # reported to the caller
            answer = (False, f"{type(e).__name__}: {e}")
        pickle.dump(answer, stdout, protocol=pickle.HIGHEST_PROTOCOL)
        stdout.flush()


if __name__ == "__main__":
    _serve()
