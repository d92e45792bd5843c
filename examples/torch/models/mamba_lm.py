"""A Mamba-style selective state-space block: in-projection split into x and a gate, a causal depthwise
Conv1d (pad + slice), SiLU, input-dependent dt / B / C (x_proj, softplus of dt_proj), A = -exp(A_log),
discretisation exp(dt * A), a selective scan as a Python loop over time, the D skip, a SiLU gate, an
out-projection; a residual over an RMSNorm, stacked, with an embedding and a tied LM head."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class MambaMixer(nn.Module):
    def __init__(self, d, state=8, expand=2, conv=4, dt_rank=None):
        super().__init__()
        inner = expand * d
        self.inner, self.state, self.dt_rank = inner, state, dt_rank or max(1, d // 16)
        self.in_proj = nn.Linear(d, 2 * inner, bias=False)
        self.conv = nn.Conv1d(inner, inner, conv, groups=inner, padding=conv - 1)
        self.x_proj = nn.Linear(inner, self.dt_rank + 2 * state, bias=False)
        self.dt_proj = nn.Linear(self.dt_rank, inner)
        self.A_log = nn.Parameter(torch.log(torch.arange(1, state + 1).float()).repeat(inner, 1))
        self.D = nn.Parameter(torch.ones(inner))
        self.out_proj = nn.Linear(inner, d, bias=False)

    def forward(self, x):
        B, L, _ = x.shape
        xz = self.in_proj(x)
        u, z = xz.chunk(2, dim=-1)
        u = F.silu(self.conv(u.transpose(1, 2))[:, :, :L]).transpose(1, 2)       # (B, L, inner)
        dt, Bm, Cm = self.x_proj(u).split([self.dt_rank, self.state, self.state], dim=-1)
        dt = F.softplus(self.dt_proj(dt))                                          # (B, L, inner)
        A = -torch.exp(self.A_log)                                                 # (inner, state)
        dA = torch.exp(dt.unsqueeze(-1) * A)                                       # (B, L, inner, state)
        dBu = dt.unsqueeze(-1) * Bm.unsqueeze(2) * u.unsqueeze(-1)                 # (B, L, inner, state)
        h = torch.zeros(B, self.inner, self.state, dtype=x.dtype)
        ys = []
        for t in range(L):
            h = dA[:, t] * h + dBu[:, t]
            ys.append((h * Cm[:, t].unsqueeze(1)).sum(-1))
        y = torch.stack(ys, dim=1) + u * self.D
        return self.out_proj(y * F.silu(z))


class MambaLM(nn.Module):
    def __init__(self, vocab=1001, d=64, layers=2, state=8):
        super().__init__()
        self.embed = nn.Embedding(vocab, d)
        self.norms = nn.ModuleList(nn.RMSNorm(d, eps=1e-5) for _ in range(layers))
        self.mixers = nn.ModuleList(MambaMixer(d, state) for _ in range(layers))
        self.norm = nn.RMSNorm(d, eps=1e-5)
        self.head = nn.Linear(d, vocab, bias=False)
        self.head.weight = self.embed.weight

    def forward(self, tokens):
        x = self.embed(tokens)
        for norm, mixer in zip(self.norms, self.mixers):
            x = x + mixer(norm(x))
        return self.head(self.norm(x))


def get_inputs():
    return [torch.randint(0, 1001, (1, 64))]
