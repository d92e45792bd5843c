"""Unstructured control flow over tensors (`cf.br` / `cf.cond_br` whose block arguments are tensors:
upstream's detensorize_while.mlir, detensorize_while_impure_cf.mlir, detensorize_if.mlir).

Before: the loops bufferized to `cf` loops over buffers, which the deallocation pass refuses: `apply
cpu-lower` and `run` failed with "lh-buffer-deallocation: FILE:7:1: Only structured control-flow loops
are supported" (so did `select --apply` then `apply cpu-lower`). Now `lh-lift-tensor-cf` (at the head of
the bufferization pipelines and of cpu's `select` preparation) lifts them to scf first, the poison tensors
the lifting leaves becoming tensor.empty, and leaves every other function as it was."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from conftest import ok

PAYLOADS = Path(__file__).parent / "payloads" / "tensor_cf"


def _while_loop(x, s):
    for _ in range(5):
        x = x * s * np.float32(0.5) + x
    return x


def _if_else(x, y):
    return (x + y if x[0] > 0 else y * x) * np.float32(2)


def _loop_if_else(x, y):
    for _ in range(4):
        x = x + y if x[0] > 0 else x * y
    return x


def _impure_loop(x):
    n = 0
    while True:
        total = np.abs(x).sum(dtype=np.float32)
        if not (total < 1000 and n < 20):
            return np.array(total, dtype=np.float32)
        x = x * np.float32(1.5) + np.float32(1)
        n += 1


#: (if_else, a diamond without a loop, lowered before too: the deallocation takes unstructured branches, not
#: loops; it is here for the lifting, which makes it an scf.if)
EXPECTED = {"while_loop": _while_loop, "if_else": _if_else, "loop_if_else": _loop_if_else,
            "impure_loop": _impure_loop}


@pytest.mark.parametrize("route", ["cpu-lower", "select"])
@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_cf_over_tensors_lowers_runs_and_matches(ctx, tmp_path, name, route):
    ok(ctx, f"load {PAYLOADS / (name + '.mlir')}")
    ok(ctx, "target cpu --threads 1")
    if route == "select":
        ok(ctx, "select --apply")
    ok(ctx, "bench warmup=1 iterations=2")
    ok(ctx, "apply cpu-lower")
    res = ok(ctx, f"run --check --threads 1 --save-outputs {tmp_path}")
    assert res.data["run"]["check"]["passed"], res.data["run"]["check"]
    # and the values are the program's (not only the reference's, which the same lifting lowers)
    inputs = [np.load(p) for p in sorted(tmp_path.glob("input*.npy"))]
    got = np.load(tmp_path / "output0.npy")
    np.testing.assert_allclose(got, EXPECTED[name](*inputs), rtol=1e-5, atol=1e-5)


def test_the_lifting_touches_only_functions_branching_over_tensors():
    """A function with a cf loop over scalars and one without cf stay as they were; the one branching over
    tensors becomes scf, with no poison tensor left."""
    from mlir import ir

    from workbench.worker.tensor_cf import lift_tensor_cf

    scalar = """
func.func @scalar_loop(%n: i32) -> i32 {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  cf.br ^bb1(%c0 : i32)
^bb1(%i: i32):
  %lt = arith.cmpi slt, %i, %n : i32
  cf.cond_br %lt, ^bb2, ^bb3
^bb2:
  %j = arith.addi %i, %c1 : i32
  cf.br ^bb1(%j : i32)
^bb3:
  return %i : i32
}
func.func @plain(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}
"""
    with ir.Context(), ir.Location.unknown():
        module = ir.Module.parse(scalar)
        before = str(module)
        assert lift_tensor_cf(module) == []
        assert str(module) == before

        module = ir.Module.parse(scalar + (PAYLOADS / "while_loop.mlir").read_text())
        funcs = lambda: {ir.StringAttr(f.attributes["sym_name"]).value: str(f) for f in module.body.operations}
        others = {k: v for k, v in funcs().items() if k != "main"}
        assert lift_tensor_cf(module) == ["main"]
        after = funcs()
        assert "scf.while" in after["main"] and "cf.br" not in after["main"], after["main"]
        assert "cf.cond_br" not in after["main"] and "ub.poison" not in after["main"], after["main"]
        assert {k: v for k, v in after.items() if k != "main"} == others


def _mpi_unavailable() -> str:
    from workbench.execution.mpi_launch import availability

    ok_, why = availability()
    return "" if ok_ else why


@pytest.mark.skipif(bool(_mpi_unavailable()), reason=f"mpi target unavailable: {_mpi_unavailable()}")
def test_mpi_lowering_lifts_the_loop_too(ctx):
    """mpi's bufferization (its own deallocation pass) refused the loop the same way."""
    ok(ctx, f"load {PAYLOADS / 'while_loop.mlir'}")
    ok(ctx, "target mpi")
    ok(ctx, "apply mpi-lower")
    res = ok(ctx, "run --check --iterations 2")
    assert res.data["run"]["check"]["passed"], res.data["run"]["check"]


def test_a_dynamic_shape_loop_bufferizes(ctx):
    """A poison tensor of dynamic shape becomes a tensor.empty of size 0 (run needs static shapes: the
    bufferization is what this payload can show)."""
    ok(ctx, f"load {PAYLOADS / 'while_loop_dynamic.mlir'}")
    ok(ctx, "apply cpu-bufferize")
    ir = ok(ctx, "show").body
    assert "scf.while" in ir and "cf.br" not in ir and "ub.poison" not in ir, ir
