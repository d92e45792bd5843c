"""MobileNetV3-small, whole: hardswish stem, eleven inverted-residual blocks (depthwise 3x3 / 5x5, squeeze-excite
with hardsigmoid, ReLU or hardswish), 1x1 conv to 576, global pool, 1024 hidden (hardswish), classifier."""
import torch
import torch.nn as nn
import torch.nn.functional as F


def _divisible(v, d=8):
    return max(d, int(v + d / 2) // d * d)


class SqueezeExcite(nn.Module):
    def __init__(self, c):
        super().__init__()
        squeeze = _divisible(c // 4)
        self.fc1 = nn.Conv2d(c, squeeze, 1)
        self.fc2 = nn.Conv2d(squeeze, c, 1)

    def forward(self, x):
        s = F.adaptive_avg_pool2d(x, 1)
        return x * F.hardsigmoid(self.fc2(F.relu(self.fc1(s))))


def _conv_bn(cin, cout, k, stride=1, groups=1, act=nn.Hardswish):
    layers = [nn.Conv2d(cin, cout, k, stride, (k - 1) // 2, groups=groups, bias=False), nn.BatchNorm2d(cout)]
    return nn.Sequential(*layers, act() if act else nn.Identity())


class InvertedResidual(nn.Module):
    def __init__(self, cin, k, exp, cout, se, act, stride):
        super().__init__()
        self.residual = stride == 1 and cin == cout
        layers = [] if exp == cin else [_conv_bn(cin, exp, 1, act=act)]
        layers.append(_conv_bn(exp, exp, k, stride, groups=exp, act=act))
        if se:
            layers.append(SqueezeExcite(exp))
        layers.append(_conv_bn(exp, cout, 1, act=None))
        self.block = nn.Sequential(*layers)

    def forward(self, x):
        y = self.block(x)
        return x + y if self.residual else y


# (kernel, expanded, out, squeeze-excite, activation, stride): torchvision's mobilenet_v3_small
CONFIG = [(3, 16, 16, True, nn.ReLU, 2), (3, 72, 24, False, nn.ReLU, 2), (3, 88, 24, False, nn.ReLU, 1),
          (5, 96, 40, True, nn.Hardswish, 2), (5, 240, 40, True, nn.Hardswish, 1),
          (5, 240, 40, True, nn.Hardswish, 1), (5, 120, 48, True, nn.Hardswish, 1),
          (5, 144, 48, True, nn.Hardswish, 1), (5, 288, 96, True, nn.Hardswish, 2),
          (5, 576, 96, True, nn.Hardswish, 1), (5, 576, 96, True, nn.Hardswish, 1)]


class MobileNetV3Small(nn.Module):
    def __init__(self, width=1.0, classes=1000, hidden=1024):
        super().__init__()
        c = lambda v: _divisible(v * width)  # noqa: E731
        layers, cin = [_conv_bn(3, c(16), 3, 2)], c(16)
        for k, exp, cout, se, act, stride in CONFIG:
            layers.append(InvertedResidual(cin, k, c(exp), c(cout), se, act, stride))
            cin = c(cout)
        layers.append(_conv_bn(cin, 6 * cin, 1))
        self.features = nn.Sequential(*layers)
        self.classifier = nn.Sequential(nn.Linear(6 * cin, hidden), nn.Hardswish(), nn.Linear(hidden, classes))
        with torch.no_grad():
            for m in self.modules():
                if isinstance(m, nn.BatchNorm2d):
                    m.running_mean.uniform_(-0.2, 0.2)
                    m.running_var.uniform_(0.5, 1.5)

    def forward(self, x):
        x = F.adaptive_avg_pool2d(self.features(x), 1).flatten(1)
        return self.classifier(x)


def get_inputs():
    return [torch.randn(1, 3, 224, 224)]
