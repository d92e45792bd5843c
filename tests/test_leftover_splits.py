"""`lh-split-leftover-ops` (workbench/worker/cpu/leftover_splits.py): the large ops bufferization adds
after the selection (a tensor.pad's fill and copy) run as foralls over the cores, not on one core
after the scheduled ops ran on all of them; small ones and ops inside loops stay as they are."""
from __future__ import annotations

import re

from conftest import ok

PADDED_CONV = """
func.func @conv(%x: tensor<1x16x128x128xf32>, %w: tensor<16x16x3x3xf32>) -> tensor<1x16x128x128xf32> {
  %zero = arith.constant 0.0 : f32
  %padded = tensor.pad %x low[0, 0, 1, 1] high[0, 0, 1, 1] {
  ^bb0(%a: index, %b: index, %c: index, %d: index):
    tensor.yield %zero : f32
  } : tensor<1x16x128x128xf32> to tensor<1x16x130x130xf32>
  %e = tensor.empty() : tensor<1x16x128x128xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e : tensor<1x16x128x128xf32>) -> tensor<1x16x128x128xf32>
  %y = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>}
    ins(%padded, %w : tensor<1x16x130x130xf32>, tensor<16x16x3x3xf32>) outs(%init : tensor<1x16x128x128xf32>)
    -> tensor<1x16x128x128xf32>
  return %y : tensor<1x16x128x128xf32>
}
"""

SMALL_AND_LOOPED = """
func.func @f(%a: memref<16x64x1024xf32>, %b: memref<16x64x1026xf32>, %s: memref<64x64xf32>) {
  %zero = arith.constant 0.0 : f32
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  linalg.fill ins(%zero : f32) outs(%b : memref<16x64x1026xf32>)
  %in = memref.subview %b[0, 0, 1] [16, 64, 1024] [1, 1, 1]
      : memref<16x64x1026xf32> to memref<16x64x1024xf32, strided<[65664, 1026, 1], offset: 1>>
  linalg.copy ins(%a : memref<16x64x1024xf32>) outs(%in : memref<16x64x1024xf32, strided<[65664, 1026, 1], offset: 1>>)
  linalg.fill ins(%zero : f32) outs(%s : memref<64x64xf32>)
  scf.for %i = %c0 to %c2 step %c1 {
    linalg.fill ins(%zero : f32) outs(%b : memref<16x64x1026xf32>)
  }
  return
}
"""


def test_the_split_plan_takes_the_first_loop_with_a_chunk_per_core():
    from workbench.worker.cpu.leftover_splits import split_plan

    assert split_plan([1, 64, 58, 58], 16) == (1, 16)      # batch 1: the channels
    assert split_plan([8, 3], 16) == (0, 8)                 # no loop of 16: the longest, 8 ways
    assert split_plan([16, 64, 1026], 4) == (0, 4)
    assert split_plan([1, 1], 4) is None


def test_large_top_level_ops_become_foralls_small_and_looped_ones_stay(ctx, tmp_path):
    p = tmp_path / "leftovers.mlir"
    p.write_text(SMALL_AND_LOOPED)
    ok(ctx, f"load {p}")
    ok(ctx, "pass lh-split-leftover-ops{threads=4}")
    ir = ctx.session.current_ir
    foralls = re.findall(r"scf\.forall \(%\w+\) in \((\d+)\)", ir)
    assert foralls == ["4", "4"], ir                     # the big fill and the copy
    body = ir[ir.index("scf.for "):]
    assert "scf.forall" not in body                      # the fill inside the loop is left alone
    assert "outs(%arg2 : memref<64x64xf32>)" in ir       # the small fill too, whole
    assert "lh.split_leftover" not in ir
    ok(ctx, "undo")
    ok(ctx, "pass lh-split-leftover-ops{threads=1}")
    assert ctx.session.steps[-1].noop


def test_select_splits_a_pads_fill_and_copy_over_the_cores_and_the_result_is_right(ctx, tmp_path, monkeypatch):
    from workbench.targets.cpu import CpuTarget

    # a pad bufferized as a fill of the padded buffer and a copy into it (lh-constant-pad-rows writes the
    # convolution's pad row by row in one loop instead, which leaves no leftover ops to split)
    monkeypatch.setattr(CpuTarget, "constant_pad_rows", False)
    p = tmp_path / "padded_conv.mlir"
    p.write_text(PADDED_CONV)
    ok(ctx, f"load {p}")
    ok(ctx, "target cpu --threads 2")
    res = ok(ctx, "select --apply")
    assert res.data["selections"][-1] == {"schedule": "pipelines/cpu/split-leftovers.yaml", "params": {"threads": 2}}
    finished = ctx.session.ir_at(ctx.session.cursor - 1)
    split = ctx.session.current_ir
    assert not ctx.session.steps[-1].noop
    # the padded buffer's fill (linalg.map) and the copy of the input into it, each inside a forall now
    for name in ("linalg.map", "linalg.copy"):
        assert re.search(rf"scf\.forall[^\n]*\n(?:[^\n]*\n){{0,12}}?\s*{name}", split), (name, split[:3000])
        assert not re.search(rf"scf\.forall[^\n]*\n(?:[^\n]*\n){{0,12}}?\s*{name}", finished)
    ok(ctx, "bench warmup=0 iterations=1")
    ok(ctx, "apply cpu-lower")
    run = ok(ctx, "run --check --threads 2 --inputs random").data["run"]
    assert run["check"]["passed"], run["check"]


def test_a_pass_option_that_is_no_integer_fails_in_one_line_and_changes_nothing(ctx, tmp_path):
    p = tmp_path / "leftovers.mlir"
    p.write_text(SMALL_AND_LOOPED)
    ok(ctx, f"load {p}")
    for option in ("threads=abc", "min-elements=1e"):
        res = ctx.registry.dispatch(f"pass lh-split-leftover-ops{{{option}}}", ctx)
        key, value = option.split("=")
        assert not res.ok and f"option {key}='{value}' is not an integer" in res.error, res.error
        assert "\n" not in res.error and "int()" not in res.error
        assert ctx.session.cursor == 0
