"""Whole small networks (examples/torch/models: ResNet-18, ViT-tiny, a GPT-2 LM, a char-level LSTM LM, a
DLRM-like recommender, a GraphSAGE GNN; exported at narrow test sizes by scripts/export_corpus.py) through
the CPU selector path (`select --apply`, `bench`, `apply cpu-lower`, `run --check` against the unscheduled
payload and torch's outputs) and the CUDA compile side (`select --apply`, `apply cuda-lower` with the
stand-in driver). Each found a bug of a general mechanism:

- gpt2_lm, vit_tiny: the last residual add, read only by the final LayerNorm, was both a matmul's epilogue
  link and a member of the norm's row chain; the rows step then found no op with its id.
- dlrm: the interaction's `z[:, rows, cols]` with buffer indices failed torch-mlir's frozen import
  ("Heterogeneous lists are not supported"): state tensors in list arguments reach the op through a clone.
- gnn: index_add message passing exported tm_tensor.scatter (index_add is a loop over the index now, a
  scatter_add); on cuda the layer's `neighbours(h) + root(x)` (bias fused in) was claimed as the epilogue of
  both matmuls ("target and source are not in the same block").
- resnet18, char_rnn_lm: whole CNN / unrolled two-layer LSTM with every stage (no bug found).
- llama_lm (grouped-query attention, triu causal mask, rotary tables, a tied LM head of odd vocab), mamba_lm
  (a selective scan unrolled over time, causal depthwise conv1d, softplus), moe_dispatch (Mixtral-style
  top-k routing with a one-hot dispatch per expert), tcn (dilated causal conv1d with chomps),
  conv_autoencoder (ConvTranspose2d decoder): the rotary tables and masks as `persistent=False` buffers
  failed torch-mlir's frozen import ("Could not find state mapping for buffer").
- seq2seq_attention (a GRU decoder unrolled with Luong attention and greedy argmax feedback): each step's
  `bmm(query (B x 1 x H), memory^T)` is a batch matmul of one row; the batch schedule's unit-dim folding
  folded that row too and `transform.structured.specialize` failed in `select --apply`.
- espcn (pixel_shuffle), gat (masked softmax over an adjacency, einsum), nerf_mlp (sin/cos positional
  encoding, skip concat), retnet_block (cumsum linear attention, elu+1, a decay matrix): no bug found."""
from __future__ import annotations

import pytest

from conftest import FIXTURES, ok

TORCH = FIXTURES / "torch"
WHOLE_MODELS = ["resnet18", "vit_tiny", "gpt2_lm", "char_rnn_lm", "dlrm", "gnn", "llama_lm", "mamba_lm",
                "moe_dispatch", "tcn", "conv_autoencoder", "seq2seq_attention", "espcn", "gat", "nerf_mlp",
                "retnet_block"]


def _scheduled_ids(selections: list[dict]) -> list[str]:
    return [i for e in selections for i in ([e["params"]["op"]] if isinstance(e["params"].get("op"), str)
                                            else e["params"].get("op") or [])]


@pytest.mark.parametrize("name", WHOLE_MODELS)
def test_whole_model_runs_selected_and_matches_torch(ctx, name):
    ok(ctx, f"load {TORCH / (name + '.mlir')}")
    ok(ctx, "target cpu")
    selections = ok(ctx, "select --apply").data["selections"]
    ids = _scheduled_ids(selections)
    assert len(ids) == len(set(ids)), ids          # every op is scheduled by one step at most
    ok(ctx, "bench warmup=1 iterations=2")
    ok(ctx, "apply cpu-lower")
    run = ok(ctx, "run --check").data["run"]
    assert run["check"]["passed"], run["check"]
    assert run["expected_check"]["passed"], run["expected_check"]


@pytest.mark.parametrize("name", ["gnn", "gpt2_lm", "llama_lm", "mamba_lm"])
def test_whole_model_compiles_for_cuda(ctx, name, fake_h100_driver, monkeypatch):
    monkeypatch.setenv("LH_WORKBENCH_LIBCUDA", str(fake_h100_driver))
    ok(ctx, f"load {TORCH / (name + '.mlir')}")
    ok(ctx, "target cuda")
    try:
        selections = ok(ctx, "select --apply").data["selections"]
        epilogues = [e["params"]["epilogue"] for e in selections if e["params"].get("epilogue")]
        assert len(epilogues) == len(set(epilogues)), epilogues     # one kernel per epilogue op
        ok(ctx, "bench warmup=1 iterations=1")
        ok(ctx, "apply cuda-lower")
        ir = ctx.session.current_ir
        assert "gpu.binary @" in ir and "gpu.launch " not in ir
    finally:
        ok(ctx, "target cpu")


def test_an_add_reading_a_later_matmul_is_not_the_earlier_ones_epilogue():
    """elementwise_consumer: `h @ W1 + x @ W2` fused into one generic reads both matmuls' results; it is the
    epilogue of the later matmul only (it needs both results)."""
    from workbench.targets.cuda import elementwise_consumer

    def matmul(i, consumer):
        return dict(op="linalg.matmul", kind="contraction", id=f"matmul_{i}", dims={"m": 20, "n": 16, "k": 8},
                    producers=[-1, -1, -1], consumers=[consumer])

    loops = dict(domain=[20, 16], iterators=["parallel", "parallel"], num_inputs=2,
                 operand_dims=[[0, 1], [0, 1], [0, 1]])
    add = dict(op="linalg.generic", kind="elementwise", id="generic_4", loops=loops, producers=[0, 1, -1],
               consumers=[])
    ops = [matmul(0, 2), matmul(1, 2), add]
    assert elementwise_consumer(ops[0], ops) == ""
    assert elementwise_consumer(ops[1], ops) == "generic_4"


RESULT_ALSO_RESHAPED = """
func.func @main(%a: tensor<49x64xf32>, %b: tensor<64x32xf32>, %r: tensor<49x32xf32>) -> (tensor<49x32xf32>, tensor<7x7x32xf32>) {
  %cst = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<49x32xf32>
  %f = linalg.fill ins(%cst : f32) outs(%e : tensor<49x32xf32>) -> tensor<49x32xf32>
  %m = linalg.matmul ins(%a, %b : tensor<49x64xf32>, tensor<64x32xf32>) outs(%f : tensor<49x32xf32>) -> tensor<49x32xf32>
  %x = tensor.expand_shape %m [[0, 1], [2]] output_shape [7, 7, 32] : tensor<49x32xf32> into tensor<7x7x32xf32>
  %s = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>,
                                        affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]}
      ins(%m, %r : tensor<49x32xf32>, tensor<49x32xf32>) outs(%e : tensor<49x32xf32>) {
  ^bb0(%in: f32, %in2: f32, %out: f32):
    %t = arith.addf %in, %in2 : f32
    linalg.yield %t : f32
  } -> tensor<49x32xf32>
  return %s, %x : tensor<49x32xf32>, tensor<7x7x32xf32>
}
"""


def test_a_matmul_result_read_by_a_reshape_too_has_no_epilogue(ctx, tmp_path):
    """Swin's patch merging at 7x7 (224 input): the reduction's result is read by the residual add and by a
    view of it. As the add's epilogue matmul, the schedule took the reshape for the epilogue ("only ops
    implementing TilingInterface are supported"); the add is an op of its own and both results are right."""
    payload = tmp_path / "reshaped.mlir"
    payload.write_text(RESULT_ALSO_RESHAPED)
    ok(ctx, f"load {payload}")
    ok(ctx, "target cpu")
    selections = ok(ctx, "select --apply").data["selections"]
    assert not [e for e in selections if e["params"].get("epilogue")]
    ok(ctx, "bench warmup=1 iterations=1")
    ok(ctx, "apply cpu-lower")
    assert ok(ctx, "run --check").data["run"]["check"]["passed"]


ONE_ROW_BATCH_MATMULS = """
func.func @main(%q: tensor<2x1x32xf32>, %m: tensor<2x32x7xf32>, %a: tensor<2x5x1xf32>, %b: tensor<2x1x6xf32>)
    -> (tensor<2x1x7xf32>, tensor<2x5x6xf32>) {
  %cst = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2x1x7xf32>
  %f = linalg.fill ins(%cst : f32) outs(%e : tensor<2x1x7xf32>) -> tensor<2x1x7xf32>
  %s = linalg.batch_matmul ins(%q, %m : tensor<2x1x32xf32>, tensor<2x32x7xf32>) outs(%f : tensor<2x1x7xf32>) -> tensor<2x1x7xf32>
  %e2 = tensor.empty() : tensor<2x5x6xf32>
  %f2 = linalg.fill ins(%cst : f32) outs(%e2 : tensor<2x5x6xf32>) -> tensor<2x5x6xf32>
  %o = linalg.batch_matmul ins(%a, %b : tensor<2x5x1xf32>, tensor<2x1x6xf32>) outs(%f2 : tensor<2x5x6xf32>) -> tensor<2x5x6xf32>
  return %s, %o : tensor<2x1x7xf32>, tensor<2x5x6xf32>
}
"""


def test_batch_matmuls_of_one_row_or_one_term_are_selected_and_match(ctx, tmp_path):
    """A decoder step's attention `bmm(q (B x 1 x H), memory^T)` (M = 1) and a batched outer product (K = 1):
    the batch schedule folded those unit dims with the batch's and its specialize failed; they take the
    generic contraction schedule and compute the same as the unscheduled payload."""
    payload = tmp_path / "one_row_bmm.mlir"
    payload.write_text(ONE_ROW_BATCH_MATMULS)
    ok(ctx, f"load {payload}")
    ok(ctx, "target cpu")
    selections = ok(ctx, "select --apply").data["selections"]
    assert not [e for e in selections if "batch_matmul_tiling" in e["schedule"]]
    assert _scheduled_ids(selections)            # still scheduled (by the generic schedule), not left out
    ok(ctx, "bench warmup=1 iterations=1")
    ok(ctx, "apply cpu-lower")
    assert ok(ctx, "run --check").data["run"]["check"]["passed"]
