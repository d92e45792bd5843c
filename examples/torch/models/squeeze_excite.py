"""Squeeze-and-Excitation on a conv output: adaptive avg pool, FC-ReLU-FC, sigmoid gate, broadcast multiply."""
import torch
import torch.nn as nn


class SqueezeExcitation(nn.Module):
    def __init__(self, c=32, r=4):
        super().__init__()
        self.conv = nn.Conv2d(c, c, 3, padding=1)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc1 = nn.Conv2d(c, c // r, 1)
        self.fc2 = nn.Conv2d(c // r, c, 1)

    def forward(self, x):
        y = torch.relu(self.conv(x))
        s = torch.sigmoid(self.fc2(torch.relu(self.fc1(self.pool(y)))))
        return x + y * s


def get_inputs():
    return [torch.randn(2, 32, 12, 12)]
