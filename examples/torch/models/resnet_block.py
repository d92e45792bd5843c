"""ResNet basic block with a downsampling shortcut (conv3x3-BN-ReLU, conv3x3-BN, 1x1 stride-2 conv + BN)."""
import torch
import torch.nn as nn


class ResNetBasicBlock(nn.Module):
    def __init__(self, cin=8, cout=16, stride=2):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.relu = nn.ReLU(inplace=True)
        self.downsample = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))
        for bn in (self.bn1, self.bn2, self.downsample[1]):
            bn.running_mean.uniform_(-0.5, 0.5)
            bn.running_var.uniform_(0.5, 1.5)

    def forward(self, x):
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return self.relu(out + self.downsample(x))


def get_inputs():
    return [torch.randn(2, 8, 16, 16)]
