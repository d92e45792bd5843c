"""One MPI rank: JIT-compile the lowered module and run this rank's shard (started by `mpiexec`).

    mpiexec -n N python -m workbench.worker.mpi.rank WORKDIR

WORKDIR holds `request.pkl` (the run request: LLVM-dialect text, libraries, output specs,
flags) and `inputs{R}.pkl` (this rank's input arrays). MPI is initialised here, through
mpi4py, before the JIT-compiled code runs (the generated code calls MPI_Comm_rank,
MPI_Allreduce, ... from the same `libmpi`), and finalised after. The answer of rank R goes
to `rank{R}.pkl`: the run worker's answer dict (`args_after`, `outputs`, `times`, ...).
All ranks pass a barrier before the timed wrapper so their iterations start together.

A run has two time limits, as in the run worker (workbench/worker/protocol.py): the request's
`compile_limit_s` until the rank has generated its code (a lookup of the entry) and called
`protocol.compiled()`, which writes `compiled{R}` (the host starts the run limit, `time_limit_s`, when
every rank has), then the calls'. The host kills every rank at either limit; a rank ends itself past
them (+ a grace) or when the host process is gone.

Everything that can abort (an MLIR assertion, generated code that segfaults) takes this
rank down; mpiexec then tears the others down and the host reports the failure.
"""
from __future__ import annotations

import os
import pickle
import sys
import time
import traceback
from pathlib import Path

#: the launching process's pid (execution/mpi_launch.py HOST_PID_ENV): the rank ends itself when it is gone
HOST_PID_ENV = "LH_WORKBENCH_MPI_HOST_PID"
#: test hook: the ranks (comma-separated) whose compile phase sleeps protocol.COMPILE_DELAY_ENV seconds (all if unset)
DELAYED_RANKS_ENV = "LH_WORKBENCH_TEST_DELAYED_RANKS"


def _run(req: dict, inputs: list, comm) -> dict:
    """The run worker's request (see run_worker.handle_run), with a barrier before the timed wrapper. The module
    is compiled as the run worker compiles it (run_worker.jit_compile: bytecode, weights bound as data)."""
    import numpy as np
    from mlir import ir

    from workbench.worker.protocol import compiled
    from workbench.worker.run_worker import Jit, _invoke, jit_compile, output_buffers, weights_bound

    try:
        jit = jit_compile(req)
    except Exception as e:   # every rank must reach the agreement below, or the others wait there for ever
        jit = {"ok": False, "diagnostics": traceback.format_exc(),
               "error": f"JIT compilation failed: {str(e).splitlines()[0] if str(e) else type(e).__name__}"}
    failure = None if isinstance(jit, Jit) else jit
    if failure is None:
        compiled(compile_s=jit.compile_s)   # the host hears it (compiled{R}); the run limit starts
    # every rank must be ready before any of them calls into code that may wait on the others
    if not comm.allreduce(failure is None, op=_land()):
        return failure or {"ok": False, "error": "another rank failed before running"}
    with jit.context, ir.Location.unknown():
        engine = jit.engine
        answer: dict = {"ok": True, "compile_s": jit.compile_s}
        if jit.weights:
            answer["external_weights"] = weights_bound(jit.weights)
        inputs = [np.ascontiguousarray(a) for a in inputs]
        out_specs = req.get("outputs") or []
        if req.get("call"):
            args = [a.copy() for a in inputs]
            outs = output_buffers(out_specs)
            _invoke(engine, req["call"], args + outs)
            answer["args_after"], answer["outputs"] = args, outs
        if req.get("bench"):
            args = [a.copy() for a in inputs]
            outs = output_buffers(out_specs)
            times = np.zeros(int(req["times_len"]), dtype=np.float64)
            comm.Barrier()  # the ranks start their timed iterations together
            rss0 = _resident_bytes()
            t1 = time.perf_counter()
            _invoke(engine, req["bench"], args + outs + [times])
            answer["bench_wall_s"] = time.perf_counter() - t1
            if rss0 is not None and (rss1 := _resident_bytes()) is not None:
                # memory the timed loop kept: buffers it allocated and never freed
                answer["bench_rss_growth_bytes"] = rss1 - rss0
            answer["times"] = times.tolist()
        splits = _comm_splits(engine)
        if splits is not None:
            answer["comm_splits"] = splits
        return answer


def _comm_splits(engine) -> int | None:
    """MPI_Comm_split calls the module made (lh-mpi-reuse-comm's counter), None without the counter."""
    import ctypes

    from workbench.worker.mpi.comm_reuse import COUNTER

    try:
        address = engine.raw_lookup(COUNTER[len("_mlir_"):])
    except Exception:
        return None
    return int(ctypes.c_int64.from_address(address).value) if address else None


def _resident_bytes() -> int | None:
    """This process's resident memory (Linux), else None."""
    try:
        return int(Path("/proc/self/statm").read_text().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return None


def _pin_to_own_cores(comm, MPI) -> list[int] | None:
    """Pin this rank to CPUs no other rank of this host uses: whole physical cores, split evenly among the
    host's ranks (`cpus_for_local_rank`). Unpinned ranks wander, and two of them on the hyper-threads of
    one core each run at about half speed: the slowest rank sets the time of every iteration.
    Each rank runs on the last T of its CPUs (T = `run --threads N`, else 1: the ranks' schedules are
    single-core; cpu_topology.cpus_kept). LH_WORKBENCH_MPI_PIN=0 leaves placement to the OS (or to
    mpiexec's own binding options)."""
    if os.environ.get("LH_WORKBENCH_MPI_PIN", "1") == "0" or not hasattr(os, "sched_setaffinity"):
        return None
    from workbench.common.cpu_topology import cpus_for_local_rank, cpus_kept

    node = comm.Split_type(MPI.COMM_TYPE_SHARED)   # the ranks of this host
    try:
        cpus = cpus_for_local_rank(node.Get_rank(), node.Get_size())
    finally:
        node.Free()
    threads = int(os.environ.get("LH_WORKBENCH_THREADS", "0") or 0)   # `run --threads N`: N per rank
    if cpus:
        cpus = cpus_kept(cpus, threads)
    if cpus:
        try:
            os.sched_setaffinity(0, cpus)
        except OSError:
            return None
    return cpus


def _guard(req: dict, wd: Path, rank: int) -> None:
    """The run's two time limits and the compiled report (workbench/worker/protocol.py), for this rank: the
    report is the file `compiled{rank}`, which the host watches (execution/mpi_launch.py)."""
    from workbench.worker.protocol import COMPILE_DELAY_ENV, guard_rank

    delayed = os.environ.get(DELAYED_RANKS_ENV)
    if delayed is not None and str(rank) not in delayed.split(","):
        os.environ.pop(COMPILE_DELAY_ENV, None)

    def report(message: dict) -> None:
        tmp = wd / f"compiled{rank}.tmp"
        tmp.write_text(repr(message))
        os.replace(tmp, wd / f"compiled{rank}")

    host = os.environ.get(HOST_PID_ENV, "")
    # the rank may wait for the others' compile after its own: its run limit is the compile's and the run's
    compile_limit, run_limit = req.pop("compile_limit_s", None), req.pop("time_limit_s", None)
    guard_rank(int(host) if host.isdigit() else None, compile_limit,
               compile_limit + run_limit if compile_limit and run_limit else None, report)


def _land():
    from mpi4py import MPI

    return MPI.LAND


def main(workdir: str) -> int:
    from mpi4py import MPI  # initialises MPI (MPI_Init_thread) on import

    comm = MPI.COMM_WORLD
    rank, size = comm.Get_rank(), comm.Get_size()
    cpus = _pin_to_own_cores(comm, MPI)
    wd = Path(workdir)
    (wd / f"pid{rank}").write_text(str(os.getpid()))  # lets the host name the rank mpiexec reports as failed
    # a rank that crashes (abort, segfault) says so itself: mpiexec then kills the others with SIGTERM,
    # and on a loaded machine may report one of *those* first; the host blames the rank that wrote here
    import faulthandler

    fault_file = open(wd / f"fault{rank}", "w")
    faulthandler.enable(file=fault_file, all_threads=False)
    with open(wd / "request.pkl", "rb") as f:
        req = pickle.load(f)
    _guard(req, wd, rank)
    with open(wd / f"inputs{rank}.pkl", "rb") as f:
        inputs = pickle.load(f)
    try:
        answer = _run(req, inputs, comm)
    except Exception as e:  # a Python-level failure of this rank: report it
        answer = {"ok": False, "error": f"{type(e).__name__}: {e}".splitlines()[0],
                  "diagnostics": traceback.format_exc()}
    answer["rank"], answer["size"], answer["cpus"] = rank, size, cpus
    tmp = wd / f"rank{rank}.pkl.tmp"
    with open(tmp, "wb") as f:
        pickle.dump(answer, f, protocol=pickle.HIGHEST_PROTOCOL)
    os.replace(tmp, wd / f"rank{rank}.pkl")
    sys.stdout.flush()
    MPI.Finalize()
    return 0 if answer.get("ok") else 3


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
