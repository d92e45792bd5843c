"""Row chains on the CPU (workbench/targets/cpu_rows.py, pipelines/cpu/rows.py): ops over the same rows
(a softmax written as max, exp, sum, divide) fused into one loop over the rows; each selection applies,
lowers, runs and matches the unscheduled reference."""
from __future__ import annotations

import pytest

from conftest import ok

# softmax over the last dim of 4x6x64 as torch-mlir decomposes it; `extra` adds ops after it
SOFTMAX = """#id = affine_map<(a, b, c) -> (a, b, c)>
#row = affine_map<(a, b, c) -> (a, b)>
func.func @softmax(%x: tensor<4x6x64xf32>) -> ({results}) {{
  %ninf = arith.constant 0xFF800000 : f32
  %z = arith.constant 0.0 : f32
  %er = tensor.empty() : tensor<4x6xf32>
  %e = tensor.empty() : tensor<4x6x64xf32>
  %fm = linalg.fill ins(%ninf : f32) outs(%er : tensor<4x6xf32>) -> tensor<4x6xf32>
  %m = linalg.generic {{indexing_maps = [#id, #row], iterator_types = ["parallel", "parallel", "reduction"]}}
      ins(%x : tensor<4x6x64xf32>) outs(%fm : tensor<4x6xf32>) {{
  ^bb0(%in: f32, %acc: f32):
    %r = arith.maximumf %in, %acc : f32
    linalg.yield %r : f32
  }} -> tensor<4x6xf32>
  %ex = linalg.generic {{indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel", "parallel"]}}
      ins(%x, %m : tensor<4x6x64xf32>, tensor<4x6xf32>) outs(%e : tensor<4x6x64xf32>) {{
  ^bb0(%in: f32, %mx: f32, %o: f32):
    %d = arith.subf %in, %mx : f32
    %r = math.exp %d : f32
    linalg.yield %r : f32
  }} -> tensor<4x6x64xf32>
  %fs = linalg.fill ins(%z : f32) outs(%er : tensor<4x6xf32>) -> tensor<4x6xf32>
  %s = linalg.generic {{indexing_maps = [#id, #row], iterator_types = ["parallel", "parallel", "reduction"]}}
      ins(%ex : tensor<4x6x64xf32>) outs(%fs : tensor<4x6xf32>) {{
  ^bb0(%in: f32, %acc: f32):
    %r = arith.addf %in, %acc : f32
    linalg.yield %r : f32
  }} -> tensor<4x6xf32>
  %y = linalg.generic {{indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel", "parallel"]}}
      ins(%ex, %s : tensor<4x6x64xf32>, tensor<4x6xf32>) outs(%e : tensor<4x6x64xf32>) {{
  ^bb0(%in: f32, %sum: f32, %o: f32):
    %r = arith.divf %in, %sum : f32
    linalg.yield %r : f32
  }} -> tensor<4x6x64xf32>
{extra}
}}
"""
ALONE = SOFTMAX.format(results="tensor<4x6x64xf32>", extra="  return %y : tensor<4x6x64xf32>")
# the exp values are read by an op outside the chain too: the exp (and the max only it reads) stay out
EXP_READ_OUTSIDE = SOFTMAX.format(results="tensor<4x6x64xf32>, tensor<4x6x64xf32>", extra="""  %e2 = tensor.empty() : tensor<4x6x64xf32>
  %w = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%ex, %x : tensor<4x6x64xf32>, tensor<4x6x64xf32>) outs(%e2 : tensor<4x6x64xf32>) {
  ^bb0(%in: f32, %v: f32, %o: f32):
    %r = arith.mulf %in, %v : f32
    linalg.yield %r : f32
  } -> tensor<4x6x64xf32>
  return %y, %w : tensor<4x6x64xf32>, tensor<4x6x64xf32>""")


def _rows_steps(ctx, tmp_path, text):
    path = tmp_path / "p.mlir"
    path.write_text(text)
    ok(ctx, f"load {path}")
    data = ok(ctx, "select --apply").data
    # the ops of the IR the selection is for: after the preparation steps (the fusion; a softmax's
    # reciprocals, one op more), then the payload loaded afresh
    ops = {o["id"]: o for o in ctx.session.inspect(len(data["prepared"]))["ops"]}
    ok(ctx, f"load {path}")
    return ops, [s["params"] for s in data["selections"] if "rows.py" in s["schedule"]]


def _runs_checked(ctx):
    ok(ctx, "select --apply")
    # (a few thousand elements: plain loops over the rows, no tasks to dispatch)
    assert "scf.forall" not in ctx.session.current_ir and "vector.multi_reduction" not in ctx.session.current_ir
    ok(ctx, "bench warmup=0 iterations=2")
    ok(ctx, "apply cpu-lower")
    run = ok(ctx, "run --check").data["run"]
    assert run["check"]["passed"], run["check"]


def test_a_decomposed_softmax_is_one_row_loop(ctx, tmp_path):
    ops, steps = _rows_steps(ctx, tmp_path, ALONE)
    assert len(steps) == 1, steps
    chain = steps[0]
    generics = sorted(i for i, o in ops.items() if o["op"] == "linalg.generic")
    assert sorted(i for i in chain["op"] if ops[i]["op"] == "linalg.generic") == generics
    assert chain["roles"].count("reduction") == 2 and chain["roles"].count("fill") == 2
    assert chain["roles"][0] == "full" and chain["tile"] == [1, 1, 0]
    assert 64 % chain["vector"] == 0 and chain["vector"] < 64
    _runs_checked(ctx)


def test_an_op_read_outside_the_chain_ends_a_chain_of_its_own(ctx, tmp_path):
    """The exp values are read outside (by a product with the input): fused into the division's loop they
    would be computed twice. They end a chain of their own (max, exp), the division another (sum, divide)."""
    ops, steps = _rows_steps(ctx, tmp_path, EXP_READ_OUTSIDE)
    exp = next(i for i, o in ops.items() if "math.exp" in o["loops"]["body"])
    # (prepared: the division by the sums is a multiplication by their reciprocals, an op over the rows)
    order = list(ops)
    reciprocal = next(n for n, o in enumerate(ops.values()) if "arith.divf" in o["loops"]["body"])
    divide = next(i for i, o in ops.items() if reciprocal in (o.get("producers") or []))
    product = next(i for i, o in ops.items() if o["loops"]["body"][:1] == ["arith.mulf"] and i != divide)
    assert order[reciprocal] in next(c["op"] for c in steps if c["op"][0] == divide)
    assert sorted(c["op"][0] for c in steps) == sorted([exp, divide]), steps
    members = [i for c in steps for i in c["op"]]
    assert len(members) == len(set(members)) and product not in members
    _runs_checked(ctx)


@pytest.mark.parametrize("cores,min_work,parallel", [(2, 0, 1), (2, 1 << 15, 0), (1, 0, 0)])   # (0: splits forced)
def test_the_rows_loop_is_a_forall_only_where_tasks_pay(ctx, tmp_path, monkeypatch, cores, min_work, parallel):
    """A chain's rows are async-runtime tasks (a forall) only with several cores and enough work: a chain of
    a few thousand elements took ~0.1 ms to dispatch, 30x its work (`run --profile` on a GPT-2 block;
    cpu_rows.MIN_PARALLEL_ROW_WORK).
    Both forms run and match."""
    import dataclasses

    import workbench.targets.cpu as cpu
    from workbench.targets import cpu_selector

    machine = dataclasses.replace(cpu.host_machine(), usable_cpus=cores)
    monkeypatch.setattr(cpu, "host_machine", lambda: machine)
    monkeypatch.setattr(cpu_selector, "MIN_PARALLEL_WORK", min_work)
    _, steps = _rows_steps(ctx, tmp_path, ALONE)
    assert [c["parallel"] for c in steps] == [parallel]
    ok(ctx, "select --apply")
    assert ("scf.forall" in ctx.session.current_ir) == bool(parallel)
    ok(ctx, "bench warmup=0 iterations=2")
    ok(ctx, "apply cpu-lower")
    assert ok(ctx, "run --check").data["run"]["check"]["passed"]


def test_long_rows_without_a_power_of_two_divisor_take_steps_that_fill_the_lanes():
    from workbench.targets.cpu_rows import ROW_VECTOR, row_vector

    assert row_vector(768) == ROW_VECTOR                # a multiple of ROW_VECTOR: unchanged
    assert row_vector(100) == 0                         # short enough to be one vector whole
    assert row_vector(500) == 125                       # 500 tokens: 8 registers, not 32 per value
    assert row_vector(1000) == 125 and row_vector(1000, lanes=8) == 8   # 8 of 16 lanes -> 125; whole on AVX2
    assert row_vector(197) == 0                         # a prime: no steps divide it


def test_a_softmax_over_rows_of_500_runs_in_steps_of_a_divisor(ctx, tmp_path):
    text = ALONE.replace("4x6x64", "2x3x500").replace("4x6x", "2x3x").replace("4x6xf32", "2x3xf32")
    _, steps = _rows_steps(ctx, tmp_path, text)
    assert len(steps) == 1 and steps[0]["vector"] == 125, steps
    _runs_checked(ctx)
