"""nn.MultiheadAttention's export (docs/attention-round16.md): torch-mlir writes the scores, the mask's
addition and the softmax over batch x heads but P V as a batch matmul over their product, reading a
collapse_shape of the probabilities; lh-merge-contraction-batches runs that P V over the split batch, so the
selector's attention matchers (lh-flash-attention, the row blocks) see the attention as they see torch's sdpa.

Fixtures: tests/fixtures/sdpa/mha_modules.py (torch's inputs and outputs): mha_self_padded (batch_first,
key_padding_mask, 2 x 240 tokens, 4 heads), mha_causal (sequence first, a causal bool attn_mask, 240 x 2),
mha_pool (48 learned query tokens over 2 x 256 tokens, a key_padding_mask that masks all of batch 1's keys).
"""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from conftest import load_npys, lower_and_check_fixture, ok

SDPA = Path(__file__).parent / "fixtures" / "sdpa"
FIXTURES = ["mha_self_padded", "mha_causal", "mha_pool"]
PREPARATION = ("lh-fold-constant-weights", "lh-drop-dead-results", "lh-fold-all-neg-inf-checks",
               "lh-shared-rhs-matmuls", "lh-fuse-elementwise", "lh-softmax-reciprocals")


@pytest.mark.parametrize("name", FIXTURES)
def test_the_merge_leaves_p_v_over_the_split_heads_of_the_softmax(ctx, name):
    """The fusion leaves P V over batch x heads, reading the softmax's probabilities as they are and V
    through an expand_shape of the merged heads; lh-merge-contraction-batches leaves it so (merged for the
    expanded V, it read the probabilities through a collapse_shape: 8 x M x N)."""
    ok(ctx, f"load {SDPA / (name + '.mlir')}")
    for p in PREPARATION:
        ok(ctx, f"pass {p}")
    m, n = (48, 256) if name == "mha_pool" else (240, 240)
    p_v = (rf"ins\(%\w+, %expanded\w* : tensor<2x4x{m}x{n}xf32>, tensor<2x4x{n}x16xf32>\) "
           rf"outs\(%\w+ : tensor<2x4x{m}x16xf32>\)")
    assert re.search(p_v, ctx.session.current_ir)
    ok(ctx, "pass lh-merge-contraction-batches")
    after = ctx.session.current_ir
    assert f"x{m}x{n}xf32>" in after and f"tensor<8x{m}x{n}xf32>" not in after
    assert re.search(p_v, after)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("name", FIXTURES)
def test_the_selector_blocks_multihead_attention(ctx, monkeypatch, tmp_path, name, threads):
    """Past FLASH_MIN_KEYS keys (lowered here) lh-flash-attention takes the attention (its loops a forall
    on 2 cores); with flash attention off, past the scores' threshold (lowered here), the row blocks do;
    torch's outputs either way (mha_pool's fully masked batch: the output projection's bias)."""
    from workbench.targets import cpu

    monkeypatch.setattr(cpu, "FLASH_MIN_KEYS", 128)
    monkeypatch.setattr(cpu, "ATTENTION_SCORE_BYTES", 1 << 16)
    fixture = SDPA / f"{name}.mlir"
    for flash in (True, False):
        monkeypatch.setattr(cpu.CpuTarget, "flash_attention", flash)
        ok(ctx, f"load {fixture}")
        try:
            ok(ctx, f"target cpu --threads {threads}")
            data = ok(ctx, "select --apply").data
            prepared = [p for p in data["prepared"] if "lh-flash-attention" in p]
            blocks = [s for s in data["selections"] if "attention_blocks" in str(s["schedule"])]
            if flash:
                assert len(prepared) == 1 and not blocks, (data["prepared"], data["selections"])
                assert prepared[0].endswith(" parallel=1}") == (threads > 1), prepared
                rows, keys = (int(x) for x in re.search(r"rows=(\d+) keys=(\d+)", prepared[0]).groups())
                m, n = (48, 256) if name == "mha_pool" else (240, 240)
                assert m % rows == 0 and n % keys == 0 and keys < n, prepared
            else:
                assert not prepared and len(blocks) == 1 and blocks[0]["params"]["batch_dims"] == 2, blocks
            lower_and_check_fixture(ctx, fixture, threads=threads, save=tmp_path)
        finally:
            ok(ctx, "target cpu --cpu host --threads 0")
        out = load_npys(tmp_path, "output")[0]
        assert np.all(np.isfinite(out))
        if name == "mha_pool":
            expected = np.load(SDPA / "mha_pool.expected0.npy")
            assert np.all(out[1] == out[1, :1]) and np.allclose(out[1], expected[1], rtol=1e-3, atol=1e-4)
