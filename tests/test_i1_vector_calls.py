"""No vector of i1 crosses a call in the lowered code (lh-widen-i1-vector-args, in lib/llvm-lowering.yaml).

LLVM 22's x86 backend aborts on a call that passes `<1 x i1>` (alone or in the array an n-D `vector<4x1xi1>`
lowers to) with AVX-512: "LLVM ERROR: Cannot emit physreg copy instruction" (workbench/worker/widen_i1.py has
the reduced reproducer). lh-outline-loops made such calls: a quantile + median payload (bitonic sorts, 64+
loop nests after the selector's schedules) passed its compare-select masks to the outlined loop nests and the
run worker aborted. Every function defined in the module now takes and returns such vectors as i8 vectors."""
from __future__ import annotations

import re

import numpy as np

from conftest import PAYLOADS, ok

#: a lowered function signature with a vector of i1 in it (alone, in an array or in a result struct)
I1_SIGNATURE = re.compile(r"llvm\.func @\w+\([^\n]*vector<\d+xi1>")


def _inputs(tmp_path, *arrays) -> str:
    paths = []
    for i, a in enumerate(arrays):
        paths.append(tmp_path / f"in{i}.npy")
        np.save(paths[-1], a)
    return ",".join(str(p) for p in paths)


def test_a_function_taking_and_returning_masks_runs_and_matches_numpy(ctx, tmp_path):
    """tests/fixtures/payloads/i1_vector_call.mlir: a noinline @pick(mask, a, b) -> (select, not mask), called
    twice by @main (a mask argument and a mask result each). It aborted the run worker."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((4, 1)).astype(np.float32)
    y = rng.standard_normal((4, 1)).astype(np.float32)
    y[2] = x[2]                                   # (a tie: not less, the max and min are equal)
    want = np.abs(x - y) + np.where(x < y, 1000.0, 0.0).astype(np.float32)
    np.save(tmp_path / "want.npy", want)
    ok(ctx, f"load {PAYLOADS / 'i1_vector_call.mlir'}")
    ok(ctx, "bench warmup=0 iterations=1")
    ok(ctx, "apply cpu-lower")
    ir = ctx.session.current_ir
    assert "@pick(" in ir and "noinline" in ir          # the call is still there, out of line
    assert not I1_SIGNATURE.search(ir), I1_SIGNATURE.search(ir).group(0)
    assert re.search(r"llvm\.func @pick\([^\n]*vector<1xi8>", ir)
    run = ok(ctx, f"run --check --npy {_inputs(tmp_path, x, y)} --expect {tmp_path / 'want.npy'}").data["run"]
    assert run["check"]["passed"] and run["expected_check"]["passed"], run


#: a loop over rows selecting with a mask computed above it (what the sort networks' vectorized
#: compare-selects leave): outlined, the mask is an argument of the loop's function
MASK_ABOVE_LOOP = """
func.func @main(%x: tensor<8x4x1xf32>, %y: tensor<4x1xf32>) -> tensor<8x4x1xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %pad = arith.constant 0.0 : f32
  %zero = arith.constant dense<0.0> : vector<4x1xf32>
  %yv = vector.transfer_read %y[%c0, %c0], %pad {in_bounds = [true, true]} : tensor<4x1xf32>, vector<4x1xf32>
  %m = arith.cmpf ogt, %yv, %zero : vector<4x1xf32>
  %e = tensor.empty() : tensor<8x4x1xf32>
  %r = scf.for %i = %c0 to %c8 step %c1 iter_args(%acc = %e) -> tensor<8x4x1xf32> {
    %a = vector.transfer_read %x[%i, %c0, %c0], %pad {in_bounds = [true, true]} : tensor<8x4x1xf32>, vector<4x1xf32>
    %n = arith.negf %a : vector<4x1xf32>
    %s = arith.select %m, %a, %n : vector<4x1xi1>, vector<4x1xf32>
    %w = vector.transfer_write %s, %acc[%i, %c0, %c0] {in_bounds = [true, true]} : vector<4x1xf32>, tensor<8x4x1xf32>
    scf.yield %w : tensor<8x4x1xf32>
  }
  return %r : tensor<8x4x1xf32>
}
"""


def test_an_outlined_loop_nest_reading_a_mask_from_above_runs(ctx, tmp_path):
    """lh-outline-loops passes the values a loop nest reads from above as arguments: a vector<4x1xi1> mask
    (an array of <1 x i1> in LLVM) here, as the quantile + median payload's 64+ nests did."""
    path = tmp_path / "mask_above_loop.mlir"
    path.write_text(MASK_ABOVE_LOOP)
    rng = np.random.default_rng(1)
    x = rng.standard_normal((8, 4, 1)).astype(np.float32)
    y = np.array([[1.0], [-1.0], [0.5], [0.0]], dtype=np.float32)
    np.save(tmp_path / "want.npy", np.where(y > 0, x, -x).astype(np.float32))
    ok(ctx, f"load {path}")
    ok(ctx, "bench warmup=0 iterations=1")
    ok(ctx, "apply pipelines/lib/bufferize.mlir")
    ok(ctx, "pass lh-outline-loops{min-loops=1}")
    assert re.search(r"func\.func @main_loop0\([^\n]*vector<4x1xi1>", ctx.session.current_ir)
    ok(ctx, "apply cpu-lower")
    ir = ctx.session.current_ir
    assert "llvm.func @main_loop0(" in ir and not I1_SIGNATURE.search(ir)
    run = ok(ctx, f"run --check --npy {_inputs(tmp_path, x, y)} --expect {tmp_path / 'want.npy'}").data["run"]
    assert run["check"]["passed"] and run["expected_check"]["passed"], run
