"""Mixture-of-experts MLP with top-k routing: gate logits, topk, softmax over the chosen, scatter into dense
routing weights, experts as batched einsums, GELU, weighted sum."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class TopKMoE(nn.Module):
    def __init__(self, d=16, experts=4, hidden=32, k=2):
        super().__init__()
        self.k = k
        self.gate = nn.Linear(d, experts, bias=False)
        self.w1 = nn.Parameter(torch.randn(experts, d, hidden) * 0.2)
        self.w2 = nn.Parameter(torch.randn(experts, hidden, d) * 0.2)

    def forward(self, x):
        logits = self.gate(x)
        vals, idx = torch.topk(logits, self.k, dim=-1)
        weights = torch.softmax(vals, dim=-1)
        dense = torch.zeros_like(logits).scatter(-1, idx, weights)
        h = F.gelu(torch.einsum("td,edh->teh", x, self.w1))
        y = torch.einsum("teh,ehd->ted", h, self.w2)
        return torch.einsum("te,ted->td", dense, y)


def get_inputs():
    return [torch.randn(10, 16)]
