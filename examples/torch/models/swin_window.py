"""Swin-ish window attention: cyclic shift (roll), window partition (view/permute/contiguous), attention with a
relative position bias table, window reverse, reverse shift."""
import torch
import torch.nn as nn


def window_partition(x, ws):
    B, H, W, C = x.shape
    x = x.view(B, H // ws, ws, W // ws, ws, C)
    return x.permute(0, 1, 3, 2, 4, 5).contiguous().view(-1, ws * ws, C)


def window_reverse(w, ws, H, W):
    B = int(w.shape[0] / (H * W / ws / ws))
    x = w.view(B, H // ws, W // ws, ws, ws, -1)
    return x.permute(0, 1, 3, 2, 4, 5).contiguous().view(B, H, W, -1)


class SwinWindowAttention(nn.Module):
    def __init__(self, dim=32, heads=2, ws=4, shift=2):
        super().__init__()
        self.dim, self.heads, self.ws, self.shift = dim, heads, ws, shift
        self.norm = nn.LayerNorm(dim)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.bias_table = nn.Parameter(0.02 * torch.randn((2 * ws - 1) ** 2, heads))
        coords = torch.stack(torch.meshgrid(torch.arange(ws), torch.arange(ws), indexing="ij")).flatten(1)
        rel = (coords[:, :, None] - coords[:, None, :]).permute(1, 2, 0) + (ws - 1)
        self.register_buffer("rel_index", rel[..., 0] * (2 * ws - 1) + rel[..., 1])

    def forward(self, x):
        B, H, W, C = x.shape
        h = torch.roll(self.norm(x), shifts=(-self.shift, -self.shift), dims=(1, 2))
        w = window_partition(h, self.ws)
        n = w.shape[1]
        qkv = self.qkv(w).reshape(-1, n, 3, self.heads, C // self.heads).permute(2, 0, 3, 1, 4)
        q, k, v = qkv[0], qkv[1], qkv[2]
        att = (q * (C // self.heads) ** -0.5) @ k.transpose(-2, -1)
        bias = self.bias_table[self.rel_index.view(-1)].view(n, n, -1).permute(2, 0, 1)
        att = (att + bias.unsqueeze(0)).softmax(dim=-1)
        o = self.proj((att @ v).transpose(1, 2).reshape(-1, n, C))
        o = window_reverse(o, self.ws, H, W)
        return x + torch.roll(o, shifts=(self.shift, self.shift), dims=(1, 2))


def get_inputs():
    return [torch.randn(2, 8, 8, 32)]
