"""A character-level language model, whole: embedding, a multi-layer LSTM (or GRU, `cell="gru"`) over the
sequence, a linear decoder to the vocabulary at every step. Input: character ids (batch x sequence)."""
import torch
import torch.nn as nn


class CharRNNLM(nn.Module):
    def __init__(self, vocab=96, emb=64, hidden=256, layers=2, cell="lstm"):
        super().__init__()
        self.embedding = nn.Embedding(vocab, emb)
        self.rnn = (nn.LSTM if cell == "lstm" else nn.GRU)(emb, hidden, num_layers=layers, batch_first=True)
        self.decoder = nn.Linear(hidden, vocab)

    def forward(self, ids):
        out, _ = self.rnn(self.embedding(ids))
        return self.decoder(out)


def get_inputs():
    return [torch.randint(0, 96, (1, 64))]
