"""A session on a real-size model, command by command: wall time, bytes to and from the compile
worker, the front process's and the worker's peak RSS (VmHWM), the front's IR store size.

    PYTHONPATH=$PWD python bench/big_session.py PAYLOAD.mlir [--commands "target cpu;select --apply;..."]
"""
from __future__ import annotations

import argparse
import pickle
import resource
import sys
import time
from pathlib import Path


def _vm_hwm_mib(pid: int) -> float:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return float("nan")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("payload")
    p.add_argument("--commands", default="target cpu;select --apply;apply cpu-lower;run --check")
    args = p.parse_args(argv)
    from workbench.commands.catalog import default_registry
    from workbench.commands.registry import CommandContext
    from workbench.execution.worker_client import CompileClient, WorkerProcess
    from workbench.session import Session

    traffic = {"sent": 0, "received": 0}
    original_request = WorkerProcess.request

    def counted_request(self, req, *a, **kw):
        if isinstance(self, CompileClient):
            traffic["sent"] += len(pickle.dumps(req, protocol=pickle.HIGHEST_PROTOCOL))
        return original_request(self, req, *a, **kw)

    # what arrives, counted as it comes off the pipe (before the client makes compact IR objects of it)
    hook = "_absorb" if hasattr(CompileClient, "_absorb") else "_receive"
    original_hook = getattr(CompileClient, hook)

    def counted(self, arg):
        message = original_hook(self, arg) if hook == "_receive" else arg
        traffic["received"] += len(pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL))
        return message if hook == "_receive" else original_hook(self, message)

    WorkerProcess.request = counted_request
    setattr(CompileClient, hook, counted)
    session = Session()
    session.journal_enabled = False
    ctx = CommandContext(session, default_registry())
    print(f"{'command':<28}{'ok':>4}{'wall s':>9}{'sent MB':>9}{'recv MB':>9}{'front MiB':>11}"
          f"{'worker MiB':>11}{'store MB':>9}")
    for line in [f"load {args.payload}"] + [c.strip() for c in args.commands.split(";") if c.strip()]:
        before = dict(traffic)
        t0 = time.perf_counter()
        res = ctx.registry.dispatch(line, ctx)
        wall = time.perf_counter() - t0
        worker_pid = session.client.proc.pid if session.client.alive() else 0
        front = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(f"{line[:27]:<28}{'ok' if res.ok else 'FAIL':>4}{wall:>9.2f}"
              f"{(traffic['sent'] - before['sent']) / 1e6:>9.1f}{(traffic['received'] - before['received']) / 1e6:>9.1f}"
              f"{front:>11.0f}{_vm_hwm_mib(worker_pid):>11.0f}{session.irs.nbytes() / 1e6 if hasattr(session.irs, 'nbytes') else float('nan'):>9.1f}",
              flush=True)
        if not res.ok:
            print("  ", res.error, file=sys.stderr)
    session.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
