"""f32 matmul through the shipped CPU pipeline vs numpy `A @ B`, measured in the same run.

For each size: a session loads a tensor matmul payload, inserts the benchmark wrapper, applies
`pipelines/cpu/matmul.py[gen=matmul_tiling]` with the CPU selector's parameters and the CPU
lowering, then `run` (isolated JIT run, timed with rtclock inside the wrapper), whose output is checked against
numpy's C + A @ B on the same inputs.
numpy is timed on 1 thread (threadpoolctl) and on all cores; the workbench runs the schedule the
selector plans for one core (`target --threads 1`: `matmul.py`) pinned to 1 core (`run --threads 1`)
and `matmul_parallel.py` (forall over M x N chunks on MLIR's async runtime) on all cores. Ratios are workbench / numpy throughput (> 1: the workbench is faster).

The parameters come from the CPU machine model (workbench/targets/cpu_host.py): this host, or the
machine named by `--cpu` (e.g. `--cpu avx2` on an AVX-512 host: AVX2 parameters and AVX2-only code).
With an AVX2 machine model on a host with wider vectors, numpy runs OpenBLAS's AVX2 kernels
(OPENBLAS_CORETYPE=Haswell), so both sides use the same instruction set; the host's own numpy is
printed next to it.
`--repeats R` measures each size R times (workbench and numpy alternately) and reports the median ratio,
and `*_best_ratio`: the best workbench run over the best numpy run (on a noisy shared machine).

`--selector-path` measures what a model's matmul gets instead: `select --apply`, then `cpu-lower`.

    python bench/cpu_matmul.py [--sizes 1024,2048,4096] [--iterations 10] [--repeats 1] [--cpu NAME] [--selector-path]
Last line: RESULT matmul1024_1t_ratio=... matmul1024_all_ratio=... ...
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path


ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from _common import numpy_matmul_gflops, run_lines, usable_cores, write_matmul_payload  # noqa: E402  (bench/_common.py)
from workbench.commands import CommandContext, default_registry  # noqa: E402
from workbench.session import Session  # noqa: E402


def workbench_gflops(ctx: CommandContext, n: int, iterations: int, workdir: Path, threads: int,
                     selector_path: bool = False) -> tuple[float, dict, bool]:
    """GFLOP/s of the shipped schedule: single-core (`matmul.py`, run pinned to 1 core) when threads == 1,
    else the forall-parallel variant (`matmul_parallel.py`) on `threads` cores; lowered by the matmul
    lowerings, or with `selector_path` as a model's ops are: `select --apply`, then `cpu-lower`."""
    payload = write_matmul_payload(workdir / f"matmul{n}.mlir", n)
    res = ctx.registry.dispatch(f"load {payload}", ctx)
    assert res.ok, res.error
    # the CPU target for the session's machine (`--cpu`), planning for `threads` cores
    run_lines(ctx, (f"target --threads {threads}",), "--threads")
    target = ctx.session.target
    if threads == 1:
        info = ctx.session.inspect()
        (spec, chosen), = target.select_params(info)  # one matmul: one whole-module step
        lowering = "cpu-matmul-lower"
    else:
        sys.path.insert(0, str(ROOT / "pipelines" / "cpu"))
        import matmul_parallel
        from workbench.targets.cpu import matmul_machine_args

        spec = "pipelines/cpu/matmul_parallel.py[gen=matmul_parallel]"
        chosen = matmul_parallel.default_params(n, n, n, threads, **matmul_machine_args(target.machine))
        lowering = "cpu-matmul-parallel-lower"
    kv = " ".join(f"{k}={v}" for k, v in chosen.items())
    outdir = workdir / f"out{n}_{threads}"
    steps = (("select --apply", "apply cpu-lower") if selector_path
             else (f"apply {spec}{{{kv}}}", f"apply {lowering}"))
    run_lines(ctx, (f"bench warmup=2 iterations={iterations}", *steps,
                    f"run --threads {threads} --timeout 900 --save-outputs {outdir}"), str(n))
    if selector_path:   # what select applied (preparation steps and the schedule), between bench and cpu-lower
        chosen = {"selected": " | ".join(a.step.label() for a in ctx.session.active_steps[1:-1])}
    run = ctx.session.last_run
    return run["gflops"], chosen, matches_numpy(outdir)


def matches_numpy(outdir: Path) -> bool:
    """The check: the run's output equals C + A @ B computed by numpy (BLAS) from the run's own inputs
    (a naive-loop reference would take minutes at 4096^3)."""
    import numpy as np

    a, b, c = (np.load(outdir / f"input{i}.npy") for i in range(3))
    out = np.load(outdir / "output0.npy")
    return bool(np.allclose(out, c + a @ b, rtol=1e-4, atol=1e-3))


def _host_vector_bits() -> int:
    from workbench.targets.cpu_host import host_machine

    return host_machine().vector_bits


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1024,2048,4096")
    ap.add_argument("--iterations", type=int, default=10)
    ap.add_argument("--repeats", type=int, default=1, help="measure each size this many times; median ratios")
    ap.add_argument("--cpu", default="", help="the CPU machine to select and compile for (default: this host)")
    ap.add_argument("--selector-path", action="store_true",
                    help="`select --apply` + `cpu-lower`, as a model's matmuls go, instead of the selector's "
                         "parameters through the matmul lowerings (cpu-matmul-lower / cpu-matmul-parallel-lower)")
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    os.environ.setdefault("LH_WORKBENCH_STATE_DIR", tempfile.mkdtemp(prefix="lh-bench-"))
    session = Session()
    session.journal_enabled = False
    ctx = CommandContext(session, default_registry())
    if args.cpu:
        run_lines(ctx, (f"target cpu --cpu {args.cpu}",), "--cpu")
    machine = ctx.session.target.machine
    print(f"machine: {machine.name} ({machine.llvm_cpu}{', host' if machine.is_host else ''}), "
          f"{machine.vector_bits}-bit x {machine.vector_registers} registers, L2 {machine.l2_bytes >> 10} KiB",
          flush=True)
    host_bits = ctx.session.target.machine.vector_bits if machine.is_host else _host_vector_bits()
    blas_core = "Haswell" if machine.vector_bits == 256 and host_bits > 256 else ""
    if blas_core:
        print(f"numpy baseline: OpenBLAS {blas_core} kernels (AVX2), as the {machine.name} code", flush=True)
    results: dict[int, list] = {}
    cores = usable_cores()
    all_ok = True
    try:
        with tempfile.TemporaryDirectory() as d:
            for n in sizes:
                for _ in range(args.repeats):
                    wb1, params1, ok1 = workbench_gflops(ctx, n, args.iterations, Path(d), 1, args.selector_path)
                    np1 = numpy_matmul_gflops(n, 1, max(3, args.iterations), blas_core)
                    wball, paramsall, okall = workbench_gflops(ctx, n, args.iterations, Path(d), cores, args.selector_path)
                    npall = numpy_matmul_gflops(n, None, max(3, args.iterations), blas_core)
                    all_ok = all_ok and ok1 and okall
                    results.setdefault(n, []).append((wb1, wball, np1, npall))
                    print(f"{n}^3 f32: 1 core: workbench {wb1:6.1f} GFLOP/s (check {'ok' if ok1 else 'FAILED'}) vs numpy "
                          f"{np1:6.1f} -> {wb1 / np1:.2f} | {cores} cores: workbench {wball:6.1f} (check "
                          f"{'ok' if okall else 'FAILED'}) vs numpy {npall:6.1f} -> {wball / npall:.2f}", flush=True)
                print(f"    params 1 core {params1}; {cores} cores {paramsall}", flush=True)
    finally:
        session.close()
    parts = []
    for n, rows in results.items():
        ratio1 = statistics.median(wb1 / np1 for wb1, _, np1, _ in rows)
        ratioall = statistics.median(wball / npall for _, wball, _, npall in rows)
        # best of the repeats on each side: what each reaches when the machine leaves it alone (a shared VM's
        # neighbours slow single runs by up to a third; medians of a few runs still swing)
        best1 = max(r[0] for r in rows) / max(r[2] for r in rows)
        bestall = max(r[1] for r in rows) / max(r[3] for r in rows)
        parts += [f"matmul{n}_1t_ratio={ratio1:.3f}", f"matmul{n}_all_ratio={ratioall:.3f}",
                  f"matmul{n}_1t_best_ratio={best1:.3f}", f"matmul{n}_all_best_ratio={bestall:.3f}",
                  f"matmul{n}_1t_gflops={statistics.median(r[0] for r in rows):.1f}",
                  f"matmul{n}_all_gflops={statistics.median(r[1] for r in rows):.1f}"]
    print("RESULT " + " ".join(parts) + f" checks_ok={int(all_ok)} cpu={machine.name} cores={cores}"
          f" path={'selector' if args.selector_path else 'matmul-lowering'}")


if __name__ == "__main__":
    main()
