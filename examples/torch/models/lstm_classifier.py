"""Text classifier: embedding (int64 ids) + LSTM + last hidden state -> Linear."""
import torch
import torch.nn as nn


class LSTMClassifier(nn.Module):
    def __init__(self, vocab=100, emb=16, hidden=32, classes=5):
        super().__init__()
        self.embedding = nn.Embedding(vocab, emb)
        self.lstm = nn.LSTM(emb, hidden, batch_first=True)
        self.fc = nn.Linear(hidden, classes)

    def forward(self, ids):
        out, (h, c) = self.lstm(self.embedding(ids))
        return self.fc(h[-1])


def get_inputs():
    return [torch.randint(0, 100, (2, 10))]
