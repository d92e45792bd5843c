"""WaveNet residual stack: causal dilated Conv1d (left F.pad), tanh x sigmoid gate (chunk), 1x1 residual conv,
summed skips."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class WaveNetBlock(nn.Module):
    def __init__(self, c=16, layers=3):
        super().__init__()
        self.dil = nn.ModuleList(nn.Conv1d(c, 2 * c, 2, dilation=2 ** i) for i in range(layers))
        self.res = nn.ModuleList(nn.Conv1d(c, c, 1) for _ in range(layers))

    def forward(self, x):
        skip = 0
        for i, (d, r) in enumerate(zip(self.dil, self.res)):
            a, b = d(F.pad(x, (2 ** i, 0))).chunk(2, dim=1)
            z = torch.tanh(a) * torch.sigmoid(b)
            skip = skip + z
            x = x + r(z)
        return F.relu(skip)


def get_inputs():
    return [torch.randn(2, 16, 32)]
