"""ConvNeXt block: depthwise 7x7, channels-last LayerNorm, Linear 4x, GELU, Linear, layer scale, residual."""
import torch
import torch.nn as nn


class ConvNeXtBlock(nn.Module):
    def __init__(self, dim=32):
        super().__init__()
        self.dwconv = nn.Conv2d(dim, dim, 7, padding=3, groups=dim)
        self.norm = nn.LayerNorm(dim, eps=1e-6)
        self.pwconv1 = nn.Linear(dim, 4 * dim)
        self.act = nn.GELU()
        self.pwconv2 = nn.Linear(4 * dim, dim)
        self.gamma = nn.Parameter(0.5 * torch.ones(dim))

    def forward(self, x):
        y = self.dwconv(x)
        y = y.permute(0, 2, 3, 1)
        y = self.pwconv2(self.act(self.pwconv1(self.norm(y))))
        y = self.gamma * y
        return x + y.permute(0, 3, 1, 2)


def get_inputs():
    return [torch.randn(2, 32, 14, 14)]
