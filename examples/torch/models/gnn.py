"""A small graph network, whole: GraphSAGE-style layers with mean aggregation by message passing (each edge's
source features gathered, summed into its destination with index_add, divided by the in-degree), a root
linear, ReLU; then a mean over the nodes and a classifier. Inputs: node features (nodes x features) and edges
(2 x edges: source row, destination row)."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class SAGEConv(nn.Module):
    def __init__(self, cin, cout):
        super().__init__()
        self.neighbours = nn.Linear(cin, cout)
        self.root = nn.Linear(cin, cout, bias=False)

    def forward(self, x, edges):
        src, dst = edges[0], edges[1]
        summed = torch.zeros_like(x).index_add(0, dst, x[src])
        degree = torch.zeros(x.shape[0], dtype=x.dtype, device=x.device).index_add(
            0, dst, torch.ones_like(dst, dtype=x.dtype))
        return self.neighbours(summed / degree.clamp(min=1).unsqueeze(1)) + self.root(x)


class GraphSAGE(nn.Module):
    def __init__(self, features=32, hidden=64, layers=3, classes=4):
        super().__init__()
        sizes = [features] + [hidden] * layers
        self.convs = nn.ModuleList(SAGEConv(sizes[i], sizes[i + 1]) for i in range(layers))
        self.classifier = nn.Linear(hidden, classes)

    def forward(self, x, edges):
        for conv in self.convs:
            x = F.relu(conv(x, edges))
        return self.classifier(x.mean(0, keepdim=True)), x


def get_inputs():
    return [torch.randn(200, 32), torch.randint(0, 200, (2, 800))]
