"""Graph attention network (GAT), whole: per layer a shared linear projection into heads, attention logits
e_ij = LeakyReLU(a_src . Wh_i + a_dst . Wh_j) (broadcast sum of two per-node scores), masked to the edges of a
dense adjacency (plus self loops) with masked_fill(-inf), softmax over the neighbours, the weighted sum of the
neighbours per head (einsum), heads concatenated with ELU between layers and averaged on the last, a
log-softmax over classes. Inputs: node features (nodes x features) and a 0/1 adjacency (nodes x nodes)."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class GATLayer(nn.Module):
    def __init__(self, cin, cout, heads, concat=True):
        super().__init__()
        self.heads, self.cout, self.concat = heads, cout, concat
        self.proj = nn.Linear(cin, heads * cout, bias=False)
        self.att_src = nn.Parameter(torch.randn(heads, cout) * 0.3)
        self.att_dst = nn.Parameter(torch.randn(heads, cout) * 0.3)
        self.bias = nn.Parameter(torch.zeros(heads * cout if concat else cout))

    def forward(self, x, adjacency):
        n = x.shape[0]
        h = self.proj(x).view(n, self.heads, self.cout)                       # (N, H, F)
        src = (h * self.att_src).sum(-1)                                      # (N, H)
        dst = (h * self.att_dst).sum(-1)
        e = F.leaky_relu(dst.t().unsqueeze(2) + src.t().unsqueeze(1), 0.2)    # (H, N_dst, N_src)
        connected = (adjacency + torch.eye(n, dtype=adjacency.dtype, device=adjacency.device)) > 0
        alpha = torch.softmax(e.masked_fill(~connected.unsqueeze(0), float("-inf")), dim=-1)
        out = torch.einsum("hij,jhf->ihf", alpha, h)                           # (N, H, F)
        out = out.reshape(n, -1) if self.concat else out.mean(dim=1)
        return out + self.bias


class GAT(nn.Module):
    def __init__(self, features=64, hidden=16, heads=8, layers=3, classes=7):
        super().__init__()
        sizes = [features] + [hidden * heads] * (layers - 1)
        self.layers = nn.ModuleList(GATLayer(sizes[i], hidden, heads) for i in range(layers - 1))
        self.last = GATLayer(sizes[-1], classes, 1, concat=False)

    def forward(self, x, adjacency):
        for layer in self.layers:
            x = F.elu(layer(x, adjacency))
        return F.log_softmax(self.last(x, adjacency), dim=-1)


def get_inputs():
    return [torch.randn(512, 64), (torch.rand(512, 512) < 0.02).float()]
