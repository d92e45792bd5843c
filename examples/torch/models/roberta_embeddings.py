"""RoBERTa embeddings: position ids from the padding mask (int cumsum), word + position + token-type
embedding lookups summed, LayerNorm."""
import torch
import torch.nn as nn


class RobertaEmbeddings(nn.Module):
    def __init__(self, vocab=40, d=16, max_pos=20, pad=1):
        super().__init__()
        self.pad = pad
        self.word = nn.Embedding(vocab, d, padding_idx=pad)
        self.pos = nn.Embedding(max_pos, d, padding_idx=pad)
        self.tok = nn.Embedding(2, d)
        self.ln = nn.LayerNorm(d)

    def forward(self, ids):
        mask = ids.ne(self.pad).int()
        pos_ids = (torch.cumsum(mask, dim=1).type_as(mask) * mask).long() + self.pad
        return self.ln(self.word(ids) + self.pos(pos_ids) + self.tok(torch.zeros_like(ids)))


def get_inputs():
    ids = torch.randint(2, 40, (2, 9))
    ids[1, 6:] = 1
    return [ids]
