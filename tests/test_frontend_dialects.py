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
