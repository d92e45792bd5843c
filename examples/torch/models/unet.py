"""A small UNet, whole: an encoder of double 3x3 conv + BN + ReLU stages with 2x2 max pooling, a bottleneck, a
decoder that upsamples (bilinear x2 or a stride-2 transposed conv), concatenates the encoder's skip and runs a
double conv, and a 1x1 conv to the output classes."""
import torch
import torch.nn as nn
import torch.nn.functional as F


def double_conv(cin, cout):
    return nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout), nn.ReLU(inplace=True),
                         nn.Conv2d(cout, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout), nn.ReLU(inplace=True))


class Up(nn.Module):
    def __init__(self, cin, cskip, cout, transposed):
        super().__init__()
        self.transposed = transposed
        self.up = nn.ConvTranspose2d(cin, cin // 2, 2, stride=2) if transposed else nn.Identity()
        self.conv = double_conv((cin // 2 if transposed else cin) + cskip, cout)

    def forward(self, x, skip):
        x = self.up(x) if self.transposed else F.interpolate(x, scale_factor=2, mode="bilinear", align_corners=True)
        return self.conv(torch.cat([skip, x], dim=1))


class UNet(nn.Module):
    def __init__(self, cin=3, classes=2, base=16, levels=4, transposed=False):
        super().__init__()
        widths = [base * 2 ** i for i in range(levels + 1)]
        self.inc = double_conv(cin, widths[0])
        self.downs = nn.ModuleList(double_conv(widths[i], widths[i + 1]) for i in range(levels))
        self.ups = nn.ModuleList(Up(widths[i + 1], widths[i], widths[i], transposed) for i in reversed(range(levels)))
        self.outc = nn.Conv2d(widths[0], classes, 1)
        with torch.no_grad():
            for m in self.modules():
                if isinstance(m, nn.BatchNorm2d):
                    m.running_mean.uniform_(-0.2, 0.2)
                    m.running_var.uniform_(0.5, 1.5)

    def forward(self, x):
        skips = [self.inc(x)]
        for down in self.downs:
            skips.append(down(F.max_pool2d(skips[-1], 2)))
        x = skips.pop()
        for up in self.ups:
            x = up(x, skips.pop())
        return self.outc(x)


def get_inputs():
    return [torch.randn(1, 3, 128, 128)]
