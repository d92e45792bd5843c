"""A DLRM-like recommender, whole: a bottom MLP on the dense features; per sparse feature a multi-hot bag of
embedding rows summed (nn.EmbeddingBag in sum mode over fixed-size bags); the pairwise dot-product interaction
of all the vectors (one bmm, its strict lower triangle gathered), concatenated with the dense vector; a top
MLP with a sigmoid. Inputs: dense features (batch x dense) and sparse ids (batch x tables x bag)."""
import torch
import torch.nn as nn


def mlp(sizes, last_sigmoid=False):
    layers = []
    for i in range(len(sizes) - 1):
        layers += [nn.Linear(sizes[i], sizes[i + 1]), nn.ReLU()]
    if last_sigmoid:
        layers[-1] = nn.Sigmoid()
    return nn.Sequential(*layers)


class DLRM(nn.Module):
    def __init__(self, dense=13, tables=8, rows=1000, d=32, bottom=(128, 64), top=(256, 128, 1)):
        super().__init__()
        self.bottom = mlp([dense, *bottom, d])
        self.embeddings = nn.ModuleList(nn.EmbeddingBag(rows, d, mode="sum") for _ in range(tables))
        n = tables + 1
        li, lj = torch.tril_indices(n, n, offset=-1)
        self.register_buffer("li", li)
        self.register_buffer("lj", lj)
        self.top = mlp([d + n * (n - 1) // 2, *top], last_sigmoid=True)

    def forward(self, dense, sparse):
        x = self.bottom(dense)
        vectors = [x] + [bag(sparse[:, t]) for t, bag in enumerate(self.embeddings)]
        z = torch.stack(vectors, dim=1)
        pairs = torch.bmm(z, z.transpose(1, 2))[:, self.li, self.lj]
        return self.top(torch.cat([x, pairs], dim=1))


def get_inputs():
    return [torch.rand(64, 13), torch.randint(0, 1000, (64, 8, 4))]
