"""A YOLOv8-style detector body, small: Conv-BN-SiLU downsampling, C2f blocks (chunk, bottlenecks, concat), SPPF
(three chained 5x5 max pools, concat), a PAN neck (nearest 2x upsample + concat, strided conv + concat) and a
1x1 conv head per scale, flattened and concatenated into one prediction tensor."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Conv(nn.Module):
    def __init__(self, cin, cout, k=1, s=1):
        super().__init__()
        self.conv = nn.Conv2d(cin, cout, k, s, k // 2, bias=False)
        self.bn = nn.BatchNorm2d(cout)
        with torch.no_grad():
            self.bn.running_mean.uniform_(-0.2, 0.2)
            self.bn.running_var.uniform_(0.5, 1.5)

    def forward(self, x):
        return F.silu(self.bn(self.conv(x)))


class Bottleneck(nn.Module):
    def __init__(self, c, shortcut=True):
        super().__init__()
        self.cv1, self.cv2, self.add = Conv(c, c, 3), Conv(c, c, 3), shortcut

    def forward(self, x):
        y = self.cv2(self.cv1(x))
        return x + y if self.add else y


class C2f(nn.Module):
    def __init__(self, cin, cout, n=1, shortcut=True):
        super().__init__()
        self.c = cout // 2
        self.cv1 = Conv(cin, 2 * self.c)
        self.cv2 = Conv((2 + n) * self.c, cout)
        self.m = nn.ModuleList(Bottleneck(self.c, shortcut) for _ in range(n))

    def forward(self, x):
        y = list(self.cv1(x).chunk(2, 1))
        for m in self.m:
            y.append(m(y[-1]))
        return self.cv2(torch.cat(y, 1))


class SPPF(nn.Module):
    def __init__(self, cin, cout, k=5):
        super().__init__()
        self.cv1 = Conv(cin, cin // 2)
        self.cv2 = Conv(cin // 2 * 4, cout)
        self.k = k

    def forward(self, x):
        x = self.cv1(x)
        y1 = F.max_pool2d(x, self.k, 1, self.k // 2)
        y2 = F.max_pool2d(y1, self.k, 1, self.k // 2)
        y3 = F.max_pool2d(y2, self.k, 1, self.k // 2)
        return self.cv2(torch.cat([x, y1, y2, y3], 1))


class YOLONeck(nn.Module):
    def __init__(self, w=16, outputs=20):
        super().__init__()
        self.stem = nn.Sequential(Conv(3, w, 3, 2), Conv(w, 2 * w, 3, 2), C2f(2 * w, 2 * w))
        self.p3 = nn.Sequential(Conv(2 * w, 4 * w, 3, 2), C2f(4 * w, 4 * w))
        self.p4 = nn.Sequential(Conv(4 * w, 8 * w, 3, 2), C2f(8 * w, 8 * w))
        self.p5 = nn.Sequential(Conv(8 * w, 8 * w, 3, 2), C2f(8 * w, 8 * w), SPPF(8 * w, 8 * w))
        self.up4 = C2f(16 * w, 8 * w, shortcut=False)
        self.up3 = C2f(12 * w, 4 * w, shortcut=False)
        self.down4 = Conv(4 * w, 4 * w, 3, 2)
        self.pan4 = C2f(12 * w, 8 * w, shortcut=False)
        self.down5 = Conv(8 * w, 8 * w, 3, 2)
        self.pan5 = C2f(16 * w, 8 * w, shortcut=False)
        self.heads = nn.ModuleList(nn.Conv2d(c, outputs, 1) for c in (4 * w, 8 * w, 8 * w))

    def forward(self, x):
        p3 = self.p3(self.stem(x))
        p4 = self.p4(p3)
        p5 = self.p5(p4)
        t4 = self.up4(torch.cat([F.interpolate(p5, scale_factor=2, mode="nearest"), p4], 1))
        n3 = self.up3(torch.cat([F.interpolate(t4, scale_factor=2, mode="nearest"), p3], 1))
        n4 = self.pan4(torch.cat([self.down4(n3), t4], 1))
        n5 = self.pan5(torch.cat([self.down5(n4), p5], 1))
        return torch.cat([h(f).flatten(2) for h, f in zip(self.heads, (n3, n4, n5))], 2)


def get_inputs():
    return [torch.randn(1, 3, 320, 320)]
