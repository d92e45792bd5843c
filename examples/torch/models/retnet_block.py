"""A linear-attention language model, whole: RetNet-style blocks whose token mixer is causal linear attention
with elu+1 feature maps computed in parallel form with cumulative sums (running sums of phi(k) v^T and phi(k)
via cumsum over time, per head, normalised), a per-head exponential decay applied as a (T x T) decay matrix
built from arange differences (tril mask, exp of log-decays) in a second retention branch, a gated output
(SiLU gate, GroupNorm over heads), and a SwiGLU FFN; embedding in, LM head out. Input: token ids."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class LinearAttention(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(d, 3 * d, bias=False)
        self.gate = nn.Linear(d, d, bias=False)
        self.out = nn.Linear(d, d, bias=False)
        self.norm = nn.GroupNorm(heads, d)
        decays = 1.0 - 2.0 ** (-5.0 - torch.arange(heads, dtype=torch.float32))
        self.log_decay = nn.Parameter(torch.log(decays))

    def forward(self, x):
        B, T, C = x.shape
        H, D = self.heads, C // self.heads
        q, k, v = (t.view(B, T, H, D).transpose(1, 2) for t in self.qkv(x).chunk(3, dim=-1))   # (B, H, T, D)
        # causal linear attention through cumulative sums
        fq, fk = F.elu(q) + 1, F.elu(k) + 1
        kv = torch.cumsum(torch.einsum("bhtd,bhte->bhtde", fk, v), dim=2)                       # (B, H, T, D, D)
        num = torch.einsum("bhtd,bhtde->bhte", fq, kv)
        den = torch.einsum("bhtd,bhtd->bht", fq, torch.cumsum(fk, dim=2)).unsqueeze(-1)
        linear = num / (den + 1e-6)
        # retention: decayed causal scores
        pos = torch.arange(T, device=x.device, dtype=x.dtype)
        diff = pos[:, None] - pos[None, :]
        decay = torch.exp(self.log_decay[:, None, None] * diff.clamp(min=0)) * (diff >= 0).to(x.dtype)   # (H, T, T)
        retention = ((q @ k.transpose(-1, -2)) / math.sqrt(D) * decay) @ v
        y = (linear + retention).transpose(1, 2).reshape(B * T, C)
        y = self.norm(y).view(B, T, C)
        return self.out(F.silu(self.gate(x)) * y)


class RetNetLM(nn.Module):
    def __init__(self, vocab=2048, d=128, heads=4, layers=2, ffn=256):
        super().__init__()
        self.embed = nn.Embedding(vocab, d)
        self.norms1 = nn.ModuleList(nn.LayerNorm(d) for _ in range(layers))
        self.mixers = nn.ModuleList(LinearAttention(d, heads) for _ in range(layers))
        self.norms2 = nn.ModuleList(nn.LayerNorm(d) for _ in range(layers))
        self.gates = nn.ModuleList(nn.Linear(d, 2 * ffn, bias=False) for _ in range(layers))
        self.downs = nn.ModuleList(nn.Linear(ffn, d, bias=False) for _ in range(layers))
        self.norm = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab, bias=False)

    def forward(self, ids):
        x = self.embed(ids)
        for n1, mixer, n2, gate, down in zip(self.norms1, self.mixers, self.norms2, self.gates, self.downs):
            x = x + mixer(n1(x))
            a, b = gate(n2(x)).chunk(2, dim=-1)
            x = x + down(F.silu(a) * b)
        return self.head(self.norm(x))


def get_inputs():
    return [torch.randint(0, 2048, (2, 128))]
