"""Host-side run helpers (numpy only, no MLIR): inputs, the run worker client, statistics, checks."""
from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np

from workbench.common.dtypes import INPUT_KINDS, TOLERANCE, RunInputError, is_complex, is_extended_float, is_float, numpy_dtype, smallest_normal, tolerance, widened  # noqa: F401  (re-exported)
from workbench.execution.worker_client import COMPILE_PHASE, RUN_PHASE, WorkerProcess

def make_inputs(specs: list[dict], kind: str = "random", seed: int = 0,
                npy_files: dict[int, Path] | None = None,
                ranges: dict[int, tuple[float, float]] | None = None) -> list[np.ndarray]:
    """Seeded inputs for the wrapper's input arguments; `npy_files` maps argument index -> .npy;
    `ranges` maps argument index -> [lo, hi) of its random values (integers: lo..hi-1)."""
    if kind not in INPUT_KINDS:
        raise RunInputError(f"unknown input kind {kind!r} (choose from {', '.join(INPUT_KINDS)})")
    rng = np.random.default_rng(seed)
    arrays = []
    for i, spec in enumerate(specs):
        dtype = numpy_dtype(spec["dtype"])
        shape = tuple(spec["shape"])
        if any(d < 0 for d in shape):
            raise RunInputError(f"input {i} is {spec.get('type', '')} (dynamic dims): run needs static shapes; "
                                "give them as a step first, e.g. `pass lh-specialize-shapes{shapes="
                                f"{i}:{'x'.join('64' if d < 0 else str(d) for d in shape)}}}`")
        if npy_files and i in npy_files:
            path = Path(npy_files[i])
            if path.exists() and not path.is_file():   # a directory, /dev/zero (np.load read it as a pickle)
                raise RunInputError(f"input {i}: {path} is not a regular file")
            try:
                arr = np.load(path, allow_pickle=False)
            except (OSError, ValueError) as e:
                raise RunInputError(f"input {i}: cannot read {path}: {e}")
            arr = _as_element_type(arr, np.dtype(dtype))
            if arr.shape == () and shape == (1,):   # a scalar argument's value (the wrapper takes a memref<1xT>)
                arr = arr.reshape(1)
            if arr.shape != shape or arr.dtype != np.dtype(dtype):
                raise RunInputError(f"input {i} from {path}: got {arr.dtype}{list(arr.shape)}, expected "
                                    f"{np.dtype(dtype)}{list(shape)} ({spec.get('type', '')})")
            arrays.append(np.ascontiguousarray(arr))
            continue
        if kind == "zeros":
            arrays.append(np.zeros(shape, dtype))
        elif kind == "ones":
            arrays.append(np.ones(shape, dtype))
        elif is_complex(dtype):   # real and imaginary parts each uniform (in the range where one is given)
            lo, hi = ranges[i] if ranges and i in ranges else (-1.0, 1.0)
            arrays.append((rng.uniform(lo, hi, shape) + 1j * rng.uniform(lo, hi, shape)).astype(dtype))
        elif ranges and i in ranges:
            lo, hi = ranges[i]
            if is_float(dtype):
                arrays.append(rng.uniform(lo, hi, shape).astype(np.float32).astype(dtype))
            elif dtype == np.bool_:
                arrays.append(rng.integers(int(lo), int(hi), shape).astype(dtype))
            else:
                info = np.iinfo(dtype)
                lo, hi = max(int(lo), int(info.min)), min(int(hi), int(info.max) + 1)
                if hi <= lo:
                    raise RunInputError(f"input {i}: empty range [{ranges[i][0]}, {ranges[i][1]}) for {np.dtype(dtype)}")
                arrays.append(rng.integers(lo, hi, shape).astype(dtype))
        elif is_float(dtype):
            arrays.append(rng.uniform(-1.0, 1.0, shape).astype(np.float32).astype(dtype))
        elif dtype == np.bool_:
            arrays.append(rng.integers(0, 2, shape).astype(dtype))
        else:
            arrays.append(rng.integers(-8, 8, shape).astype(dtype))
    return arrays


def _as_element_type(arr: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """A .npy for a bf16/fp8 argument: np.save writes ml_dtypes arrays as raw `|V2`/`|V1` items (read
    back as such), and frameworks often save them widened to f32: both are accepted, the latter only
    where every value is exactly representable. An unsigned integer .npy for a signless integer argument of its
    width (torch's uint8 inputs: torch-mlir types them i8) is read as its bits, which is what MLIR's signless
    integers are (`got uint8[3, 8], expected int8[3, 8]` refused every imported model with a uint8 input)."""
    if arr.dtype.kind == "u" and dtype.kind == "i" and arr.dtype.itemsize == dtype.itemsize:
        return arr.view(dtype)
    if not is_extended_float(dtype) or arr.dtype == dtype:
        return arr
    if arr.dtype.kind == "V" and arr.dtype.itemsize == dtype.itemsize:
        return arr.view(dtype)
    if is_float(arr.dtype):
        narrowed = arr.astype(dtype)
        if np.array_equal(narrowed.astype(np.float64), arr.astype(np.float64), equal_nan=True):
            return narrowed
    return arr


@dataclass
class Timing:
    times_s: list[float]

    def to_json(self) -> dict[str, Any]:
        t = self.times_s
        return {"min_s": min(t), "median_s": statistics.median(t), "mean_s": statistics.fmean(t),
                "stddev_s": statistics.pstdev(t) if len(t) > 1 else 0.0}


@dataclass
class Check:
    passed: bool
    max_abs_err: float
    max_rel_err: float
    tolerance: float
    details: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"passed": self.passed, "max_abs_err": self.max_abs_err, "max_rel_err": self.max_rel_err,
                "tolerance": self.tolerance}


def compare(outputs: list[np.ndarray], references: list[np.ndarray], dtype: str | list[str]) -> Check:
    """Largest error of each output relative to its reference's largest magnitude, against the
    tolerance of its element type (`dtype`: one MLIR type name for all outputs, or one per output)."""
    if len(outputs) != len(references):
        return Check(False, float("inf"), float("inf"), 0.0,
                     [f"{len(outputs)} outputs vs {len(references)} reference outputs"])
    dtypes = [dtype] * len(outputs) if isinstance(dtype, str) else list(dtype)
    tols = [tolerance(d) for d in dtypes] or [tolerance("f32")]
    max_abs, max_rel, passed, details = 0.0, 0.0, True, []
    for i, (o, r) in enumerate(zip(outputs, references)):
        if o.shape != r.shape:
            details.append(f"output {i}: shape {list(o.shape)} vs reference {list(r.shape)}")
            return Check(False, float("inf"), float("inf"), max(tols), details)
        if o.size == 0:
            continue
        o64, r64 = widened(o), widened(r)  # bf16/fp8/bool/int compare as f64, complex as complex128
        # inf and NaN must be where the reference has them, the same ones; the error is that of the finite
        # elements, relative to the largest finite reference magnitude (a reference with one -inf, a log of
        # zero, made every error relative to inf: 0, and NaNs at other places than the reference's were
        # skipped by the max)
        finite = np.isfinite(r64)
        special = ~finite & ~((o64 == r64) | (np.isnan(o64) & np.isnan(r64)))
        special |= finite & ~np.isfinite(o64)
        if special.any():
            at = np.unravel_index(int(np.argmax(special)), special.shape)
            passed = False
            max_abs = max_rel = float("inf")
            details.append(f"output {i}: element {list(map(int, at))} is {o[at]} where the reference has {r[at]} "
                           f"({int(special.sum())} such elements)")
            continue
        diff = np.abs(o64[finite] - r64[finite])
        # (a difference below the smallest normal number is none: code that flushes subnormals to zero,
        # lh-flush-denormals, gives 0 for a subnormal result, whose error relative to itself was 1)
        diff[diff < smallest_normal(o.dtype)] = 0.0
        a = float(np.max(diff)) if finite.any() else 0.0
        scale = float(np.max(np.abs(r64[finite]))) if finite.any() else 0.0
        scale = scale or 1.0
        max_abs = max(max_abs, a)
        max_rel = max(max_rel, a / scale)
        if a / scale > tols[min(i, len(tols) - 1)]:
            passed = False
            details.append(f"output {i} ({dtypes[i] if i < len(dtypes) else '?'}): relative error {a / scale:.3g} "
                           f"> {tols[min(i, len(tols) - 1)]:g}")
    return Check(passed, max_abs, max_rel, max(tols), details)


def select_outputs(meta: dict, args_after: list[np.ndarray], outputs: list[np.ndarray]) -> list[np.ndarray]:
    """The entry's outputs in order: results first (`result:j`), then output arguments (`arg:i`)."""
    chosen = []
    for o in meta["outputs"]:
        kind, _, idx = o.partition(":")
        chosen.append(outputs[int(idx)] if kind == "result" else args_after[int(idx)])
    return chosen


#: the least time a run worker's JIT compile gets (`run --compile-timeout` sets it): an LLVM -O3 compile of a
#: model that carries its weights takes 20-70 s on a loaded machine (DenseNet-121), more than many runs need
MIN_JIT_COMPILE_TIMEOUT_S = 600.0


def jit_compile_timeout(run_timeout: float) -> float:
    """The default limit of a run worker's JIT compile, given the run's own limit: max(600 s, 5 x it)."""
    return max(MIN_JIT_COMPILE_TIMEOUT_S, 5 * run_timeout)


class RunPhases:
    """A run's two time limits and what the front end hears of them: the JIT compile (`compile_timeout`, default
    `jit_compile_timeout(timeout)`), then the calls into the compiled code (`timeout`), which start when the code
    is compiled. One for every way a run is carried out: a run worker (RunClient.run: the worker's
    `protocol.compiled()` message) and MPI ranks (mpi_launch.run_ranks: when every rank has said so). A failure
    names `phase` (worker_client.COMPILE_PHASE / RUN_PHASE)."""

    def __init__(self, timeout: float, compile_timeout: float | None = None,
                 progress: Callable[[str], None] | None = None):
        self.timeout = timeout
        self.compile_timeout = compile_timeout or jit_compile_timeout(timeout)
        self.progress = progress
        self.phase = COMPILE_PHASE
        self._t0 = 0.0

    def start(self, who: str) -> None:
        """The compile begins (`who`: "run worker", "2 MPI ranks")."""
        import time

        self._t0, self.phase = time.monotonic(), COMPILE_PHASE
        if self.progress is not None:
            self.progress(f"JIT-compiling the module ({who}) ...")

    def compiled(self, *_: Any) -> None:
        """The code is compiled: the run limit starts."""
        import time

        self.phase = RUN_PHASE
        if self.progress is not None:
            self.progress(f"compiled in {time.monotonic() - self._t0:.1f} s; running ...")

    @property
    def limit(self) -> float:
        """The limit of the phase the run is in."""
        return self.compile_timeout if self.phase == COMPILE_PHASE else self.timeout


class RunClient(WorkerProcess):
    """A run worker process (`module`); `run()` starts a fresh one each time and always stops it."""

    def __init__(self, env: dict | None = None, module: str = "workbench.worker.run_worker",
                 name: str = "run worker"):
        super().__init__(module, env=env, name=name)

    def run(self, req: dict, timeout: float, compile_timeout: float | None = None,
            progress: Callable[[str], None] | None = None) -> dict:
        """One run request. `timeout` limits the calls into the compiled code; the JIT compile before them has
        `compile_timeout` (default: `jit_compile_timeout(timeout)`). `progress` hears when the compile is done."""
        phases = RunPhases(timeout, compile_timeout, progress)
        phases.start(self.name)
        try:
            return self.request(dict(req, op="run"), timeout=phases.timeout, compile_timeout=phases.compile_timeout,
                                on_progress=phases.compiled)
        finally:
            self.kill()
