"""T5 self-attention: RMS layer norm without mean, fused qkv, relative position bias from log-spaced buckets
(integer abs, log, min, where on the position differences) through an nn.Embedding."""
import math

import torch
import torch.nn as nn


class T5Attention(nn.Module):
    def __init__(self, d=32, heads=4, buckets=16, max_dist=32):
        super().__init__()
        self.h, self.buckets, self.max_dist = heads, buckets, max_dist
        self.qkv = nn.Linear(d, 3 * d, bias=False)
        self.o = nn.Linear(d, d, bias=False)
        self.rel = nn.Embedding(buckets, heads)
        self.ln_w = nn.Parameter(torch.ones(d))

    def bucket(self, rel):
        nb = self.buckets // 2
        ret = (rel > 0).to(torch.long) * nb
        n = torch.abs(rel)
        max_exact = nb // 2
        large = max_exact + (torch.log(n.float() / max_exact) / math.log(self.max_dist / max_exact)
                             * (nb - max_exact)).to(torch.long)
        large = torch.min(large, torch.full_like(large, nb - 1))
        return ret + torch.where(n < max_exact, n, large)

    def forward(self, x):
        B, T, D = x.shape
        x = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * self.ln_w
        q, k, v = self.qkv(x).view(B, T, 3, self.h, D // self.h).permute(2, 0, 3, 1, 4)
        pos = torch.arange(T)
        bias = self.rel(self.bucket(pos[None, :] - pos[:, None])).permute(2, 0, 1)
        att = torch.softmax(q @ k.transpose(-1, -2) + bias, dim=-1)
        return self.o((att @ v).transpose(1, 2).reshape(B, T, D))


def get_inputs():
    return [torch.randn(2, 12, 32)]
