"""bf16 matmuls on machines with AVX512-BF16: lh-vnni-contractions (B packed in K pairs), the VNNI schedule
(pipelines/cpu/matmul_vnni.py: x86vector.avx512.dot, i.e. vdpbf16ps) chosen from the machine model, and
the widening path kept for machines without the bf16 dot product (`--cpu avx2`)."""
from __future__ import annotations

import contextlib

import re
from pathlib import Path

import pytest

from conftest import FIXTURES, fixture_io_flags, ok

TORCH = FIXTURES / "torch"
#: the bf16 dot product's LLVM intrinsic (512-, 256- and 128-bit forms)
DPBF16 = "llvm.x86.avx512bf16.dpbf16ps"


def _host_has_bf16_dot() -> bool:
    from workbench.targets.cpu_host import host_machine

    return host_machine().bf16_dot_product


def _rewrite(path: Path) -> str:
    from mlir import ir

    from workbench.worker.cpu.vnni_contractions import vnni_contractions

    with ir.Context(), ir.Location.unknown():
        module = ir.Module.parse(path.read_text())
        assert vnni_contractions(module) == 1
        assert module.operation.verify()
        return str(module)


def test_vnni_rewrite_packs_b_in_k_pairs():
    text = _rewrite(TORCH / "matmul_bf16.mlir")   # 16x32 @ 32x24: panels of 8 columns (24 = 3 x 8)
    assert "linalg.matmul" not in text and "lh.vnni" in text
    assert "linalg.pack %arg1 outer_dims_perm = [1, 0] inner_dims_pos = [1, 0] inner_tiles = [8, 2]" in text
    assert "tensor<3x16x8x2xbf16>" in text                      # N/8 x K/2 x 8 x 2
    assert "tensor<16x32xbf16> into tensor<16x16x2xbf16>" in text  # A viewed in pairs, not copied
    # torch's linear: extf(x) @ extf(transpose(W)) -> W packed directly, the bf16 tensors read as they are
    text = _rewrite(TORCH / "linear_bf16.mlir")
    assert "linalg.transpose" not in text and "inner_dims_pos = [0, 1] inner_tiles = [16, 2]" in text
    assert text.count("arith.extf") == 3   # the bias's extension and the contraction body's two


# a bf16 linear layer on a 3-D input after the fusion's reshape propagation and lh-shared-rhs-matmuls: the
# matmul over collapsed rows reads collapse_shape(extf(x)) (HF GPT-2 in bf16)
COLLAPSED_EXTENSION = """#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#id2 = affine_map<(d0, d1) -> (d0, d1)>
func.func @main(%x: tensor<2x16x64xbf16>, %w: tensor<64x48xbf16>) -> tensor<32x48xf32> {
  %z = arith.constant 0.0 : f32
  %e3 = tensor.empty() : tensor<2x16x64xf32>
  %xf = linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%x : tensor<2x16x64xbf16>) outs(%e3 : tensor<2x16x64xf32>) {
  ^bb0(%in: bf16, %out: f32):
    %v = arith.extf %in : bf16 to f32
    linalg.yield %v : f32
  } -> tensor<2x16x64xf32>
  %rows = tensor.collapse_shape %xf [[0, 1], [2]] : tensor<2x16x64xf32> into tensor<32x64xf32>
  %e2 = tensor.empty() : tensor<64x48xf32>
  %wf = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%w : tensor<64x48xbf16>) outs(%e2 : tensor<64x48xf32>) {
  ^bb0(%in: bf16, %out: f32):
    %v = arith.extf %in : bf16 to f32
    linalg.yield %v : f32
  } -> tensor<64x48xf32>
  %e = tensor.empty() : tensor<32x48xf32>
  %c = linalg.fill ins(%z : f32) outs(%e : tensor<32x48xf32>) -> tensor<32x48xf32>
  %r = linalg.matmul ins(%rows, %wf : tensor<32x64xf32>, tensor<64x48xf32>) outs(%c : tensor<32x48xf32>) -> tensor<32x48xf32>
  return %r : tensor<32x48xf32>
}
"""


def test_vnni_rewrite_reads_bf16_through_a_reshape_of_the_extension(ctx, tmp_path):
    from mlir import ir

    from workbench.worker.cpu.vnni_contractions import vnni_contractions

    with ir.Context(), ir.Location.unknown():
        module = ir.Module.parse(COLLAPSED_EXTENSION)
        assert vnni_contractions(module) == 1
        assert module.operation.verify()
        text = str(module)
    # the collapse is made of the bf16 tensor; the f32 extension and its collapse are gone
    assert "tensor<2x16x64xbf16> into tensor<32x64xbf16>" in text and "tensor<2x16x64xf32>" not in text
    assert "linalg.matmul" not in text and "lh.vnni" in text
    if _host_has_bf16_dot():
        _selected_lowered_and_checked(ctx, tmp_path / "collapsed_bf16.mlir", COLLAPSED_EXTENSION, "matmul_vnni.py")


def _selected_lowered_and_checked(ctx, payload, text: str, expected_step: str) -> None:
    """`text` through select (on a vdpbf16ps machine model), bench, cpu-lower and run --check: a step
    labelled with `expected_step` selected, vdpbf16ps in the lowered module, the check passed."""
    payload.write_text(text)
    ok(ctx, f"load {payload}")
    with _vdpbf16ps_machine(ctx):
        ok(ctx, "select --apply")
        assert any(expected_step in label for label in _steps(ctx)), _steps(ctx)
        ok(ctx, "bench warmup=1 iterations=2")
        ok(ctx, "apply cpu-lower")
        assert DPBF16 in ctx.session.current_ir
        assert ok(ctx, "run --check --iterations 1 --warmup 0").data["run"]["check"]["passed"]


def test_vnni_rewrite_leaves_what_it_cannot_pack():
    from mlir import ir

    from workbench.worker.cpu.vnni_contractions import vnni_contractions

    odd_k = """func.func @f(%a: tensor<8x7xbf16>, %b: tensor<7x16xbf16>, %c: tensor<8x16xf32>) -> tensor<8x16xf32> {
  %0 = linalg.matmul ins(%a, %b : tensor<8x7xbf16>, tensor<7x16xbf16>) outs(%c : tensor<8x16xf32>) -> tensor<8x16xf32>
  return %0 : tensor<8x16xf32>
}"""
    f32 = odd_k.replace("7xbf16", "8xf32").replace("8x7", "8x8").replace("7x16", "8x16").replace("bf16", "f32")
    for text in (odd_k, f32):
        with ir.Context(), ir.Location.unknown():
            module = ir.Module.parse(text)
            assert vnni_contractions(module) == 0 and "linalg.matmul" in str(module)


def _steps(ctx) -> list[str]:
    return [a.step.label() for a in ctx.session.active_steps]


@contextlib.contextmanager
def _vdpbf16ps_machine(ctx):
    """The host's machine model, or on an AMX host (which gives these contractions AMX tiles:
    tests/test_cpu_amx.py) a Zen 4's (AVX512-BF16 without AMX, whose code the host runs)."""
    from workbench.targets.cpu_host import host_machine

    if not host_machine().amx:
        yield
        return
    ok(ctx, "target cpu --cpu zen4")
    try:
        yield
    finally:
        ok(ctx, "target cpu --cpu host")


@pytest.mark.parametrize("name", ["matmul_bf16", "linear_bf16"])
def test_vnni_schedule_runs_and_matches_torch(ctx, name):
    if not _host_has_bf16_dot():
        pytest.skip("this host has no AVX512-BF16")
    fixture = TORCH / f"{name}.mlir"
    ok(ctx, f"load {fixture}")
    with _vdpbf16ps_machine(ctx):
        _select_lower_and_check_vnni(ctx, fixture)


def _select_lower_and_check_vnni(ctx, fixture):
    ok(ctx, "select --apply")
    labels = " ".join(_steps(ctx))
    assert "lh-vnni-contractions" in labels and "matmul_vnni.py[gen=matmul_vnni_tiling]" in labels
    assert "x86vector.avx512.dot" in ctx.session.current_ir
    # after lh-flatten-contiguous-transfers: the micro-kernel reads B panel rows as one flat vector, the
    # pack transposes by one shuffle and writes flat rows
    after = 1 + next(i for i, label in enumerate(_steps(ctx)) if "flatten-transfers.yaml" in label)
    flat = ctx.session.ir_at(after)
    assert "vector<1x1x16x2xbf16>" not in flat and "vector<1x1x8x2xbf16>" not in flat
    assert re.search(r"vector\.transfer_read .*, vector<(32|16)xbf16>", flat)
    assert "vector.shuffle" in flat and "vector.transpose" not in flat
    ok(ctx, "bench warmup=1 iterations=2")
    ok(ctx, "apply cpu-lower")
    assert DPBF16 in ctx.session.current_ir
    run = ok(ctx, f"run --check --iterations 1 --warmup 0 {fixture_io_flags(fixture)}").data["run"]
    assert run["check"]["passed"] and run["expected_check"]["passed"], run


BATCH_MATMUL_BF16 = """func.func @main(%a: tensor<3x16x32xbf16>, %b: tensor<3x32x48xbf16>) -> tensor<3x16x48xf32> {
  %cst = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<3x16x48xf32>
  %f = linalg.fill ins(%cst : f32) outs(%e : tensor<3x16x48xf32>) -> tensor<3x16x48xf32>
  %0 = linalg.batch_matmul ins(%a, %b : tensor<3x16x32xbf16>, tensor<3x32x48xbf16>) outs(%f : tensor<3x16x48xf32>) -> tensor<3x16x48xf32>
  return %0 : tensor<3x16x48xf32>
}
"""


def test_vnni_schedule_takes_a_batch_matmul(ctx, tmp_path):
    if not _host_has_bf16_dot():
        pytest.skip("this host has no AVX512-BF16")
    _selected_lowered_and_checked(ctx, tmp_path / "bmm_bf16.mlir", BATCH_MATMUL_BF16, "batch=1")


def test_avx2_override_keeps_the_widening_path(ctx):
    fixture = TORCH / "matmul_bf16.mlir"
    ok(ctx, f"load {fixture}")
    try:
        ok(ctx, "target cpu --cpu avx2")
        assert not ctx.session.target.machine.bf16_dot_product
        ok(ctx, "select --apply")
        labels = " ".join(_steps(ctx))
        assert "lh-widen-contraction-inputs" in labels and "lh-vnni-contractions" not in labels
        assert "x86vector" not in ctx.session.current_ir
        ok(ctx, "bench warmup=1 iterations=2")
        ok(ctx, "apply cpu-lower")
        assert DPBF16 not in ctx.session.current_ir
    finally:
        ok(ctx, "target cpu --cpu host")


def test_named_machine_with_bf16_gets_the_vnni_path(ctx):
    from workbench.targets.cpu_host import MachineError, machine_for

    try:
        machine = machine_for("sapphirerapids")
    except MachineError:
        pytest.skip("archspec does not know sapphirerapids here")
    assert machine.bf16_dot_product and "+avx512bf16" in machine.llvm_target_features()
    ok(ctx, f"load {TORCH / 'matmul_bf16.mlir'}")
    try:
        ok(ctx, "target cpu --cpu sapphirerapids")
        steps = ctx.session.target.preparation_steps(ctx.session.inspect())
        # (Sapphire Rapids has AMX too: the contractions whose N is whole AMX tiles take that layout)
        assert ("pass lh-vnni-contractions{amx=1}" if machine.amx else "pass lh-vnni-contractions") in steps
    finally:
        ok(ctx, "target cpu --cpu host")


# after the fusion, the extension of a bf16 tensor a linear layer reads is fused into the op computing it:
# a layer norm's f32 body ends in truncf to bf16 and extf back (HF GPT-2 / ViT / Bert in bf16), a bf16 GELU
# in its bf16 ops and extf; the f32 result is exactly a bf16 tensor's extension (here the bf16 values are
# the same in the unscheduled run: a product of two bf16 values is exact in f32, rounded once either way)
FUSED_ROUNDING = """#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#row = affine_map<(d0, d1, d2) -> (d0, d1)>
#id2 = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>
func.func @main(%x: tensor<2x16x64xbf16>, %s: tensor<2x16xf32>, %w: tensor<64x48xbf16>, %v: tensor<48x32xbf16>,
                %y: tensor<32x48xf32>, %bias: tensor<48xf32>) -> (tensor<32x32xf32>, tensor<2x16x64xf32>, tensor<32x48xf32>) {
  %z = arith.constant 0.0 : f32
  %e3 = tensor.empty() : tensor<2x16x64xf32>
  %norm = linalg.generic {indexing_maps = [#id3, #row, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%x, %s : tensor<2x16x64xbf16>, tensor<2x16xf32>) outs(%e3 : tensor<2x16x64xf32>) {
  ^bb0(%in: bf16, %sc: f32, %out: f32):
    %a = arith.extf %in : bf16 to f32
    %m = arith.mulf %a, %sc : f32
    %t = arith.truncf %m : f32 to bf16
    %u = arith.extf %t : bf16 to f32
    linalg.yield %u : f32
  } -> tensor<2x16x64xf32>
  %rows = tensor.collapse_shape %norm [[0, 1], [2]] : tensor<2x16x64xf32> into tensor<32x64xf32>
  %e2 = tensor.empty() : tensor<64x48xf32>
  %wf = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%w : tensor<64x48xbf16>) outs(%e2 : tensor<64x48xf32>) {
  ^bb0(%in: bf16, %out: f32):
    %a = arith.extf %in : bf16 to f32
    linalg.yield %a : f32
  } -> tensor<64x48xf32>
  %e = tensor.empty() : tensor<32x48xf32>
  %c = linalg.fill ins(%z : f32) outs(%e : tensor<32x48xf32>) -> tensor<32x48xf32>
  %h = linalg.matmul ins(%rows, %wf : tensor<32x64xf32>, tensor<64x48xf32>) outs(%c : tensor<32x48xf32>) -> tensor<32x48xf32>
  %g = linalg.generic {indexing_maps = [#id2, #col, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%y, %bias : tensor<32x48xf32>, tensor<48xf32>) outs(%e : tensor<32x48xf32>) {
  ^bb0(%in: f32, %b: f32, %out: f32):
    %a = arith.addf %in, %b : f32
    %t = arith.truncf %a : f32 to bf16
    %sq = arith.mulf %t, %t : bf16
    %u = arith.extf %sq : bf16 to f32
    linalg.yield %u : f32
  } -> tensor<32x48xf32>
  %e4 = tensor.empty() : tensor<32x32xf32>
  %c2 = linalg.fill ins(%z : f32) outs(%e4 : tensor<32x32xf32>) -> tensor<32x32xf32>
  %r = linalg.matmul ins(%g, %v : tensor<32x48xf32>, tensor<48x32xbf16>) outs(%c2 : tensor<32x32xf32>) -> tensor<32x32xf32>
  return %r, %norm, %h : tensor<32x32xf32>, tensor<2x16x64xf32>, tensor<32x48xf32>
}
"""


def test_vnni_rewrite_has_a_producer_with_a_fused_rounding_write_bf16(ctx, tmp_path):
    from mlir import ir

    from workbench.worker.cpu.vnni_contractions import vnni_contractions

    with ir.Context(), ir.Location.unknown():
        module = ir.Module.parse(FUSED_ROUNDING)
        assert vnni_contractions(module) == 2
        assert module.operation.verify()
        text = str(module)
    assert "linalg.matmul" not in text and text.count("lh.vnni") == 2
    # the layer norm writes bf16 (its truncf yielded), the matmul reads its collapse; the function's other
    # result reads the f32 extension of that tensor
    assert "outs(%0 : tensor<2x16x64xbf16>)" in text and "tensor<2x16x64xbf16> into tensor<32x64xbf16>" in text
    assert re.search(r"arith\.truncf %\w+ : f32 to bf16\n\s+linalg\.yield %\w+ : bf16", text)
    assert re.search(r"ins\(%\w+ : tensor<2x16x64xbf16>\) outs\(%\w+ : tensor<2x16x64xf32>\)", text)
    # the GELU-like op yields its bf16 square, read by the second contraction as it is: no f32 copy left
    assert re.search(r"arith\.mulf %\w+, %\w+ : bf16\n\s+linalg\.yield %\w+ : bf16", text)
    assert "tensor<32x48xbf16> into tensor<32x24x2xbf16>" in text
    assert not re.search(r"ins\(%\w+ : tensor<32x48xbf16>\) outs\(%\w+ : tensor<32x48xf32>\)", text)
    assert "tensor<64x48xf32>" not in text   # (the weight's extension: read as bf16, erased)
    if _host_has_bf16_dot():
        path = tmp_path / "fused_rounding.mlir"
        path.write_text(FUSED_ROUNDING)
        ok(ctx, f"load {path}")
        with _vdpbf16ps_machine(ctx):
            ok(ctx, "select --apply")
            assert sum("matmul_vnni.py" in label for label in _steps(ctx)) == 2, _steps(ctx)
            ok(ctx, "bench warmup=1 iterations=2")
            ok(ctx, "apply cpu-lower")
            assert DPBF16 in ctx.session.current_ir
            assert ok(ctx, "run --check --iterations 1 --warmup 0").data["run"]["check"]["passed"]


def test_select_adds_the_vnni_rewrite_for_an_extension_fused_into_its_producer(ctx, tmp_path):
    # no extension of its own: B is bf16, A the f32 result of an op whose body ends in an extension
    text = """#id2 = affine_map<(d0, d1) -> (d0, d1)>
func.func @main(%x: tensor<32x64xf32>, %w: tensor<64x48xbf16>) -> tensor<32x48xf32> {
  %z = arith.constant 0.0 : f32
  %e2 = tensor.empty() : tensor<32x64xf32>
  %g = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<32x64xf32>) outs(%e2 : tensor<32x64xf32>) {
  ^bb0(%in: f32, %out: f32):
    %t = arith.truncf %in : f32 to bf16
    %y = arith.mulf %t, %t : bf16
    %u = arith.extf %y : bf16 to f32
    linalg.yield %u : f32
  } -> tensor<32x64xf32>
  %e = tensor.empty() : tensor<32x48xf32>
  %c = linalg.fill ins(%z : f32) outs(%e : tensor<32x48xf32>) -> tensor<32x48xf32>
  %r = linalg.matmul ins(%g, %w : tensor<32x64xf32>, tensor<64x48xbf16>) outs(%c : tensor<32x48xf32>) -> tensor<32x48xf32>
  return %r : tensor<32x48xf32>
}
"""
    path = tmp_path / "fused_gelu.mlir"
    path.write_text(text)
    ok(ctx, f"load {path}")
    try:
        ok(ctx, "target cpu --cpu zen4")
        assert ctx.session.target.machine.bf16_dot_product
        steps = ctx.session.target.preparation_steps(ctx.session.inspect())
        assert "pass lh-vnni-contractions" in steps
        ok(ctx, "target cpu --cpu avx2")
        assert "pass lh-vnni-contractions" not in ctx.session.target.preparation_steps(ctx.session.inspect())
    finally:
        ok(ctx, "target cpu --cpu host")
