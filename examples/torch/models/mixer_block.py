"""MLP-Mixer block: token mixing through transposes, channel mixing, LayerNorms, GELU."""
import torch
import torch.nn as nn


class MixerBlock(nn.Module):
    def __init__(self, tokens=16, dim=32, token_hidden=32, channel_hidden=64):
        super().__init__()
        self.norm1 = nn.LayerNorm(dim)
        self.token_mlp = nn.Sequential(nn.Linear(tokens, token_hidden), nn.GELU(), nn.Linear(token_hidden, tokens))
        self.norm2 = nn.LayerNorm(dim)
        self.channel_mlp = nn.Sequential(nn.Linear(dim, channel_hidden), nn.GELU(), nn.Linear(channel_hidden, dim))

    def forward(self, x):
        y = self.norm1(x).transpose(1, 2)
        x = x + self.token_mlp(y).transpose(1, 2)
        return x + self.channel_mlp(self.norm2(x))


def get_inputs():
    return [torch.randn(2, 16, 32)]
