"""Round-4 blocks of real architectures (examples/torch/models/round4.py, docs/models-round4.md), exported to
tests/fixtures/torch/ by scripts/export_corpus.py: test_torch_corpus.py runs them unscheduled and on the
one-thread plan; here the two-thread plan (`target cpu --threads 2`, its row / batch splits) runs them on two
threads and must equal the unscheduled payload and torch. fake_quant_mlp and arcface_head failed to export
before torch_export.py decomposed fake_quantize_per_channel_affine and cdist."""
from __future__ import annotations

import pytest

from conftest import FIXTURES, ok

TORCH = FIXTURES / "torch"
ROUND4 = ["deeplab_aspp", "vq_quantizer", "scatter_moe", "gptj_decode_step", "smoothed_loss_head", "fake_quant_mlp",
          "crf_viterbi", "spatial_transformer", "deepfm", "yolo_decode", "arcface_head"]


@pytest.mark.parametrize("name", ROUND4)
def test_round4_block_on_two_threads_matches_torch(ctx, name):
    ok(ctx, f"load {TORCH / (name + '.mlir')}")
    ok(ctx, "target cpu --threads 2")
    ok(ctx, "select --apply")
    ok(ctx, "bench warmup=1 iterations=2")
    ok(ctx, "apply cpu-lower")
    run = ok(ctx, "run --check --threads 2").data["run"]
    assert run["check"]["passed"], run["check"]
    assert run["expected_check"]["passed"], run["expected_check"]
    assert run["expected_check"]["source"].endswith(f"{name}.expected.json")
