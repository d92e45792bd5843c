"""The `lh-workbench` command (front-end process): starts the compile worker first, then imports the
front end.

The worker's own start (a Python process importing the MLIR bindings, ~0.4 s) then runs on another core
while this process imports the CLI, the commands and the TUI, instead of after them: the first screen
of a payload comes that much sooner. `workbench.cli.main` does everything else.
"""
from __future__ import annotations

import sys

#: first arguments that never need a compile worker
_NO_WORKER = {"import", "targets", "-h", "--help"}


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] not in _NO_WORKER and "-h" not in argv and "--help" not in argv:
        from workbench.execution.worker_client import prestart_compile_worker

        prestart_compile_worker()
    from workbench.cli import main as cli_main

    try:
        return cli_main(argv)
    except BrokenPipeError:
        # the reader of stdout went away (`lh-workbench targets --json | head`): stop as a shell tool does,
        # not with a traceback; stdout is pointed at /dev/null so that its flush at exit does not raise again
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141


if __name__ == "__main__":
    sys.exit(main())
