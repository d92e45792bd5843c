"""Dynamic dims: `run` says how to make them static, `pass lh-specialize-shapes{...}` does it (a step:
the selector then schedules static shapes), and the check's reference starts after that step."""
from __future__ import annotations

from pathlib import Path

import pytest

from conftest import ok

PAYLOAD = Path(__file__).parent / "payloads" / "dynamic_matmul.mlir"


def test_run_on_dynamic_dims_says_how_to_make_them_static(ctx):
    ok(ctx, f"load {PAYLOAD}")
    res = ctx.registry.dispatch("run", ctx)
    assert not res.ok and "dynamic shape" in res.error and "lh-specialize-shapes" in res.error


def test_specialized_payload_is_selected_run_and_checked(ctx):
    ok(ctx, f"load {PAYLOAD}")
    ok(ctx, "pass lh-specialize-shapes{shapes=0:64x32,1:32x48,2:64x48}")
    text = ctx.session.current_ir
    assert "?" not in text.split("linalg.matmul")[1].split("\n")[0]   # the matmul is static now
    assert "-> tensor<64x48xf32>" in text   # and so is the function's result
    res = ok(ctx, "select --apply")
    assert any("matmul" in e["schedule"] for e in res.data["selections"])
    run = ok(ctx, "run --check --iterations 2").data["run"]
    assert run["check"]["passed"], run["check"]


@pytest.mark.parametrize("shapes, message", [
    ("5:64x32", "no argument 5"),
    ("0:64", "does not fit"),
    ("zero", "INDEX:DxD"),
])
def test_bad_shapes_are_one_line_errors_and_change_nothing(ctx, shapes, message):
    ok(ctx, f"load {PAYLOAD}")
    before = ctx.session.current_ir
    res = ctx.registry.dispatch(f"pass lh-specialize-shapes{{shapes={shapes}}}", ctx)
    assert not res.ok and message in res.error
    assert "Traceback" not in (res.detail or "")     # a refused option is one line, not a stack trace
    assert ctx.session.current_ir == before and ctx.session.cursor == 0
