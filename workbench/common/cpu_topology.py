"""Which logical CPUs share a physical core (sysfs), and disjoint CPU sets for processes that run side by
side (MPI ranks on one host). Linux only; elsewhere nothing is pinned. No MLIR: both sides may import it.
"""
from __future__ import annotations

import os
from pathlib import Path

SYS_CPU = Path("/sys/devices/system/cpu")


def _read(path: Path) -> str:
    try:
        return path.read_text().strip()
    except OSError:
        return ""


def allowed_cpus() -> list[int]:
    """The logical CPUs this process may run on."""
    if hasattr(os, "sched_getaffinity"):
        return sorted(os.sched_getaffinity(0))
    return list(range(os.cpu_count() or 1))


def physical_core_groups(allowed: list[int] | None = None, cpu_root: Path = SYS_CPU) -> list[list[int]]:
    """The allowed logical CPUs grouped by physical core ((package, core_id) in sysfs), each group sorted,
    the groups in the order of their first CPU. Without topology files: one group per CPU."""
    allowed = allowed_cpus() if allowed is None else sorted(allowed)
    groups: dict[tuple[str, str], list[int]] = {}
    for cpu in allowed:
        topo = cpu_root / f"cpu{cpu}" / "topology"
        key = (_read(topo / "physical_package_id"), _read(topo / "core_id"))
        groups.setdefault(key if key[1] else ("cpu", str(cpu)), []).append(cpu)
    return sorted(groups.values(), key=lambda g: g[0])


def cpus_kept(cpus: list[int], threads: int) -> list[int]:
    """The CPUs of a rank's share that it runs `threads` threads on: the last ones, leaving the first of
    the share free for the launcher, MPI's progress and the OS's housekeeping, which sit on the low CPUs
    (on the 16-core host of the GPU machine, 8 ranks of one thread on two CPUs each: the rank on CPUs 0-1
    took 160 ms for its 2048x1024x4096 block, the others 110-120)."""
    threads = max(threads, 1)
    return cpus[-threads:] if len(cpus) > threads else cpus


def cpus_for_local_rank(local_rank: int, local_size: int, allowed: list[int] | None = None,
                        cpu_root: Path = SYS_CPU) -> list[int] | None:
    """CPUs for rank `local_rank` of `local_size` ranks on this host: each rank gets its own whole physical
    cores (one logical CPU of each, so that no two ranks share a core's execution units), the cores split
    evenly in order; with more ranks than physical cores, logical CPUs; with more ranks than those, None
    (the ranks share the CPUs as the OS schedules them)."""
    if not 0 <= local_rank < local_size:
        raise ValueError(f"rank {local_rank} of {local_size}")
    groups = physical_core_groups(allowed, cpu_root)
    if local_size <= len(groups):
        units = [[g[0]] for g in groups]
    else:
        units = [[cpu] for g in groups for cpu in g]
        if local_size > len(units):
            return None
    per_rank = len(units) // local_size
    mine = units[local_rank * per_rank:(local_rank + 1) * per_rank]
    return sorted(cpu for unit in mine for cpu in unit)
