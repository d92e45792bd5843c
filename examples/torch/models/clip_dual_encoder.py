"""A CLIP-style dual encoder with a contrastive head, whole: an image tower (a patchify conv, class token,
learned positions, pre-LN transformer blocks with quick-GELU x * sigmoid(1.702 x)), a text tower (token +
position embeddings, causal blocks, the features at the end-of-text token picked with argmax over the ids and
gathered with advanced indexing), linear projections, F.normalize, logit_scale.exp() and image @ text.T (and
its transpose). Inputs: images (B x 3 x H x W) and token ids (captions x length; the largest id marks the end)."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class QuickGELU(nn.Module):
    def forward(self, x):
        return x * torch.sigmoid(1.702 * x)


class Block(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.attn = nn.MultiheadAttention(d, heads, batch_first=True)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), QuickGELU(), nn.Linear(4 * d, d))

    def forward(self, x, mask=None):
        h = self.ln1(x)
        x = x + self.attn(h, h, h, attn_mask=mask, need_weights=False)[0]
        return x + self.mlp(self.ln2(x))


class CLIP(nn.Module):
    def __init__(self, image=64, patch=16, vision_d=64, vocab=1000, ctx=16, text_d=64, heads=4, layers=2, embed=48):
        super().__init__()
        self.patchify = nn.Conv2d(3, vision_d, patch, stride=patch, bias=False)
        self.cls = nn.Parameter(torch.randn(vision_d) * 0.02)
        self.vision_pos = nn.Parameter(torch.randn((image // patch) ** 2 + 1, vision_d) * 0.02)
        self.vision_pre = nn.LayerNorm(vision_d)
        self.vision_blocks = nn.ModuleList(Block(vision_d, heads) for _ in range(layers))
        self.vision_post = nn.LayerNorm(vision_d)
        self.vision_proj = nn.Parameter(torch.randn(vision_d, embed) * vision_d ** -0.5)
        self.token = nn.Embedding(vocab, text_d)
        self.text_pos = nn.Parameter(torch.randn(ctx, text_d) * 0.01)
        self.text_blocks = nn.ModuleList(Block(text_d, heads) for _ in range(layers))
        self.text_post = nn.LayerNorm(text_d)
        self.text_proj = nn.Parameter(torch.randn(text_d, embed) * text_d ** -0.5)
        self.logit_scale = nn.Parameter(torch.tensor(2.659))
        self.register_buffer("causal", torch.full((ctx, ctx), float("-inf")).triu(1))

    def encode_image(self, images):
        x = self.patchify(images).flatten(2).transpose(1, 2)
        x = torch.cat([self.cls.expand(x.shape[0], 1, -1), x], dim=1) + self.vision_pos
        x = self.vision_pre(x)
        for block in self.vision_blocks:
            x = block(x)
        return self.vision_post(x[:, 0]) @ self.vision_proj

    def encode_text(self, ids):
        x = self.token(ids) + self.text_pos[: ids.shape[1]]
        for block in self.text_blocks:
            x = block(x, self.causal[: ids.shape[1], : ids.shape[1]])
        x = self.text_post(x)
        return x[torch.arange(x.shape[0]), ids.argmax(dim=-1)] @ self.text_proj

    def forward(self, images, ids):
        image = F.normalize(self.encode_image(images), dim=-1)
        text = F.normalize(self.encode_text(ids), dim=-1)
        logits_per_image = self.logit_scale.exp() * image @ text.t()
        return logits_per_image, logits_per_image.t()


def get_inputs():
    return [torch.randn(4, 3, 64, 64), torch.randint(0, 1000, (6, 16))]
