import torch


class Attention(torch.nn.Module):
    """softmax(Q K^T / sqrt(d)) V, the explicit chain eager torch runs as three kernels and a softmax."""

    def forward(self, q, k, v):
        return torch.softmax(q @ k.transpose(-1, -2) * 0.125, dim=-1) @ v
