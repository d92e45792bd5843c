"""PointNet classifier, whole: an input T-net (shared 1x1 Conv1d MLP with BatchNorm1d + ReLU, a global max over
the points, an FC head regressing a 3x3 transform added to the identity), the points transformed with bmm, a
feature T-net (64x64) likewise, the shared MLP to 1024-d (here `width`) features, a global max pool and an FC
classifier with BatchNorm1d. Input: point clouds (B x 3 x points)."""
import torch
import torch.nn as nn
import torch.nn.functional as F


def _bn(m):
    with torch.no_grad():
        m.running_mean.uniform_(-0.2, 0.2)
        m.running_var.uniform_(0.5, 1.5)
    return m


class SharedMLP(nn.Module):
    def __init__(self, sizes):
        super().__init__()
        self.convs = nn.ModuleList(nn.Conv1d(a, b, 1) for a, b in zip(sizes, sizes[1:]))
        self.norms = nn.ModuleList(_bn(nn.BatchNorm1d(b)) for b in sizes[1:])

    def forward(self, x):
        for conv, norm in zip(self.convs, self.norms):
            x = F.relu(norm(conv(x)))
        return x


class TNet(nn.Module):
    def __init__(self, k, width):
        super().__init__()
        self.k = k
        self.mlp = SharedMLP([k, width // 16, width // 8, width])
        self.fc1, self.fc2 = nn.Linear(width, width // 2), nn.Linear(width // 2, width // 4)
        self.bn1, self.bn2 = _bn(nn.BatchNorm1d(width // 2)), _bn(nn.BatchNorm1d(width // 4))
        self.fc3 = nn.Linear(width // 4, k * k)

    def forward(self, x):
        g = torch.max(self.mlp(x), dim=2)[0]
        g = F.relu(self.bn2(self.fc2(F.relu(self.bn1(self.fc1(g))))))
        eye = torch.eye(self.k, dtype=x.dtype, device=x.device).flatten()
        return (self.fc3(g) + eye).view(-1, self.k, self.k)


class PointNet(nn.Module):
    def __init__(self, width=1024, classes=40):
        super().__init__()
        self.input_tnet = TNet(3, width)
        self.mlp1 = SharedMLP([3, width // 16, width // 16])
        self.feature_tnet = TNet(width // 16, width)
        self.mlp2 = SharedMLP([width // 16, width // 8, width])
        self.head = nn.Sequential(nn.Linear(width, width // 2), _bn(nn.BatchNorm1d(width // 2)), nn.ReLU(),
                                  nn.Linear(width // 2, width // 4), _bn(nn.BatchNorm1d(width // 4)), nn.ReLU(),
                                  nn.Linear(width // 4, classes))

    def forward(self, points):
        x = torch.bmm(self.input_tnet(points), points)                         # (B, 3, N)
        x = self.mlp1(x)
        ft = self.feature_tnet(x)
        x = torch.bmm(ft, x)
        g = self.mlp2(x).amax(dim=2)
        return F.log_softmax(self.head(g), dim=1), ft


def get_inputs():
    return [torch.randn(8, 3, 1024)]
