"""scripts/random_weights.py: splat weights of shrunk fixtures back to random blobs, which MLIR parses and
the CPU pipeline then compiles as a real model's weights (a matmul, not a row sum)."""
from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("random_weights", REPO / "scripts" / "random_weights.py")
random_weights = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(random_weights)

SHRUNK = """module {
  func.func @main(%x: tensor<4x8xf32>) -> tensor<4x16xf32> {
    %w = arith.constant dense<1.000000e-02> : tensor<8x16xf32>
    %h = arith.constant dense<1.000000e-02> : tensor<16xbf16>
    %z = arith.constant dense<0.000000e+00> : tensor<4x16xf32>
    %s = arith.constant 1.000000e-02 : f32
    %y = linalg.matmul ins(%x, %w : tensor<4x8xf32>, tensor<8x16xf32>) outs(%z : tensor<4x16xf32>) -> tensor<4x16xf32>
    return %y : tensor<4x16xf32>
  }
}
"""


def test_the_shrunk_weights_become_random_blobs_mlir_parses_and_nothing_else_changes():
    from mlir import ir

    text, n = random_weights.random_weights(SHRUNK, scale=0.05, seed=3)
    assert n == 2
    assert "dense<0.000000e+00> : tensor<4x16xf32>" in text and "arith.constant 1.000000e-02 : f32" in text
    assert "dense<1.000000e-02>" not in text
    assert "dense_resource<lh_random_weight_0> : tensor<8x16xf32>" in text
    assert "dense_resource<lh_random_weight_1> : tensor<16xbf16>" in text
    with ir.Context():
        ir.Module.parse(text).operation.verify()
    # the f32 blob: 8x16 values in [-scale, scale], not all equal, the same again for the same seed
    hexdata = text.split('lh_random_weight_0: "0x')[1].split('"')[0]
    raw = bytes.fromhex(hexdata)
    assert raw[:4] == (4).to_bytes(4, "little")
    values = np.frombuffer(raw[4:], dtype=np.float32)
    assert values.size == 128 and np.all(np.abs(values) <= 0.05) and np.unique(values).size > 100
    assert random_weights.random_weights(SHRUNK, scale=0.05, seed=3)[0] == text
    assert random_weights.random_weights(SHRUNK, scale=0.05, seed=4)[0] != text

def test_a_module_without_the_splat_is_returned_as_it_was():
    other = SHRUNK.replace("1.000000e-02", "2.000000e-02")
    assert random_weights.random_weights(other) == (other, 0)
