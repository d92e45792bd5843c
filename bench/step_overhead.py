"""Step overhead: a transform step applied through the Session (worker process, copy, verify,
bytecode backup, IPC) vs the transform interpreter called directly in-process; the same step as
the `apply` command runs it in the REPL and scripts (which also prints the result and its
diffstat); and undo / redo / diff times on a large module.

    python bench/step_overhead.py [--repeats N]

The bare baseline parses the generated schedule and runs the interpreter on a fresh copy of the
payload, in this process, nothing else. The bare and session runs alternate, so a load that comes
and goes (a shared machine) affects both alike; the worker's work after an answer (the result's
bytecode, sent after it) is waited for outside the timed sections, so it never overlaps a timed run.

Prints details, then one line:
  RESULT apply_time_vs_bare=<ratio> apply_command_vs_bare=<ratio> undo_ms=<ms> diff_ms=<ms: cold>
Goals: apply_time_vs_bare <= 1.5 (moonshot 1.1), undo_ms < 50, diff_ms < 50.
"""
from __future__ import annotations

import argparse
import importlib.util
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("LH_WORKBENCH_STATE_DIR", tempfile.mkdtemp(prefix="lh-bench-state-"))

from workbench.session import Session  # noqa: E402
from workbench.steps.kinds import Step, step_from_command  # noqa: E402

PAYLOAD = ROOT / "examples" / "mlp.mlir"
GEN = ROOT / "pipelines" / "lib" / "fuse.py"
PARAMS = {"tile_m": 32, "tile_n": 64, "tile_k": 16, "vectorize": True}
SPEC = f"{GEN}[gen=tile_and_fuse]{{" + " ".join(f"{k}={v}" for k, v in PARAMS.items()) + "}"


def median_ms(samples):
    return statistics.median(samples) * 1000


class Bare:
    """The transform interpreter in-process: generate + parse the schedule, apply it to a copy."""

    def __init__(self) -> None:
        from mlir import ir

        spec = importlib.util.spec_from_file_location("fuse_sched", GEN)
        self.gen = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(self.gen)
        self.text = PAYLOAD.read_text()
        self.ctx = ir.Context()
        self.nops = 0

    def once(self) -> float:
        from mlir import ir
        from mlir.dialects.transform import interpreter

        with self.ctx, ir.Location.unknown():
            payload = ir.Module.parse(self.text)          # a fresh copy, not timed
            t0 = time.perf_counter()
            sched = ir.Module.parse(self.gen.tile_and_fuse(**PARAMS))
            entry = next(op for op in sched.body.operations if op.operation.name == "transform.named_sequence")
            interpreter.apply_named_sequence(payload.operation, entry, sched.operation)
            seconds = time.perf_counter() - t0
            self.nops = _count_ops(payload)
        return seconds


def _count_ops(module) -> int:
    from mlir import ir

    n = [0]

    def visit(op):
        n[0] += 1
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit)
    return n[0]


def count_ops_text(text: str) -> int:
    from mlir import ir

    with ir.Context():
        return _count_ops(ir.Module.parse(text))


def forget_printed(s: Session) -> None:
    """Drop every printed text but the payload's, and the diffs: as if the step's result were new."""
    keep = s.initial_sha
    s.irs.texts = {keep: s.irs.texts[keep]}
    s.irs.printed.clear()
    s.diff_cache.clear()


def alternating(s: Session, repeats: int) -> dict[str, list[float]]:
    """Per round: the bare interpreter, `Session.apply`, and the `apply` command (as the REPL and
    scripts run it: the result is printed for its diffstat), each followed by an undo."""
    from workbench.commands import CommandContext, default_registry

    registry = default_registry()
    ctx = CommandContext(s, registry)
    bare = Bare()
    step = step_from_command(SPEC, ROOT)
    bare.once()
    s.apply(step)                                   # warm: generator import, worker caches
    s.undo()
    times: dict[str, list[float]] = {"bare": [], "session": [], "worker": [], "command": []}
    for _ in range(repeats):
        times["bare"].append(bare.once())
        t0 = time.perf_counter()
        a = s.apply(step)
        times["session"].append(time.perf_counter() - t0)
        times["worker"].append(a.seconds)
        # untimed: the worker sends the result's bytecode after its answer (a crash backup, written
        # while the caller goes on); wait for it here so that it never overlaps a timed run
        s.client.settle()
        s.undo()
        forget_printed(s)     # the same step gives the same IR: make the command print it again
        t0 = time.perf_counter()
        res = registry.dispatch(f"apply {SPEC}", ctx)
        times["command"].append(time.perf_counter() - t0)
        assert res.ok and "lines" in res.summary, res
        s.undo()
    times["nops"] = [bare.nops]
    return times


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=15)
    args = ap.parse_args()

    s = Session()
    s.journal_enabled = False
    try:
        t0 = time.perf_counter()
        s.load(PAYLOAD)
        print(f"worker start + load {PAYLOAD.name}: {(time.perf_counter() - t0) * 1000:.0f} ms")
        times = alternating(s, args.repeats)
        bare_ms, sess_ms, worker_ms, cmd_ms = (median_ms(times[k]) for k in ("bare", "session", "worker", "command"))
        # the ratio of each round's two runs (taken back to back, under the same load), median over rounds
        ratio = statistics.median(x / b for x, b in zip(times["session"], times["bare"]))
        cmd_ratio = statistics.median(x / b for x, b in zip(times["command"], times["bare"]))
        print(f"transform step {GEN.name}[gen=tile_and_fuse] on {PAYLOAD.name} (result: {times['nops'][0]} ops), "
              f"median of {args.repeats} alternating rounds "
              f"(ratios: median of each round's ratio):")
        print(f"  bare interpreter in-process : {bare_ms:8.2f} ms")
        print(f"  Session.apply               : {sess_ms:8.2f} ms  (worker-side {worker_ms:.2f} ms)  "
              f"ratio {ratio:.2f}  (goal <= 1.5)")
        print(f"  `apply` command (REPL)      : {cmd_ms:8.2f} ms  (+ printing the result, its diffstat)  "
              f"ratio {cmd_ratio:.2f}")
        fastest = {k: min(times[k]) * 1000 for k in ("bare", "session", "command")}
        print(f"  fastest rounds: bare {fastest['bare']:.2f} ms, Session.apply {fastest['session']:.2f} ms "
              f"(ratio {fastest['session'] / fastest['bare']:.2f}), command {fastest['command']:.2f} ms "
              f"(ratio {fastest['command'] / fastest['bare']:.2f})")

        # a large module: tile-and-fuse + vectorize + bufferize + lower to LLVM
        s.apply(step_from_command(SPEC, ROOT))
        s.apply(step_from_command("pipelines/lib/bufferize.mlir", ROOT))
        s.apply(step_from_command("llvm-lowering", ROOT))
        s.apply(Step("pass", "canonicalize,cse", base_dir=ROOT))
        big = count_ops_text(s.current_ir)
        lines = len(s.current_ir.splitlines())
        assert big >= 2000, big
        undo, redo, diff_small, diff_cached, diff_big = [], [], [], [], []
        for _ in range(args.repeats):
            t0 = time.perf_counter(); s.undo(); undo.append(time.perf_counter() - t0)
            t0 = time.perf_counter(); s.redo(); redo.append(time.perf_counter() - t0)
            s.diff_cache.clear()   # a cold diff: computed, not found in the session's cache
            t0 = time.perf_counter(); d = s.diff(s.cursor - 1, s.cursor); diff_small.append(time.perf_counter() - t0)
            t0 = time.perf_counter(); s.diff(s.cursor - 1, s.cursor); diff_cached.append(time.perf_counter() - t0)
        for _ in range(3):
            s.diff_cache.clear()
            t0 = time.perf_counter(); s.diff(s.cursor - 2, s.cursor - 1); diff_big.append(time.perf_counter() - t0)
        print(f"large module: {big} ops, {lines} lines (after LLVM lowering + canonicalize,cse)")
        print(f"  undo {median_ms(undo):.3f} ms   redo {median_ms(redo):.3f} ms")
        print(f"  diff of the last step (canonicalize,cse; {len(d.splitlines())} diff lines): "
              f"{median_ms(diff_small):.1f} ms cold, {median_ms(diff_cached):.3f} ms cached")
        print(f"  diff across the LLVM lowering (almost every line changes): {median_ms(diff_big):.1f} ms")
        print(f"RESULT apply_time_vs_bare={ratio:.2f} apply_command_vs_bare={cmd_ratio:.2f} undo_ms={median_ms(undo):.3f} diff_ms={median_ms(diff_small):.1f}")
    finally:
        s.close()


if __name__ == "__main__":
    main()
