"""A seq2seq translator with attention, whole: a bidirectional GRU encoder over embedded source tokens, a
bridge (tanh Linear of the last states) to the decoder's initial state, and a greedy decoder unrolled for a
fixed number of steps: embed the previous token, a GRUCell, Luong general attention over the encoder states
(bmm scores, masked_fill on source padding built from the ids, softmax, bmm context), a tanh combination,
the vocabulary logits, and argmax fed back as the next token. Input: source ids (B x source length, pad 0)."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Seq2Seq(nn.Module):
    def __init__(self, src_vocab=4000, tgt_vocab=4000, emb=128, hidden=256, steps=20, bos=1, pad=0):
        super().__init__()
        self.steps, self.bos, self.pad = steps, bos, pad
        self.src_embed = nn.Embedding(src_vocab, emb, padding_idx=pad)
        self.encoder = nn.GRU(emb, hidden, batch_first=True, bidirectional=True)
        self.bridge = nn.Linear(2 * hidden, hidden)
        self.tgt_embed = nn.Embedding(tgt_vocab, emb)
        self.cell = nn.GRUCell(emb + hidden, hidden)
        self.attn = nn.Linear(hidden, 2 * hidden, bias=False)
        self.combine = nn.Linear(3 * hidden, hidden)
        self.out = nn.Linear(hidden, tgt_vocab)

    def forward(self, src):
        B = src.shape[0]
        memory, last = self.encoder(self.src_embed(src))                       # (B, S, 2H), (2, B, H)
        h = torch.tanh(self.bridge(torch.cat([last[0], last[1]], dim=-1)))
        pad = (src == self.pad).unsqueeze(1)                                   # (B, 1, S)
        token = torch.full((B,), self.bos, dtype=torch.long, device=src.device)
        feed = torch.zeros_like(h)
        logits = []
        for _ in range(self.steps):
            h = self.cell(torch.cat([self.tgt_embed(token), feed], dim=-1), h)
            scores = torch.bmm(self.attn(h).unsqueeze(1), memory.transpose(1, 2))   # (B, 1, S)
            weights = F.softmax(scores.masked_fill(pad, float("-inf")), dim=-1)
            context = torch.bmm(weights, memory).squeeze(1)
            feed = torch.tanh(self.combine(torch.cat([h, context], dim=-1)))
            step_logits = self.out(feed)
            logits.append(step_logits)
            token = step_logits.argmax(dim=-1)
        return torch.stack(logits, dim=1)


def get_inputs():
    src = torch.randint(2, 4000, (8, 32))
    src[2, 20:] = 0
    src[5, 9:] = 0
    return [src]
