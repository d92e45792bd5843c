"""BERT encoder, whole: word + position + token-type embeddings with LayerNorm, a stack of post-LN layers
(attention with an additive padding mask from the attention-mask input, exact-erf GELU FFN), tanh pooler on the
first token. Inputs: token ids and an attention mask (1 = attend) of batch x sequence."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class Layer(nn.Module):
    def __init__(self, d, heads, ffn):
        super().__init__()
        self.heads = heads
        self.query, self.key, self.value = nn.Linear(d, d), nn.Linear(d, d), nn.Linear(d, d)
        self.attn_out = nn.Linear(d, d)
        self.attn_norm = nn.LayerNorm(d, eps=1e-12)
        self.intermediate = nn.Linear(d, ffn)
        self.output = nn.Linear(ffn, d)
        self.out_norm = nn.LayerNorm(d, eps=1e-12)

    def forward(self, x, additive_mask):
        B, T, C = x.shape
        split = lambda t: t.view(B, T, self.heads, C // self.heads).permute(0, 2, 1, 3)  # noqa: E731
        q, k, v = split(self.query(x)), split(self.key(x)), split(self.value(x))
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(C // self.heads) + additive_mask
        ctx = torch.matmul(F.softmax(scores, dim=-1), v).permute(0, 2, 1, 3).reshape(B, T, C)
        x = self.attn_norm(x + self.attn_out(ctx))
        return self.out_norm(x + self.output(F.gelu(self.intermediate(x))))


class BertEncoder(nn.Module):
    def __init__(self, vocab=8192, d=256, layers=4, heads=4, ffn=1024, max_pos=512, type_vocab=2):
        super().__init__()
        self.word = nn.Embedding(vocab, d, padding_idx=0)
        self.position = nn.Embedding(max_pos, d)
        self.token_type = nn.Embedding(type_vocab, d)
        self.emb_norm = nn.LayerNorm(d, eps=1e-12)
        self.layers = nn.ModuleList(Layer(d, heads, ffn) for _ in range(layers))
        self.pooler = nn.Linear(d, d)

    def forward(self, ids, attention_mask):
        T = ids.shape[1]
        pos = torch.arange(T, device=ids.device).unsqueeze(0)
        x = self.emb_norm(self.word(ids) + self.position(pos) + self.token_type(torch.zeros_like(ids)))
        additive = (1.0 - attention_mask[:, None, None, :].to(x.dtype)) * -10000.0
        for layer in self.layers:
            x = layer(x, additive)
        return x, torch.tanh(self.pooler(x[:, 0]))


def get_inputs():
    ids = torch.randint(1, 8192, (2, 64))
    mask = torch.ones(2, 64, dtype=torch.int64)
    mask[1, 48:] = 0
    return [ids, mask]
