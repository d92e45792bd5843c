"""Loops that yield a tensor built in their body, not their iter_arg updated in place (a recurrence
written by hand, an unrolled RNN step kept as a loop, upstream test payloads).

Before: every lowering bufferized with one-shot bufferization's default, which refuses such a loop:
`apply cpu-lower` and `select --apply` failed with "Yield operand #0 is not equivalent to the
corresponding iter bbArg". Now the pipelines and the schedules' bufferization allow new buffers from
loops, and the deallocation pass frees each iteration's buffer once the next one is built."""
from __future__ import annotations

from pathlib import Path

import pytest

from conftest import ok

PAYLOAD = Path(__file__).parent / "payloads" / "loop_carried_new_tensors.mlir"


@pytest.mark.parametrize("route", ["cpu-lower", "select"])
def test_a_loop_yielding_a_new_tensor_lowers_runs_and_matches(ctx, route):
    ok(ctx, f"load {PAYLOAD}")
    ok(ctx, "target cpu --threads 1")
    if route == "select":
        res = ok(ctx, "select --apply")
        assert "matmul" in str(res.data).lower() or "matmul" in (res.body or "").lower()
    ok(ctx, "bench warmup=1 iterations=2")
    ok(ctx, "apply cpu-lower")
    res = ok(ctx, "run --check --threads 1")
    assert res.data["run"]["check"]["passed"], res.data["run"]["check"]


def test_each_iterations_buffer_is_freed(ctx):
    """The buffer a loop iteration yields is freed in the next (a 10 000-iteration loop would otherwise
    hold 10 000 of them): after `cpu-bufferize` the loop body deallocates its incoming buffer."""
    ok(ctx, f"load {PAYLOAD}")
    ok(ctx, "apply cpu-bufferize")
    ir = ok(ctx, "show").body
    loop = ir[ir.index("scf.for"):]
    body = loop[:loop.index("scf.yield")]
    assert "memref.alloc" in body and "memref.dealloc" in body, body


def test_run_lines_keep_allow_return_allocs_from_loops():
    """The option exists in LLVM 22 (one-shot-bufferize-invalid.mlir's RUN line passes it); only
    `allow-return-allocs` and `create-deallocs` were removed."""
    from workbench.common.split_input import find_run_lines

    run = find_run_lines('// RUN: mlir-opt %s -one-shot-bufferize="allow-unknown-ops allow-return-allocs-from-loops"\n')[0]
    assert run.mlir_opt_pipelines() == ["one-shot-bufferize{allow-unknown-ops allow-return-allocs-from-loops}"]
