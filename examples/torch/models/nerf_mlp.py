"""NeRF MLP: positional encodings of points and view directions (x, sin(2^k x), cos(2^k x) stacked and
flattened), an 8-layer ReLU trunk with the encoded input concatenated back in at a skip layer, a density
head (ReLU), a feature layer concatenated with the encoded direction, a colour head (sigmoid); the output
is rgb and sigma concatenated. Inputs: sample points (rays x 3) and directions (rays x 3)."""
import torch
import torch.nn as nn
import torch.nn.functional as F


def positional_encoding(x, frequencies):
    scales = 2.0 ** torch.arange(frequencies, dtype=x.dtype, device=x.device)          # (L,)
    angles = x.unsqueeze(-1) * scales                                                 # (N, 3, L)
    enc = torch.stack([torch.sin(angles), torch.cos(angles)], dim=-1).flatten(1)      # (N, 3*L*2)
    return torch.cat([x, enc], dim=-1)


class NeRF(nn.Module):
    def __init__(self, width=256, depth=8, skip=4, point_freqs=10, dir_freqs=4):
        super().__init__()
        self.point_freqs, self.dir_freqs, self.skip = point_freqs, dir_freqs, skip
        pin, din = 3 + 6 * point_freqs, 3 + 6 * dir_freqs
        self.trunk = nn.ModuleList(
            nn.Linear(pin if i == 0 else width + (pin if i == skip else 0), width) for i in range(depth))
        self.sigma = nn.Linear(width, 1)
        self.feature = nn.Linear(width, width)
        self.view = nn.Linear(width + din, width // 2)
        self.rgb = nn.Linear(width // 2, 3)

    def forward(self, points, dirs):
        p = positional_encoding(points, self.point_freqs)
        d = positional_encoding(F.normalize(dirs, dim=-1), self.dir_freqs)
        h = p
        for i, layer in enumerate(self.trunk):
            if i == self.skip:
                h = torch.cat([h, p], dim=-1)
            h = F.relu(layer(h))
        sigma = F.relu(self.sigma(h))
        v = F.relu(self.view(torch.cat([self.feature(h), d], dim=-1)))
        return torch.cat([torch.sigmoid(self.rgb(v)), sigma], dim=-1)


def get_inputs():
    return [torch.randn(4096, 3), torch.randn(4096, 3)]
