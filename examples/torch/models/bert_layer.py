"""BERT encoder layer with an attention mask input (B x T int64, 1 = keep): extended mask (1 - m) * -10000."""
import math

import torch
import torch.nn as nn


class BertLayer(nn.Module):
    def __init__(self, d=64, heads=4):
        super().__init__()
        self.heads = heads
        self.query = nn.Linear(d, d)
        self.key = nn.Linear(d, d)
        self.value = nn.Linear(d, d)
        self.out = nn.Linear(d, d)
        self.ln1 = nn.LayerNorm(d, eps=1e-12)
        self.inter = nn.Linear(d, 4 * d)
        self.output = nn.Linear(4 * d, d)
        self.ln2 = nn.LayerNorm(d, eps=1e-12)

    def split(self, x):
        B, T, C = x.shape
        return x.view(B, T, self.heads, C // self.heads).permute(0, 2, 1, 3)

    def forward(self, hidden, attention_mask):
        ext = (1.0 - attention_mask[:, None, None, :].to(hidden.dtype)) * -10000.0
        q, k, v = self.split(self.query(hidden)), self.split(self.key(hidden)), self.split(self.value(hidden))
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(q.size(-1)) + ext
        probs = nn.functional.softmax(scores, dim=-1)
        ctx = torch.matmul(probs, v).permute(0, 2, 1, 3).contiguous()
        ctx = ctx.view(hidden.shape)
        h = self.ln1(self.out(ctx) + hidden)
        return self.ln2(self.output(nn.functional.gelu(self.inter(h))) + h)


def get_inputs():
    mask = torch.ones(2, 12, dtype=torch.int64)
    mask[1, 8:] = 0
    return [torch.randn(2, 12, 64), mask]
