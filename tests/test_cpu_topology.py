"""Disjoint CPU sets for the MPI ranks of one host (workbench/common/cpu_topology.py), on fake sysfs trees."""
from __future__ import annotations

import pytest

from workbench.common.cpu_topology import cpus_for_local_rank, cpus_kept, physical_core_groups


def fake_sysfs(tmp_path, cores: int, threads: int):
    """`cores` physical cores with `threads` hyper-threads each, numbered like Linux does (siblings cpu c and
    cpu c + cores)."""
    for t in range(threads):
        for c in range(cores):
            topo = tmp_path / f"cpu{t * cores + c}" / "topology"
            topo.mkdir(parents=True)
            (topo / "physical_package_id").write_text("0\n")
            (topo / "core_id").write_text(f"{c}\n")
    return tmp_path, list(range(cores * threads))


def test_groups_are_physical_cores(tmp_path):
    root, cpus = fake_sysfs(tmp_path, cores=4, threads=2)
    assert physical_core_groups(cpus, root) == [[0, 4], [1, 5], [2, 6], [3, 7]]
    assert physical_core_groups([0, 1, 4], root) == [[0, 4], [1]]


@pytest.mark.parametrize("ranks", [1, 2, 4, 8])
def test_ranks_get_disjoint_whole_cores(tmp_path, ranks):
    root, cpus = fake_sysfs(tmp_path, cores=8, threads=2)
    sets = [cpus_for_local_rank(r, ranks, cpus, root) for r in range(ranks)]
    flat = [c for s in sets for c in s]
    assert len(flat) == len(set(flat)) == 8                 # every physical core used once, no sharing
    assert all(c < 8 for c in flat)                         # one hyper-thread of each core
    assert all(len(s) == 8 // ranks for s in sets)


def test_more_ranks_than_cores_use_hyperthreads_then_nothing(tmp_path):
    root, cpus = fake_sysfs(tmp_path, cores=2, threads=2)
    sets = [cpus_for_local_rank(r, 4, cpus, root) for r in range(4)]
    assert sorted(c for s in sets for c in s) == [0, 1, 2, 3]
    assert cpus_for_local_rank(0, 5, cpus, root) is None
    with pytest.raises(ValueError):
        cpus_for_local_rank(4, 4, cpus, root)


def test_without_topology_every_cpu_is_a_core(tmp_path):
    assert cpus_for_local_rank(1, 2, [0, 1, 2, 3], tmp_path) == [2, 3]


def test_a_rank_keeps_the_last_cpus_of_its_share():
    """One thread per rank by default: it runs on the last CPU of its share, the first (CPU 0 for rank 0:
    the OS's and the launcher's) stays free; `run --threads N` keeps N; a share no larger is kept whole."""
    assert cpus_kept([0, 1], 0) == [1]
    assert cpus_kept(list(range(16)), 1) == [15]
    assert cpus_kept([4, 5, 6, 7], 2) == [6, 7]
    assert cpus_kept([8, 9], 4) == [8, 9]
