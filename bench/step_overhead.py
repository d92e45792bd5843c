"""Step overhead: a transform step applied through the Session (worker process, copy, verify,
print, hash, IPC) vs the transform interpreter called directly in-process; and undo / redo /
diff times on a large module.

    python bench/step_overhead.py [--repeats N]

Prints details, then one line:  RESULT apply_time_vs_bare=<ratio> undo_ms=<ms> diff_ms=<ms: cold, not from the cache>
Goals: apply_time_vs_bare <= 1.5, undo_ms < 50, diff_ms < 50.
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


def bare(repeats: int) -> tuple[float, int]:
    """The transform interpreter in-process: generate + parse the schedule, apply it to a copy."""
    from mlir import ir
    from mlir.dialects.transform import interpreter

    spec = importlib.util.spec_from_file_location("fuse_sched", GEN)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    text = PAYLOAD.read_text()
    times = []
    with ir.Context(), ir.Location.unknown():
        for _ in range(repeats + 1):
            payload = ir.Module.parse(text)          # a fresh copy, not timed
            t0 = time.perf_counter()
            sched = ir.Module.parse(mod.tile_and_fuse(**PARAMS))
            entry = next(op for op in sched.body.operations if op.operation.name == "transform.named_sequence")
            interpreter.apply_named_sequence(payload.operation, entry, sched.operation)
            times.append(time.perf_counter() - t0)
        nops = _count_ops(payload)
    return median_ms(times[1:]), nops


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


def through_session(s: Session, repeats: int) -> tuple[float, float, list[float]]:
    step = step_from_command(SPEC, ROOT)
    s.apply(step)                                   # warm: generator import, worker caches
    s.undo()
    walls, worker = [], []
    for _ in range(repeats):
        t0 = time.perf_counter()
        a = s.apply(step)
        walls.append(time.perf_counter() - t0)
        worker.append(a.seconds)
        s.undo()
    return median_ms(walls), median_ms(worker), walls


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
        bare_ms, nops = bare(args.repeats)
        sess_ms, worker_ms, _ = through_session(s, args.repeats)
        ratio = sess_ms / bare_ms
        print(f"transform step {GEN.name}[gen=tile_and_fuse] on {PAYLOAD.name} (result: {nops} ops), "
              f"median of {args.repeats}:")
        print(f"  bare interpreter in-process : {bare_ms:8.2f} ms")
        print(f"  through the session         : {sess_ms:8.2f} ms  (worker-side {worker_ms:.2f} ms)  "
              f"ratio {ratio:.2f}  (goal <= 1.5)")

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
        print(f"RESULT apply_time_vs_bare={ratio:.2f} undo_ms={median_ms(undo):.3f} diff_ms={median_ms(diff_small):.1f}")
    finally:
        s.close()


if __name__ == "__main__":
    main()
