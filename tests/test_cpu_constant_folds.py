"""lh-fold-constant-weights: a transpose (x @ W.T as torch-mlir writes it), a reshape on the way to one, or a
constant-valued pad of a constant weight is computed at compile time: no op left that moves the weight on every
call, the new constant holding exactly the moved data; checked against the unscheduled payload in a session."""
from __future__ import annotations

import numpy as np

from conftest import ok

LINEAR = """func.func @main(%x: tensor<MxKxf32>) -> tensor<MxNxf32> {
  %w = arith.constant dense_resource<weight> : tensor<NxKxf32>
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<KxNxf32>
  %wt = linalg.transpose ins(%w : tensor<NxKxf32>) outs(%e : tensor<KxNxf32>) permutation = [1, 0]
  %e2 = tensor.empty() : tensor<MxNxf32>
  %c = linalg.fill ins(%z : f32) outs(%e2 : tensor<MxNxf32>) -> tensor<MxNxf32>
  %r = linalg.matmul ins(%x, %wt : tensor<MxKxf32>, tensor<KxNxf32>) outs(%c : tensor<MxNxf32>) -> tensor<MxNxf32>
  return %r : tensor<MxNxf32>
}
"""


def _resources(**arrays: np.ndarray) -> str:
    """The `dialect_resources` section holding `arrays` (4-byte alignment, then the little-endian elements)."""
    blobs = ",\n".join(f'      {name}: "0x04000000{a.astype(a.dtype.newbyteorder("<")).tobytes().hex().upper()}"'
                       for name, a in arrays.items())
    return "\n{-#\n  dialect_resources: {\n    builtin: {\n" + blobs + "\n    }\n  }\n#-}\n"


def _linear(m: int, n: int, k: int, weight: np.ndarray) -> str:
    text = LINEAR.replace("M", str(m)).replace("N", str(n)).replace("K", str(k))
    return text + _resources(weight=weight)


def _fold(text: str):
    """(folds, printed module, {constant result type: its data as numpy uint32}) after the pass."""
    from mlir import ir

    from workbench.worker.cpu.constant_folds import constant_array, fold_constant_weights
    from workbench.worker.ir_walk import ops_where

    with ir.Context(), ir.Location.unknown():
        module = ir.Module.parse(text)
        folds = fold_constant_weights(module)
        assert module.operation.verify()
        constants = [op for op in ops_where(module, lambda o: o.name == "arith.constant")
                     if "tensor<" in str(op.results[0].type)]
        data = {str(op.results[0].type): constant_array(op.results[0]) for op in constants}
        return folds, str(module), data


def _weight(n: int, k: int) -> np.ndarray:
    return np.random.default_rng(0).standard_normal((n, k)).astype(np.float32)


def test_a_transposed_constant_weight_becomes_a_constant_of_the_transpose():
    w = _weight(40, 24)
    folds, text, data = _fold(_linear(32, 40, 24, w))
    assert folds == 1
    assert "linalg.transpose" not in text
    assert "weight:" not in text                     # the original blob is no longer referenced: not printed
    assert np.array_equal(data["tensor<24x40xf32>"], w.T.view(np.uint32))
    assert "linalg.matmul" in text
    # where the weight was, with the other weights: not amid the layer's ops (repeated layers stay alike)
    assert text.index("dense_resource<lh_folded_weight") < text.index("tensor.empty")


def test_reshapes_and_pads_of_a_constant_fold_with_the_transpose():
    w = _weight(6, 8)
    text = """func.func @main() -> tensor<2x5x6xf32> {
  %w = arith.constant dense_resource<weight> : tensor<6x8xf32>
  %x = tensor.expand_shape %w [[0], [1, 2]] output_shape [6, 2, 4] : tensor<6x8xf32> into tensor<6x2x4xf32>
  %e = tensor.empty() : tensor<2x4x6xf32>
  %t = linalg.transpose ins(%x : tensor<6x2x4xf32>) outs(%e : tensor<2x4x6xf32>) permutation = [1, 2, 0]
  %one = arith.constant 1.5 : f32
  %p = tensor.pad %t low[0, 0, 0] high[0, 1, 0] {
  ^bb0(%i: index, %j: index, %l: index):
    tensor.yield %one : f32
  } : tensor<2x4x6xf32> to tensor<2x5x6xf32>
  return %p : tensor<2x5x6xf32>
}
""" + _resources(weight=w)
    folds, printed, data = _fold(text)
    assert folds == 2                                 # the transpose (through the reshape), then the pad
    assert "linalg.transpose" not in printed and "tensor.pad" not in printed and "expand_shape" not in printed
    expected = np.pad(w.reshape(6, 2, 4).transpose(1, 2, 0), [(0, 0), (0, 1), (0, 0)], constant_values=1.5)
    assert np.array_equal(data["tensor<2x5x6xf32>"], expected.view(np.uint32))


def test_moves_of_arguments_are_left():
    text = """func.func @main(%w: tensor<6x8xf32>) -> tensor<8x6xf32> {
  %e = tensor.empty() : tensor<8x6xf32>
  %t = linalg.transpose ins(%w : tensor<6x8xf32>) outs(%e : tensor<8x6xf32>) permutation = [1, 0]
  return %t : tensor<8x6xf32>
}
"""
    folds, printed, _ = _fold(text)
    assert folds == 0 and "linalg.transpose" in printed


def test_a_shared_weight_keeps_its_constant():
    """A tied weight (an embedding table read as is and as the LM head's W.T) keeps the original for its other use."""
    w = _weight(12, 8)
    text = """func.func @main() -> (tensor<8x12xf32>, tensor<12x8xf32>) {
  %w = arith.constant dense_resource<weight> : tensor<12x8xf32>
  %e = tensor.empty() : tensor<8x12xf32>
  %t = linalg.transpose ins(%w : tensor<12x8xf32>) outs(%e : tensor<8x12xf32>) permutation = [1, 0]
  return %t, %w : tensor<8x12xf32>, tensor<12x8xf32>
}
""" + _resources(weight=w)
    folds, printed, data = _fold(text)
    assert folds == 1 and "linalg.transpose" not in printed
    assert np.array_equal(data["tensor<12x8xf32>"], w.view(np.uint32))
    assert np.array_equal(data["tensor<8x12xf32>"], w.T.view(np.uint32))


def test_a_linear_layer_selects_without_a_weight_transpose_and_matches(ctx, tmp_path):
    payload = tmp_path / "linear.mlir"
    payload.write_text(_linear(32, 100, 64, _weight(100, 64)))   # N = 100: padded to whole vectors first
    ok(ctx, f"load {payload}")
    ok(ctx, "target cpu --threads 1")
    ok(ctx, "select --apply")
    labels = " ".join(a.step.label() for a in ctx.session.active_steps)
    assert "lh-fold-constant-weights" in labels
    ir_text = ctx.session.current_ir
    assert "linalg.transpose" not in ir_text and "tensor.pad %cst" not in ir_text
    ok(ctx, "bench warmup=1 iterations=2")
    ok(ctx, "apply cpu-lower")
    assert ok(ctx, "run --check --iterations 1 --warmup 0").data["run"]["check"]["passed"]
