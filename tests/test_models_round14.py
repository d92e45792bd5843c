"""Round 14 (more real models at realistic sizes, docs/models-round14-real.md): the speed cliffs they found,
each fixed by a general rule, with small payloads in torch-mlir's form.

- A patch embedding (ViT's / CLIP's Conv2d whose window equals its strides, over an input of whole windows)
  of one f32 image is the matmul W[f, c*kh*kw] x patches[c*kh*kw, positions] (lh-pointwise-convs): its
  strides (32 x 32 for CLIP ViT-B/32) are above lh-strided-conv-planes' phases, and the window schedule ran
  it at ~15 GFLOP/s (8 ms of CLIP's ~40 in a profile).
"""
from __future__ import annotations

import pytest

from conftest import ok, selector_path_runs_and_matches


def _patch(n, C, H, W, F, k) -> str:
    """torch-mlir's patch-embedding Conv2d (window = strides = k) with its bias broadcast as the init."""
    x, w, o = (f"tensor<{n}x{C}x{H}x{W}xf32>", f"tensor<{F}x{C}x{k}x{k}xf32>",
               f"tensor<{n}x{F}x{H // k}x{W // k}xf32>")
    return f"""func.func @main(%x: {x}, %w: {w}, %b: tensor<{F}xf32>) -> {o} {{
  %e = tensor.empty() : {o}
  %init = linalg.broadcast ins(%b : tensor<{F}xf32>) outs(%e : {o}) dimensions = [0, 2, 3]
  %r = linalg.conv_2d_nchw_fchw {{dilations = dense<1> : vector<2xi64>, strides = dense<{k}> : vector<2xi64>}}
       ins(%x, %w : {x}, {w}) outs(%init : {o}) -> {o}
  return %r : {o}
}}
"""


def test_a_patch_embedding_of_one_image_becomes_a_matmul_over_its_patches():
    from mlir import ir

    from workbench.worker.cpu.pointwise_convs import pointwise_convs

    with ir.Context(), ir.Location.unknown():
        module = ir.Module.parse(_patch(1, 3, 40, 24, 32, 8))
        assert pointwise_convs(module) == 1 and module.operation.verify()
        text = str(module)
    assert "linalg.conv" not in text
    assert "tensor<1x3x40x24xf32> into tensor<1x3x5x8x3x8xf32>" in text      # the windows, a view
    assert "permutation = [0, 1, 3, 5, 2, 4]" in text                         # the patches as columns
    assert "tensor<1x3x8x8x5x3xf32> into tensor<192x15xf32>" in text
    assert "tensor<32x3x8x8xf32> into tensor<32x192xf32>" in text
    assert "linalg.matmul" in text and "tensor<32x15xf32> into tensor<1x32x5x3xf32>" in text
    # two images, and a window other than the strides, stay convolutions
    for other in (_patch(2, 3, 40, 24, 32, 8),
                  _patch(1, 3, 40, 24, 32, 8).replace("strides = dense<8>", "strides = dense<4>")):
        with ir.Context(), ir.Location.unknown():
            module = ir.Module.parse(other)
            assert pointwise_convs(module) == 0 and "linalg.matmul" not in str(module)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("shape", [(1, 3, 64, 96, 48, 32), (1, 3, 48, 48, 40, 16), (2, 3, 64, 64, 48, 32)])
def test_patch_embeddings_run_and_match(ctx, tmp_path, threads, shape):
    payload = tmp_path / "patch.mlir"
    payload.write_text(_patch(*shape))
    schedules = selector_path_runs_and_matches(ctx, payload, threads)
    assert ("matmul" in schedules) == (shape[0] == 1), schedules


def test_a_transposed_conv_whose_taps_are_strided_filter_slices_still_runs(ctx):
    """lh-pointwise-convs now runs wherever a 2-D conv of one f32 image is (for the patch embeddings): the 1x1
    phases lh-dilated-input-convs makes of a transposed convolution read their filter through a strided
    extract_slice, which as a matmul's A the micro-kernel call refused (`the marked matmul's A memref<6x4xf32,
    strided<[36, 9]>`): they stay 1-D convolutions."""
    from pathlib import Path

    fixture = Path(__file__).parent / "fixtures" / "torch" / "conv_transpose2d.mlir"
    ok(ctx, f"load {fixture}")
    ok(ctx, "target cpu --threads 1")
    try:
        ok(ctx, "select --apply")
        ok(ctx, "apply cpu-lower")
        assert ok(ctx, "run --check --iterations 1 --warmup 0 --threads 1").data["run"]["check"]["passed"]
    finally:
        ok(ctx, "target cpu --cpu host --threads 0")
