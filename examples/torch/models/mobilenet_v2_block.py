"""MobileNetV2 inverted residual: 1x1 expand + BN + ReLU6, depthwise 3x3 + BN + ReLU6, 1x1 project + BN, residual."""
import torch
import torch.nn as nn


class InvertedResidual(nn.Module):
    def __init__(self, c=16, expand=4):
        super().__init__()
        h = c * expand
        self.block = nn.Sequential(
            nn.Conv2d(c, h, 1, bias=False), nn.BatchNorm2d(h), nn.ReLU6(inplace=True),
            nn.Conv2d(h, h, 3, 1, 1, groups=h, bias=False), nn.BatchNorm2d(h), nn.ReLU6(inplace=True),
            nn.Conv2d(h, c, 1, bias=False), nn.BatchNorm2d(c))

    def forward(self, x):
        return x + self.block(x)


def get_inputs():
    return [torch.randn(2, 16, 14, 14)]
