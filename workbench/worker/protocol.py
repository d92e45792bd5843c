"""The worker side of the request/answer protocol shared by the compile and run workers."""
from __future__ import annotations

import traceback
from multiprocessing.connection import Connection
from typing import Callable


def serve_requests(fd: int, handle: Callable[[dict], dict]) -> None:
    """Answer request dicts from the connection on `fd` until EOF or {"op": "exit"}.

    A Python exception in `handle` becomes a failure answer; only a real crash ends the process.
    """
    conn = Connection(fd)
    while True:
        try:
            req = conn.recv()
        except EOFError:
            return
        if req.get("op") == "exit":
            return
        if req.get("op") == "ping":
            conn.send({"ok": True})
            continue
        try:
            answer = handle(req)
        except Exception as e:
            answer = {"ok": False, "error": f"{type(e).__name__}: {e}".splitlines()[0],
                      "diagnostics": traceback.format_exc()}
        conn.send(answer)
