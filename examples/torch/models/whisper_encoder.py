"""Whisper-tiny-like audio encoder, whole: two conv1d front-end layers on a log-mel spectrogram (the second
stride 2) with GELU, fixed sinusoidal position embedding, pre-LN blocks (attention with separate q/k/v, the key
without bias as in Whisper, GELU MLP), final LayerNorm. Input: batch x mels x frames."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def sinusoids(length, channels, max_timescale=10000):
    inc = math.log(max_timescale) / (channels // 2 - 1)
    inv = torch.exp(-inc * torch.arange(channels // 2))
    t = torch.arange(length)[:, None] * inv[None, :]
    return torch.cat([torch.sin(t), torch.cos(t)], dim=1)


class Block(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.heads = heads
        self.attn_ln = nn.LayerNorm(d)
        self.query, self.key, self.value = nn.Linear(d, d), nn.Linear(d, d, bias=False), nn.Linear(d, d)
        self.out = nn.Linear(d, d)
        self.mlp_ln = nn.LayerNorm(d)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

    def forward(self, x):
        B, T, C = x.shape
        h = self.attn_ln(x)
        scale = (C // self.heads) ** -0.25
        q = self.query(h).view(B, T, self.heads, -1).permute(0, 2, 1, 3) * scale
        k = self.key(h).view(B, T, self.heads, -1).permute(0, 2, 3, 1) * scale
        v = self.value(h).view(B, T, self.heads, -1).permute(0, 2, 1, 3)
        w = F.softmax((q @ k).float(), dim=-1).to(q.dtype)
        x = x + self.out((w @ v).permute(0, 2, 1, 3).flatten(start_dim=2))
        return x + self.mlp(self.mlp_ln(x))


class WhisperEncoder(nn.Module):
    def __init__(self, mels=80, frames=1000, d=384, heads=6, layers=4):
        super().__init__()
        self.conv1 = nn.Conv1d(mels, d, 3, padding=1)
        self.conv2 = nn.Conv1d(d, d, 3, stride=2, padding=1)
        self.register_buffer("positional_embedding", sinusoids(frames // 2, d))
        self.blocks = nn.ModuleList(Block(d, heads) for _ in range(layers))
        self.ln_post = nn.LayerNorm(d)

    def forward(self, mel):
        x = F.gelu(self.conv2(F.gelu(self.conv1(mel)))).permute(0, 2, 1)
        x = x + self.positional_embedding
        for block in self.blocks:
            x = block(x)
        return self.ln_post(x)


def get_inputs():
    return [torch.randn(1, 80, 1000)]
