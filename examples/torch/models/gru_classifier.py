"""Embedding + 2-layer GRU + mean over time -> Linear."""
import torch
import torch.nn as nn


class GRUClassifier(nn.Module):
    def __init__(self, vocab=50, emb=16, hidden=24, classes=3):
        super().__init__()
        self.embedding = nn.Embedding(vocab, emb)
        self.gru = nn.GRU(emb, hidden, num_layers=2, batch_first=True)
        self.fc = nn.Linear(hidden, classes)

    def forward(self, ids):
        out, _ = self.gru(self.embedding(ids))
        return self.fc(out.mean(dim=1))


def get_inputs():
    return [torch.randint(0, 50, (2, 8))]
