"""ConvNeXt, whole (tiny layout, narrow): a 4x4 stride-4 patchify stem, channels-first LayerNorm written out
(mean / variance over the channel dim), blocks of depthwise 7x7 conv, channels-last LayerNorm via permute,
Linear 4x + GELU + Linear, layer scale, residual; LayerNorm + 2x2 stride-2 conv downsampling between stages;
global average pooling, LayerNorm, classifier."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class LayerNorm2d(nn.Module):
    """LayerNorm over the channels of an NCHW tensor (ConvNeXt's channels_first variant)."""

    def __init__(self, c, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(c) + 0.1 * torch.randn(c))
        self.bias = nn.Parameter(0.1 * torch.randn(c))

    def forward(self, x):
        u = x.mean(1, keepdim=True)
        s = (x - u).pow(2).mean(1, keepdim=True)
        x = (x - u) / torch.sqrt(s + self.eps)
        return self.weight[:, None, None] * x + self.bias[:, None, None]


class Block(nn.Module):
    def __init__(self, dim, layer_scale=0.5):
        super().__init__()
        self.dwconv = nn.Conv2d(dim, dim, 7, padding=3, groups=dim)
        self.norm = nn.LayerNorm(dim, eps=1e-6)
        self.pwconv1 = nn.Linear(dim, 4 * dim)
        self.pwconv2 = nn.Linear(4 * dim, dim)
        self.gamma = nn.Parameter(layer_scale * torch.ones(dim))

    def forward(self, x):
        y = self.dwconv(x).permute(0, 2, 3, 1)
        y = self.pwconv2(F.gelu(self.pwconv1(self.norm(y))))
        return x + (self.gamma * y).permute(0, 3, 1, 2)


class ConvNeXt(nn.Module):
    def __init__(self, depths=(3, 3, 9, 3), dims=(96, 192, 384, 768), classes=1000):
        super().__init__()
        self.downsample = nn.ModuleList([nn.Sequential(nn.Conv2d(3, dims[0], 4, stride=4), LayerNorm2d(dims[0]))])
        for i in range(3):
            self.downsample.append(nn.Sequential(LayerNorm2d(dims[i]), nn.Conv2d(dims[i], dims[i + 1], 2, stride=2)))
        self.stages = nn.ModuleList(nn.Sequential(*(Block(dims[i]) for _ in range(depths[i]))) for i in range(4))
        self.norm = nn.LayerNorm(dims[-1], eps=1e-6)
        self.head = nn.Linear(dims[-1], classes)

    def forward(self, x):
        for down, stage in zip(self.downsample, self.stages):
            x = stage(down(x))
        return self.head(self.norm(x.mean([-2, -1])))


def get_inputs():
    return [torch.randn(1, 3, 224, 224)]
