"""Subnormal floats on the CPU selector path (issue 13, Swin): a module the selector scheduled runs with
x86 MXCSR's flush-to-zero and denormals-are-zero bits set (pipelines/cpu/finish.py marks it
`lh.flush_denormals`, cpu-lower's lh-flush-denormals sets the bits in its entry points and restores the
caller's at return). An FMA with a subnormal operand took a microcode assist: Swin's shifted-window
softmax (scores masked with -100) gave subnormal probabilities, and the batch matmul of them ran 5-7x
slower in the model than on random inputs (docs/swin-round14.md)."""
from __future__ import annotations

import numpy as np
import pytest

from conftest import load_npys, ok
from workbench.worker.cpu.denormals import host_is_x86

pytestmark = pytest.mark.skipif(not host_is_x86(), reason="MXCSR: x86 only")

# two ops the selector schedules apart (no producer between them: no fusion), so the whole-module tail
# (pipelines/cpu/finish.py) is one of the steps
PAYLOAD = """#map = affine_map<(d0) -> (d0)>
func.func @main(%a: tensor<64xf32>, %b: tensor<64xf32>) -> (tensor<64xf32>, tensor<64xf32>) {
  %e = tensor.empty() : tensor<64xf32>
  %p = linalg.generic {indexing_maps = [#map, #map, #map], iterator_types = ["parallel"]}
      ins(%a, %b : tensor<64xf32>, tensor<64xf32>) outs(%e : tensor<64xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %m = arith.mulf %x, %y : f32
    linalg.yield %m : f32
  } -> tensor<64xf32>
  %e2 = tensor.empty() : tensor<64xf32>
  %s = linalg.generic {indexing_maps = [#map, #map, #map], iterator_types = ["parallel"]}
      ins(%a, %b : tensor<64xf32>, tensor<64xf32>) outs(%e2 : tensor<64xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %t = arith.addf %x, %y : f32
    linalg.yield %t : f32
  } -> tensor<64xf32>
  return %p, %s : tensor<64xf32>, tensor<64xf32>
}
"""


def _run_selected(ctx, tmp_path, flush: int | None) -> tuple[list, str]:
    payload = tmp_path / "denormals.mlir"
    payload.write_text(PAYLOAD)
    a = np.full(64, 1e-20, np.float32)          # a * a = 1e-40: subnormal
    b = np.full(64, 1e-20, np.float32)
    b[1::2] = 1e-39                             # a subnormal input (b + 0 where it is read as zero)
    a[1::2] = 0.0
    np.save(tmp_path / "a.npy", a)
    np.save(tmp_path / "b.npy", b)
    ok(ctx, f"load {payload}")
    try:
        ok(ctx, "target cpu --threads 1")
        ok(ctx, "select --apply")
        labels = [s.step.label() for s in ctx.session.active_steps]
        finish = next(i for i, label in enumerate(labels) if "finish.py[gen=bufferize_and_lower_vectors]" in label)
        if flush is not None:
            ok(ctx, f"params {finish + 1} flush_denormals={flush}")
        ok(ctx, "apply cpu-lower")
        lowered = ctx.session.current_ir
        out = tmp_path / f"out{flush}"
        ok(ctx, f"run --threads 1 --iterations 1 --warmup 0 --npy {tmp_path / 'a.npy'},{tmp_path / 'b.npy'} "
                f"--save-outputs {out}")
        return load_npys(out, "output"), lowered
    finally:
        ok(ctx, "target cpu --cpu host --threads 0")


def test_selected_module_flushes_subnormals(ctx, tmp_path):
    (prod, total), lowered = _run_selected(ctx, tmp_path, None)
    # the entry sets FTZ + DAZ and restores the caller's MXCSR before it returns
    assert lowered.count('llvm.call_intrinsic "llvm.x86.sse.ldmxcsr"') >= 2
    # products below FLT_MIN are zero (FTZ), a subnormal input reads as zero (DAZ)
    assert np.all(prod[0::2] == 0.0) and np.all(prod[1::2] == 0.0)
    assert np.all(total[0::2] == np.float32(2e-20)) and np.all(total[1::2] == 0.0)


def test_flush_denormals_0_keeps_ieee_subnormals(ctx, tmp_path):
    (prod, total), lowered = _run_selected(ctx, tmp_path, 0)
    assert "llvm.x86.sse.ldmxcsr" not in lowered
    assert np.all(prod[0::2] == np.float32(1e-20) * np.float32(1e-20)) and prod[0] != 0.0
    assert np.all(total[1::2] == np.float32(1e-39))


def test_the_callers_mode_is_restored(ctx, tmp_path):
    """After a flushing module ran, the next run (the same worker) of a module that keeps subnormals
    still gets them: the entry restored MXCSR."""
    _run_selected(ctx, tmp_path, None)
    (prod, _), _ = _run_selected(ctx, tmp_path, 0)
    assert prod[0] != 0.0


def test_only_entry_points_and_address_taken_functions_are_instrumented():
    from mlir import ir

    from workbench.worker.cpu.denormals import ATTR, flush_denormals

    text = """module attributes {lh.flush_denormals} {
  llvm.func @entry(%c: i1) {
    llvm.call @outlined() : () -> ()
    %f = llvm.mlir.addressof @thread : !llvm.ptr
    llvm.cond_br %c, ^a, ^b
  ^a:
    llvm.return
  ^b:
    llvm.return
  }
  llvm.func @outlined() {
    llvm.return
  }
  llvm.func internal @thread(%p: !llvm.ptr) {
    llvm.return
  }
  llvm.func internal @helper() {
    llvm.return
  }
  llvm.func @external_decl()
}"""
    with ir.Context():
        module = ir.Module.parse(text)
        assert flush_denormals(module) == 2
        funcs = {ir.StringAttr(op.attributes["sym_name"]).value: str(op) for op in module.body.operations}
        module.operation.verify()
        unmarked = ir.Module.parse(text.replace(f"attributes {{{ATTR}}} ", ""))
        assert flush_denormals(unmarked) == 0 and flush_denormals(unmarked, force=True) == 2
    # the entry: saved + set at its start, restored before each of its two returns
    assert funcs["entry"].count("llvm.x86.sse.stmxcsr") == 1
    assert funcs["entry"].count("llvm.x86.sse.ldmxcsr") == 3
    assert "llvm.x86.sse" in funcs["thread"]
    assert "llvm.x86.sse" not in funcs["outlined"] and "llvm.x86.sse" not in funcs["helper"]


def test_a_subnormal_result_flushed_to_zero_passes_the_check(ctx, tmp_path):
    """The check against the unscheduled payload (which keeps subnormals) counts a difference below the smallest
    normal float as none: the flushed product (0 where the reference has 1e-40, its whole output subnormal)
    passed nothing before, its error relative to its own largest magnitude being 1. A real error still fails."""
    from workbench.execution.runner import compare

    (prod, _), _ = _run_selected(ctx, tmp_path, None)
    reference = np.full(64, np.float32(1e-20) * np.float32(1e-20), np.float32)
    reference[1::2] = 0.0
    assert prod[0] == 0.0 and reference[0] != 0.0
    assert compare([prod], [reference], "f32").passed
    assert not compare([prod + np.float32(1e-30)], [reference + np.float32(1e-30) * 2], "f32").passed
    ok(ctx, f"load {tmp_path / 'denormals.mlir'}")
    try:
        ok(ctx, "target cpu --threads 1")
        ok(ctx, "select --apply")
        ok(ctx, "apply cpu-lower")
        check = ok(ctx, f"run --check --iterations 1 --warmup 0 --npy {tmp_path / 'a.npy'},{tmp_path / 'b.npy'}")
        assert check.data["run"]["check"]["passed"], check.data["run"]["check"]
    finally:
        ok(ctx, "target cpu --cpu host --threads 0")


BITS = """#map = affine_map<(d0) -> (d0)>
func.func @main(%a: tensor<64xf32>, %b: tensor<64xf32>) -> (tensor<64xi32>, tensor<64xf32>) {
  %e = tensor.empty() : tensor<64xi32>
  %p = linalg.generic {indexing_maps = [#map, #map, #map], iterator_types = ["parallel"]}
      ins(%a, %b : tensor<64xf32>, tensor<64xf32>) outs(%e : tensor<64xi32>) {
  ^bb0(%x: f32, %y: f32, %o: i32):
    %m = arith.mulf %x, %y : f32
    %i = arith.bitcast %m : f32 to i32
    linalg.yield %i : i32
  } -> tensor<64xi32>
  %e2 = tensor.empty() : tensor<64xf32>
  %s = linalg.generic {indexing_maps = [#map, #map, #map], iterator_types = ["parallel"]}
      ins(%a, %b : tensor<64xf32>, tensor<64xf32>) outs(%e2 : tensor<64xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %t = arith.addf %x, %y : f32
    linalg.yield %t : f32
  } -> tensor<64xf32>
  return %p, %s : tensor<64xi32>, tensor<64xf32>
}
"""


def test_code_that_reads_float_bits_keeps_subnormals(ctx, tmp_path):
    """A payload that reads floats' bits (arith.bitcast: torch's frexp, nextafter, view(dtype)) keeps IEEE
    subnormals on the selector path (finish.py flush_denormals=0): the bits of a subnormal product are the exact
    ones, as the unscheduled payload's (torch's frexp/nextafter test failed with flushing on)."""
    payload = tmp_path / "bits.mlir"
    payload.write_text(BITS)
    a = np.full(64, 1e-20, np.float32)
    np.save(tmp_path / "a.npy", a)
    np.save(tmp_path / "b.npy", a)
    ok(ctx, f"load {payload}")
    try:
        ok(ctx, "target cpu --threads 1")
        ok(ctx, "select --apply")
        finish = [s.step.params for s in ctx.session.active_steps if "finish.py" in s.step.label()]
        assert finish and finish[0].get("flush_denormals") == 0, finish
        ok(ctx, "apply cpu-lower")
        assert "llvm.x86.sse.ldmxcsr" not in ctx.session.current_ir
        out = tmp_path / "out"
        ok(ctx, f"run --check --threads 1 --iterations 1 --warmup 0 --npy {tmp_path / 'a.npy'},{tmp_path / 'b.npy'} "
                f"--save-outputs {out}")
        bits = load_npys(out, "output")[0]
        assert np.all(bits == (np.float32(1e-20) * np.float32(1e-20)).view(np.int32)) and bits[0] != 0
    finally:
        ok(ctx, "target cpu --cpu host --threads 0")
