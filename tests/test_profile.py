"""`run --profile`: each top-level op of the payload timed in the run (lh-profile-regions), listed by
time per call, on the unscheduled payload, after `select --apply` and after the lowering step."""
from __future__ import annotations

import pytest

from conftest import ok

MATMUL_RELU = """func.func @mm(%a: tensor<256x256xf32>, %b: tensor<256x256xf32>) -> tensor<256x256xf32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<256x256xf32>
  %c = linalg.fill ins(%z : f32) outs(%e : tensor<256x256xf32>) -> tensor<256x256xf32>
  %r = linalg.matmul ins(%a, %b : tensor<256x256xf32>, tensor<256x256xf32>) outs(%c : tensor<256x256xf32>) -> tensor<256x256xf32>
  %o = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>],
                       iterator_types = ["parallel", "parallel"]} ins(%r : tensor<256x256xf32>) outs(%e : tensor<256x256xf32>) {
  ^bb0(%x: f32, %y: f32):
    %m = arith.maximumf %x, %z : f32
    linalg.yield %m : f32
  } -> tensor<256x256xf32>
  return %o : tensor<256x256xf32>
}
"""


@pytest.fixture
def payload(tmp_path):
    p = tmp_path / "mm.mlir"
    p.write_text(MATMUL_RELU)
    return p


def _regions(res):
    profile = res.data["run"]["profile"]
    return profile, {r["label"]: r["seconds"] for r in profile["regions"]}


def test_the_unscheduled_ops_are_timed_and_the_matmul_dominates(ctx, payload):
    ok(ctx, f"load {payload}")
    res = ok(ctx, "run --profile --check --warmup 1 --iterations 3")
    profile, regions = _regions(res)
    assert profile["calls"] == 1 + 1 + 3   # the checked call, the warm-up, the timed calls
    assert set(regions) == {"linalg.fill (mm.mlir:4)", "linalg.matmul (mm.mlir:5)", "linalg.generic (mm.mlir:6)"}
    assert all(t > 0 for t in regions.values())
    # 2 * 256^3 multiply-adds against 64 Ki maxima: the matmul takes most of the time
    assert regions["linalg.matmul (mm.mlir:5)"] > 5 * regions["linalg.generic (mm.mlir:6)"]
    assert res.data["run"]["check"]["passed"]
    assert "time per call by op" in res.body and res.body.index("linalg.matmul") < res.body.index("linalg.generic")
    # the session's IR is untouched: the counters exist only in the profiled run's copy
    assert "__lh_profile" not in ctx.session.current_ir


@pytest.mark.parametrize("in_registers", [False, True])
def test_after_selection_and_lowering_the_loop_nests_are_named_by_their_payload_op(ctx, payload, monkeypatch,
                                                                                    in_registers):
    """After select and the lowering, each top-level loop nest is named by the payload op its schedule came from.
    The packed matmul with its epilogue as a pass of its own: the matmul's nest (line 5) dominates. With the epilogue
    on the register tiles (CpuTarget.epilogue_in_registers, the default since session 25: K = 256 is one cache
    block) the relu's tiles hold the matmul and its fill: one nest, named by the chain's last op (line 6), no
    separate fill or matmul pass."""
    from workbench.targets.cpu import CpuTarget

    monkeypatch.setattr(CpuTarget, "epilogue_in_registers", in_registers)
    ok(ctx, f"load {payload}")
    ok(ctx, "target cpu --threads 1")
    ok(ctx, "select --apply")
    ok(ctx, "bench warmup=1 iterations=2")
    ok(ctx, "apply cpu-lower")
    res = ok(ctx, "run --profile")
    profile, regions = _regions(res)
    assert profile["calls"] == 3
    assert all(label.startswith(("scf.", "linalg.")) for label in regions), regions
    # (on the register tiles the fill is the accumulators' zero: no pass of its own)
    assert any("linalg.fill (mm.mlir:4)" in label for label in regions) is not in_registers, regions
    # the packed matmul schedule's loops come from the payload's matmul on line 5 (or, on the register tiles,
    # from the relu on line 6 that holds it)
    dominant = "linalg.generic (mm.mlir:6)" if in_registers else "linalg.matmul (mm.mlir:5)"
    assert dominant in max(regions, key=regions.get), regions


def test_a_target_that_cannot_time_its_ops_says_so(ctx, payload, monkeypatch):
    from workbench.targets.cpu import CpuTarget

    ok(ctx, f"load {payload}")
    monkeypatch.setattr(CpuTarget, "profiles_ops", False)
    res = ctx.registry.dispatch("run --profile", ctx)
    assert not res.ok and "does not time its ops" in res.error


def test_the_instrumentation_pass_brackets_work_and_skips_views(ctx, payload):
    ok(ctx, f"load {payload}")
    ok(ctx, "pass lh-profile-regions")
    ir = ctx.session.current_ir
    assert ir.count("call @rtclock()") == 2 * 3   # fill, matmul, generic; not the constant or tensor.empty
    assert "lh.profile_regions = [" in ir and "_lh_profile_seconds_address" in ir
    res = ctx.registry.dispatch("pass lh-profile-regions", ctx)
    assert not res.ok and "instrumented already" in res.error
