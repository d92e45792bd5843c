"""Front-end dialects (TOSA) lowered to linalg by upstream's pipeline (`lh-frontend-to-linalg`): `select`
applies it first and schedules the linalg ops it leaves; every target pipeline starts with it, so `run`
works on such a payload without `select`; a payload without them is left as it was."""
from __future__ import annotations

from pathlib import Path

from conftest import ok
from cuda_helpers import ptx_of

PAYLOAD = Path(__file__).parent / "payloads" / "tosa_block.mlir"
LINALG = Path(__file__).resolve().parents[1] / "examples" / "matmul.mlir"


def test_select_lowers_tosa_first_and_schedules_every_op(ctx):
    ok(ctx, f"load {PAYLOAD}")
    ok(ctx, "target cpu")
    assert "tosa" in ctx.session.inspect()["dialects"]
    res = ok(ctx, "select --apply")
    specs = [a.step.spec for a in ctx.session.active_steps]
    assert specs[0] == "lh-frontend-to-linalg", specs
    assert "tosa." not in ctx.session.current_ir
    scheduled = [e["schedule"] for e in res.data["selections"]]
    assert any("batch_matmul" in s for s in scheduled) and any("generic.py" in s for s in scheduled), scheduled
    run = ok(ctx, "run --check --iterations 2").data["run"]
    assert run["check"]["passed"], run["check"]


def test_run_lowers_tosa_without_select(ctx):
    """The default lowering and the check's reference both start with the front-end pass."""
    ok(ctx, f"load {PAYLOAD}")
    run = ok(ctx, "run --check --iterations 2").data["run"]
    assert run["check"]["passed"], run["check"]


def test_the_pass_leaves_a_payload_without_front_end_ops_alone(ctx):
    ok(ctx, f"load {LINALG}")
    before = ctx.session.current_ir
    assert ctx.session.target.frontend_steps(ctx.session.inspect()) == []
    res = ctx.registry.dispatch("pass lh-frontend-to-linalg", ctx)
    assert not res.ok or ctx.session.current_ir == before   # a no-op step is refused or changes nothing
    assert ctx.session.current_ir == before


def test_cuda_selects_and_lowers_a_tosa_payload(ctx):
    ok(ctx, f"load {PAYLOAD}")
    ok(ctx, "target cuda")
    ok(ctx, "select --apply")
    assert ctx.session.active_steps[0].step.spec == "lh-frontend-to-linalg"
    ok(ctx, "apply cuda-lower{chip=sm_90a}")
    assert ".entry" in ptx_of(ctx.session.current_ir)


ELEMENTWISE = """func.func @f(%a: tensor<64x32xf32>, %b: tensor<64x32xf32>) -> tensor<64x32xf32> {
  %s = arith.addf %a, %b : tensor<64x32xf32>
  %e = math.exp %s : tensor<64x32xf32>
  %m = arith.mulf %e, %a : tensor<64x32xf32>
  return %m : tensor<64x32xf32>
}
"""


def test_elementwise_ops_on_whole_tensors_become_linalg(ctx, tmp_path):
    """arith / math ops on whole tensors (as upstream tests write them) are linalg.generic ops after the
    front-end pass: selected, scheduled and checked like any elementwise chain."""
    p = tmp_path / "ew.mlir"
    p.write_text(ELEMENTWISE)
    ok(ctx, f"load {p}")
    ok(ctx, "target cpu")
    assert ctx.session.inspect()["elementwise_on_tensors"] == 3
    res = ok(ctx, "select --apply")
    assert ctx.session.active_steps[0].step.spec == "lh-frontend-to-linalg"
    assert any("generic.py" in e["schedule"] for e in res.data["selections"]), res.data["selections"]
    run = ok(ctx, "run --check --iterations 2").data["run"]
    assert run["check"]["passed"], run["check"]
