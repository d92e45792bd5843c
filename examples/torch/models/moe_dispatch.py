"""A Mixtral-style sparse MoE layer: router logits, softmax then top-k, renormalised weights, a one-hot
dispatch mask per expert (F.one_hot + permute), each expert a SwiGLU MLP run on every token and weighted by
its routing weight (zero where not routed), summed; a residual and RMSNorm around it."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Expert(nn.Module):
    def __init__(self, d, hidden):
        super().__init__()
        self.w1 = nn.Linear(d, hidden, bias=False)
        self.w3 = nn.Linear(d, hidden, bias=False)
        self.w2 = nn.Linear(hidden, d, bias=False)

    def forward(self, x):
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


class SparseMoE(nn.Module):
    def __init__(self, d=256, experts=8, hidden=512, k=2):
        super().__init__()
        self.k, self.experts = k, experts
        self.norm = nn.RMSNorm(d, eps=1e-5)
        self.router = nn.Linear(d, experts, bias=False)
        self.experts_ = nn.ModuleList(Expert(d, hidden) for _ in range(experts))

    def forward(self, x):
        B, T, D = x.shape
        h = self.norm(x).view(-1, D)
        probs = F.softmax(self.router(h), dim=-1)
        weights, chosen = torch.topk(probs, self.k, dim=-1)
        weights = weights / weights.sum(dim=-1, keepdim=True)
        dispatch = F.one_hot(chosen, self.experts).permute(2, 0, 1).to(h.dtype)   # (experts, tokens, k)
        out = torch.zeros_like(h)
        for e, expert in enumerate(self.experts_):
            gate = (dispatch[e] * weights).sum(-1, keepdim=True)
            out = out + gate * expert(h)
        return x + out.view(B, T, D)


def get_inputs():
    return [torch.randn(2, 128, 256)]
