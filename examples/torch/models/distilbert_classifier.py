"""DistilBERT-style sequence classifier, whole: word + position embeddings with LayerNorm, a padding mask built
from the token ids themselves (ids == pad -> bool mask -> masked_fill(-inf) on the scores), a stack of post-LN
layers (fused QKV projection split with chunk, exact-erf GELU FFN), then a pre-classifier on the first token
(ReLU) and a classifier. Input: token ids with trailing padding (pad id 0)."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class Layer(nn.Module):
    def __init__(self, d, heads, ffn):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(d, 3 * d)
        self.out = nn.Linear(d, d)
        self.sa_norm = nn.LayerNorm(d, eps=1e-12)
        self.ffn = nn.Sequential(nn.Linear(d, ffn), nn.GELU(), nn.Linear(ffn, d))
        self.ffn_norm = nn.LayerNorm(d, eps=1e-12)

    def forward(self, x, pad):                               # pad: (B, 1, 1, T) bool, True = padding
        B, T, C = x.shape
        q, k, v = (t.view(B, T, self.heads, -1).transpose(1, 2) for t in self.qkv(x).chunk(3, dim=-1))
        scores = (q / math.sqrt(C // self.heads)) @ k.transpose(-1, -2)
        weights = scores.masked_fill(pad, float("-inf")).softmax(dim=-1)
        ctx = (weights @ v).transpose(1, 2).reshape(B, T, C)
        x = self.sa_norm(x + self.out(ctx))
        return self.ffn_norm(x + self.ffn(x))


class DistilBertClassifier(nn.Module):
    def __init__(self, vocab=8192, d=256, layers=3, heads=4, ffn=1024, max_pos=512, classes=3, pad_id=0):
        super().__init__()
        self.pad_id = pad_id
        self.word = nn.Embedding(vocab, d, padding_idx=pad_id)
        self.position = nn.Embedding(max_pos, d)
        self.emb_norm = nn.LayerNorm(d, eps=1e-12)
        self.layers = nn.ModuleList(Layer(d, heads, ffn) for _ in range(layers))
        self.pre_classifier = nn.Linear(d, d)
        self.classifier = nn.Linear(d, classes)

    def forward(self, ids):
        T = ids.shape[1]
        pad = (ids == self.pad_id)[:, None, None, :]
        x = self.emb_norm(self.word(ids) + self.position(torch.arange(T, device=ids.device)))
        for layer in self.layers:
            x = layer(x, pad)
        return self.classifier(F.relu(self.pre_classifier(x[:, 0])))


def get_inputs():
    ids = torch.randint(1, 8192, (4, 64))
    ids[1, 40:] = 0
    ids[3, 10:] = 0
    return [ids]
