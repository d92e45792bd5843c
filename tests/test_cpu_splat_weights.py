"""Payloads whose weights are splat constants (zeros, ones, `dense<1.0e-02>`: constant-initialized layers)
through the CPU selector path. A ConvTranspose2d's filter flip reads its weight with tensor.extract; inspect's
generalized copy folded a splat's extract away, the selector planned a plain vectorization for an op that
still gathered and `select --apply` failed ("Attempted to vectorize, but failed"). Now inspect reads generic
ops as they are and the preparation folds such extracts (lh-fold-splat-extracts) in the IR it schedules."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from conftest import ok

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "torch"

#: a flip of a splat weight (the transposed convolution's filter), a tensor.splat read at computed
#: indices, a dense constant read at constant indices, and a dense_resource blob (elements unknown: kept)
EXTRACTS = """func.func @main(%x: f32, %i: index) -> (tensor<2x3xf32>, tensor<2xf32>, f32, f32) {
  %w = arith.constant dense<1.0e-02> : tensor<3x2xf32>
  %c1 = arith.constant 1 : index
  %c0 = arith.constant 0 : index
  %e = tensor.empty() : tensor<2x3xf32>
  %flip = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]}
      outs(%e : tensor<2x3xf32>) {
  ^bb0(%out: f32):
    %a = linalg.index 0 : index
    %b = linalg.index 1 : index
    %r = arith.subi %c1, %a : index
    %v = tensor.extract %w[%b, %r] : tensor<3x2xf32>
    linalg.yield %v : f32
  } -> tensor<2x3xf32>
  %s = tensor.splat %x : tensor<4xf32>
  %e2 = tensor.empty() : tensor<2xf32>
  %g = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} outs(%e2 : tensor<2xf32>) {
  ^bb0(%out: f32):
    %a = linalg.index 0 : index
    %v = tensor.extract %s[%a] : tensor<4xf32>
    linalg.yield %v : f32
  } -> tensor<2xf32>
  %d = arith.constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>
  %k = tensor.extract %d[%c1, %c0] : tensor<2x2xf32>
  %u = tensor.extract %d[%i, %c0] : tensor<2x2xf32>
  return %flip, %g, %k, %u : tensor<2x3xf32>, tensor<2xf32>, f32, f32
}
"""


def _splat(text: str, value: str) -> str:
    """The module with every dense_resource weight a splat of `value` (the blob section dropped)."""
    text = re.sub(r"dense_resource<[^>]+>", f"dense<{value}>", text)
    return text[:text.index("{-#")] if "{-#" in text else text


def test_extracts_of_known_elements_fold_to_their_values():
    from mlir import ir

    from workbench.worker.cpu.splat_extracts import fold_splat_extracts

    with ir.Context(), ir.Location.unknown():
        module = ir.Module.parse(EXTRACTS)
        assert fold_splat_extracts(module) == 3
        assert module.operation.verify()
        text = str(module)
    # the splat's flip yields the value (its index arithmetic gone with the extract), the tensor.splat's
    # read is its scalar, [1, 0] is 3.0
    flip = text[text.index("^bb0"):text.index("} -> tensor<2x3xf32>")]
    assert "arith.constant 0.00999999977 : f32" in flip and "linalg.index" not in flip and "arith.subi" not in flip
    assert "linalg.yield %arg0 : f32" in text
    assert "arith.constant 3.000000e+00 : f32" in text
    # a read at an index that is no constant stays
    assert text.count("tensor.extract") == 1 and "[%arg1, %c0] : tensor<2x2xf32>" in text


def test_dense_resource_weights_are_left():
    from mlir import ir

    from workbench.worker.cpu.splat_extracts import fold_splat_extracts

    text = (FIXTURES / "conv_transpose2d.mlir").read_text()
    with ir.Context(), ir.Location.unknown():
        module = ir.Module.parse(text)
        assert fold_splat_extracts(module) == 0
        assert "tensor.extract" in str(module)


def test_inspect_reads_a_generic_as_it_is_not_its_folded_copy(ctx, tmp_path):
    """The flip of a splat weight: inspect (what the selector plans from) lists the extract the op has."""
    payload = tmp_path / "ct2d_splat.mlir"
    payload.write_text(_splat((FIXTURES / "conv_transpose2d.mlir").read_text(), "1.0e-02"))
    ok(ctx, f"load {payload}")
    info = ctx.session.inspect()
    flip = next(op for op in info["ops"] if op["op"] == "linalg.generic")
    assert "tensor.extract" in flip["loops"]["body"]


@pytest.mark.parametrize("cpu", ["host", "avx2"])
@pytest.mark.parametrize("value", ["1.0e-02", "0.0", "1.0"])
@pytest.mark.parametrize("name", ["conv_transpose2d", "conv_transpose1d", "embedding"])
def test_splat_weights_select_lower_and_match_the_unscheduled_payload(ctx, tmp_path, name, value, cpu):
    """These three failed `select --apply` with splat weights (each reads its weight by tensor.extract)."""
    payload = tmp_path / f"{name}.mlir"
    payload.write_text(_splat((FIXTURES / f"{name}.mlir").read_text(), value))
    ok(ctx, f"load {payload}")
    try:
        ok(ctx, f"target cpu --threads 1 --cpu {cpu}")
        ok(ctx, "select --apply")
        assert "lh-fold-splat-extracts" in " ".join(a.step.label() for a in ctx.session.active_steps)
        ok(ctx, "bench warmup=1 iterations=2")
        ok(ctx, "apply cpu-lower")
        assert ok(ctx, "run --check --iterations 1 --warmup 0").data["run"]["check"]["passed"]
    finally:
        ok(ctx, "target cpu --cpu host")


def test_an_op_left_unread_gets_no_schedule(ctx, tmp_path):
    """seq2seq's greedy decoding with a splat embedding: every step's token reads the same row, the folded extract
    leaves the argmax unread. Its schedule matched nothing once a step's canonicalization erased it ("expected
    parameter to be equal to 1, got 0"); the selector now leaves unread ops out."""
    payload = tmp_path / "seq2seq.mlir"
    payload.write_text(_splat((FIXTURES / "seq2seq_attention.mlir").read_text(), "1.0e-02"))
    ok(ctx, f"load {payload}")
    ok(ctx, "target cpu --threads 1")
    for step in ("lh-fold-splat-extracts", "lh-drop-body-asserts", "lh-drop-dead-results", "lh-shared-rhs-matmuls",
                 "lh-fuse-elementwise"):   # (select's preparation up to the fusion)
        ok(ctx, f"pass {step}")
    unread = [op for op in ctx.session.inspect()["ops"] if op["unread"]]
    assert unread and all(op["kind"] == "reduction" for op in unread)   # (the argmaxes)
    ok(ctx, f"load {payload}")
    ok(ctx, "select --apply")
    ok(ctx, "bench warmup=1 iterations=2")
    ok(ctx, "apply cpu-lower")
    assert ok(ctx, "run --check --iterations 1 --warmup 0").data["run"]["check"]["passed"]


def test_an_unread_op_costs_no_other_op_its_loop_structure():
    """inspect's generalized copy: the pass's greedy rewrite erased an unread matmul, every later op's index
    was off by one and no op got its loops (the selector then scheduled none of them)."""
    from mlir import ir

    from workbench.worker.payload_inspect import inspect_module

    with ir.Context():
        module = ir.Module.parse("""func.func @f(%a: tensor<4x4xf32>, %b: tensor<4x4xf32>, %c: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %d = linalg.matmul ins(%a, %b : tensor<4x4xf32>, tensor<4x4xf32>) outs(%c : tensor<4x4xf32>) -> tensor<4x4xf32>
  %r = linalg.matmul ins(%a, %b : tensor<4x4xf32>, tensor<4x4xf32>) outs(%c : tensor<4x4xf32>) -> tensor<4x4xf32>
  return %r : tensor<4x4xf32>
}""")
        ops = inspect_module(module)["ops"]
        assert str(module).count("linalg.matmul") == 2   # (the module itself untouched)
    assert [op["unread"] for op in ops] == [True, False]
    assert "loops" not in ops[0] and ops[1]["loops"]["iterators"] == ["parallel", "parallel", "reduction"]
