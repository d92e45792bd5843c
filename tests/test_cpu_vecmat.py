"""A single-row contraction (x @ W: torch's vecmat, a linear layer on one vector) streams W row by row
(cpu_selector.streaming_rows): the reduced rows outermost, each read whole, instead of vector strips
walking down the rows in cache blocks."""
from __future__ import annotations

import dataclasses

from conftest import matmul_payload, ok


def _loops(m: int, n: int, k: int) -> dict:
    return {"iterators": ["parallel", "parallel", "reduction"], "operand_dims": [[0, 2], [2, 1], [0, 1]],
            "body": ["arith.mulf", "arith.addf", "linalg.yield"], "projected": True, "num_inputs": 2,
            "domain": [m, n, k]}


def test_one_row_streams_the_matrix_by_rows():
    from workbench.targets.cpu_selector import generic_params

    lanes = 16
    p = generic_params({"id": "matmul_0", "loops": _loops(1, 4096, 4096)}, 32 * lanes, 2)
    assert p["class"] == "contraction-by-steps" and p["split"] == 1 and p["threads"] == 2
    assert p["interchange"] == [0, 2, 1]             # k outside n: each row of W read contiguously
    assert p["tile"] == [1, 4 * lanes, 1] and "cache_tile" not in p
    # several rows (a matmul taken step by step) keep the strips walking down the rows
    rows = generic_params({"id": "matmul_0", "loops": _loops(8, 4096, 4096)}, 32 * lanes, 2)
    assert rows["interchange"] == [0, 1, 2]
    # a short reduction: nothing to stream
    assert generic_params({"id": "matmul_0", "loops": _loops(1, 4096, 64)}, 32 * lanes, 1)["interchange"] == [0, 1, 2]


def test_streamed_vecmat_runs_and_matches(ctx, tmp_path, monkeypatch):
    import workbench.targets.cpu as cpu

    machine = dataclasses.replace(cpu.host_machine(), usable_cpus=2)
    monkeypatch.setattr(cpu, "host_machine", lambda: machine)
    lanes = max(machine.vector_bits // 32, 4)
    ok(ctx, f"load {matmul_payload(tmp_path / 'vecmat.mlir', 1, 32 * lanes, 512)}")
    generic = [e["params"] for e in ok(ctx, "select --apply").data["selections"] if "generic.py" in e["schedule"]]
    assert generic and generic[0]["interchange"] == [0, 2, 1] and generic[0]["tile"][1] == 4 * lanes
    ok(ctx, "bench warmup=1 iterations=2")
    ok(ctx, "apply cpu-lower")
    for threads in (1, 2):
        assert ok(ctx, f"run --check --threads {threads}").data["run"]["check"]["passed"]
