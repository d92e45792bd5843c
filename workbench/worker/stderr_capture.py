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


@contextlib.contextmanager
def captured_output():
    """Send fds 1 and 2 to one file for the block (in the order they were written): what MLIR's C++ prints on
    llvm::outs() and llvm::errs() (`transform.print`, `print-op-stats`, `print-ir`); the yielded list gets it as
    its one string once the block ends (raising or not). The file is this process's `output_spill_path`: where
    an assertion kills the process in the block, its client reads the reason there."""
    from workbench.common.spawn import output_spill_path

    sys.stdout.flush()
    sys.stderr.flush()
    out: list[str] = []
    path = output_spill_path(os.getpid())
    saved = (os.dup(1), os.dup(2))
    with open(path, "w+b") as spill:
        os.dup2(spill.fileno(), 1)
        os.dup2(spill.fileno(), 2)
        try:
            yield out
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            for fd, old in zip((1, 2), saved):
                os.dup2(old, fd)
                os.close(old)
            spill.seek(0)
            out.append(spill.read().decode(errors="replace"))
            try:
                os.unlink(path)
            except OSError:
                pass
