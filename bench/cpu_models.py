"""The torch corpus through the CPU selector path, against torch on the CPU with the same threads.

    python bench/cpu_models.py [--fixtures tests/fixtures/torch] [--only a,b] [--threads N]
                               [--torch-python PY] [--iterations K] [--no-matmul] [--cpu avx2] [--reduced-rows N]

For every exported fixture (NAME.mlir + NAME.expected.json, written by scripts/export_corpus.py;
`--shapes bench` exports the larger bench shapes of examples/torch/corpus.py): `select --apply`
(planned for the run's thread count: `target cpu --threads N`),
`bench`, `apply cpu-lower`, `run --check` (torch's inputs and outputs from the sidecar) on 1 thread,
then `run` on N threads (default: every usable core). The same module is timed in torch
(`examples/torch/corpus.py`, same input shapes, `torch.set_num_threads`) in a process of its own
(torch never shares a process with the MLIR wheels), kept running and asked for one fixture at a time
right before our run of it, so a shared machine's slow minutes fall on both sides of a ratio. Without torch (no `--torch-python` and none
importable by `LH_WORKBENCH_TORCH_PYTHON` / this Python) only coverage and our times are reported.

A fixture counts as covered when every step works and the check passes (against the unscheduled
payload and torch's outputs); with --random-inputs (bench-shape exports, written without .npy files
by `scripts/export_corpus.py --shapes bench`) when every step and both runs work. Ratios are torch time / our time (> 1: the workbench is faster),
geometric means over the covered fixtures that torch timed. `matmul2048_1t_ratio` comes from
bench/cpu_matmul.py (f32 2048^3 against numpy, 1 thread) unless --no-matmul. `--cpu NAME` selects and
compiles for another machine model (`target cpu --cpu`: `--cpu avx2` on an AVX-512 host measures the
AVX2-only build: 16 ymm registers, AVX2 code; torch is then held to AVX2 code too, as on an AVX2 machine:
bench/_common.py's AVX2_BASELINE_ENV; `--torch-own-isa` keeps its own dispatch).

Last line: RESULT coverage=K/N geomean_vs_torch_1t_ratio=... geomean_vs_torch_all_ratio=... matmul2048_1t_ratio=...
"""
from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
from _common import (TORCH_PRELUDE, TorchWorker, baseline_isa_env, fixture_names, geomean, torch_python,  # noqa: E402
                     usable_cores)

#: untimed calls before the timed ones, the same on both sides (with one, our first timed calls of a
#: 0.13 ms gather still ran 0.5-1.4 ms some runs: a 5-call median of 0.4 ms against torch's two warm-ups)
WARMUP_CALLS = 2

# -- the torch side (runs under the torch Python: only torch, numpy and json) -------------------------
TORCH_WORKER = TORCH_PRELUDE + r'''
WARMUP_CALLS = int(sys.argv[7])
threads_list, iterations, fixtures, random_inputs = [int(t) for t in sys.argv[3].split(",")], int(sys.argv[4]), sys.argv[5], sys.argv[6] == "1"
# names: comma-separated, or `-`: one a line on stdin, each record sent as soon as it is measured (TorchWorker)
names = (line.strip() for line in sys.stdin) if sys.argv[2] == "-" else sys.argv[2].split(",")

TORCH_DTYPES = {"f32": torch.float32, "f64": torch.float64, "f16": torch.float16, "bf16": torch.bfloat16,
                "i64": torch.int64, "i32": torch.int32, "i1": torch.bool}

def random_tensor(spec, entry):
    """A random tensor for `16x32xf32`; integers in the range the corpus entry gives that shape ([lo:hi])."""
    dims, _, elem = spec.rpartition("x")
    shape = [int(d) for d in dims.split("x")] if dims else []
    lo, hi = 0, 2
    for s in tuple(entry.test_shapes) + tuple(entry.bench_shapes):
        if s.startswith(spec + "["):
            lo, hi = (int(v) for v in s[len(spec) + 1:-1].split(":"))
    dtype = TORCH_DTYPES[elem]
    if dtype.is_floating_point:
        return torch.rand(shape, dtype=torch.float32).mul_(2).sub_(1).to(dtype)
    if dtype == torch.bool:
        return torch.rand(shape) > 0.5
    return torch.randint(lo, hi, shape, dtype=dtype)

for name in names:
    entry = corpus.CORPUS.get(name)
    if entry is None:
        print(json.dumps({"name": name, "error": "not in the corpus"}), flush=True); continue
    try:
        side = json.load(open(f"{fixtures}/{name}.expected.json"))
        # the module at the fixture's sizes (bench exports: parameters sized for the bench shapes)
        # (shapes only: a bf16 entry declares f32 shapes, its export has bf16 inputs)
        def shapes(types):
            return [t.split("[")[0].rpartition("x")[0] for t in types]
        bench_shapes = shapes(entry.bench_shapes)
        module = entry.module("bench" if shapes(side.get("input_types") or []) == bench_shapes else "test").eval()
        if entry.dtype == "bf16":
            module = module.to(torch.bfloat16)
        xs = ([random_tensor(t, entry) for t in side["input_types"]] if random_inputs
              else [tensor(f"{fixtures}/{p}", entry.dtype) for p in side["inputs"]])
        times = {}
        with torch.inference_mode():
            for threads in threads_list:
                torch.set_num_threads(threads)
                for _ in range(WARMUP_CALLS):
                    module(*xs)
                samples = []
                for _ in range(iterations):
                    t0 = time.perf_counter(); module(*xs); samples.append(time.perf_counter() - t0)
                times[str(threads)] = statistics.median(samples)
        # the integer ranges random inputs take (class indices < num_classes), for our side's `run --ranges`
        ranges = []
        for i, t in enumerate(side["input_types"]):
            for spec in tuple(entry.test_shapes) + tuple(entry.bench_shapes):
                if spec.startswith(t + "["):
                    ranges.append(f"{i}={spec[len(t) + 1:-1]}")
                    break
        print(json.dumps({"name": name, "times": times, "ranges": ",".join(ranges)}), flush=True)
    except Exception as e:
        print(json.dumps({"name": name, "error": f"{type(e).__name__}: {e}".splitlines()[0]}), flush=True)
'''


def torch_worker(python: str, fixtures: Path, threads: list[int], iterations: int, random_inputs: bool,
                 env: dict[str, str] | None = None) -> TorchWorker:
    """The torch side, kept running: `.record(name)` times one fixture ({"times": {threads: s}, "ranges"})."""
    return TorchWorker(python, TORCH_WORKER, [",".join(map(str, threads)), str(iterations), str(fixtures),
                                              "1" if random_inputs else "0", str(WARMUP_CALLS)], env=env)


# -- the workbench side ------------------------------------------------------------------------------

def ours(name: str, fixtures: Path, threads: int, iterations: int, timeout: float, random_inputs: bool,
         ranges: str = "", cpu: str = "") -> dict:
    """{"ok", "t1", "tall", "error", "steps"} for one fixture through the selector path."""
    sys.path.insert(0, str(ROOT))
    from workbench.commands import CommandContext, default_registry
    from workbench.session import Session

    s = Session()
    s.journal_enabled = False
    ctx = CommandContext(s, default_registry())
    rec: dict = {"name": name, "ok": False}
    extra_ranges = f" --ranges {ranges}" if ranges else ""
    try:
        # each run with the schedules planned for its own thread count (`target --threads`): one core
        # runs the single-core plan, not a split meant for all of them run chunk after chunk
        extra = f" --inputs random{extra_ranges}" if random_inputs else ""
        for planned, key in ((1, "t1"), (threads, "tall")):
            for line in (f"load {fixtures / (name + '.mlir')}", f"target cpu --threads {planned}" + (f" --cpu {cpu}" if cpu else ""), "select --apply",
                         f"bench warmup={WARMUP_CALLS} iterations={iterations}", "apply cpu-lower",
                         f"run{extra} --threads {planned} --timeout {timeout}" if random_inputs or key == "tall"
                         else f"run --check --threads 1 --timeout {timeout}"):
                res = ctx.registry.dispatch(line, ctx)
                if not res.ok:
                    rec["error"] = f"`{line.split()[0]}{' --threads ' + str(planned) if line.startswith('run') else ''}`: {res.error}"
                    return rec
            rec.setdefault("steps", len(s.active_steps))
            rec[key] = res.data["run"]["median_s"]
            if res.data["run"].get("warning"):   # e.g. the machine was busy: the team slept between loops
                rec[f"warning_{key}"] = res.data["run"]["warning"]
        rec["ok"] = True
        return rec
    finally:
        s.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--fixtures", default=str(ROOT / "tests" / "fixtures" / "torch"))
    ap.add_argument("--only", default="", help="comma-separated fixture names, or @FILE (bench/device_corpus.txt: "
                                               "the fixed set for comparisons across sessions)")
    ap.add_argument("--shard", default="", help="K/N: the K-th (from 0) of N interleaved parts of the fixtures")
    ap.add_argument("--threads", type=int, default=0, help="the all-threads run (default: usable cores)")
    ap.add_argument("--torch-python", default=None)
    ap.add_argument("--cpu", default="", help="the machine model to select and compile for (`target --cpu`: "
                                              "avx2, avx512, a CPU name; default this host)")
    ap.add_argument("--torch-own-isa", action="store_true",
                    help="with an AVX2 --cpu on a wider host: torch keeps its own (AVX-512) kernels instead of "
                         "being held to AVX2 (ATEN_CPU_CAPABILITY, ONEDNN_MAX_CPU_ISA, MKL_ENABLE_INSTRUCTIONS)")
    ap.add_argument("--iterations", type=int, default=10)
    ap.add_argument("--timeout", type=float, default=300.0, help="seconds per run")
    ap.add_argument("--no-matmul", action="store_true")
    ap.add_argument("--no-pad-copies", action="store_true",
                    help="the selector without lh-pad-copies (reflect / replicate pads as lh-gather-indices' split "
                         "gathers: the old variant)")
    ap.add_argument("--no-row-networks", action="store_true",
                    help="the selector without lh-row-networks (sort / argsort / topk stage by stage, a parallel region "
                         "and a pass over memory each: the old variant)")
    ap.add_argument("--no-merge-sibling-reductions", action="store_true",
                    help="the selector without lh-merge-sibling-reductions (a group norm's f64 and f32 sums of its "
                         "input as two passes: the old variant)")
    ap.add_argument("--no-epilogue-in-registers", action="store_true",
                    help="the selector without matmul_epilogue's in_registers (a fill pass, the matmul, then the "
                         "epilogue chain as a pass over its result, also where K is one cache block; AVX2's row split kept, a plain "
                         "matmul's fill a pass of its own, addmm's K in several blocks: the old variant)")
    ap.add_argument("--no-constant-pad-rows", action="store_true",
                    help="the selector without lh-constant-pad-rows (a convolution's zero pad bufferized as a fill of "
                         "the whole padded buffer and a copy into it: the old variant)")
    ap.add_argument("--init-fusion", action="store_true",
                    help="the selector with window schedules' fill / broadcast inits fused into their tiles "
                         "(CpuTarget.init_fusion, off by default)")
    ap.add_argument("--no-init-registers", action="store_true",
                    help="the selector without a convolution's bias fused into its register tiles (CpuTarget."
                         "init_registers: the bias broadcast its own pass over the output, as before)")
    ap.add_argument("--all-phase-borders", action="store_true",
                    help="lh-strided-conv-planes zeroing every phase plane's whole border (CpuTarget.phase_borders_read "
                         "off: the old variant), not only the planes a phase reads it from")
    ap.add_argument("--phase-chain", action="store_true",
                    help="the selector with a strided convolution's phases fused image by image (CpuTarget.phase_chain, "
                         "off by default)")
    ap.add_argument("--reduced-rows", type=int, default=0,
                    help="rows an inner reduction sums at a time into its partial vectors (the selector's "
                         "REDUCED_ROWS: independent load streams; 0: the selector's own, 4): sum_dim's row interleave "
                         "on another machine (docs/models-round14-rows.md)")
    ap.add_argument("--json", default="", help="write every record here")
    ap.add_argument("--random-inputs", action="store_true",
                    help="seeded random inputs of the fixtures' shapes (integers in the corpus entry's ranges), no check "
                         "(bench-shape exports without .npy)")
    args = ap.parse_args()
    # the selector's switches the options turn (the old variants of an A/B)
    switches = {"pad_copies": not args.no_pad_copies, "row_networks": not args.no_row_networks,
                "merge_sibling_reductions": not args.no_merge_sibling_reductions,
                "epilogue_in_registers": not args.no_epilogue_in_registers, "init_fusion": args.init_fusion,
                "constant_pad_rows": not args.no_constant_pad_rows,
                "phase_chain": args.phase_chain, "init_registers": not args.no_init_registers,
                "phase_borders_read": not args.all_phase_borders}
    sys.path.insert(0, str(ROOT))
    from workbench.targets.cpu import CpuTarget
    for name, value in switches.items():
        if value != getattr(CpuTarget, name):
            setattr(CpuTarget, name, value)
    if args.reduced_rows > 0:
        from workbench.targets import cpu_selector
        cpu_selector.REDUCED_ROWS = args.reduced_rows
    os.environ.setdefault("LH_WORKBENCH_STATE_DIR", tempfile.mkdtemp(prefix="lh-bench-state-"))
    fixtures = Path(args.fixtures)
    names = fixture_names(fixtures, args.only, args.shard)
    threads = args.threads or usable_cores()
    python = torch_python(args.torch_python)
    torch_env = {} if args.torch_own_isa else baseline_isa_env(args.cpu)
    # torch times each fixture right before we do (TorchWorker: a slow minute of a shared machine hits both sides)
    worker = (torch_worker(python, fixtures, sorted({1, threads}), args.iterations, args.random_inputs, torch_env)
              if python else None)
    print(f"{len(names)} fixtures, 1 and {threads} threads, CPU model {args.cpu or 'host'}; torch: {python or 'not available'}"
          + (f" held to AVX2 code ({' '.join(f'{k}={v}' for k, v in torch_env.items())})" if torch_env else ""))
    print(f"{'fixture (ms)':28s} {'ours 1t':>10s} {'torch 1t':>10s} {'ratio':>6s}   {'ours Nt':>10s} {'torch Nt':>10s} {'ratio':>6s}")
    records, r1, rall = [], [], []
    t_start = time.perf_counter()
    for name in names:
        torch_rec = worker.record(name) if worker else {}
        rec = ours(name, fixtures, threads, args.iterations, args.timeout, args.random_inputs,
                   torch_rec.get("ranges", ""), args.cpu)
        tb = torch_rec.get("times") or {}
        rec["torch_1t"], rec["torch_all"] = tb.get("1"), tb.get(str(threads))
        records.append(rec)
        if not rec["ok"]:
            print(f"{name:28s} FAILED {rec.get('error', '')[:150]}")
            continue
        line = f"{name:28s} {rec['t1'] * 1e3:10.4f}"
        if rec["torch_1t"] and rec["torch_all"] and rec["t1"] > 0 and rec["tall"] > 0:
            rec["ratio_1t"] = rec["torch_1t"] / rec["t1"]
            rec["ratio_all"] = rec["torch_all"] / rec["tall"]
            r1.append(rec["ratio_1t"])
            rall.append(rec["ratio_all"])
            line += (f" {rec['torch_1t'] * 1e3:10.4f} {rec['ratio_1t']:6.2f}   {rec['tall'] * 1e3:10.4f} "
                     f"{rec['torch_all'] * 1e3:10.4f} {rec['ratio_all']:6.2f}")
        else:
            line += f" {'-':>10s} {'-':>6s}   {rec['tall'] * 1e3:10.4f}"
        if rec.get("warning_t1") or rec.get("warning_tall"):   # (the whole warning is in --json's record)
            line += "  (machine busy: see --json)"
        print(line, flush=True)
    if worker:
        worker.close()
    covered = sum(r["ok"] for r in records)
    print(f"covered {covered}/{len(records)} in {time.perf_counter() - t_start:.0f} s")
    if args.json:
        Path(args.json).write_text(json.dumps(records, indent=1))
    fields = [f"coverage={covered}/{len(records)}",
              f"geomean_vs_torch_1t_ratio={geomean(r1):.3f}", f"geomean_vs_torch_all_ratio={geomean(rall):.3f}",
              f"torch_timed={len(r1)}"]
    if not args.no_matmul:
        p = subprocess.run([sys.executable, str(ROOT / "bench" / "cpu_matmul.py"), "--sizes", "2048"]
                           + (["--cpu", args.cpu] if args.cpu else []),
                           capture_output=True, text=True, timeout=3600)
        result = [ln for ln in p.stdout.splitlines() if ln.startswith("RESULT ")]
        ratio = dict(kv.split("=", 1) for kv in result[-1].split()[1:]).get("matmul2048_1t_ratio") if result else None
        fields.append(f"matmul2048_1t_ratio={ratio or 'nan'}")
    print("RESULT " + " ".join(fields))


if __name__ == "__main__":
    main()
