"""A corpus of small torch modules, in the spirit of KernelBench level 1 (plus a few level-2 blocks).

CORPUS maps a name to an Entry: a module factory, the input specs of the committed test fixtures
(`test_shapes`: small, exported to tests/fixtures/torch/ by scripts/export_corpus.py) and larger ones
for benchmarks (`bench_shapes`), in the import command's spec syntax: `16x32xf32`, `4x8xi64[0:50]`
(integers drawn from [0, 50)). `dtype` casts the module and its floating inputs (f32 or bf16).

Only torch is imported here (this file runs under the torch Python): `python examples/torch/corpus.py`
lists the entries.
"""
from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import torch
import torch.nn as nn
import torch.nn.functional as F


@dataclass(frozen=True)
class Entry:
    factory: Callable[[], nn.Module]
    test_shapes: tuple[str, ...]
    bench_shapes: tuple[str, ...]
    dtype: str = "f32"
    category: str = ""
    #: the module at bench sizes where its parameters depend on the input's feature dimensions
    bench_factory: Callable[[], nn.Module] | None = None

    def module(self, shapes: str = "test") -> nn.Module:
        return (self.bench_factory or self.factory)() if shapes == "bench" else self.factory()


class Fn(nn.Module):
    """A module computing `fn(*inputs)` (no parameters)."""

    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, *xs):
        return self.fn(*xs)


class Attention(nn.Module):
    """Single-head attention written out: softmax(q k^T / sqrt(d)) v."""

    def forward(self, q, k, v):
        scores = torch.matmul(q, k.transpose(-2, -1)) / (q.shape[-1] ** 0.5)
        return torch.matmul(torch.softmax(scores, dim=-1), v)


class CausalAttention(nn.Module):
    def forward(self, q, k, v):
        n = q.shape[-2]
        scores = torch.matmul(q, k.transpose(-2, -1)) / (q.shape[-1] ** 0.5)
        mask = torch.ones(n, n, dtype=torch.bool).tril()
        scores = scores.masked_fill(~mask, float("-inf"))
        return torch.matmul(torch.softmax(scores, dim=-1), v)


class HeadSplitAttention(nn.Module):
    """A transformer's attention core on one fused qkv projection: split into q, k, v, each viewed as
    heads and transposed (strided views of one tensor), causal scaled-dot-product attention."""

    def __init__(self, heads: int):
        super().__init__()
        self.heads = heads

    def forward(self, qkv):
        q, k, v = qkv.chunk(3, dim=-1)
        b, n, c = q.shape
        q, k, v = (z.view(b, n, self.heads, c // self.heads).transpose(1, 2) for z in (q, k, v))
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.linspace(0.5, 1.5, dim))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


class Mlp(nn.Module):
    def __init__(self, d: int, h: int):
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(d, h), nn.Linear(h, d)

    def forward(self, x):
        return self.fc2(F.gelu(self.fc1(x)))


class ConvBlock(nn.Module):
    """conv3x3 - batchnorm (inference) - relu - maxpool."""

    def __init__(self, cin: int, cout: int):
        super().__init__()
        self.conv = nn.Conv2d(cin, cout, 3, padding=1, bias=False)
        self.bn = nn.BatchNorm2d(cout)
        with torch.no_grad():
            self.bn.running_mean.uniform_(-0.5, 0.5)
            self.bn.running_var.uniform_(0.5, 1.5)

    def forward(self, x):
        return F.max_pool2d(F.relu(self.bn(self.conv(x))), 2)


def _bn(kind, c):
    def make():
        m = kind(c)
        with torch.no_grad():
            m.running_mean.uniform_(-0.5, 0.5)
            m.running_var.uniform_(0.5, 1.5)
            m.weight.uniform_(0.5, 1.5)
            m.bias.uniform_(-0.5, 0.5)
        return m
    return make


def _fn(f):
    return lambda: Fn(f)


_MODELS = Path(__file__).resolve().parent / "models"


def _model(stem: str, cls: str, **kwargs):
    """A factory of the block `cls` of examples/torch/models/STEM.py (blocks in the style of real
    architectures), built with `kwargs` (its sizes)."""
    def make():
        spec = importlib.util.spec_from_file_location(f"lh_models_{stem}", _MODELS / f"{stem}.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return getattr(module, cls)(**kwargs)
    return make


def _e(factory, test, bench, dtype="f32", category=""):
    return Entry(factory, tuple(test), tuple(bench), dtype, category)


CORPUS: dict[str, Entry] = {
    # -- matmul variants
    "matmul": _e(_fn(torch.matmul), ["16x32xf32", "32x24xf32"], ["1024x1024xf32", "1024x1024xf32"], category="matmul"),
    "matmul_transposed_a": _e(_fn(lambda a, b: a.t() @ b), ["32x16xf32", "32x24xf32"],
                              ["1024x1024xf32", "1024x1024xf32"], category="matmul"),
    "matmul_transposed_b": _e(_fn(lambda a, b: a @ b.t()), ["16x32xf32", "24x32xf32"],
                              ["1024x1024xf32", "1024x1024xf32"], category="matmul"),
    "matmul_transposed_both": _e(_fn(lambda a, b: a.t() @ b.t()), ["32x16xf32", "24x32xf32"],
                                 ["1024x1024xf32", "1024x1024xf32"], category="matmul"),
    "matmul_irregular": _e(_fn(torch.matmul), ["7x13xf32", "13x5xf32"], ["1000x999xf32", "999x1001xf32"],
                           category="matmul"),
    "linear": _e(lambda: nn.Linear(32, 16), ["8x32xf32"], ["512x4096xf32"], category="matmul"),
    "linear_no_bias": _e(lambda: nn.Linear(32, 16, bias=False), ["8x32xf32"], ["512x4096xf32"], category="matmul"),
    "linear_3d": _e(lambda: nn.Linear(32, 16), ["2x8x32xf32"], ["8x512x1024xf32"], category="matmul"),
    "addmm": _e(_fn(lambda c, a, b: torch.addmm(c, a, b, beta=0.5, alpha=2.0)),
                ["16x24xf32", "16x32xf32", "32x24xf32"], ["1024x1024xf32"] * 3, category="matmul"),
    "bmm": _e(_fn(torch.bmm), ["4x8x16xf32", "4x16x8xf32"], ["32x256x256xf32", "32x256x256xf32"],
              category="matmul"),
    "batched_matmul_broadcast": _e(_fn(torch.matmul), ["2x3x8x16xf32", "16x8xf32"],
                                   ["8x16x128x256xf32", "256x128xf32"], category="matmul"),
    "matvec": _e(_fn(torch.mv), ["16x32xf32", "32xf32"], ["4096x4096xf32", "4096xf32"], category="matmul"),
    "vecmat": _e(_fn(lambda v, m: v @ m), ["32xf32", "32x16xf32"], ["4096xf32", "4096x4096xf32"],
                 category="matmul"),
    "mlp": _e(lambda: Mlp(32, 64), ["8x32xf32"], ["256x1024xf32"], category="matmul"),
    # -- convolutions
    "conv1d": _e(lambda: nn.Conv1d(4, 8, 3), ["2x4x32xf32"], ["16x64x1024xf32"], category="conv"),
    "conv2d_3x3": _e(lambda: nn.Conv2d(3, 8, 3, padding=1), ["1x3x16x16xf32"], ["8x64x56x56xf32"], category="conv"),
    "conv2d_1x1": _e(lambda: nn.Conv2d(8, 16, 1), ["2x8x8x8xf32"], ["8x256x28x28xf32"], category="conv"),
    "conv2d_strided": _e(lambda: nn.Conv2d(4, 8, 3, stride=2, padding=1), ["1x4x16x16xf32"],
                         ["8x64x112x112xf32"], category="conv"),
    "conv2d_depthwise": _e(lambda: nn.Conv2d(8, 8, 3, padding=1, groups=8), ["1x8x12x12xf32"],
                           ["8x128x56x56xf32"], category="conv"),
    "conv2d_no_bias_rect": _e(lambda: nn.Conv2d(3, 4, (3, 5), bias=False), ["2x3x9x11xf32"],
                              ["8x32x64x64xf32"], category="conv"),
    "conv_transpose2d": _e(lambda: nn.ConvTranspose2d(4, 6, 3, stride=2, padding=1, output_padding=1),
                           ["1x4x6x6xf32"], ["8x64x28x28xf32"], category="conv"),
    "conv_transpose1d": _e(lambda: nn.ConvTranspose1d(4, 3, 4, stride=2), ["2x4x10xf32"], ["16x64x512xf32"],
                           category="conv"),
    "conv_block": _e(lambda: ConvBlock(3, 8), ["1x3x16x16xf32"], ["8x64x56x56xf32"], category="conv"),
    # -- pooling
    "max_pool2d": _e(lambda: nn.MaxPool2d(2), ["1x4x8x8xf32"], ["16x64x112x112xf32"], category="pool"),
    "max_pool2d_3x3_s2": _e(lambda: nn.MaxPool2d(3, stride=2, padding=1), ["1x4x9x9xf32"],
                            ["16x64x112x112xf32"], category="pool"),
    "avg_pool2d": _e(lambda: nn.AvgPool2d(2), ["1x4x8x8xf32"], ["16x64x112x112xf32"], category="pool"),
    "max_pool1d": _e(lambda: nn.MaxPool1d(3, stride=2), ["2x4x17xf32"], ["16x64x4096xf32"], category="pool"),
    "adaptive_avg_pool2d": _e(lambda: nn.AdaptiveAvgPool2d(1), ["2x8x7x7xf32"], ["16x512x7x7xf32"],
                              category="pool"),
    # -- reductions
    "sum_dim": _e(_fn(lambda x: x.sum(dim=1)), ["8x16xf32"], ["4096x4096xf32"], category="reduction"),
    "sum_all": _e(_fn(lambda x: x.sum()), ["8x16xf32"], ["4096x4096xf32"], category="reduction"),
    "mean_dim": _e(_fn(lambda x: x.mean(dim=-1, keepdim=True)), ["4x8x16xf32"], ["64x256x1024xf32"],
                   category="reduction"),
    "max_dim": _e(_fn(lambda x: x.max(dim=1).values), ["8x16xf32"], ["4096x4096xf32"], category="reduction"),
    "amin": _e(_fn(lambda x: torch.amin(x, dim=0)), ["8x16xf32"], ["4096x4096xf32"], category="reduction"),
    "argmax": _e(_fn(lambda x: torch.argmax(x, dim=1)), ["8x16xf32"], ["4096x4096xf32"], category="reduction"),
    "argmin": _e(_fn(lambda x: torch.argmin(x, dim=0)), ["8x16xf32"], ["4096x4096xf32"], category="reduction"),
    "logsumexp": _e(_fn(lambda x: torch.logsumexp(x, dim=-1)), ["8x16xf32"], ["4096x4096xf32"],
                    category="reduction"),
    "var_mean": _e(_fn(lambda x: torch.var(x, dim=1)), ["8x16xf32"], ["4096x4096xf32"], category="reduction"),
    # -- normalizations and softmax
    "softmax": _e(lambda: nn.Softmax(dim=-1), ["8x32xf32"], ["4096x4096xf32"], category="norm"),
    "log_softmax": _e(lambda: nn.LogSoftmax(dim=-1), ["8x32xf32"], ["4096x4096xf32"], category="norm"),
    "softmax_dim0": _e(_fn(lambda x: torch.softmax(x, dim=0)), ["8x32xf32"], ["4096x4096xf32"], category="norm"),
    "layer_norm": _e(lambda: nn.LayerNorm(32), ["4x8x32xf32"], ["16x512x1024xf32"], category="norm"),
    "rms_norm": _e(lambda: RMSNorm(32), ["4x8x32xf32"], ["16x512x1024xf32"], category="norm"),
    "batch_norm2d": _e(_bn(nn.BatchNorm2d, 8), ["2x8x6x6xf32"], ["16x64x56x56xf32"], category="norm"),
    "batch_norm1d": _e(_bn(nn.BatchNorm1d, 16), ["8x16xf32"], ["1024x4096xf32"], category="norm"),
    "group_norm": _e(lambda: nn.GroupNorm(2, 8), ["2x8x5x5xf32"], ["16x64x56x56xf32"], category="norm"),
    # -- activations
    "relu": _e(lambda: nn.ReLU(), ["8x32xf32"], ["4096x4096xf32"], category="activation"),
    "gelu": _e(lambda: nn.GELU(), ["8x32xf32"], ["4096x4096xf32"], category="activation"),
    "gelu_tanh": _e(lambda: nn.GELU(approximate="tanh"), ["8x32xf32"], ["4096x4096xf32"], category="activation"),
    "tanh": _e(lambda: nn.Tanh(), ["8x32xf32"], ["4096x4096xf32"], category="activation"),
    "sigmoid": _e(lambda: nn.Sigmoid(), ["8x32xf32"], ["4096x4096xf32"], category="activation"),
    "swish": _e(lambda: nn.SiLU(), ["8x32xf32"], ["4096x4096xf32"], category="activation"),
    "leaky_relu": _e(lambda: nn.LeakyReLU(0.1), ["8x32xf32"], ["4096x4096xf32"], category="activation"),
    "elu": _e(lambda: nn.ELU(), ["8x32xf32"], ["4096x4096xf32"], category="activation"),
    "hardswish": _e(lambda: nn.Hardswish(), ["8x32xf32"], ["4096x4096xf32"], category="activation"),
    "softplus": _e(lambda: nn.Softplus(), ["8x32xf32"], ["4096x4096xf32"], category="activation"),
    # -- losses
    "mse_loss": _e(lambda: nn.MSELoss(), ["8x16xf32", "8x16xf32"], ["4096x4096xf32"] * 2, category="loss"),
    "l1_loss": _e(lambda: nn.L1Loss(), ["8x16xf32", "8x16xf32"], ["4096x4096xf32"] * 2, category="loss"),
    "smooth_l1_loss": _e(lambda: nn.SmoothL1Loss(), ["8x16xf32", "8x16xf32"], ["4096x4096xf32"] * 2,
                         category="loss"),
    "cross_entropy": _e(lambda: nn.CrossEntropyLoss(), ["8x10xf32", "8xi64[0:10]"],
                        ["4096x1000xf32", "4096xi64[0:1000]"], category="loss"),
    "nll_loss": _e(_fn(lambda x, t: F.nll_loss(F.log_softmax(x, -1), t)), ["8x10xf32", "8xi64[0:10]"],
                   ["4096x1000xf32", "4096xi64[0:1000]"], category="loss"),
    "bce_with_logits": _e(lambda: nn.BCEWithLogitsLoss(), ["8x16xf32", "8x16xf32"], ["4096x4096xf32"] * 2,
                          category="loss"),
    # -- broadcast elementwise
    "broadcast_add": _e(_fn(lambda a, b: a + b), ["4x8xf32", "8xf32"], ["4096x4096xf32", "4096xf32"],
                        category="elementwise"),
    "broadcast_mul": _e(_fn(lambda a, b: a * b), ["4x1x8xf32", "3x1xf32"], ["64x1x4096xf32", "64x1xf32"],
                        category="elementwise"),
    "broadcast_div": _e(_fn(lambda a, b: a / (b.abs() + 1.0)), ["4x8xf32", "4x1xf32"],
                        ["4096x4096xf32", "4096x1xf32"], category="elementwise"),
    "scalar_ops": _e(_fn(lambda x: (x * 3.0 - 1.0) ** 2 / 7.0), ["8x32xf32"], ["4096x4096xf32"],
                     category="elementwise"),
    "clamp": _e(_fn(lambda x: torch.clamp(x, -0.5, 0.5)), ["8x32xf32"], ["4096x4096xf32"], category="elementwise"),
    # -- data movement
    "transpose": _e(_fn(lambda x: x.transpose(0, 1).contiguous()), ["8x16xf32"], ["4096x4096xf32"],
                    category="layout"),
    "permute_4d": _e(_fn(lambda x: x.permute(0, 2, 3, 1).contiguous()), ["2x3x4x5xf32"], ["16x64x56x56xf32"],
                     category="layout"),
    "reshape_transpose": _e(_fn(lambda x: x.reshape(x.shape[0] // 2, 2, x.shape[1]).transpose(1, 2)
                                                .reshape(x.shape[0] // 2, 2 * x.shape[1])), ["8x16xf32"],
                            ["2048x8192xf32"], category="layout"),
    "concat_slice": _e(_fn(lambda a, b: torch.cat([a, b], dim=1)[:, 3:20]), ["4x8xf32", "4x16xf32"],
                       ["2048x2048xf32", "2048x2048xf32"], category="layout"),
    # -- attention
    "attention": _e(lambda: Attention(), ["2x8x16xf32"] * 3, ["16x512x64xf32"] * 3, category="attention"),
    "attention_causal": _e(lambda: CausalAttention(), ["2x8x16xf32"] * 3, ["16x512x64xf32"] * 3,
                           category="attention"),
    "sdpa": _e(_fn(F.scaled_dot_product_attention), ["1x2x8x16xf32"] * 3, ["4x8x512x64xf32"] * 3,
               category="attention"),
    "attention_head_split": _e(lambda: HeadSplitAttention(4), ["2x64x144xf32"], ["8x256x2304xf32"],
                               category="attention"),
    "transformer_layer": _e(lambda: nn.TransformerEncoderLayer(32, 2, 64, dropout=0.0, batch_first=True),
                            ["2x8x32xf32"], ["8x128x256xf32"], category="attention"),
    # -- blocks of real architectures (examples/torch/models): a GPT-2 block (hand-written causal attention,
    # GELU-tanh MLP, two residual adds of projections), a LLaMA block (RMSNorm, rotary embedding, SDPA, SwiGLU)
    "gpt2_block": _e(_model("gpt2_block", "GPT2Block", d=16, heads=2, ctx=8), ["2x8x16xf32"], ["4x128x256xf32"],
                     category="model"),
    "llama_block": _e(_model("llama_block", "LlamaBlock", d=16, heads=2, hidden=32, ctx=8), ["2x8x16xf32"],
                      ["4x128x256xf32"], category="model"),
    "wavenet_block": _e(_model("wavenet_block", "WaveNetBlock", c=8), ["2x8x32xf32"], ["8x64x4096xf32"],
                        category="model"),
    "t5_attention": _e(_model("t5_attention", "T5Attention", d=16, heads=2), ["2x12x16xf32"], ["8x256x512xf32"],
                       category="model"),
    "moe_block": _e(_model("moe_block", "TopKMoE", d=8, experts=4, hidden=16), ["10x8xf32"], ["2048x512xf32"],
                    category="model"),
    "fpn_block": _e(_model("fpn_block", "FPN", c=8), ["2x3x20x24xf32"], ["4x3x256x320xf32"], category="model"),
    "roberta_embeddings": _e(_model("roberta_embeddings", "RobertaEmbeddings"), ["2x9xi64[2:40]"],
                             ["32x512xi64[2:32000]"], category="model"),
    # -- whole small networks (examples/torch/models): test shapes are narrow versions of every stage; bench
    # shapes are the sizes a user would try (the file's get_inputs())
    "resnet18": _e(_model("resnet18", "ResNet18", width=4, classes=10), ["1x3x32x32xf32"], ["1x3x112x112xf32"],
                   category="whole-model"),
    "mobilenet_v3_small": _e(_model("mobilenet_v3_small", "MobileNetV3Small", width=0.25, classes=10, hidden=32),
                             ["1x3x32x32xf32"], ["1x3x224x224xf32"], category="whole-model"),
    "efficientnet_b0": _e(_model("efficientnet_b0", "EfficientNetB0", width=0.25, depth=0.34, classes=10),
                          ["1x3x32x32xf32"], ["1x3x224x224xf32"], category="whole-model"),
    "gpt2_lm": _e(_model("gpt2_lm", "GPT2LM", vocab=64, d=32, layers=2, heads=2, ctx=16), ["1x16xi64[0:64]"],
                  ["1x128xi64[0:8192]"], category="whole-model"),
    "bert_encoder": _e(_model("bert_encoder", "BertEncoder", vocab=64, d=32, layers=2, heads=2, ffn=64, max_pos=32),
                       ["2x12xi64[1:64]", "2x12xi64[0:2]"], ["2x64xi64[1:8192]", "2x64xi64[0:2]"],
                       category="whole-model"),
    "vit_tiny": _e(_model("vit_tiny", "ViTTiny", image=32, patch=8, d=32, depth=2, heads=2, classes=10),
                   ["1x3x32x32xf32"], ["1x3x224x224xf32"], category="whole-model"),
    "whisper_encoder": _e(_model("whisper_encoder", "WhisperEncoder", mels=16, frames=32, d=32, heads=2, layers=2),
                          ["1x16x32xf32"], ["1x80x1000xf32"], category="whole-model"),
    "unet": _e(_model("unet", "UNet", base=4, levels=3), ["1x3x32x32xf32"], ["1x3x128x128xf32"],
               category="whole-model"),
    "char_rnn_lm": _e(_model("char_rnn_lm", "CharRNNLM", vocab=32, emb=8, hidden=16), ["1x12xi64[0:32]"],
                      ["1x64xi64[0:96]"], category="whole-model"),
    "dlrm": _e(_model("dlrm", "DLRM", tables=4, rows=50, d=8, bottom=(16,), top=(16, 1)),
               ["8x13xf32", "8x4x3xi64[0:50]"], ["64x13xf32", "64x8x4xi64[0:1000]"], category="whole-model"),
    "gnn": _e(_model("gnn", "GraphSAGE", features=8, hidden=16, layers=2, classes=3), ["20x8xf32", "2x60xi64[0:20]"],
              ["200x32xf32", "2x800xi64[0:200]"], category="whole-model"),
    # new families: a LLaMA decoder LM (GQA, triu mask, tied odd-vocab head), ConvNeXt, a YOLOv8-style detector
    # body (C2f, SPPF, nearest upsample + concat), Swin (shifted windows + mask, patch merging), a TCN (dilated
    # causal conv1d), a ConvTranspose2d autoencoder, a Mixtral-style sparse MoE (one-hot dispatch), a Mamba LM
    # (selective scan unrolled over time)
    "llama_lm": _e(_model("llama_lm", "LlamaLM", vocab=1001, d=32, layers=2, heads=4, kv_heads=2, hidden=88, ctx=16),
                   ["1x16xi64[0:1001]"], ["1x128xi64[0:32003]"], category="whole-model"),
    "convnext_tiny": _e(_model("convnext_tiny", "ConvNeXt", depths=(1, 1, 2, 1), dims=(8, 16, 32, 64), classes=10),
                        ["1x3x64x64xf32"], ["1x3x224x224xf32"], category="whole-model"),
    "yolo_neck": _e(_model("yolo_neck", "YOLONeck", w=4, outputs=8), ["1x3x64x64xf32"], ["1x3x320x320xf32"],
                    category="whole-model"),
    "swin_tiny": _e(_model("swin_tiny", "SwinTiny", image=32, patch=2, dim=8, depths=(2, 2), heads=(1, 2), ws=4,
                           classes=10), ["1x3x32x32xf32"], ["1x3x224x224xf32"], category="whole-model"),
    "tcn": _e(_model("tcn", "TCN", inputs=4, channels=(8, 8, 16), classes=5), ["2x4x40xf32"], ["4x8x1024xf32"],
              category="whole-model"),
    "conv_autoencoder": _e(_model("conv_autoencoder", "ConvAutoencoder", widths=(4, 8), image=16, latent=8),
                           ["2x3x16x16xf32"], ["8x3x64x64xf32"], category="whole-model"),
    "moe_dispatch": _e(_model("moe_dispatch", "SparseMoE", d=16, experts=4, hidden=24, k=2), ["2x6x16xf32"],
                       ["2x128x256xf32"], category="whole-model"),
    "mamba_lm": _e(_model("mamba_lm", "MambaLM", vocab=101, d=16, layers=2, state=4), ["1x12xi64[0:101]"],
                   ["1x64xi64[0:1001]"], category="whole-model"),
    # more families: DistilBERT (padding mask from the ids, masked_fill -inf), a latent-diffusion UNet stage
    # (timestep embedding, GroupNorm + SiLU, self / cross attention over H*W), PointNet (1x1 Conv1d, T-net
    # bmm, global max), GAT (masked softmax over an adjacency), a NeRF MLP (sin/cos encoding, skip concat), a
    # Conformer (GLU, depthwise conv1d + BatchNorm1d), a seq2seq GRU with Luong attention and greedy argmax
    # feedback, ESPCN (pixel_shuffle), a linear-attention / retention LM (cumsum, elu+1, decay matrix), CLIP
    # (F.normalize, logit_scale.exp(), eot gather by argmax)
    "distilbert_classifier": _e(_model("distilbert_classifier", "DistilBertClassifier", vocab=64, d=32, layers=2,
                                       heads=2, ffn=64, max_pos=32, classes=3), ["2x12xi64[0:8]"],
                                ["4x64xi64[0:64]"], category="whole-model"),
    "diffusion_unet_block": _e(_model("diffusion_unet_block", "DiffusionUNetStage", cin=4, c=16, heads=2,
                                      context_dim=24, groups=4), ["1x4x8x8xf32", "1xi64[0:1000]", "1x5x24xf32"],
                               ["2x4x32x32xf32", "2xi64[0:1000]", "2x16x96xf32"], category="whole-model"),
    "pointnet": _e(_model("pointnet", "PointNet", width=64, classes=5), ["4x3x32xf32"], ["8x3x1024xf32"],
                   category="whole-model"),
    "gat": _e(_model("gat", "GAT", features=8, hidden=4, heads=2, layers=2, classes=3), ["20x8xf32", "20x20xf32"],
              ["512x64xf32", "512x512xf32"], category="whole-model"),
    "nerf_mlp": _e(_model("nerf_mlp", "NeRF", width=32, depth=4, skip=2, point_freqs=4, dir_freqs=2),
                   ["16x3xf32", "16x3xf32"], ["4096x3xf32", "4096x3xf32"], category="whole-model"),
    "conformer_block": _e(_model("conformer_block", "Conformer", mels=16, d=16, heads=2, layers=2, kernel=7,
                                 vocab=20), ["1x16x40xf32"], ["1x80x400xf32"], category="whole-model"),
    "seq2seq_attention": _e(_model("seq2seq_attention", "Seq2Seq", src_vocab=50, tgt_vocab=40, emb=8, hidden=16,
                                   steps=3), ["2x4xi64[0:50]"], ["8x32xi64[0:4000]"], category="whole-model"),
    "espcn": _e(_model("espcn", "ESPCN", channels=3, scale=3, features=16), ["1x3x8x8xf32"], ["1x3x128x128xf32"],
                category="whole-model"),
    "retnet_block": _e(_model("retnet_block", "RetNetLM", vocab=64, d=16, heads=2, layers=1, ffn=24),
                       ["1x10xi64[0:64]"], ["2x128xi64[0:2048]"], category="whole-model"),
    "clip_dual_encoder": _e(_model("clip_dual_encoder", "CLIP", image=16, patch=8, vision_d=16, vocab=50, ctx=8,
                                   text_d=16, heads=2, layers=1, embed=12), ["2x3x16x16xf32", "3x8xi64[0:50]"],
                            ["4x3x64x64xf32", "6x16xi64[0:1000]"], category="whole-model"),
    # round 4 (examples/torch/models/round4.py, docs/models-round4.md): DeepLabV3 ASPP (bilinear align_corners=True),
    # ECA-Net, a Focus stem (pixel_unshuffle), a VQ-VAE quantizer, a scatter / index_add MoE, a GPT-J decode step
    # (interleaved rotary, KV cache, multi-query), LSTMCell + GRUCell unrolled, RealNVP couplings, label smoothing
    # + focal loss, QAT fake quant, CRF Viterbi, a spatial transformer (affine_grid + grid_sample), top-k / top-p
    # logits, DeepFM (EmbeddingBag mean), a SegFormer block, a YOLO box decoder, an ArcFace head (acos, cdist)
    "deeplab_aspp": _e(_model("round4", "ASPP", cin=8, c=8), ["1x8x12x12xf32"], ["1x64x32x32xf32"], category="model"),
    "eca_block": _e(_model("round4", "ECABlock", c=16), ["2x16x8x8xf32"], ["8x64x28x28xf32"], category="model"),
    "focus_shuffle": _e(_model("round4", "FocusShuffle"), ["1x3x16x16xf32"], ["1x3x128x128xf32"], category="model"),
    "vq_quantizer": _e(_model("round4", "VQQuantizer"), ["2x3x8x8xf32"], ["8x3x64x64xf32"], category="model"),
    "scatter_moe": _e(_model("round4", "ScatterMoE"), ["2x6x16xf32"], ["4x64x128xf32"], category="model"),
    "gptj_decode_step": _e(_model("round4", "GPTJDecodeStep"), ["1x2x32xf32", "1x1x7x8xf32", "1x1x7x8xf32"],
                           ["1x1x256xf32", "1x1x63x32xf32", "1x1x63x32xf32"], category="model"),
    "rnn_cells": _e(_model("round4", "RNNCells"), ["2x5x6xf32"], ["16x8x32xf32"], category="rnn"),
    "realnvp": _e(_model("round4", "RealNVP"), ["2x2x8x8xf32"], ["16x3x32x32xf32"], category="model"),
    "smoothed_loss_head": _e(_model("round4", "SmoothedHead"), ["2x6x24xf32", "2x6xi64[0:10]"],
                             ["8x64x256xf32", "8x64xi64[0:1000]"], category="loss"),
    "fake_quant_mlp": _e(_model("round4", "FakeQuantMLP"), ["4x32xf32"], ["256x256xf32"], category="model"),
    "crf_viterbi": _e(_model("round4", "CRFViterbi"), ["2x6x8xf32"], ["32x20x64xf32"], category="model"),
    "spatial_transformer": _e(_model("round4", "SpatialTransformer"), ["2x1x16x16xf32"], ["64x1x28x28xf32"],
                              category="model"),
    "top_p_logits": _e(_model("round4", "TopPLogits", top_k=4), ["3x16xf32"], ["8x1024xf32"], category="sort"),
    "deepfm": _e(_model("round4", "DeepFM"), ["6x5xf32", "6x4x3xi64[0:40]"], ["256x13xf32", "256x8x4xi64[0:1000]"],
                 category="model"),
    "segformer_block": _e(_model("round4", "SegFormerBlock"), ["1x16x8x8xf32"], ["1x32x32x32xf32"], category="model"),
    "yolo_decode": _e(_model("round4", "YOLODecode"), ["1x8x4x4xf32"], ["1x32x8x8xf32"], category="model"),
    "arcface_head": _e(_model("round4", "ArcFace"), ["6x16xf32", "6xi64[0:10]"], ["256x16xf32", "256xi64[0:10]"],
                       category="loss"),
    # -- embedding, scans, sorting, masks
    "embedding": _e(lambda: nn.Embedding(50, 16), ["4x8xi64[0:50]"], ["64x512xi64[0:32000]"], category="index"),
    "gather": _e(_fn(lambda x, i: torch.gather(x, 1, i)), ["4x16xf32", "4x5xi64[0:16]"],
                 ["1024x1024xf32", "1024x256xi64[0:1024]"], category="index"),
    "cumsum": _e(_fn(lambda x: torch.cumsum(x, dim=1)), ["4x16xf32"], ["1024x4096xf32"], category="scan"),
    "cumsum_dim0": _e(_fn(lambda x: torch.cumsum(x, dim=0)), ["13x4xf32"], ["4096x1024xf32"], category="scan"),
    "cumprod": _e(_fn(lambda x: torch.cumprod(1.0 + 0.1 * x, dim=-1)), ["4x10xf32"], ["1024x1024xf32"],
                  category="scan"),
    "logcumsumexp": _e(_fn(lambda x: torch.logcumsumexp(x, dim=-1)), ["4x40xf32"], ["1024x1024xf32"],
                       category="scan"),
    "cummax_dim0": _e(_fn(lambda x: torch.cummax(x, dim=0)), ["40x5xf32"], ["1024x1024xf32"], category="scan"),
    "sort": _e(_fn(lambda x: torch.sort(x, dim=-1)), ["3x8xf32"], ["1024x1024xf32"], category="sort"),
    "sort_descending_values": _e(_fn(lambda x: torch.sort(x, dim=0, descending=True).values), ["6x3xf32"],
                                 ["1024x1024xf32"], category="sort"),
    "argsort": _e(_fn(lambda x: torch.argsort(x, dim=-1)), ["3x6xf32"], ["1024x1024xf32"], category="sort"),
    "topk": _e(_fn(lambda x: torch.topk(x, 3, dim=-1)), ["3x8xf32"], ["1024x1024xf32"], category="sort"),
    "where_mask": _e(_fn(lambda x: torch.where(x > 0, x, 0.1 * x)), ["8x32xf32"], ["4096x4096xf32"],
                     category="mask"),
    "masked_fill": _e(_fn(lambda x, y: x.masked_fill(y > 0.5, 0.0)), ["8x32xf32", "8x32xf32"],
                      ["4096x4096xf32"] * 2, category="mask"),
    "compare_to_float": _e(_fn(lambda x, y: (x > y).float() + (x == x).float()), ["8x32xf32", "8x32xf32"],
                           ["4096x4096xf32"] * 2, category="mask"),
    # -- more of what real models use
    "interpolate_bilinear": _e(_fn(lambda x: F.interpolate(x, scale_factor=2, mode="bilinear")), ["1x2x4x4xf32"],
                               ["8x64x56x56xf32"], category="layout"),
    "interpolate_nearest": _e(_fn(lambda x: F.interpolate(x, scale_factor=2, mode="nearest")), ["1x2x4x4xf32"],
                              ["8x64x56x56xf32"], category="layout"),
    "pixel_shuffle": _e(lambda: nn.PixelShuffle(2), ["1x8x3x3xf32"], ["8x256x28x28xf32"], category="layout"),
    "pad_reflect": _e(_fn(lambda x: F.pad(x, (1, 2, 1, 0), mode="reflect")), ["1x2x5x5xf32"], ["8x64x56x56xf32"],
                      category="layout"),
    "flip_roll": _e(_fn(lambda x: torch.flip(x, [1]) + torch.roll(x, 2, 1)), ["3x6xf32"], ["4096x4096xf32"],
                    category="layout"),
    "index_select": _e(_fn(lambda x, i: torch.index_select(x, 0, i)), ["8x4xf32", "3xi64[0:8]"],
                       ["32000x1024xf32", "512xi64[0:32000]"], category="index"),
    "einsum_bij_bjk": _e(_fn(lambda a, b: torch.einsum("bij,bjk->bik", a, b)), ["2x3x4xf32", "2x4x5xf32"],
                         ["32x256x256xf32", "32x256x256xf32"], category="matmul"),
    "matmul_i64": _e(_fn(torch.matmul), ["4x5xi64[-3:3]", "5x6xi64[-3:3]"], ["512x512xi64[-3:3]"] * 2,
                     category="matmul"),
    "tanh_f64": _e(_fn(lambda x: torch.tanh(x) * 2), ["4x8xf64"], ["4096x4096xf64"], category="activation"),
    "conv2d_grouped_dilated": _e(lambda: nn.Conv2d(4, 8, 3, groups=2, dilation=2), ["1x4x9x9xf32"],
                                 ["8x64x56x56xf32"], category="conv"),
    "conv3d": _e(lambda: nn.Conv3d(2, 3, 3), ["1x2x5x5x5xf32"], ["4x16x32x32x32xf32"], category="conv"),
    "unfold": _e(_fn(lambda x: F.unfold(x, 2)), ["1x2x4x4xf32"], ["8x64x56x56xf32"], category="conv"),
    "instance_norm": _e(lambda: nn.InstanceNorm2d(3), ["2x3x5x5xf32"], ["16x64x56x56xf32"], category="norm"),
    "mish": _e(lambda: nn.Mish(), ["4x8xf32"], ["4096x4096xf32"], category="activation"),
    "tril": _e(_fn(torch.tril), ["5x5xf32"], ["4096x4096xf32"], category="mask"),
    "one_hot": _e(_fn(lambda i: F.one_hot(i, 6).float()), ["3xi64[0:6]"], ["4096xi64[0:1000]"], category="index"),
    "lstm": _e(lambda: nn.LSTM(4, 8, batch_first=True), ["2x5x4xf32"], ["16x128x256xf32"], category="rnn"),
    "gru": _e(lambda: nn.GRU(4, 8, batch_first=True), ["2x5x4xf32"], ["16x128x256xf32"], category="rnn"),
    "multihead_attention": _e(lambda: nn.MultiheadAttention(16, 2, batch_first=True), ["2x5x16xf32"] * 3,
                              ["8x128x256xf32"] * 3, category="attention"),
    # -- bf16
    "matmul_bf16": _e(_fn(torch.matmul), ["16x32xf32", "32x24xf32"], ["1024x1024xf32", "1024x1024xf32"], "bf16",
                      category="matmul"),
    "linear_bf16": _e(lambda: nn.Linear(32, 16), ["8x32xf32"], ["512x4096xf32"], "bf16", category="matmul"),
    "conv2d_bf16": _e(lambda: nn.Conv2d(3, 8, 3, padding=1), ["1x3x8x8xf32"], ["8x64x56x56xf32"], "bf16",
                      category="conv"),
    "softmax_bf16": _e(lambda: nn.Softmax(dim=-1), ["8x32xf32"], ["4096x4096xf32"], "bf16", category="norm"),
    "layer_norm_bf16": _e(lambda: nn.LayerNorm(32), ["4x32xf32"], ["4096x4096xf32"], "bf16", category="norm"),
    "gelu_bf16": _e(lambda: nn.GELU(), ["8x32xf32"], ["4096x4096xf32"], "bf16", category="activation"),
    "add_relu_bf16": _e(_fn(lambda a, b: torch.relu(a + b)), ["8x32xf32", "32xf32"], ["4096x4096xf32", "4096xf32"],
                        "bf16", category="elementwise"),
}

# modules whose parameters fix the feature dimensions: their bench-size twins
_BENCH_FACTORIES: dict[str, Callable[[], nn.Module]] = {
    "linear": lambda: nn.Linear(4096, 4096), "linear_no_bias": lambda: nn.Linear(4096, 4096, bias=False),
    "linear_3d": lambda: nn.Linear(1024, 1024), "mlp": lambda: Mlp(1024, 4096),
    "conv1d": lambda: nn.Conv1d(64, 64, 3), "conv2d_3x3": lambda: nn.Conv2d(64, 64, 3, padding=1),
    "conv2d_1x1": lambda: nn.Conv2d(256, 256, 1), "conv2d_strided": lambda: nn.Conv2d(64, 64, 3, stride=2, padding=1),
    "conv2d_depthwise": lambda: nn.Conv2d(128, 128, 3, padding=1, groups=128),
    "conv2d_no_bias_rect": lambda: nn.Conv2d(32, 32, (3, 5), bias=False),
    "conv_transpose2d": lambda: nn.ConvTranspose2d(64, 64, 3, stride=2, padding=1, output_padding=1),
    "conv_transpose1d": lambda: nn.ConvTranspose1d(64, 64, 4, stride=2), "conv_block": lambda: ConvBlock(64, 64),
    "layer_norm": lambda: nn.LayerNorm(1024), "rms_norm": lambda: RMSNorm(1024),
    "batch_norm2d": _bn(nn.BatchNorm2d, 64), "batch_norm1d": _bn(nn.BatchNorm1d, 4096),
    "group_norm": lambda: nn.GroupNorm(8, 64),
    "transformer_layer": lambda: nn.TransformerEncoderLayer(256, 4, 1024, dropout=0.0, batch_first=True),
    "embedding": lambda: nn.Embedding(32000, 512), "conv2d_grouped_dilated": lambda: nn.Conv2d(64, 64, 3, groups=2,
                                                                                               dilation=2),
    "conv3d": lambda: nn.Conv3d(16, 16, 3), "instance_norm": lambda: nn.InstanceNorm2d(64),
    "lstm": lambda: nn.LSTM(256, 256, batch_first=True), "gru": lambda: nn.GRU(256, 256, batch_first=True),
    "multihead_attention": lambda: nn.MultiheadAttention(256, 4, batch_first=True),
    "attention_head_split": lambda: HeadSplitAttention(12),
    "linear_bf16": lambda: nn.Linear(4096, 4096), "conv2d_bf16": lambda: nn.Conv2d(64, 64, 3, padding=1),
    "layer_norm_bf16": lambda: nn.LayerNorm(4096),
    "gpt2_block": _model("gpt2_block", "GPT2Block", d=256, heads=4, ctx=128),
    "wavenet_block": _model("wavenet_block", "WaveNetBlock", c=64),
    "t5_attention": _model("t5_attention", "T5Attention", d=512, heads=8, max_dist=128),
    "moe_block": _model("moe_block", "TopKMoE", d=512, experts=8, hidden=1024),
    "fpn_block": _model("fpn_block", "FPN", c=64),
    "roberta_embeddings": _model("roberta_embeddings", "RobertaEmbeddings", vocab=32000, d=768, max_pos=514),
    "llama_block": _model("llama_block", "LlamaBlock", d=256, heads=4, hidden=688, ctx=128),
    "resnet18": _model("resnet18", "ResNet18"), "mobilenet_v3_small": _model("mobilenet_v3_small", "MobileNetV3Small"),
    "efficientnet_b0": _model("efficientnet_b0", "EfficientNetB0"), "gpt2_lm": _model("gpt2_lm", "GPT2LM"),
    "bert_encoder": _model("bert_encoder", "BertEncoder"), "vit_tiny": _model("vit_tiny", "ViTTiny"),
    "whisper_encoder": _model("whisper_encoder", "WhisperEncoder"), "unet": _model("unet", "UNet"),
    "char_rnn_lm": _model("char_rnn_lm", "CharRNNLM"), "dlrm": _model("dlrm", "DLRM"), "gnn": _model("gnn", "GraphSAGE"),
    # (ConvNeXt-atto's widths and a Swin of width 48: at ConvNeXt-tiny / Swin-tiny's 28M parameters the
    # session's IR history, weights in every step's module, passed 13 GB in `select --apply`)
    "llama_lm": _model("llama_lm", "LlamaLM"),
    "convnext_tiny": _model("convnext_tiny", "ConvNeXt", depths=(2, 2, 6, 2), dims=(40, 80, 160, 320)),
    "yolo_neck": _model("yolo_neck", "YOLONeck"), "tcn": _model("tcn", "TCN"),
    "swin_tiny": _model("swin_tiny", "SwinTiny", dim=48, heads=(2, 4, 8, 16)),
    "conv_autoencoder": _model("conv_autoencoder", "ConvAutoencoder"), "moe_dispatch": _model("moe_dispatch", "SparseMoE"),
    "mamba_lm": _model("mamba_lm", "MambaLM"),
    "distilbert_classifier": _model("distilbert_classifier", "DistilBertClassifier", vocab=64),
    "diffusion_unet_block": _model("diffusion_unet_block", "DiffusionUNetStage"),
    "pointnet": _model("pointnet", "PointNet"), "gat": _model("gat", "GAT"), "nerf_mlp": _model("nerf_mlp", "NeRF"),
    "conformer_block": _model("conformer_block", "Conformer"), "seq2seq_attention": _model("seq2seq_attention", "Seq2Seq"),
    "espcn": _model("espcn", "ESPCN"), "retnet_block": _model("retnet_block", "RetNetLM"),
    "clip_dual_encoder": _model("clip_dual_encoder", "CLIP"),
    "deeplab_aspp": _model("round4", "ASPP", cin=64, c=32), "eca_block": _model("round4", "ECABlock", c=64),
    "focus_shuffle": _model("round4", "FocusShuffle", c=32), "vq_quantizer": _model("round4", "VQQuantizer", d=32, codes=256),
    "scatter_moe": _model("round4", "ScatterMoE", d=128, experts=8, hidden=256),
    "gptj_decode_step": _model("round4", "GPTJDecodeStep", d=256, heads=8, past=63, rotary=16),
    "rnn_cells": _model("round4", "RNNCells", inputs=32, hidden=128, classes=10),
    "realnvp": _model("round4", "RealNVP", c=3, hidden=32, size=32),
    "smoothed_loss_head": _model("round4", "SmoothedHead", d=256, classes=1000),
    "fake_quant_mlp": _model("round4", "FakeQuantMLP", d=256, hidden=512, classes=10),
    "crf_viterbi": _model("round4", "CRFViterbi", inputs=64, tags=9),
    "spatial_transformer": _model("round4", "SpatialTransformer", size=28), "top_p_logits": _model("round4", "TopPLogits"),
    "deepfm": _model("round4", "DeepFM", fields=8, rows=1000, d=16, dense=13, hidden=64),
    "segformer_block": _model("round4", "SegFormerBlock", c=32, heads=1, sr=4), "yolo_decode": _model("round4", "YOLODecode", c=32),
    # the bench's class indices go up to 1000: as many classes
    "one_hot": _fn(lambda i: F.one_hot(i, 1000).float()),
}
CORPUS = {name: (Entry(e.factory, e.test_shapes, e.bench_shapes, e.dtype, e.category, _BENCH_FACTORIES[name])
                 if name in _BENCH_FACTORIES else e) for name, e in CORPUS.items()}


if __name__ == "__main__":
    for name, e in CORPUS.items():
        print(f"{name:<26} {e.dtype:<5} {e.category:<11} test {' '.join(e.test_shapes):<40} "
              f"bench {' '.join(e.bench_shapes)}")
    print(f"{len(CORPUS)} entries")
