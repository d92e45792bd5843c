"""A latent-diffusion UNet stage: a sinusoidal timestep embedding (exp / sin / cos / cat) through a time MLP
(SiLU), residual blocks (GroupNorm + SiLU + conv3x3, the time embedding projected and added as a broadcast
over H x W, a 1x1 skip when the width changes), a spatial transformer (GroupNorm, 1x1 in-projection, self
attention over the H*W tokens, cross-attention to a context sequence, a GEGLU feed-forward, 1x1
out-projection, residual), a strided-conv downsample and a nearest upsample back. Inputs: latents
(B x C x H x W), timesteps (B,) and a context (B x tokens x context width)."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def timestep_embedding(t, dim, max_period=10000.0):
    half = dim // 2
    freqs = torch.exp(-math.log(max_period) * torch.arange(half, dtype=torch.float32, device=t.device) / half)
    args = t[:, None].float() * freqs[None]
    return torch.cat([torch.cos(args), torch.sin(args)], dim=-1)


class ResBlock(nn.Module):
    def __init__(self, cin, cout, tdim, groups):
        super().__init__()
        self.norm1 = nn.GroupNorm(groups, cin)
        self.conv1 = nn.Conv2d(cin, cout, 3, padding=1)
        self.time = nn.Linear(tdim, cout)
        self.norm2 = nn.GroupNorm(groups, cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, padding=1)
        self.skip = nn.Conv2d(cin, cout, 1) if cin != cout else nn.Identity()

    def forward(self, x, temb):
        h = self.conv1(F.silu(self.norm1(x)))
        h = h + self.time(F.silu(temb))[:, :, None, None]
        h = self.conv2(F.silu(self.norm2(h)))
        return self.skip(x) + h


class Attention(nn.Module):
    def __init__(self, d, heads, context_dim=None):
        super().__init__()
        self.heads = heads
        self.q = nn.Linear(d, d, bias=False)
        self.k = nn.Linear(context_dim or d, d, bias=False)
        self.v = nn.Linear(context_dim or d, d, bias=False)
        self.out = nn.Linear(d, d)

    def forward(self, x, context=None):
        context = x if context is None else context
        B, N, C = x.shape
        split = lambda t: t.reshape(B, -1, self.heads, C // self.heads).transpose(1, 2)  # noqa: E731
        q, k, v = split(self.q(x)), split(self.k(context)), split(self.v(context))
        w = torch.softmax(torch.einsum("bhid,bhjd->bhij", q, k) * (C // self.heads) ** -0.5, dim=-1)
        return self.out(torch.einsum("bhij,bhjd->bhid", w, v).transpose(1, 2).reshape(B, N, C))


class SpatialTransformer(nn.Module):
    def __init__(self, c, heads, context_dim, groups):
        super().__init__()
        self.norm = nn.GroupNorm(groups, c, eps=1e-6)
        self.proj_in = nn.Conv2d(c, c, 1)
        self.norm1, self.norm2, self.norm3 = nn.LayerNorm(c), nn.LayerNorm(c), nn.LayerNorm(c)
        self.self_attn = Attention(c, heads)
        self.cross_attn = Attention(c, heads, context_dim)
        self.geglu = nn.Linear(c, 8 * c)
        self.ff_out = nn.Linear(4 * c, c)
        self.proj_out = nn.Conv2d(c, c, 1)

    def forward(self, x, context):
        B, C, H, W = x.shape
        h = self.proj_in(self.norm(x)).flatten(2).transpose(1, 2)          # (B, H*W, C)
        h = h + self.self_attn(self.norm1(h))
        h = h + self.cross_attn(self.norm2(h), context)
        a, gate = self.geglu(self.norm3(h)).chunk(2, dim=-1)
        h = h + self.ff_out(a * F.gelu(gate))
        return x + self.proj_out(h.transpose(1, 2).reshape(B, C, H, W))


class DiffusionUNetStage(nn.Module):
    def __init__(self, cin=4, c=64, heads=4, context_dim=96, groups=8):
        super().__init__()
        self.tdim = c
        self.time_mlp = nn.Sequential(nn.Linear(c, 4 * c), nn.SiLU(), nn.Linear(4 * c, 4 * c))
        self.conv_in = nn.Conv2d(cin, c, 3, padding=1)
        self.res1 = ResBlock(c, c, 4 * c, groups)
        self.attn1 = SpatialTransformer(c, heads, context_dim, groups)
        self.down = nn.Conv2d(c, c, 3, stride=2, padding=1)
        self.res2 = ResBlock(c, 2 * c, 4 * c, groups)
        self.attn2 = SpatialTransformer(2 * c, heads, context_dim, groups)
        self.res3 = ResBlock(3 * c, c, 4 * c, groups)
        self.norm_out = nn.GroupNorm(groups, c)
        self.conv_out = nn.Conv2d(c, cin, 3, padding=1)

    def forward(self, x, t, context):
        temb = self.time_mlp(timestep_embedding(t, self.tdim))
        h1 = self.attn1(self.res1(self.conv_in(x), temb), context)
        h2 = self.attn2(self.res2(self.down(h1), temb), context)
        h = self.res3(torch.cat([F.interpolate(h2, scale_factor=2.0, mode="nearest"), h1], dim=1), temb)
        return self.conv_out(F.silu(self.norm_out(h)))


def get_inputs():
    return [torch.randn(2, 4, 32, 32), torch.randint(0, 1000, (2,)), torch.randn(2, 16, 96)]
