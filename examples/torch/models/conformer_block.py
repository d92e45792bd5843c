"""Conformer encoder (speech), whole: a Conv2d subsampling front end (two stride-2 3x3 convs with ReLU over
the mel x time plane, flattened to frames, a linear), then Conformer blocks: macaron feed-forward halves
(LayerNorm, Linear, SiLU, Linear, x + 0.5 * ffn), multi-head self-attention, a convolution module (LayerNorm,
pointwise Conv1d to 2C, GLU over channels, depthwise Conv1d, BatchNorm1d, SiLU, pointwise Conv1d) and a final
LayerNorm; a CTC-style vocabulary projection with log-softmax. Input: log-mel features (B x mels x frames)."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class FeedForward(nn.Module):
    def __init__(self, d, mult=4):
        super().__init__()
        self.norm = nn.LayerNorm(d)
        self.up, self.down = nn.Linear(d, mult * d), nn.Linear(mult * d, d)

    def forward(self, x):
        return self.down(F.silu(self.up(self.norm(x))))


class ConvModule(nn.Module):
    def __init__(self, d, kernel=15):
        super().__init__()
        self.norm = nn.LayerNorm(d)
        self.pointwise1 = nn.Conv1d(d, 2 * d, 1)
        self.depthwise = nn.Conv1d(d, d, kernel, padding=kernel // 2, groups=d)
        self.bn = nn.BatchNorm1d(d)
        with torch.no_grad():
            self.bn.running_mean.uniform_(-0.2, 0.2)
            self.bn.running_var.uniform_(0.5, 1.5)
        self.pointwise2 = nn.Conv1d(d, d, 1)

    def forward(self, x):                                       # (B, T, C)
        h = F.glu(self.pointwise1(self.norm(x).transpose(1, 2)), dim=1)
        h = self.pointwise2(F.silu(self.bn(self.depthwise(h))))
        return h.transpose(1, 2)


class ConformerBlock(nn.Module):
    def __init__(self, d, heads, kernel):
        super().__init__()
        self.ff1, self.ff2 = FeedForward(d), FeedForward(d)
        self.attn_norm = nn.LayerNorm(d)
        self.attn = nn.MultiheadAttention(d, heads, batch_first=True)
        self.conv = ConvModule(d, kernel)
        self.norm = nn.LayerNorm(d)

    def forward(self, x):
        x = x + 0.5 * self.ff1(x)
        h = self.attn_norm(x)
        x = x + self.attn(h, h, h, need_weights=False)[0]
        x = x + self.conv(x)
        x = x + 0.5 * self.ff2(x)
        return self.norm(x)


class Conformer(nn.Module):
    def __init__(self, mels=80, d=144, heads=4, layers=4, kernel=15, vocab=128):
        super().__init__()
        self.subsample = nn.Sequential(nn.Conv2d(1, d, 3, stride=2), nn.ReLU(), nn.Conv2d(d, d, 3, stride=2), nn.ReLU())
        freq = ((mels - 1) // 2 - 1) // 2
        self.input_proj = nn.Linear(d * freq, d)
        self.blocks = nn.ModuleList(ConformerBlock(d, heads, kernel) for _ in range(layers))
        self.head = nn.Linear(d, vocab)

    def forward(self, mel):
        x = self.subsample(mel.unsqueeze(1))                   # (B, d, F', T')
        B, C, Fq, T = x.shape
        x = self.input_proj(x.permute(0, 3, 1, 2).reshape(B, T, C * Fq))
        for block in self.blocks:
            x = block(x)
        return F.log_softmax(self.head(x), dim=-1)


def get_inputs():
    return [torch.randn(1, 80, 400)]
