"""A Swin transformer, whole (narrow): patch embedding (4x4 stride-4 conv + LayerNorm), stages of window
attention blocks alternating plain and shifted windows (torch.roll, window partition / reverse by
view + permute, a shifted-window attention mask built from region labels with masked_fill), a relative
position bias table, MLP; patch merging (strided slices, concat, LayerNorm, Linear) between stages; mean
pooling and a classifier."""
import torch
import torch.nn as nn
import torch.nn.functional as F


def window_partition(x, ws):
    B, H, W, C = x.shape
    x = x.view(B, H // ws, ws, W // ws, ws, C)
    return x.permute(0, 1, 3, 2, 4, 5).contiguous().view(-1, ws * ws, C)


def window_reverse(w, ws, H, W):
    B = int(w.shape[0] / (H * W / ws / ws))
    x = w.view(B, H // ws, W // ws, ws, ws, -1)
    return x.permute(0, 1, 3, 2, 4, 5).contiguous().view(B, H, W, -1)


def shifted_window_mask(H, W, ws, shift):
    """(windows, ws*ws, ws*ws): 0 inside a region, -100 across regions (the shifted windows' wrap-around)."""
    img = torch.zeros(1, H, W, 1)
    label = 0
    for hs in (slice(0, -ws), slice(-ws, -shift), slice(-shift, None)):
        for wsl in (slice(0, -ws), slice(-ws, -shift), slice(-shift, None)):
            img[:, hs, wsl, :] = label
            label += 1
    win = window_partition(img, ws).squeeze(-1)
    mask = win.unsqueeze(1) - win.unsqueeze(2)
    return mask.masked_fill(mask != 0, -100.0).masked_fill(mask == 0, 0.0)


class SwinBlock(nn.Module):
    def __init__(self, dim, heads, ws, shift, H, W):
        super().__init__()
        if min(H, W) <= ws:
            ws, shift = min(H, W), 0
        self.dim, self.heads, self.ws, self.shift = dim, heads, ws, shift
        self.norm1 = nn.LayerNorm(dim)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.norm2 = nn.LayerNorm(dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))
        self.bias_table = nn.Parameter(0.02 * torch.randn((2 * ws - 1) ** 2, heads))
        coords = torch.stack(torch.meshgrid(torch.arange(ws), torch.arange(ws), indexing="ij")).flatten(1)
        rel = (coords[:, :, None] - coords[:, None, :]).permute(1, 2, 0) + (ws - 1)
        self.register_buffer("rel_index", rel[..., 0] * (2 * ws - 1) + rel[..., 1], persistent=False)
        self.register_buffer("mask", shifted_window_mask(H, W, ws, shift) if shift else None, persistent=False)

    def forward(self, x):
        B, H, W, C = x.shape
        h = self.norm1(x)
        if self.shift:
            h = torch.roll(h, shifts=(-self.shift, -self.shift), dims=(1, 2))
        w = window_partition(h, self.ws)
        n = w.shape[1]
        qkv = self.qkv(w).reshape(-1, n, 3, self.heads, C // self.heads).permute(2, 0, 3, 1, 4)
        q, k, v = qkv[0], qkv[1], qkv[2]
        att = (q * (C // self.heads) ** -0.5) @ k.transpose(-2, -1)
        bias = self.bias_table[self.rel_index.view(-1)].view(n, n, -1).permute(2, 0, 1)
        att = att + bias.unsqueeze(0)
        if self.mask is not None:
            nw = self.mask.shape[0]
            att = att.view(-1, nw, self.heads, n, n) + self.mask.unsqueeze(1).unsqueeze(0)
            att = att.view(-1, self.heads, n, n)
        o = self.proj((att.softmax(dim=-1) @ v).transpose(1, 2).reshape(-1, n, C))
        o = window_reverse(o, self.ws, H, W)
        if self.shift:
            o = torch.roll(o, shifts=(self.shift, self.shift), dims=(1, 2))
        x = x + o
        return x + self.mlp(self.norm2(x))


class PatchMerging(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.norm = nn.LayerNorm(4 * dim)
        self.reduction = nn.Linear(4 * dim, 2 * dim, bias=False)

    def forward(self, x):
        x = torch.cat([x[:, 0::2, 0::2], x[:, 1::2, 0::2], x[:, 0::2, 1::2], x[:, 1::2, 1::2]], -1)
        return self.reduction(self.norm(x))


class SwinTiny(nn.Module):
    def __init__(self, image=224, patch=4, dim=96, depths=(2, 2, 6, 2), heads=(3, 6, 12, 24), ws=7, classes=1000):
        super().__init__()
        self.patch = nn.Conv2d(3, dim, patch, stride=patch)
        self.patch_norm = nn.LayerNorm(dim)
        res = image // patch
        stages = []
        for i, (depth, h) in enumerate(zip(depths, heads)):
            d = dim * 2 ** i
            blocks = [SwinBlock(d, h, ws, 0 if j % 2 == 0 else ws // 2, res, res) for j in range(depth)]
            if i < len(depths) - 1:
                blocks.append(PatchMerging(d))
                res //= 2
            stages.append(nn.Sequential(*blocks))
        self.stages = nn.Sequential(*stages)
        self.norm = nn.LayerNorm(dim * 2 ** (len(depths) - 1))
        self.head = nn.Linear(dim * 2 ** (len(depths) - 1), classes)

    def forward(self, x):
        x = self.patch_norm(self.patch(x).permute(0, 2, 3, 1))
        x = self.norm(self.stages(x))
        return self.head(x.mean((1, 2)))


def get_inputs():
    return [torch.randn(1, 3, 224, 224)]
