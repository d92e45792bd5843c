"""Pieces the benchmark scripts share: the numpy baseline, the square matmul payload, running
command lines through a workbench context, the usable core count."""
from __future__ import annotations

import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np


def numpy_matmul_gflops(n: int, threads: int | None, repeats: int, blas_core: str = "") -> float:
    """Median GFLOP/s of numpy `A @ B` (f32, n^3) on `threads` BLAS threads (None: all), seeded inputs.
    Without threadpoolctl (a bare machine: numpy + the MLIR bundle), or with `blas_core` (OpenBLAS's
    OPENBLAS_CORETYPE, e.g. Haswell: its AVX2 kernels on an AVX-512 host), measured in a child process
    whose BLAS thread count and kernel set come from the environment."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        return _numpy_matmul_gflops_child(n, threads, repeats)
    if blas_core:
        return _numpy_matmul_gflops_child(n, threads, repeats, blas_core)
    rng = np.random.default_rng(0)
    a = rng.uniform(-1, 1, (n, n)).astype(np.float32)
    b = rng.uniform(-1, 1, (n, n)).astype(np.float32)
    with threadpool_limits(limits=threads):
        a @ b
        times = []
        for _ in range(repeats):
            t0 = time.perf_counter()
            a @ b
            times.append(time.perf_counter() - t0)
    return 2 * n ** 3 / statistics.median(times) / 1e9


def _numpy_matmul_gflops_child(n: int, threads: int | None, repeats: int, blas_core: str = "") -> float:
    import subprocess
    import sys

    env = dict(os.environ)
    if blas_core:
        env["OPENBLAS_CORETYPE"] = blas_core
    if threads:
        for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
            env[var] = str(threads)
    code = ("import statistics, time, numpy as np\n"
            "rng = np.random.default_rng(0)\n"
            f"a = rng.uniform(-1, 1, ({n}, {n})).astype(np.float32); b = rng.uniform(-1, 1, ({n}, {n})).astype(np.float32)\n"
            "a @ b\ntimes = []\n"
            f"for _ in range({repeats}):\n    t0 = time.perf_counter(); a @ b; times.append(time.perf_counter() - t0)\n"
            f"print(2 * {n} ** 3 / statistics.median(times) / 1e9)\n")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    return float(out.stdout.split()[-1])


#: the f32 matmul schedule's tuning space (pipelines/cpu/matmul.py) of the tune benchmarks
MATMUL_TUNE_SPACE = ("block_m=[32,64,128] block_n=[256,512,1024] block_k=[128,256] reg_m=[4,8] reg_n=[16,32,64] "
                     "reg_k=[1,2,4,8] pack_tile_a=[16,32] pack_tile_b=[4,8]")


def usable_cores() -> int:
    """The cores this process may run on (its affinity mask where the OS has one)."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()


def run_lines(ctx, lines, what: str = ""):
    """Dispatch workbench command lines in order; the last Result. The first failing line ends the
    benchmark (SystemExit naming `what`, the line and the error)."""
    res = None
    for line in lines:
        res = ctx.registry.dispatch(line, ctx)
        if not res.ok:
            raise SystemExit(f"{what + ': ' if what else ''}`{line}` failed: {res.error}\n{res.detail or ''}")
    return res


def write_matmul_payload(path: Path, n: int) -> Path:
    """A tensor f32 n x n x n matmul payload (@matmul: C + A x B)."""
    t = f"tensor<{n}x{n}xf32>"
    path.write_text(f"func.func @matmul(%A: {t}, %B: {t}, %C: {t}) -> {t} {{\n"
                    f"  %0 = linalg.matmul ins(%A, %B : {t}, {t}) outs(%C : {t}) -> {t}\n"
                    f"  return %0 : {t}\n}}\n")
    return path

def conv_payload(n: int, c: int, h: int, w: int, f: int, kh: int, kw: int, s: int, p: int,
                 bias: bool = True, depthwise: bool = False, cast_unpadded: bool = False) -> str:
    """torch-mlir's form of a Conv2d(c, f, (kh, kw), stride s, padding p) on an n x c x h x w input: a zero pad of
    the input, the bias broadcast as the init (or a zero fill); `depthwise`: groups=c (f = c, a c x kh x kw filter,
    linalg.depthwise_conv_2d_nchw_chw); `cast_unpadded`: padding 0 is a tensor.cast of the input, no pad op."""
    hp, wp = h + 2 * p, w + 2 * p
    oh, ow = (hp - kh) // s + 1, (wp - kw) // s + 1
    f = c if depthwise else f
    x, o = f"tensor<{n}x{c}x{h}x{w}xf32>", f"tensor<{n}x{f}x{oh}x{ow}xf32>"
    wt = f"tensor<{c}x{kh}x{kw}xf32>" if depthwise else f"tensor<{f}x{c}x{kh}x{kw}xf32>"
    op = "linalg.depthwise_conv_2d_nchw_chw" if depthwise else "linalg.conv_2d_nchw_fchw"
    init = (f"%init = linalg.broadcast ins(%b : tensor<{f}xf32>) outs(%e : {o}) dimensions = [0, 2, 3]" if bias else
            f"%init = linalg.fill ins(%zero : f32) outs(%e : {o}) -> {o}")
    xp = f"tensor<{n}x{c}x{hp}x{wp}xf32>"
    pad = (f"%p = tensor.cast %x : {x} to {xp}" if cast_unpadded and not p else
           f"""%p = tensor.pad %x low[0, 0, {p}, {p}] high[0, 0, {p}, {p}] {{
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %zero : f32
  }} : {x} to {xp}""")
    return f"""func.func @main(%x: {x}, %w: {wt}, %b: tensor<{f}xf32>) -> {o} {{
  %zero = arith.constant 0.0 : f32
  {pad}
  %e = tensor.empty() : {o}
  {init}
  %r = {op} {{dilations = dense<1> : vector<2xi64>, strides = dense<{s}> : vector<2xi64>}}
       ins(%p, %w : tensor<{n}x{c}x{hp}x{wp}xf32>, {wt}) outs(%init : {o}) -> {o}
  return %r : {o}
}}
"""


# -- the torch side of the corpus benches (run under the torch Python: torch never shares a process with
# the MLIR wheels). TORCH_PRELUDE loads examples/torch/corpus.py (argv[1] = the repository root) and
# defines tensor(path, dtype): a fixture's .npy as a torch tensor (bf16 stored as raw 16-bit words).
TORCH_PRELUDE = r'''
import importlib.util, json, statistics, sys, time
import numpy as np
import torch

spec = importlib.util.spec_from_file_location("lh_corpus", f"{sys.argv[1]}/examples/torch/corpus.py")
corpus = importlib.util.module_from_spec(spec); sys.modules["lh_corpus"] = corpus; spec.loader.exec_module(corpus)

def tensor(path, dtype):
    a = np.load(path)
    if a.dtype.kind == "V" and a.dtype.itemsize == 2:
        return torch.from_numpy(a.view(np.int16).copy()).view(torch.bfloat16)
    t = torch.from_numpy(np.ascontiguousarray(a))
    return t.to(torch.bfloat16) if dtype == "bf16" and t.is_floating_point() else t

def cuda_median_s(module, xs, calls=20, rounds=5):
    """Median seconds per call of module(*xs) on the GPU: CUDA events around `calls` calls, `rounds`
    times, after 3 warm-up calls."""
    with torch.inference_mode():
        for _ in range(3):
            module(*xs)
        torch.cuda.synchronize()
        samples = []
        for _ in range(rounds):
            e0 = torch.cuda.Event(enable_timing=True); e1 = torch.cuda.Event(enable_timing=True)
            e0.record()
            for _ in range(calls):
                module(*xs)
            e1.record(); torch.cuda.synchronize()
            samples.append(e0.elapsed_time(e1) / calls / 1e3)
    return statistics.median(samples)
'''


def torch_python(explicit: str | None, check: str = "import torch") -> str | None:
    """A Python that runs `check` (imports torch; a GPU bench also asks for CUDA): --torch-python,
    $LH_WORKBENCH_TORCH_PYTHON, or this one."""
    import subprocess
    import sys

    for candidate in (explicit, os.environ.get("LH_WORKBENCH_TORCH_PYTHON"), sys.executable):
        if not candidate:
            continue
        ok = subprocess.run([candidate, "-c", check], capture_output=True, timeout=300)
        if ok.returncode == 0:
            return candidate
    return None


#: the environment that keeps torch (its ATen kernels, oneDNN, MKL) and OpenBLAS to AVX2 code on a host with
#: wider vectors: the baseline of a build for an AVX2-only machine model (`--cpu avx2`) on an AVX-512 host
AVX2_BASELINE_ENV = {"ATEN_CPU_CAPABILITY": "avx2", "ONEDNN_MAX_CPU_ISA": "AVX2", "MKL_ENABLE_INSTRUCTIONS": "AVX2",
                     "OPENBLAS_CORETYPE": "Haswell"}


def baseline_isa_env(cpu: str) -> dict[str, str]:
    """AVX2_BASELINE_ENV where the machine model `cpu` (`target cpu --cpu`) has 256-bit vectors and this host
    wider ones (both sides then run AVX2 code), else nothing (torch's own dispatch is the machine's)."""
    if not cpu:
        return {}
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from workbench.targets.cpu_host import host_machine, machine_for

    return dict(AVX2_BASELINE_ENV) if machine_for(cpu).vector_bits == 256 < host_machine().vector_bits else {}


def run_torch_worker(python: str, script: str, args: list[str], timeout: float = 3600,
                     env: dict[str, str] | None = None) -> dict:
    """Run `script` (TORCH_PRELUDE + a loop printing one JSON record per fixture) under `python`, with `env`
    added to this environment: {name: record}."""
    import json
    import subprocess

    p = subprocess.run([python, "-c", script, str(Path(__file__).resolve().parents[1]), *args],
                       capture_output=True, text=True, timeout=timeout, env={**os.environ, **(env or {})})
    out = {}
    for line in p.stdout.splitlines():
        if line.startswith("{"):
            rec = json.loads(line)
            out[rec["name"]] = rec
    if p.returncode != 0 and not out:
        print(f"torch baseline failed: {(p.stderr.strip().splitlines() or ['?'])[-1]}")
    return out


class TorchWorker:
    """A torch timing script (TORCH_PRELUDE + a loop over the names in its argv[2]) kept running under `python`
    with `-` for the names: `record(name)` sends one name on its stdin and reads its JSON record. A bench then
    times torch for a fixture right before its own run of it, so the minutes a shared machine runs slow
    (a VM's neighbours: 2x swings within one device call) fall on both sides of each ratio alike, instead of
    on all of torch's fixtures timed first and then on all of ours. Use as a context manager."""

    def __init__(self, python: str, script: str, args: list[str], env: dict[str, str] | None = None):
        import queue
        import subprocess
        import threading

        self.process = subprocess.Popen([python, "-c", script, str(Path(__file__).resolve().parents[1]), "-", *args],
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                        text=True, bufsize=1, env={**os.environ, **(env or {})})
        # the worker's lines, read by a thread of their own (a record waits with a timeout; None: it ended)
        self.lines: queue.Queue = queue.Queue()

        def read(stdout, lines):
            for line in stdout:
                lines.put(line)
            lines.put(None)

        threading.Thread(target=read, args=(self.process.stdout, self.lines), daemon=True).start()

    def record(self, name: str, timeout: float = 3600) -> dict:
        """The worker's record for `name` ({} where it ended or sent nothing within `timeout` seconds: it is then
        stopped, and every later record is {} too)."""
        import json
        import queue

        p = self.process
        if p.poll() is not None and self.lines.empty():
            return {}
        try:
            p.stdin.write(name + "\n")
            p.stdin.flush()
        except (BrokenPipeError, OSError, ValueError):
            return {}
        while True:
            try:
                line = self.lines.get(timeout=timeout)
            except queue.Empty:
                line = None
            if line is None:   # timed out or the worker ended
                self.close()
                return {}
            if line.startswith("{"):
                return json.loads(line)

    def close(self) -> None:
        p = self.process
        if p.poll() is None:
            p.kill()
        p.wait()
        try:
            p.stdin.close()
        except (BrokenPipeError, OSError):
            pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def geomean(values: list[float]) -> float:
    import math

    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else float("nan")


def fixture_names(fixtures: Path, only: str = "", shard: str = "") -> list[str]:
    """The exported fixtures under `fixtures` (NAME.expected.json sidecars), sorted; only those named in
    `only` when it is set: comma-separated names, or `@FILE`, a list of names (one or several a line,
    `#` comments: bench/device_corpus.txt, the fixed set whose numbers compare across sessions); a name
    that is not exported there exits with its name. `shard` "K/N": the K-th of N interleaved parts (K from 0),
    for runs split over several calls."""
    names = sorted(p.name.removesuffix(".expected.json") for p in Path(fixtures).glob("*.expected.json"))
    if only:
        if only.startswith("@"):
            listed = [n for line in Path(only[1:]).read_text().splitlines()
                      for n in line.split("#")[0].replace(",", " ").split()]
        else:
            listed = [n for n in only.split(",") if n]
        missing = [n for n in listed if n not in names]
        if missing:
            sys.exit(f"--only: not exported under {fixtures}: {', '.join(missing)}")
        names = [n for n in names if n in set(listed)]
    if shard:
        k, _, n = shard.partition("/")
        if not (k.isdigit() and n.isdigit() and int(k) < int(n)):
            sys.exit(f"--shard: expected K/N with 0 <= K < N, got {shard!r}")
        names = names[int(k)::int(n)]
    return names
