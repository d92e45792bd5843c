"""A LLaMA-style decoder LM, whole: token embedding, RMSNorm, rotary embedding (cos/sin tables, rotate_half by
slicing + cat), grouped-query attention (fewer key/value heads, repeat_kv by expand + reshape), a causal mask
built with triu + masked_fill, SwiGLU MLP, final RMSNorm and an LM head tied to the embedding (odd vocab)."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class RMSNorm(nn.Module):
    def __init__(self, d, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(d) + 0.1 * torch.randn(d))

    def forward(self, x):
        return self.weight * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps))


def rotate_half(x):
    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


def repeat_kv(x, groups):
    b, kv, t, hd = x.shape
    if groups == 1:
        return x
    return x[:, :, None, :, :].expand(b, kv, groups, t, hd).reshape(b, kv * groups, t, hd)


class GQAttention(nn.Module):
    def __init__(self, d, heads, kv_heads):
        super().__init__()
        self.heads, self.kv_heads, self.hd = heads, kv_heads, d // heads
        self.q = nn.Linear(d, heads * self.hd, bias=False)
        self.k = nn.Linear(d, kv_heads * self.hd, bias=False)
        self.v = nn.Linear(d, kv_heads * self.hd, bias=False)
        self.o = nn.Linear(heads * self.hd, d, bias=False)

    def forward(self, x, cos, sin, mask):
        B, T, _ = x.shape
        q = self.q(x).view(B, T, self.heads, self.hd).transpose(1, 2)
        k = self.k(x).view(B, T, self.kv_heads, self.hd).transpose(1, 2)
        v = self.v(x).view(B, T, self.kv_heads, self.hd).transpose(1, 2)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        k = repeat_kv(k, self.heads // self.kv_heads)
        v = repeat_kv(v, self.heads // self.kv_heads)
        att = torch.matmul(q, k.transpose(2, 3)) / (self.hd ** 0.5) + mask
        att = F.softmax(att.float(), dim=-1).to(q.dtype)
        o = torch.matmul(att, v).transpose(1, 2).reshape(B, T, -1)
        return self.o(o)


class SwiGLU(nn.Module):
    def __init__(self, d, hidden):
        super().__init__()
        self.gate = nn.Linear(d, hidden, bias=False)
        self.up = nn.Linear(d, hidden, bias=False)
        self.down = nn.Linear(hidden, d, bias=False)

    def forward(self, x):
        return self.down(F.silu(self.gate(x)) * self.up(x))


class DecoderLayer(nn.Module):
    def __init__(self, d, heads, kv_heads, hidden):
        super().__init__()
        self.attn_norm = RMSNorm(d)
        self.attn = GQAttention(d, heads, kv_heads)
        self.mlp_norm = RMSNorm(d)
        self.mlp = SwiGLU(d, hidden)

    def forward(self, x, cos, sin, mask):
        x = x + self.attn(self.attn_norm(x), cos, sin, mask)
        return x + self.mlp(self.mlp_norm(x))


class LlamaLM(nn.Module):
    def __init__(self, vocab=32003, d=256, layers=4, heads=8, kv_heads=2, hidden=688, ctx=128, theta=10000.0):
        super().__init__()
        self.embed = nn.Embedding(vocab, d)
        self.layers = nn.ModuleList(DecoderLayer(d, heads, kv_heads, hidden) for _ in range(layers))
        self.norm = RMSNorm(d)
        self.head = nn.Linear(d, vocab, bias=False)
        self.head.weight = self.embed.weight
        hd = d // heads
        inv = 1.0 / (theta ** (torch.arange(0, hd, 2).float() / hd))
        freqs = torch.outer(torch.arange(ctx).float(), inv)
        emb = torch.cat((freqs, freqs), dim=-1)
        self.register_buffer("cos", emb.cos(), persistent=False)
        self.register_buffer("sin", emb.sin(), persistent=False)

    def forward(self, tokens):
        T = tokens.shape[1]
        x = self.embed(tokens)
        cos, sin = self.cos[:T], self.sin[:T]
        mask = torch.full((T, T), float("-inf"), device=tokens.device).triu(1)
        mask = mask.masked_fill(mask == 0, 0.0)
        for layer in self.layers:
            x = layer(x, cos, sin, mask)
        return self.head(self.norm(x))


def get_inputs():
    return [torch.randint(0, 32003, (1, 128))]
