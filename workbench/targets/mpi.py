"""The MPI target: a partitioned (sharded) payload on N ranks, collectives lowered to MPI calls.

Flow: the payload carries `shard.grid` / `shard.shard` annotations on global shapes; the
`mpi-partition` pipeline (sharding propagation + `shard-partition`) turns the entry into its
per-rank form (per-rank shapes, `shard.all_reduce` ... where data must move); `bench` goes
*after* it; `mpi-lower` converts the shard ops to MPI and everything to the LLVM dialect.
`run --target mpi --ranks N` then starts N ranks with `mpiexec`; each JIT-runs the module on
its shard of the inputs.

Host view of the data: inputs are made (and checked) with the *global* shapes of the payload's
entry; the target cuts them into per-rank shards, and reassembles the outputs. With a 1-D grid
a per-rank shape differs from the global one in at most one dimension, split into N equal
blocks in rank order; an argument or result with the global shape is replicated (every rank
gets a copy; the result of rank 0 is reported). Timings: per iteration, the slowest rank.
"""
from __future__ import annotations

import os
import re
from typing import Any

import numpy as np

from workbench.targets.base import Target, TargetError, keep_freed_memory, register

_SHAPED = re.compile(r"^(?:tensor|memref)<((?:\d+x)*)([a-z0-9]+)(?:,.*)?>$")
DEFAULT_RANKS = 2


def _global_spec(type_str: str) -> dict | None:
    m = _SHAPED.match(type_str.strip())
    if not m:
        return None
    shape = [int(d) for d in m.group(1).split("x") if d]
    return {"shape": shape, "dtype": m.group(2), "type": f"memref<{m.group(1)}{m.group(2)}>"}


def split_dim(global_shape: list[int], local_shape: list[int]) -> tuple[int | None, int]:
    """(dimension split across ranks or None if replicated, number of blocks)."""
    if len(global_shape) != len(local_shape):
        raise TargetError(f"rank changed by partitioning: {global_shape} vs {local_shape}")
    dims = [d for d, (g, l) in enumerate(zip(global_shape, local_shape)) if g != l]
    if not dims:
        return None, 1
    if len(dims) > 1:
        raise TargetError(f"global shape {global_shape} is split in several dimensions ({local_shape} per rank): "
                          "only 1-D grids (one split dimension per tensor) are supported")
    d = dims[0]
    g, l = global_shape[d], local_shape[d]
    if l <= 0 or g % l:
        raise TargetError(f"dimension {d} of {global_shape} is not split evenly ({local_shape} per rank)")
    return d, g // l


@register
class MpiTarget(Target):
    name = "mpi"
    description = "partitioned (shard dialect) payload on N MPI ranks (mpiexec), collectives as MPI calls"
    named_pipelines = {
        "mpi-partition": "mpi/partition.yaml",
        "mpi-lower": "mpi/lower.yaml",
        "mpi-bufferize": "mpi/bufferization.yaml",
    }
    default_lowering = "mpi-lower"
    # the reference: the payload with its sharding annotations removed, through cpu-reference, on the CPU
    reference_lowering = "cpu-reference"
    reference_target = "cpu"
    multi_rank = True
    # the ranks compile as the cpu run worker does (run_worker.jit_compile): bytecode, big weights bound as data
    jit_bytecode = True

    def can_run(self) -> tuple[bool, str]:
        from workbench.execution.mpi_launch import availability

        return availability()

    def shared_libs(self) -> list[str]:
        from workbench.execution.mpi_launch import find_libmpi

        libs = super().shared_libs()
        mpi = find_libmpi()
        return ([mpi] if mpi else []) + libs

    def select_params(self, info: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
        """The cpu target's schedules for the per-rank ops (select after `mpi-partition`), each sized for one
        core: the ranks are the parallelism (each pins itself to cores of its own and runs one thread
        unless `run --threads N`), so no schedule of a rank splits its op over the host's cores."""
        import dataclasses

        from workbench.targets.cpu import CpuTarget

        cpu = CpuTarget()
        cpu._machine = dataclasses.replace(cpu.machine, usable_cpus=1)
        return cpu.select_params(info)

    #: the partitioned module's shard collectives as MPI ops (what mpi-lower starts with), before the
    #: schedules: their bufferization cannot take shard ops (`op was not bufferized`)
    COLLECTIVES_TO_MPI = ["pass lh-shard-collectives", "pass convert-shard-to-mpi", "pass canonicalize"]

    def preparation_steps(self, info: dict[str, Any]) -> list[str]:
        """The cpu target's preparation (the per-rank ops get its schedules), after the collectives
        of a partitioned module became MPI ops."""
        from workbench.targets.cpu import CpuTarget

        first = self.COLLECTIVES_TO_MPI if "shard" in info.get("dialects", []) else []
        return first + CpuTarget().preparation_steps(info)

    def reference_prelude(self) -> list[dict]:
        return [{"kind": "strip_sharding"}]

    def run_env(self, threads: int | None) -> dict[str, str]:
        # one thread per rank unless asked otherwise: the ranks are the parallelism
        return keep_freed_memory({"OMP_NUM_THREADS": str(threads or 1)})

    # -- host view: global shapes <-> per-rank shards ------------------------------------
    def host_meta(self, meta: dict, payload: dict, ranks: int | None) -> dict:
        entry = next((f for f in payload.get("funcs", []) if f["name"] == meta["entry"]), None)
        if entry is None:
            raise TargetError(f"entry @{meta['entry']} not found in the payload: cannot map per-rank shapes "
                              "to the payload's global shapes")
        n_in, n_out = meta["num_inputs"], meta["num_outputs"]
        local = meta["arg_specs"]
        if len(entry["args"]) != n_in:
            raise TargetError(f"@{meta['entry']} has {n_in} arguments now but {len(entry['args'])} in the payload")
        results = [o for o in meta["outputs"] if o.startswith("result:")]
        if len(entry["results"]) != len(results):
            raise TargetError(f"@{meta['entry']} returns {len(results)} values now but {len(entry['results'])} "
                              "in the payload")
        globals_: list[dict] = []
        for i, t in enumerate(entry["args"]):
            globals_.append(_global_spec(t) or local[i])
        out_types = [entry["results"][int(o.partition(":")[2])] for o in meta["outputs"] if o.startswith("result:")]
        for j, t in enumerate(out_types):
            globals_.append(_global_spec(t) or local[n_in + j])
        sharded = (payload.get("shardings") or {}).get(meta["entry"])
        if sharded is not None:
            return self._host_meta_nd(meta, globals_, local, sharded, ranks)
        split = []
        factors = set()
        for g, l in zip(globals_, local[:n_in + n_out]):
            if g["dtype"] != l["dtype"]:
                raise TargetError(f"element type changed by partitioning: {g['type']} vs {l['type']}")
            d, n = split_dim(g["shape"], l["shape"])
            split.append(d)
            if d is not None:
                factors.add(n)
        if len(factors) > 1:
            raise TargetError(f"arguments are split into different numbers of blocks {sorted(factors)}")
        partitioned_for = factors.pop() if factors else None
        if ranks is None:
            ranks = partitioned_for or DEFAULT_RANKS
        if ranks < 1:
            raise TargetError("--ranks must be >= 1")
        if partitioned_for is not None and ranks != partitioned_for:
            raise TargetError(f"the entry is partitioned for {partitioned_for} ranks (per-rank shapes are "
                              f"1/{partitioned_for} of the payload's), not --ranks {ranks}")
        host = dict(meta)
        host["arg_specs"] = globals_ + local[n_in + n_out:]
        host["rank_arg_specs"] = local
        host["split_dims"] = split
        host["ranks"] = ranks
        return host

    def _host_meta_nd(self, meta: dict, globals_: list[dict], local: list[dict], sharded: dict,
                      ranks: int | None) -> dict:
        """Host view from the payload's annotations: any grid (2x2, 2x4, ...); every tensor dimension
        is cut along the grid axes that split it (row-major over those axes), replicated otherwise."""
        n_in, n_out = meta["num_inputs"], meta["num_outputs"]
        grid = [int(g) for g in sharded["grid"]]
        size = int(np.prod(grid)) if grid else 1
        result_layouts = sharded["results"]
        layouts = list(sharded["args"][:n_in])
        for o in meta["outputs"]:
            if o.startswith("result:"):
                j = int(o.partition(":")[2])
                layouts.append(result_layouts[j] if j < len(result_layouts) else None)
            else:
                layouts.append(sharded["args"][int(o.partition(":")[2])])
        for g, l, axes in zip(globals_, local[:n_in + n_out], layouts):
            if g["dtype"] != l["dtype"]:
                raise TargetError(f"element type changed by partitioning: {g['type']} vs {l['type']}")
            want = [dim // _blocks(axes, d, grid) for d, dim in enumerate(g["shape"])]
            if want != l["shape"]:
                raise TargetError(f"per-rank shape {l['shape']} of a {g['shape']} tensor is not its block on the "
                                  f"{'x'.join(map(str, grid))} grid ({want})")
        if ranks is None:
            ranks = size
        if ranks != size:
            shape = f" (a {'x'.join(map(str, grid))} grid)" if len(grid) > 1 else ""
            raise TargetError(f"the entry is partitioned for {size} ranks{shape}, not --ranks {ranks}")
        host = dict(meta)
        host["arg_specs"] = globals_ + local[n_in + n_out:]
        host["rank_arg_specs"] = local
        host["layouts"] = layouts
        host["grid"] = grid
        host["ranks"] = ranks
        return host

    def execute(self, llvm: str, meta: dict, inputs: list, *, call: bool, bench: bool, timeout: float,
                threads: int | None = None, opt_level: int = 3, bytecode: bytes | None = None,
                compile_timeout: float | None = None, progress=None) -> dict:
        """The ranks run under mpiexec (execution/mpi_launch.py), with a run worker's two limits: the JIT compile
        (`compile_timeout`) until every rank has compiled, then the calls (`timeout`); `progress` hears both."""
        from workbench.execution.mpi_launch import run_ranks

        ok, why = self.can_run()
        if not ok:
            return {"ok": False, "error": f"target {self.name} cannot run here: {why}"}
        if "rank_arg_specs" not in meta:
            return {"ok": False, "error": "internal: mpi run without the per-rank argument specs"}
        ranks = meta["ranks"]
        n_in, n_out = meta["num_inputs"], meta["num_outputs"]
        local = meta["rank_arg_specs"]
        if "layouts" in meta:
            layouts, grid = meta["layouts"], meta["grid"]
            rank_inputs = [[_block_nd(a, layouts[i], grid, r) for i, a in enumerate(inputs)] for r in range(ranks)]

            def assemble(parts, i):
                return _assemble_nd(parts, layouts[i], grid)
        else:
            split = meta["split_dims"]
            rank_inputs = [[_block(a, split[i], r, ranks) for i, a in enumerate(inputs)] for r in range(ranks)]

            def assemble(parts, i):
                return _assemble(parts, split[i])
        req = self.jit_request(llvm, meta, local, call=call, bench=bench, opt_level=opt_level)
        if bytecode is not None:
            req["llvm_bytecode"] = bytecode
        ans = run_ranks(req, rank_inputs, timeout=timeout, compile_timeout=compile_timeout, progress=progress,
                        env=self.run_env(threads))
        if not ans["ok"]:
            return ans
        per_rank = ans["ranks"]
        out: dict[str, Any] = {"ok": True, "compile_s": max(a.get("compile_s") or 0.0 for a in per_rank),
                               "report": {"ranks": ranks}}
        if any(a.get("cpus") for a in per_rank):   # where each rank ran (pinned to its own cores)
            out["report"]["rank_cpus"] = [a.get("cpus") for a in per_rank]
        if any(a.get("external_weights") for a in per_rank):   # weights bound to each rank's JIT as data
            out["report"]["rank_external_weights"] = [a.get("external_weights") for a in per_rank]
        if all(a.get("comm_splits") is not None for a in per_rank):   # communicators made (lh-mpi-reuse-comm)
            out["report"]["rank_comm_splits"] = [a["comm_splits"] for a in per_rank]
        if call:
            out["args_after"] = [assemble([a["args_after"][i] for a in per_rank], i) for i in range(n_in)]
            out["outputs"] = [assemble([a["outputs"][j] for a in per_rank], n_in + j) for j in range(n_out)]
        if bench:
            rank_times = [a["times"] for a in per_rank]
            out["times"] = [max(ts) for ts in zip(*rank_times)]
            out["report"]["rank_times_s"] = rank_times
            growth = [a.get("bench_rss_growth_bytes") for a in per_rank]
            if all(g is not None for g in growth):   # a leak shows as memory kept by the timed loop
                out["report"]["rank_bench_rss_growth_mb"] = [round(g / 2**20, 1) for g in growth]
        return out


def _block(a: np.ndarray, dim: int | None, rank: int, ranks: int) -> np.ndarray:
    if dim is None:
        return a
    return np.ascontiguousarray(np.split(a, ranks, axis=dim)[rank])


def _assemble(parts: list[np.ndarray], dim: int | None) -> np.ndarray:
    if dim is None:
        return parts[0]
    return np.concatenate(parts, axis=dim)


def _blocks(axes: list | None, dim: int, grid: list[int]) -> int:
    """How many blocks tensor dimension `dim` is cut into (the product of the grid axes splitting it)."""
    if not axes or dim >= len(axes):
        return 1
    return int(np.prod([grid[x] for x in axes[dim]])) if axes[dim] else 1


def _block_slices(shape, axes: list | None, grid: list[int], rank: int) -> tuple:
    coords = np.unravel_index(rank, grid) if grid else ()
    slices = []
    for d, size in enumerate(shape):
        split = axes[d] if axes and d < len(axes) else []
        if not split:
            slices.append(slice(None))
            continue
        index = int(np.ravel_multi_index([coords[x] for x in split], [grid[x] for x in split]))
        step = size // _blocks(axes, d, grid)
        slices.append(slice(index * step, (index + 1) * step))
    return tuple(slices)


def _block_nd(a: np.ndarray, axes: list | None, grid: list[int], rank: int) -> np.ndarray:
    return np.ascontiguousarray(a[_block_slices(a.shape, axes, grid, rank)])


def _assemble_nd(parts: list[np.ndarray], axes: list | None, grid: list[int]) -> np.ndarray:
    """The global tensor from every rank's block (ranks holding the same block agree; rank 0 wins)."""
    shape = [p * _blocks(axes, d, grid) for d, p in enumerate(parts[0].shape)]
    out = np.empty(shape, dtype=parts[0].dtype)
    for rank in reversed(range(len(parts))):
        out[_block_slices(shape, axes, grid, rank)] = parts[rank]
    return out
