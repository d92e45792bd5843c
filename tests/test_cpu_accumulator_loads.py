"""lh-defer-accumulator-loads (workbench/worker/cpu/accumulator_loads.py): a register-blocked loop starts
its accumulators at zero, prefetches the output tile and adds it after the loop; only where that is the
same sum."""
from __future__ import annotations

import re

import pytest

from conftest import matmul_payload, ok

LOOP = """func.func @f(%C: memref<64x64xf32>, %A: memref<64x64xf32>, %i: index, %j: index) {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %pad = arith.constant 0.0 : {elt}
  %acc0 = vector.transfer_read %C[%i, %j], %pad {{in_bounds = [true, true]}} : memref<64x64xf32>, vector<2x16xf32>
  %r = scf.for %k = %c0 to %c64 step %c1 iter_args(%acc = %acc0) -> (vector<2x16xf32>) {{
{body}
  }}
  vector.transfer_write %r, %C[%i, %j] {{in_bounds = [true, true]}} : vector<2x16xf32>, memref<64x64xf32>
  return
}}
"""
# rows taken apart, an FMA each, put back: the matmul micro-kernel's shape
ROWS_FMA = """    %a = vector.transfer_read %A[%k, %c0], %pad {in_bounds = [true]} : memref<64x64xf32>, vector<16xf32>
    %r0 = vector.extract %acc[0] : vector<16xf32> from vector<2x16xf32>
    %r1 = vector.extract %acc[1] : vector<16xf32> from vector<2x16xf32>
    %s0 = vector.fma %a, %a, %r0 : vector<16xf32>
    %s1 = arith.addf %a, %r1 : vector<16xf32>
    %e = arith.constant dense<0.0> : vector<2x16xf32>
    %t0 = vector.insert %s0, %e [0] : vector<16xf32> into vector<2x16xf32>
    %t1 = vector.insert %s1, %t0 [1] : vector<16xf32> into vector<2x16xf32>
    scf.yield %t1 : vector<2x16xf32>"""


def _defer(body: str, elt: str = "f32") -> tuple[int, str]:
    from mlir import ir

    from workbench.worker.cpu.accumulator_loads import defer_accumulator_loads

    with ir.Context():
        module = ir.Module.parse(LOOP.format(body=body, elt=elt))
        n = defer_accumulator_loads(module)
        module.operation.verify()
        return n, str(module)


def test_an_additive_accumulator_starts_at_zero_and_the_tile_is_added_after_the_loop():
    n, out = _defer(ROWS_FMA)
    assert n == 1
    loop_at, write_at = out.index("scf.for"), out.index("vector.transfer_write %")
    read_at = out.index("vector.transfer_read %arg0")
    assert loop_at < read_at < write_at, "the tile is read after the loop"
    assert re.search(r"iter_args\(%\w+ = %cst\w*\)", out), "the loop starts from a constant"
    assert "dense<0.000000e+00> : vector<2x16xf32>" in out
    assert re.search(r"arith.addf %\w+, %\w+ : vector<2x16xf32>\n\s+vector.transfer_write", out)
    # both rows of the tile prefetched before the loop (16 f32: one cache line a row)
    prefetches = re.findall(r"memref.prefetch %arg0\[[^\]]*\], read", out)
    assert len(prefetches) == 2 and out.index("memref.prefetch") < loop_at


@pytest.mark.parametrize("body, why", [
    (ROWS_FMA.replace("vector.fma %a, %a, %r0", "vector.fma %a, %r0, %a"),
     "the accumulator is a factor, not the addend: acc * a is not (acc * a with acc = 0) + C"),
    (ROWS_FMA.replace("arith.addf %a, %r1", "arith.mulf %a, %r1"), "a product of the accumulator"),
    (ROWS_FMA.replace("%t0 = vector.insert %s0, %e [0]", "%t0 = vector.insert %s1, %e [0]"),
     "row 1's sum goes to row 0: a position moves"),
    (ROWS_FMA.replace("    scf.yield", "    vector.transfer_write %a, %A[%k, %c0] {in_bounds = [true]} : "
                                        "vector<16xf32>, memref<64x64xf32>\n    scf.yield"),
     "the loop writes memory (it could write the tile the read would see later)"),
    (ROWS_FMA.replace("%r1 = vector.extract %acc[1]", "%r1 = vector.extract %acc[%k]"),
     "a dynamic position: which row is not known"),
])
def test_loops_that_are_not_a_plain_sum_into_the_tile_are_left_as_they_are(body, why):
    n, out = _defer(body)
    assert n == 0, why
    assert re.search(r"iter_args\(%\w+ = %0\)", out), why
    assert "memref.prefetch" not in out


def test_integer_accumulators_are_left_alone():
    body = ROWS_FMA.replace("f32", "i32").replace("vector.fma %a, %a, %r0", "arith.addi %a, %r0") \
                   .replace("arith.addf %a, %r1", "arith.addi %a, %r1").replace("dense<0.0>", "dense<0>")
    src = LOOP.format(body=body, elt="i32").replace("f32", "i32").replace("0.0 : i32", "0 : i32")
    from mlir import ir

    from workbench.worker.cpu.accumulator_loads import defer_accumulator_loads

    with ir.Context():
        module = ir.Module.parse(src)
        assert defer_accumulator_loads(module) == 0


@pytest.mark.parametrize("cpu, threads", [("avx2", 1), ("", 2)])
def test_matmul_kernels_start_from_zero_and_still_match(ctx, tmp_path, cpu, threads):
    """The selector's matmul (a 6x16 AVX2 kernel with its 4-row tail; the 2-thread forall on this host)
    after cpu-lower: every micro-kernel's C tile is prefetched, and the run matches the reference."""
    ok(ctx, f"load {matmul_payload(tmp_path / 'mm.mlir', 130, 96, 64)}")
    if cpu:
        ok(ctx, f"target cpu --cpu {cpu}")
    ok(ctx, f"target --threads {threads}")
    ok(ctx, "bench iterations=2")
    ok(ctx, "select --apply")
    ok(ctx, "pass lh-defer-accumulator-loads")
    ir = ctx.session.current_ir
    assert "memref.prefetch" in ir
    assert not re.search(r"= vector.transfer_read[^\n]*\n\s+%\w+ = scf.for [^\n]*iter_args", ir), \
        "no micro-kernel reads its tile right before its K loop any more"
    ok(ctx, "apply cpu-lower")
    assert "llvm.intr.prefetch" in ctx.session.current_ir
    assert ok(ctx, f"run --check --threads {threads}").data["run"]["check"]["passed"]
