"""Real architectures at realistic sizes, none of them in examples/torch/corpus.py or bench/hf_defs.py, for
`bench/hf_models.py --defs bench/real_defs.py` (docs/models-round13-real.md).

Runs under the torch Python only. The torchvision-style networks are written inline (torchvision is not a
dependency: the same layers, widths and strides as torchvision's definitions, random init); the text models
are `transformers` classes from configs with real widths and few layers (no weights downloaded). MODELS maps
a class name to its input specs (import's syntax). `LH_REAL_SIZE=small` shrinks every input (for a quick
smoke run).
"""
from __future__ import annotations

import os

import torch
import torch.nn as nn
import torch.nn.functional as F

SMALL = os.environ.get("LH_REAL_SIZE") == "small"
IMG = 64 if SMALL else 224
SEQ = 32 if SMALL else 128

MODELS: dict[str, str] = {}


def _reg(spec):
    def deco(cls):
        MODELS[cls.__name__] = spec
        return cls
    return deco


def _cbr(cin, cout, k, s=1, p=0, groups=1, relu=True):
    layers = [nn.Conv2d(cin, cout, k, s, p, groups=groups, bias=False), nn.BatchNorm2d(cout)]
    if relu:
        layers.append(nn.ReLU(inplace=True))
    return nn.Sequential(*layers)


def _randomize_bn(module):
    """BatchNorm statistics and affine parameters away from 0/1 (eval mode: a trained model's look)."""
    g = torch.Generator().manual_seed(1)
    for m in module.modules():
        if isinstance(m, (nn.BatchNorm2d, nn.BatchNorm1d)):
            c = m.num_features
            m.running_mean.copy_(torch.rand(c, generator=g) * 0.2 - 0.1)
            m.running_var.copy_(torch.rand(c, generator=g) * 0.5 + 0.75)
            m.weight.data.copy_(torch.rand(c, generator=g) * 0.5 + 0.75)
            m.bias.data.copy_(torch.rand(c, generator=g) * 0.2 - 0.1)
    return module


# -- DenseNet-121 through its second dense block (torchvision's _DenseLayer / _Transition) ---------------------
class _DenseLayer(nn.Module):
    def __init__(self, cin, growth=32, bn_size=4):
        super().__init__()
        self.norm1, self.conv1 = nn.BatchNorm2d(cin), nn.Conv2d(cin, bn_size * growth, 1, bias=False)
        self.norm2 = nn.BatchNorm2d(bn_size * growth)
        self.conv2 = nn.Conv2d(bn_size * growth, growth, 3, padding=1, bias=False)

    def forward(self, feats):
        x = torch.cat(feats, 1)
        x = self.conv1(F.relu(self.norm1(x)))
        return self.conv2(F.relu(self.norm2(x)))


class _DenseBlock(nn.Module):
    def __init__(self, n, cin, growth=32):
        super().__init__()
        self.layers = nn.ModuleList(_DenseLayer(cin + i * growth, growth) for i in range(n))

    def forward(self, x):
        feats = [x]
        for layer in self.layers:
            feats.append(layer(feats))
        return torch.cat(feats, 1)


@_reg(f"1x3x{IMG}x{IMG}xf32")
class DenseNet121Head(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 64, 7, 2, 3, bias=False), nn.BatchNorm2d(64), nn.ReLU(inplace=True),
                                  nn.MaxPool2d(3, 2, 1))
        self.block1 = _DenseBlock(6, 64)
        self.trans1 = nn.Sequential(nn.BatchNorm2d(256), nn.ReLU(inplace=True), nn.Conv2d(256, 128, 1, bias=False),
                                    nn.AvgPool2d(2, 2))
        self.block2 = _DenseBlock(12, 128)
        self.norm = nn.BatchNorm2d(512)
        _randomize_bn(self)

    def forward(self, x):
        x = self.block2(self.trans1(self.block1(self.stem(x))))
        return F.adaptive_avg_pool2d(F.relu(self.norm(x)), 1).flatten(1)


# -- RegNetX-400MF (torchvision's ResBottleneckBlock, group width 16, bottleneck ratio 1) ------------------------
class _RegBlock(nn.Module):
    def __init__(self, cin, cout, stride, group_width=16, se=False):
        super().__init__()
        self.a = _cbr(cin, cout, 1)
        self.b = _cbr(cout, cout, 3, stride, 1, groups=cout // group_width)
        self.se = (nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Conv2d(cout, cin // 4, 1), nn.ReLU(),
                                 nn.Conv2d(cin // 4, cout, 1), nn.Sigmoid()) if se else None)
        self.c = _cbr(cout, cout, 1, relu=False)
        self.proj = _cbr(cin, cout, 1, stride, relu=False) if (cin != cout or stride != 1) else None

    def forward(self, x):
        y = self.b(self.a(x))
        if self.se is not None:
            y = y * self.se(y)
        y = self.c(y)
        return F.relu((x if self.proj is None else self.proj(x)) + y)


class _RegNet(nn.Module):
    widths, depths, gw, se = (32, 64, 160, 400), (1, 2, 7, 12), 16, False

    def __init__(self):
        super().__init__()
        self.stem = _cbr(3, 32, 3, 2, 1)
        blocks, cin = [], 32
        for w, d in zip(self.widths, self.depths):
            for i in range(d):
                blocks.append(_RegBlock(cin, w, 2 if i == 0 else 1, self.gw, self.se))
                cin = w
        self.trunk = nn.Sequential(*blocks)
        self.fc = nn.Linear(cin, 1000)
        _randomize_bn(self)

    def forward(self, x):
        return self.fc(self.trunk(self.stem(x)).mean((2, 3)))


@_reg(f"1x3x{IMG}x{IMG}xf32")
class RegNetX400MF(_RegNet):
    pass


@_reg(f"1x3x{IMG}x{IMG}xf32")
class RegNetY400MF(_RegNet):
    widths, depths, gw, se = (48, 104, 208, 440), (1, 3, 6, 6), 8, True


# -- ShuffleNetV2 x1.0 (torchvision's InvertedResidual) ------------------------------------------------------
def _shuffle(x, groups=2):
    b, c, h, w = x.shape
    return x.view(b, groups, c // groups, h, w).transpose(1, 2).contiguous().view(b, c, h, w)


class _ShuffleUnit(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.stride = stride
        bf = cout // 2
        if stride > 1:
            self.branch1 = nn.Sequential(_cbr(cin, cin, 3, stride, 1, groups=cin, relu=False), _cbr(cin, bf, 1))
        self.branch2 = nn.Sequential(_cbr(cin if stride > 1 else bf, bf, 1),
                                     _cbr(bf, bf, 3, stride, 1, groups=bf, relu=False), _cbr(bf, bf, 1))

    def forward(self, x):
        if self.stride == 1:
            x1, x2 = x.chunk(2, dim=1)
            out = torch.cat((x1, self.branch2(x2)), 1)
        else:
            out = torch.cat((self.branch1(x), self.branch2(x)), 1)
        return _shuffle(out)


@_reg(f"1x3x{IMG}x{IMG}xf32")
class ShuffleNetV2(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(_cbr(3, 24, 3, 2, 1), nn.MaxPool2d(3, 2, 1))
        layers, cin = [], 24
        for cout, n in ((116, 4), (232, 8), (464, 4)):
            for i in range(n):
                layers.append(_ShuffleUnit(cin, cout, 2 if i == 0 else 1))
                cin = cout
        self.stages = nn.Sequential(*layers)
        self.conv5 = _cbr(cin, 1024, 1)
        self.fc = nn.Linear(1024, 1000)
        _randomize_bn(self)

    def forward(self, x):
        return self.fc(self.conv5(self.stages(self.stem(x))).mean((2, 3)))


# -- SqueezeNet 1.1 (Fire modules, ceil-mode max pools) ------------------------------------------------------
class _Fire(nn.Module):
    def __init__(self, cin, sq, e1, e3):
        super().__init__()
        self.squeeze = nn.Conv2d(cin, sq, 1)
        self.e1, self.e3 = nn.Conv2d(sq, e1, 1), nn.Conv2d(sq, e3, 3, padding=1)

    def forward(self, x):
        x = F.relu(self.squeeze(x))
        return torch.cat([F.relu(self.e1(x)), F.relu(self.e3(x))], 1)


@_reg(f"1x3x{IMG}x{IMG}xf32")
class SqueezeNet11(nn.Module):
    def __init__(self):
        super().__init__()
        pool = lambda: nn.MaxPool2d(3, 2, ceil_mode=True)  # noqa: E731
        self.features = nn.Sequential(
            nn.Conv2d(3, 64, 3, 2), nn.ReLU(inplace=True), pool(), _Fire(64, 16, 64, 64), _Fire(128, 16, 64, 64),
            pool(), _Fire(128, 32, 128, 128), _Fire(256, 32, 128, 128), pool(), _Fire(256, 48, 192, 192),
            _Fire(384, 48, 192, 192), _Fire(384, 64, 256, 256), _Fire(512, 64, 256, 256))
        self.classifier = nn.Sequential(nn.Conv2d(512, 1000, 1), nn.ReLU(inplace=True), nn.AdaptiveAvgPool2d(1))

    def forward(self, x):
        return self.classifier(self.features(x)).flatten(1)


# -- GoogLeNet inception 3a, 3b, pool, 4a (torchvision's Inception / BasicConv2d, eps 1e-3) ------------------------
class _BasicConv(nn.Sequential):
    def __init__(self, cin, cout, k, p=0):
        super().__init__(nn.Conv2d(cin, cout, k, padding=p, bias=False), nn.BatchNorm2d(cout, eps=0.001),
                         nn.ReLU(inplace=True))


class _Inception(nn.Module):
    def __init__(self, cin, c1, c3r, c3, c5r, c5, pp):
        super().__init__()
        self.b1 = _BasicConv(cin, c1, 1)
        self.b2 = nn.Sequential(_BasicConv(cin, c3r, 1), _BasicConv(c3r, c3, 3, 1))
        self.b3 = nn.Sequential(_BasicConv(cin, c5r, 1), _BasicConv(c5r, c5, 3, 1))
        self.b4 = nn.Sequential(nn.MaxPool2d(3, 1, 1, ceil_mode=True), _BasicConv(cin, pp, 1))

    def forward(self, x):
        return torch.cat([self.b1(x), self.b2(x), self.b3(x), self.b4(x)], 1)


@_reg(f"1x192x{IMG // 8}x{IMG // 8}xf32")
class InceptionBlocks(nn.Module):
    def __init__(self):
        super().__init__()
        self.i3a = _Inception(192, 64, 96, 128, 16, 32, 32)
        self.i3b = _Inception(256, 128, 128, 192, 32, 96, 64)
        self.pool = nn.MaxPool2d(3, 2, ceil_mode=True)
        self.i4a = _Inception(480, 192, 96, 208, 16, 48, 64)
        _randomize_bn(self)

    def forward(self, x):
        return self.i4a(self.pool(self.i3b(self.i3a(x))))


# -- ViT-B/16: patch embedding, class token, 2 encoder layers at 197 tokens (torchvision's EncoderBlock) ----------
class _ViTLayer(nn.Module):
    def __init__(self, d=768, heads=12, mlp=3072):
        super().__init__()
        self.ln_1, self.ln_2 = nn.LayerNorm(d, eps=1e-6), nn.LayerNorm(d, eps=1e-6)
        self.attn = nn.MultiheadAttention(d, heads, batch_first=True)
        self.mlp = nn.Sequential(nn.Linear(d, mlp), nn.GELU(), nn.Linear(mlp, d))

    def forward(self, x):
        y = self.ln_1(x)
        x = x + self.attn(y, y, y, need_weights=False)[0]
        return x + self.mlp(self.ln_2(x))


@_reg(f"1x3x{IMG}x{IMG}xf32")
class ViTB16(nn.Module):
    def __init__(self, layers=2):
        super().__init__()
        n = (IMG // 16) ** 2 + 1
        self.conv_proj = nn.Conv2d(3, 768, 16, 16)
        self.cls = nn.Parameter(torch.randn(1, 1, 768) * 0.02)
        self.pos = nn.Parameter(torch.randn(1, n, 768) * 0.02)
        self.layers = nn.Sequential(*[_ViTLayer() for _ in range(layers)])
        self.ln = nn.LayerNorm(768, eps=1e-6)

    def forward(self, x):
        x = self.conv_proj(x).flatten(2).transpose(1, 2)
        x = torch.cat([self.cls.expand(x.shape[0], -1, -1), x], 1) + self.pos
        return self.ln(self.layers(x))[:, 0]


# -- wav2vec2-base feature encoder (conv1d stack, group norm on the first layer) and projection --------------------
@_reg("1x4000xf32" if SMALL else "1x16000xf32")
class Wav2Vec2Features(nn.Module):
    def __init__(self):
        super().__init__()
        specs = [(10, 5)] + [(3, 2)] * 4 + [(2, 2)] * 2
        self.convs = nn.ModuleList(nn.Conv1d(1 if i == 0 else 512, 512, k, s, bias=False)
                                   for i, (k, s) in enumerate(specs))
        self.gn = nn.GroupNorm(512, 512)
        self.ln = nn.LayerNorm(512)
        self.proj = nn.Linear(512, 768)

    def forward(self, wav):
        x = wav[:, None]
        for i, conv in enumerate(self.convs):
            x = conv(x)
            if i == 0:
                x = self.gn(x)
            x = F.gelu(x)
        return self.proj(self.ln(x.transpose(1, 2)))


# -- ConvNeXt-T stem and stage 1 (torchvision's CNBlock: dw 7x7, channels-last LayerNorm, MLP x4, layer scale) --
class _LN2d(nn.LayerNorm):
    def forward(self, x):
        return super().forward(x.permute(0, 2, 3, 1)).permute(0, 3, 1, 2)


class _CNBlock(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.dw = nn.Conv2d(d, d, 7, padding=3, groups=d)
        self.norm = nn.LayerNorm(d, eps=1e-6)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))
        self.gamma = nn.Parameter(torch.rand(d, 1, 1) * 0.5)

    def forward(self, x):
        y = self.mlp(self.norm(self.dw(x).permute(0, 2, 3, 1))).permute(0, 3, 1, 2)
        return x + self.gamma * y


@_reg(f"1x3x{IMG}x{IMG}xf32")
class ConvNeXtTStage1(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 96, 4, 4), _LN2d(96, eps=1e-6))
        self.blocks = nn.Sequential(*[_CNBlock(96) for _ in range(3)])
        self.down = nn.Sequential(_LN2d(96, eps=1e-6), nn.Conv2d(96, 192, 2, 2))

    def forward(self, x):
        return self.down(self.blocks(self.stem(x)))


# -- EfficientNetV2-S stages 1-2 (torchvision's FusedMBConv: 3x3 expand conv, SiLU, 1x1 project) ---------------
class _FusedMB(nn.Module):
    def __init__(self, cin, cout, s, e):
        super().__init__()
        mid = cin * e
        layers = [nn.Conv2d(cin, mid, 3, s, 1, bias=False), nn.BatchNorm2d(mid), nn.SiLU()]
        if e != 1:
            layers += [nn.Conv2d(mid, cout, 1, bias=False), nn.BatchNorm2d(cout)]
        self.block = nn.Sequential(*layers)
        self.res = s == 1 and cin == cout

    def forward(self, x):
        y = self.block(x)
        return x + y if self.res else y


@_reg(f"1x3x{IMG}x{IMG}xf32")
class EffNetV2SFused(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 24, 3, 2, 1, bias=False), nn.BatchNorm2d(24), nn.SiLU())
        self.s1 = nn.Sequential(_FusedMB(24, 24, 1, 1), _FusedMB(24, 24, 1, 1))
        self.s2 = nn.Sequential(_FusedMB(24, 48, 2, 4), *[_FusedMB(48, 48, 1, 4) for _ in range(3)])
        _randomize_bn(self)

    def forward(self, x):
        return self.s2(self.s1(self.stem(x)))


# -- transformers text models at real widths (few layers) --------------------------------------------------------
try:
    import transformers as tf
except ImportError:          # the torchvision-style models above still work
    tf = None


class _HF(nn.Module):
    arg_names = ("input_ids",)

    def __init__(self):
        super().__init__()
        cfg = self.config()
        cfg._attn_implementation = "sdpa"
        self.m = self.model_class()(cfg).eval()

    def forward(self, *xs):
        return self.m(**dict(zip(self.arg_names, xs)), return_dict=False)[0]


if tf is not None:
    @_reg(f"2x{SEQ}xi64[0:1000],2x{SEQ}xi64[0:2]")
    class DistilBertBase2L(_HF):
        arg_names = ("input_ids", "attention_mask")
        model_class = staticmethod(lambda: tf.DistilBertModel)
        config = staticmethod(lambda: tf.DistilBertConfig(vocab_size=1000, n_layers=2))   # dim 768, 12 heads

    @_reg(f"1x{SEQ * 2}xi64[0:1000]")
    class T5SmallEncoder2L(_HF):
        model_class = staticmethod(lambda: tf.T5EncoderModel)
        config = staticmethod(lambda: tf.T5Config(vocab_size=1000, d_model=512, d_kv=64, d_ff=2048, num_layers=2,
                                                  num_heads=8, use_cache=False))

    @_reg(f"1x{SEQ}xi64[0:1000]")
    class TinyLlama1L(_HF):
        model_class = staticmethod(lambda: tf.LlamaModel)
        config = staticmethod(lambda: tf.LlamaConfig(vocab_size=1000, hidden_size=2048, intermediate_size=5632,
                                                     num_hidden_layers=1, num_attention_heads=32,
                                                     num_key_value_heads=4, use_cache=False))

    @_reg(f"1x{SEQ * 4}xi64[0:1000]")
    class MistralSW2L(_HF):
        model_class = staticmethod(lambda: tf.MistralModel)
        config = staticmethod(lambda: tf.MistralConfig(vocab_size=1000, hidden_size=1024, intermediate_size=3584,
                                                       num_hidden_layers=2, num_attention_heads=16,
                                                       num_key_value_heads=4, sliding_window=SEQ * 2,
                                                       use_cache=False))

    @_reg(f"1x3x{IMG}x{IMG}xf32")
    class SwinTStage12(_HF):
        arg_names = ("pixel_values",)
        model_class = staticmethod(lambda: tf.SwinModel)
        config = staticmethod(lambda: tf.SwinConfig(image_size=IMG, patch_size=4, embed_dim=96, depths=[2, 2],
                                                    num_heads=[3, 6], window_size=7))

    @_reg(f"1x{SEQ * 2}xi64[0:1000]")
    class Qwen2Half2L(_HF):          # Qwen2-0.5B widths: 896, 14 heads, 2 KV heads, MLP 4864
        model_class = staticmethod(lambda: tf.Qwen2Model)
        config = staticmethod(lambda: tf.Qwen2Config(vocab_size=1000, hidden_size=896, intermediate_size=4864,
                                                     num_hidden_layers=2, num_attention_heads=14,
                                                     num_key_value_heads=2, use_cache=False))

    @_reg(f"1x{SEQ}xi64[0:1000]")
    class Phi15Block1L(_HF):         # phi-1.5 widths: parallel attention + MLP, partial rotary (0.5)
        model_class = staticmethod(lambda: tf.PhiModel)
        config = staticmethod(lambda: tf.PhiConfig(vocab_size=1000, hidden_size=2048, intermediate_size=8192,
                                                   num_hidden_layers=1, num_attention_heads=32,
                                                   partial_rotary_factor=0.5, use_cache=False))

    @_reg(f"1x{SEQ * 2}xi64[0:1000]")
    class Pythia410m2L(_HF):         # GPT-NeoX: fused QKV, parallel residual, rotary on 25% of the head
        model_class = staticmethod(lambda: tf.GPTNeoXModel)
        config = staticmethod(lambda: tf.GPTNeoXConfig(vocab_size=1000, hidden_size=1024, intermediate_size=4096,
                                                       num_hidden_layers=2, num_attention_heads=16,
                                                       rotary_pct=0.25, use_cache=False))

    @_reg(f"1x3x{IMG}x{IMG}xf32")
    class CLIPViTB32Vision2L(_HF):   # 50 tokens, quick_gelu, pre-LN
        arg_names = ("pixel_values",)
        model_class = staticmethod(lambda: tf.CLIPVisionModel)
        config = staticmethod(lambda: tf.CLIPVisionConfig(image_size=IMG, patch_size=32, num_hidden_layers=2))

    @_reg(f"1x80x{400 if SMALL else 3000}xf32")
    class WhisperBaseEncoder2L(_HF):  # conv1d stem (80 -> 512, stride 2), 1500 tokens, 8 heads
        arg_names = ("input_features",)
        model_class = staticmethod(lambda: __import__("transformers.models.whisper.modeling_whisper",
                                                      fromlist=["x"]).WhisperEncoder)
        config = staticmethod(lambda: tf.WhisperConfig(d_model=512, encoder_layers=2, encoder_attention_heads=8,
                                                       encoder_ffn_dim=2048, num_mel_bins=80,
                                                       max_source_positions=200 if SMALL else 1500))
