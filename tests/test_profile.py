"""`run --profile`: each top-level op of the payload timed in the run (lh-profile-regions), listed by
time per call, on the unscheduled payload, after `select --apply` and after the lowering step."""
from __future__ import annotations

import re

import pytest

from conftest import do, ok

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
    from workbench.targets.cpu_host import host_machine

    monkeypatch.setattr(CpuTarget, "epilogue_in_registers", in_registers)
    ok(ctx, f"load {payload}")
    # (the register tiles' epilogue takes M = 256 in AVX-512's rows of 8; AVX2's rows of 6 split it into main and
    # tail rows, which in_registers does not take: AVX-512's model, run only where the host has AVX-512)
    cpu = "host" if not in_registers or "avx512f" in host_machine().features else "skylake-avx512"
    try:
        ok(ctx, f"target cpu --threads 1 --cpu {cpu}")
        ok(ctx, "select --apply")
        selected = [a.step.params for a in ctx.session.active_steps if "matmul_epilogue" in a.step.label()]
        assert [p.get("in_registers", 0) for p in selected] == [int(in_registers)], selected
        missing = ctx.session.target.machine.missing_here()
        if missing:
            pytest.skip(f"skylake-avx512 code needs {', '.join(missing)}, which this host lacks: selected, not run")
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
    finally:
        ok(ctx, "target cpu --cpu host")


def test_the_nests_of_one_op_are_one_row(ctx, payload, monkeypatch):
    """AVX2's (zen3) packed matmul of M = 256 in rows of 6 is several top-level nests of one payload op (packing,
    the main rows, the tail rows), each `scf.for <- linalg.matmul (mm.mlir:5)`: the profile lists the op once,
    their times summed, so that it dominates (before: four rows of one label, the main rows' time in one of them)."""
    from workbench.targets.cpu import CpuTarget
    from workbench.targets.cpu_host import machine_for

    monkeypatch.setattr(CpuTarget, "epilogue_in_registers", False)
    missing = machine_for("zen3").missing_here()
    if missing:
        pytest.skip(f"zen3 code needs {', '.join(missing)}, which this host lacks")
    ok(ctx, f"load {payload}")
    try:
        ok(ctx, "target cpu --threads 1 --cpu zen3")
        ok(ctx, "select --apply")
        assert any(a.step.params.get("main_m") for a in ctx.session.active_steps), "no split of M"
        ok(ctx, "apply cpu-lower")
        labels = [r["label"] for r in ok(ctx, "run --profile").data["run"]["profile"]["regions"]]
        assert len(labels) == len(set(labels)), labels
        _, regions = _regions(ok(ctx, "run --profile"))
        assert "linalg.matmul (mm.mlir:5)" in max(regions, key=regions.get), regions
    finally:
        ok(ctx, "target cpu --cpu host")


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


def test_the_nests_of_a_decomposed_convolution_are_told_apart_by_their_op_ids(ctx, tmp_path):
    """A strided convolution that the preparation decomposes (phase buffers, transposes, one convolution per
    phase) comes from one payload line: every nest was `scf.for <- linalg.conv_2d_nchw_fchw (conv.mlir:N)`. The
    ids `tag-ops` gives the pieces survive tiling and vectorization in their locations: each nest names its op."""
    conv = tmp_path / "conv.mlir"
    conv.write_text("""func.func @conv(%x: tensor<1x8x18x18xf32>, %w: tensor<16x8x3x3xf32>) -> tensor<1x16x8x8xf32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x16x8x8xf32>
  %c = linalg.fill ins(%z : f32) outs(%e : tensor<1x16x8x8xf32>) -> tensor<1x16x8x8xf32>
  %r = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<2> : vector<2xi64>}
       ins(%x, %w : tensor<1x8x18x18xf32>, tensor<16x8x3x3xf32>) outs(%c : tensor<1x16x8x8xf32>) -> tensor<1x16x8x8xf32>
  return %r : tensor<1x16x8x8xf32>
}
""")
    ok(ctx, f"load {conv}")
    ok(ctx, "target cpu --threads 1")
    ok(ctx, "select --apply")
    ok(ctx, "bench warmup=1 iterations=2")
    ok(ctx, "apply cpu-lower")
    res = ok(ctx, "run --profile --check")
    assert res.data["run"]["check"]["passed"]
    _, regions = _regions(res)
    nests = [label for label in regions if label.startswith("scf.")]
    assert len(nests) >= 3, regions
    assert all("(conv.mlir:5)" in label for label in nests), regions
    # each nest names the op (or ops) it was scheduled from: no two alike
    assert all(re.search(r"\b[a-z0-9]+(_[a-z0-9]+)*_\d+\b", label.split("<-")[0]) for label in nests), nests
    assert len(set(nests)) == len(nests), nests


def test_a_steps_error_still_names_the_payload_file_line_and_column(ctx, tmp_path):
    """Tagged ops carry their id as a name around their file location; a failing step's one line still reads
    `FILE:LINE:COL: message` (not `generic_0(FILE:LINE:COL)`)."""
    from workbench.worker.compile_worker import _format_location

    assert _format_location('loc("generic_0"("/x/m.mlir":12:5))', "-") == "/x/m.mlir:12:5"
    assert _format_location('loc(fused["generic_0"("/x/m.mlir":12:5), "b.mlir":3:4])', "-") == \
        "fused[/x/m.mlir:12:5, b.mlir:3:4]"
    p = tmp_path / "mm.mlir"
    p.write_text(MATMUL_RELU)
    ok(ctx, f"load {p}")
    bad = tmp_path / "bad.mlir"   # vector sizes below the matmul's static sizes: the op refuses
    bad.write_text("""module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {
    %m = transform.structured.match ops{["linalg.matmul"]} in %root : (!transform.any_op) -> !transform.any_op
    transform.structured.vectorize %m vector_sizes [4, 4, 4] : !transform.any_op
    transform.yield
  }
}
""")
    ok(ctx, "apply rewrite tag-ops")
    res = do(ctx, f"apply {bad}")
    assert not res.ok
    assert re.search(r"mm\.mlir:5:\d+: ", res.error) and "matmul_0(" not in res.error, res.error


def test_only_the_names_tag_ops_gave_count_as_op_ids(ctx, tmp_path):
    """A front end's own name locations (`"aten::add"(...)`, `"layer1.conv"(...)`) stay out of the labels: the
    ids are the outermost names, also of each part of a fused location and inside a call site."""
    from workbench.worker.op_ids import location_ids

    assert location_ids('loc("generic_0"("layer1.conv"("m.mlir":1:2)))') == ["generic_0"]
    # (a front end's scopes nested deeper: none of them either)
    assert location_ids('loc("add_0"("model"("layer1"("block"("m.mlir":1:2)))))') == ["add_0"]
    assert location_ids('loc(fused["add_0"("a.mlir":1:2), "mul_0"("b.mlir":3:4)])') == ["add_0", "mul_0"]
    assert location_ids('loc(callsite("x_0"("a.mlir":1:1) at "b.mlir":2:2))') == ["x_0"]
    assert location_ids('loc("m.mlir":1:2)') == []
    p = tmp_path / "named.mlir"
    p.write_text("""#l = loc("model.py":10:3)
func.func @f(%a: tensor<64x64xf32>, %b: tensor<64x64xf32>) -> tensor<64x64xf32> {
  %e = tensor.empty() : tensor<64x64xf32>
  %r = linalg.add ins(%a, %b : tensor<64x64xf32>, tensor<64x64xf32>) outs(%e : tensor<64x64xf32>) -> tensor<64x64xf32> loc("layer1.add"(#l))
  return %r : tensor<64x64xf32>
}
""")
    ok(ctx, f"load {p}")
    ok(ctx, "target cpu --threads 1")
    ok(ctx, "select --apply")
    ok(ctx, "bench warmup=1 iterations=2")
    ok(ctx, "apply cpu-lower")
    _, regions = _regions(ok(ctx, "run --profile"))
    (nest,) = [label for label in regions if label.startswith("scf.")]
    assert "add_0" in nest and "layer1" not in nest, regions


LAYERS = """func.func private @layer(%x: tensor<64x64xf32>, %w: tensor<64x64xf32>) -> tensor<64x64xf32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<64x64xf32>
  %c = linalg.fill ins(%z : f32) outs(%e : tensor<64x64xf32>) -> tensor<64x64xf32>
  %r = linalg.matmul ins(%x, %w : tensor<64x64xf32>, tensor<64x64xf32>) outs(%c : tensor<64x64xf32>) -> tensor<64x64xf32>
  return %r : tensor<64x64xf32>
}
func.func private @scale(%x: tensor<64x64xf32>) -> tensor<64x64xf32> {
  %e = tensor.empty() : tensor<64x64xf32>
  %o = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>],
                       iterator_types = ["parallel", "parallel"]} ins(%x : tensor<64x64xf32>) outs(%e : tensor<64x64xf32>) {
  ^bb0(%a: f32, %b: f32):
    %m = arith.mulf %a, %a : f32
    linalg.yield %m : f32
  } -> tensor<64x64xf32>
  return %o : tensor<64x64xf32>
}
func.func @net(%x: tensor<64x64xf32>, %w: tensor<64x64xf32>) -> tensor<64x64xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %a = func.call @layer(%x, %w) : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32>
  %b = func.call @layer(%a, %w) : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32>
  %s = scf.for %i = %c0 to %c3 step %c1 iter_args(%t = %b) -> (tensor<64x64xf32>) {
    %u = func.call @scale(%t) : (tensor<64x64xf32>) -> tensor<64x64xf32>
    scf.yield %u : tensor<64x64xf32>
  }
  return %s : tensor<64x64xf32>
}
"""


def test_the_ops_of_a_called_function_are_timed_in_it(ctx, tmp_path):
    """A stack of layers outlined as one private function called once per layer (lh-outline-repeated-steps) was
    one row, `func.call`, 90% of a ViT: the called function's ops are timed now (`@layer linalg.matmul ...`, the
    time of both calls per run), the call itself is no row of its own, and the calls of the run still count
    once each (the callee's entry does not count them). A function called from inside a loop stays in the loop's
    row."""
    path = tmp_path / "layers.mlir"
    path.write_text(LAYERS)
    ok(ctx, f"load {path}")
    res = ok(ctx, "run --profile --check --warmup 1 --iterations 2")
    profile, regions = _regions(res)
    assert profile["calls"] == 1 + 1 + 2, profile
    labels = set(regions)
    assert "@layer linalg.matmul (layers.mlir:5)" in labels and "@layer linalg.fill (layers.mlir:4)" in labels, labels
    assert not any("func.call" in lab for lab in labels), labels
    assert not any(lab.startswith("@scale") for lab in labels), labels
    assert any(lab.startswith("@net scf.for") for lab in labels), labels
    assert all(t > 0 for t in regions.values()), regions
    assert res.data["run"]["check"]["passed"]
    ok(ctx, "pass lh-profile-regions")
    # (@layer's fill and matmul, @net's loop: three timed ops; the loop's call of @scale is not a timed one)
    assert ctx.session.current_ir.count("call @rtclock()") == 2 * 3
