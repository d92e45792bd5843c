"""EfficientNet-B0-like, whole: SiLU stem, sixteen MBConv blocks (1x1 expand, depthwise 3x3 / 5x5, squeeze-excite
with SiLU + sigmoid, 1x1 project, residual where shapes allow), 1x1 head conv to 1280, pool, classifier.
`depth` keeps the first blocks of each stage (1.0 = all), `width` scales the channels."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def _divisible(v, d=8):
    return max(d, int(v + d / 2) // d * d)


def _conv_bn_silu(cin, cout, k, stride=1, groups=1, act=True):
    return nn.Sequential(nn.Conv2d(cin, cout, k, stride, (k - 1) // 2, groups=groups, bias=False),
                         nn.BatchNorm2d(cout), nn.SiLU() if act else nn.Identity())


class MBConv(nn.Module):
    def __init__(self, cin, cout, k, stride, expand):
        super().__init__()
        mid = cin * expand
        self.residual = stride == 1 and cin == cout
        self.expand = _conv_bn_silu(cin, mid, 1) if expand != 1 else nn.Identity()
        self.depthwise = _conv_bn_silu(mid, mid, k, stride, groups=mid)
        squeeze = max(1, cin // 4)
        self.se_reduce = nn.Conv2d(mid, squeeze, 1)
        self.se_expand = nn.Conv2d(squeeze, mid, 1)
        self.project = _conv_bn_silu(mid, cout, 1, act=False)

    def forward(self, x):
        y = self.depthwise(self.expand(x))
        s = torch.sigmoid(self.se_expand(F.silu(self.se_reduce(y.mean((2, 3), keepdim=True)))))
        y = self.project(y * s)
        return x + y if self.residual else y


# (expand, kernel, stride, out channels, repeats): EfficientNet-B0
STAGES = [(1, 3, 1, 16, 1), (6, 3, 2, 24, 2), (6, 5, 2, 40, 2), (6, 3, 2, 80, 3), (6, 5, 1, 112, 3),
          (6, 5, 2, 192, 4), (6, 3, 1, 320, 1)]


class EfficientNetB0(nn.Module):
    def __init__(self, width=1.0, depth=1.0, classes=1000):
        super().__init__()
        c = lambda v: _divisible(v * width)  # noqa: E731
        blocks, cin = [_conv_bn_silu(3, c(32), 3, 2)], c(32)
        for expand, k, stride, cout, repeats in STAGES:
            for i in range(max(1, math.ceil(repeats * depth))):
                blocks.append(MBConv(cin, c(cout), k, stride if i == 0 else 1, expand))
                cin = c(cout)
        blocks.append(_conv_bn_silu(cin, c(1280), 1))
        self.features = nn.Sequential(*blocks)
        self.classifier = nn.Linear(c(1280), classes)
        with torch.no_grad():
            for m in self.modules():
                if isinstance(m, nn.BatchNorm2d):
                    m.running_mean.uniform_(-0.2, 0.2)
                    m.running_var.uniform_(0.5, 1.5)

    def forward(self, x):
        return self.classifier(self.features(x).mean((2, 3)))


def get_inputs():
    return [torch.randn(1, 3, 224, 224)]
