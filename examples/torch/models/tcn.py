"""A temporal convolutional network (Bai et al.): residual blocks of two dilated causal Conv1d (symmetric
padding then a chomp of the right end), ReLU, a 1x1 conv on the skip where the width changes; dilation doubles
per block; a Linear classifier on the last time step."""
import torch
import torch.nn as nn


class TemporalBlock(nn.Module):
    def __init__(self, cin, cout, k, dilation):
        super().__init__()
        self.chomp = (k - 1) * dilation
        self.conv1 = nn.Conv1d(cin, cout, k, padding=self.chomp, dilation=dilation)
        self.conv2 = nn.Conv1d(cout, cout, k, padding=self.chomp, dilation=dilation)
        self.skip = nn.Conv1d(cin, cout, 1) if cin != cout else None

    def forward(self, x):
        y = torch.relu(self.conv1(x)[:, :, :-self.chomp].contiguous())
        y = torch.relu(self.conv2(y)[:, :, :-self.chomp].contiguous())
        return torch.relu(y + (x if self.skip is None else self.skip(x)))


class TCN(nn.Module):
    def __init__(self, inputs=8, channels=(32, 32, 64, 64), k=3, classes=10):
        super().__init__()
        widths = (inputs,) + tuple(channels)
        self.blocks = nn.Sequential(*(TemporalBlock(widths[i], widths[i + 1], k, 2 ** i) for i in range(len(channels))))
        self.head = nn.Linear(channels[-1], classes)

    def forward(self, x):
        return self.head(self.blocks(x)[:, :, -1])


def get_inputs():
    return [torch.randn(4, 8, 1024)]
