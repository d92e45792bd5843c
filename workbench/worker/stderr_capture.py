"""What native code (MLIR's C++, the CUDA runtime wrappers) writes to file descriptor 2 during a block, as text:
those libraries print their reasons there, not in the exception or the return value."""
from __future__ import annotations

import contextlib
import os
import sys
import tempfile


@contextlib.contextmanager
def captured_stderr():
    """Send fd 2 to a temporary file for the block; the yielded list gets the text written there, as its one
    string, once the block ends (raising or not)."""
    sys.stderr.flush()
    out: list[str] = []
    saved = os.dup(2)
    with tempfile.TemporaryFile() as tmp:
        os.dup2(tmp.fileno(), 2)
        try:
            yield out
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            tmp.seek(0)
            out.append(tmp.read().decode(errors="replace"))
