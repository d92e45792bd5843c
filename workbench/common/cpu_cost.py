"""The CPU thread-count rule (the selector's, workbench/targets/cpu_selector.py, and lh-split-leftover-ops's,
workbench/worker/cpu/leftover_splits.py; pure Python, no MLIR): into how many tasks (the `threads` of a step,
the chunk count of its scf.forall) an op is split, from an estimate of its time on one core against what dispatching tasks on MLIR's
async runtime costs.

The lowering (pipelines/cpu/lower.yaml: scf-forall-to-parallel, async-parallel-for{async-dispatch=false})
turns a forall of t chunks into: an async group, t - 1 `async.execute`s issued one after the other by the
calling thread (a coroutine frame, a token, a push onto the runtime's thread pool and a wake-up of a sleeping
worker each), chunk 0 run by the caller, then a blocking wait on the group (a wake-up of the caller). None of
that depends on the op's size: an op split t ways takes about

    seconds / t + DISPATCH_SECONDS + TASK_SECONDS * (t - 2)        (t >= 2; one task: `seconds`, no runtime)

where `seconds` is its single-core time, estimated from the bytes it moves and the operations it runs
(`op_seconds`, a roofline of the rates below; a loop that t does not divide gives uneven tasks: the largest
counts). `split_threads` takes the t (1 .. cores) that minimizes it: an op
of a few microseconds stays on one core, one of a few hundred spreads over a few, a large one over all; each
chunk then holds at least ~TASK_SECONDS * t of work.

The constants were measured on the 2-core AVX-512 Zen 4 EPYC of the development box with

    python bench/cpu_dispatch.py --rounds 5          (an R x 1024 f32 add; minimum over rounds of each median)

which gave: 4 x 1024 (the op itself < 1 us) 6.9 us on 2 tasks, 36 us on 8 (2 cores: +4.9 us a further task);
256 x 1024 (3.1 MB moved) 32 us on one core (98 GB/s, caches); 4096 x 1024 (50 MB) 2.0 ms (25 GB/s, memory).
The README's 16-core Xeon measurement (a 16-task call ~0.1 ms of dispatch) agrees with 6.9 + 14 x 4.9 = 76 us.
Another machine: rerun the bench there and put its numbers here (RESULT dispatch_us, task_us, stream_gbs).
"""
from __future__ import annotations

import math
from typing import Any, Callable

from workbench.common.dtypes import element_type_of

#: the extra time of an op split into two tasks over one (bench/cpu_dispatch.py: 6.9 us, 2-core Zen 4)
DISPATCH_SECONDS = 7e-6
#: the extra time of each task beyond two (bench/cpu_dispatch.py: 2 -> 8 tasks +29 us, 4.9 us a task)
TASK_SECONDS = 5e-6
#: bytes per second one core streams through an elementwise op whose operands fit half the last-level cache
#: (bench/cpu_dispatch.py --rows 4,512,1024,2048: 3.1 MB in 32 us, 6.3 MB 94 GB/s, 12.6 MB 73 GB/s, on a
#: 32 MiB L3) ...
CACHED_BYTES_PER_S = 100e9
#: ... and past it (25 MB: 38 GB/s; 4096 x 1024 add, 50 MB: 2.0 ms, 25 GB/s)
MEMORY_BYTES_PER_S = 25e9
#: operations (the body's ops per iteration, as `inspect` counts flops) per second of one core, vectorized
#: (a reflect pad's interior, 8x64x57x56 x 21 body ops, 0.25 ms under `run --profile`: ~140 G/s) ...
VECTOR_OPS_PER_S = 100e9
#: ... and in scalar loops (a torch.gather 1024x256, 4 body ops an element: 1M in ~0.1 ms)
SCALAR_OPS_PER_S = 10e9
#: the trip count assumed for a dynamic loop
DYNAMIC_EXTENT = 1024
#: the bytes taken at the cache rate when the machine model gives no cache size (half a 32 MiB L3)
DEFAULT_CACHE_BYTES = 16 << 20

_ITEMSIZE = {"f64": 8, "i64": 8, "index": 8, "complex<f32>": 8, "f32": 4, "i32": 4, "f16": 2, "bf16": 2,
             "i16": 2, "i8": 1, "i1": 1, "complex<f64>": 16}


def _itemsize(type_text: str) -> int:
    element = element_type_of(type_text)
    return _ITEMSIZE.get(element, 4 if element.startswith(("f", "i")) else 8)


def _static_elements(type_text: str) -> int:
    """Elements of a printed static tensor / memref type (0 when dynamic or no shaped type; 1: a scalar)."""
    if not type_text.startswith(("tensor<", "memref<")):
        return 1
    dims = type_text[type_text.index("<") + 1:].split("x")[:-1]
    if any(not d.isdigit() for d in dims):
        return 0
    return math.prod(int(d) for d in dims)


def op_bytes(op: dict[str, Any], gather_factor: int = 1) -> int:
    """Bytes an inspected op moves: each operand's footprint (the extents of the loops its indexing map uses;
    the whole tensor where the map is no projection: a convolution's input), plus, per element loaded at
    computed indices in the body (`tensor.extract`: a gather, a pad), an element of the result's type times
    `gather_factor` (a gathered element may read a cache line of its own)."""
    loops = op.get("loops") or {}
    extents = _extents(loops)
    dims = loops.get("operand_dims") or []
    types = op.get("operand_types") or []
    total = 0
    for i in range(max(len(types), len(dims))):
        t = types[i] if i < len(types) else "f32"   # (an op described by its loops alone: 4-byte elements)
        d = dims[i] if i < len(dims) else None
        if d is not None and all(0 <= x < len(extents) for x in d):
            total += math.prod(extents[x] for x in d) * _itemsize(t)
        else:
            total += _static_elements(t) * _itemsize(t)
    extracts = (loops.get("body") or []).count("tensor.extract")
    if extracts:
        total += extracts * math.prod(extents) * _itemsize(types[-1] if types else "f32") * gather_factor
    return total


def _extents(loops: dict[str, Any]) -> list[int]:
    """The loops' trip counts, a dynamic one (unknown: -1 or None) taken as DYNAMIC_EXTENT."""
    return [d if isinstance(d, int) and d > 0 else DYNAMIC_EXTENT for d in loops.get("domain") or []]


def op_seconds(op: dict[str, Any], vectorized: bool = True, gather_factor: int = 1,
               cache_bytes: int = DEFAULT_CACHE_BYTES) -> float:
    """An inspected op's estimated time on one core: the longer of moving its bytes (`op_bytes`, at the cache
    rate while its footprint fits `cache_bytes`, the caller's share of the cache, else the memory rate) and running its operations (`flops`: the body's
    ops per iteration, at the vector or scalar rate)."""
    moved = op_bytes(op, gather_factor)
    # (the rate by the footprint: gathered elements weigh more, but re-read lines that are in the cache)
    footprint = op_bytes(op) if gather_factor != 1 else moved
    ops = op.get("flops") or math.prod(_extents(op.get("loops") or {})) * len((op.get("loops") or {}).get("body") or [])
    return max(bytes_seconds(moved, cache_bytes, footprint), ops / (VECTOR_OPS_PER_S if vectorized else SCALAR_OPS_PER_S))


def bytes_seconds(moved: int, cache_bytes: int = DEFAULT_CACHE_BYTES, footprint: int | None = None) -> float:
    """One core's time to stream `moved` bytes: at the cache rate while the `footprint` (default: the bytes
    moved) fits `cache_bytes`, else at the memory rate."""
    fits = (moved if footprint is None else footprint) <= (cache_bytes or DEFAULT_CACHE_BYTES)
    return moved / (CACHED_BYTES_PER_S if fits else MEMORY_BYTES_PER_S)


def split_seconds(seconds: float, tasks: int, extent: int = 0) -> float:
    """The modelled time of an op of `seconds` on one core split into `tasks` tasks (module doc); with the
    `extent` of the loop split, each task takes ceil(extent / tasks) of its iterations, the last ones fewer or
    none (16 rows in 14 tasks: 2 rows a task, 8 tasks busy: half the op's time, not 1/14)."""
    if tasks <= 1:
        return seconds
    share = math.ceil(extent / tasks) / extent if extent > 0 else 1 / tasks
    return seconds * share + DISPATCH_SECONDS + TASK_SECONDS * (tasks - 2)


def split_threads(seconds: float, cores: int, split: Callable[[int], tuple[int, int]] | None = None) -> int:
    """The task count in 1..cores that minimizes `split_seconds` (the fewest among equals). `split(t)`: the
    (tasks, extent of the loop split) a split planned for at most t cores makes (an equal split takes a divisor
    of the loop; chunks of a loop that `t` does not divide are uneven), when the op's loops are known."""
    best, best_seconds = 1, seconds
    for cap in range(2, max(cores, 1) + 1):
        tasks, extent = split(cap) if split else (cap, 0)
        if tasks < 2:
            continue
        t = split_seconds(seconds, tasks, extent)
        if t < best_seconds:
            best, best_seconds = cap, t
    return best
