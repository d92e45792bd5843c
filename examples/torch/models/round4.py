"""Round-4 blocks in the style of real architectures the corpus did not cover yet (docs/models-round4.md):
DeepLabV3 ASPP (atrous convs, image pooling branch, bilinear align_corners=True), ECA-Net (conv1d over
channels), a YOLOv5 Focus stem (pixel_unshuffle) with a SwinIR-style pixel_shuffle head, a VQ-VAE quantizer
(distances, argmin, codebook lookup, straight-through, commitment loss), a token-choice MoE (topk, gather,
index_add / scatter_add, load-balancing loss), a GPT-J decode step (interleaved rotary by strided slices,
KV-cache cat, multi-query attention), LSTMCell + GRUCell unrolled, RealNVP affine couplings (checkerboard
masks, exp, log-det), a classifier head with label smoothing + ignore_index and a focal loss, QAT fake quant
(per-channel weights, per-tensor activations), BiLSTM-CRF Viterbi decoding (max / argmax, backtrace by
gather), a spatial transformer (affine_grid + grid_sample), a top-k / top-p logits processor (sort, cumsum,
scatter back), DeepFM (EmbeddingBag mean, FM second-order term), a SegFormer block (spatial-reduction
attention, Mix-FFN with a depthwise conv), a YOLO box decoder (meshgrid offsets, anchors, pairwise IoU), an
ArcFace head (normalize, acos / cos additive angular margin, one_hot where, cross-entropy, cdist)."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class ASPP(nn.Module):
    def __init__(self, cin=8, c=8, rates=(2, 3), classes=5):
        super().__init__()
        self.b0 = nn.Conv2d(cin, c, 1, bias=False)
        self.atrous = nn.ModuleList(nn.Conv2d(cin, c, 3, padding=r, dilation=r, bias=False) for r in rates)
        self.pool_conv = nn.Conv2d(cin, c, 1, bias=False)
        self.bn = nn.BatchNorm2d(c * (len(rates) + 2))
        self.project = nn.Conv2d(c * (len(rates) + 2), c, 1)
        self.head = nn.Conv2d(c, classes, 1)

    def forward(self, x):
        h, w = x.shape[-2:]
        pooled = F.relu(self.pool_conv(F.adaptive_avg_pool2d(x, 1)))
        pooled = F.interpolate(pooled, size=(h, w), mode="bilinear", align_corners=True)
        y = torch.cat([self.b0(x)] + [conv(x) for conv in self.atrous] + [pooled], dim=1)
        y = F.relu(self.project(F.relu(self.bn(y))))
        return F.interpolate(self.head(y), scale_factor=2, mode="bilinear", align_corners=True)


class ECABlock(nn.Module):
    def __init__(self, c=16, k=3):
        super().__init__()
        self.conv1 = nn.Conv2d(c, c, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(c)
        self.conv2 = nn.Conv2d(c, c, 3, padding=1, bias=False)
        self.eca = nn.Conv1d(1, 1, k, padding=k // 2, bias=False)

    def forward(self, x):
        y = self.conv2(F.relu(self.bn1(self.conv1(x))))
        s = F.adaptive_avg_pool2d(y, 1)                       # B C 1 1
        s = self.eca(s.squeeze(-1).transpose(-1, -2))          # B 1 C
        s = torch.sigmoid(s.transpose(-1, -2).unsqueeze(-1))   # B C 1 1
        return F.relu(x + y * s.expand_as(y))


class FocusShuffle(nn.Module):
    def __init__(self, cin=3, c=16, scale=2):
        super().__init__()
        self.stem = nn.Conv2d(cin * scale * scale, c, 3, padding=1)
        self.body = nn.Conv2d(c, c, 3, padding=1)
        self.up = nn.Conv2d(c, cin * scale * scale, 3, padding=1)
        self.scale = scale

    def forward(self, x):
        y = F.silu(self.stem(F.pixel_unshuffle(x, self.scale)))
        y = y + F.silu(self.body(y))
        return x + F.pixel_shuffle(self.up(y), self.scale)


class VQQuantizer(nn.Module):
    def __init__(self, cin=3, d=8, codes=32, beta=0.25):
        super().__init__()
        self.enc = nn.Conv2d(cin, d, 4, stride=2, padding=1)
        self.codebook = nn.Embedding(codes, d)
        self.dec = nn.ConvTranspose2d(d, cin, 4, stride=2, padding=1)
        self.beta = beta

    def forward(self, x):
        z = self.enc(x).permute(0, 2, 3, 1)                    # B H W D
        flat = z.reshape(-1, z.shape[-1])
        dist = (flat.pow(2).sum(1, keepdim=True) - 2 * flat @ self.codebook.weight.t()
                + self.codebook.weight.pow(2).sum(1))
        idx = dist.argmin(1)
        q = self.codebook(idx).view_as(z)
        loss = F.mse_loss(q.detach(), z) * self.beta + F.mse_loss(q, z.detach())
        q = z + (q - z).detach()
        return self.dec(q.permute(0, 3, 1, 2)), loss, idx.view(z.shape[:-1])


class ScatterMoE(nn.Module):
    def __init__(self, d=16, experts=4, hidden=24, k=2):
        super().__init__()
        self.k, self.experts = k, experts
        self.gate = nn.Linear(d, experts, bias=False)
        self.w1 = nn.Parameter(torch.randn(experts, d, hidden) * 0.2)
        self.w2 = nn.Parameter(torch.randn(experts, hidden, d) * 0.2)

    def forward(self, x):
        b, n, d = x.shape
        tokens = x.reshape(-1, d)
        probs = torch.softmax(self.gate(tokens), dim=-1)
        weights, experts = torch.topk(probs, self.k, dim=-1)                 # T k
        weights = weights / weights.sum(-1, keepdim=True)
        h = F.silu(torch.einsum("td,edh->eth", tokens, self.w1))
        y = torch.einsum("eth,ehd->etd", h, self.w2)                          # E T D
        t = tokens.shape[0]
        flat = experts.reshape(-1) * t + torch.arange(t).repeat_interleave(self.k)
        picked = y.reshape(-1, d).index_select(0, flat) * weights.reshape(-1, 1)
        rows = torch.arange(t).repeat_interleave(self.k)
        out = torch.zeros_like(tokens).index_add(0, rows, picked)
        counts = torch.zeros(self.experts).scatter_add(0, experts.reshape(-1), torch.ones(t * self.k))
        aux = (counts / (t * self.k) * probs.mean(0)).sum() * self.experts
        return out.view(b, n, d), aux


def _rotate_every_two(x):
    x1, x2 = x[..., ::2], x[..., 1::2]
    return torch.stack((-x2, x1), dim=-1).flatten(-2)


class GPTJDecodeStep(nn.Module):
    def __init__(self, d=32, heads=4, past=7, rotary=4):
        super().__init__()
        self.heads, self.hd, self.past, self.rotary = heads, d // heads, past, rotary
        self.q = nn.Linear(d, d, bias=False)
        self.kv = nn.Linear(d, 2 * self.hd, bias=False)    # multi-query: one k / v head
        self.out = nn.Linear(d, d, bias=False)
        inv = 1.0 / (10000 ** (torch.arange(0, rotary, 2).float() / rotary))
        self.register_buffer("inv_freq", inv)

    def _rope(self, x, pos):
        freqs = pos.float()[:, None] * self.inv_freq[None, :]                # n r/2
        sin = torch.repeat_interleave(torch.sin(freqs), 2, dim=-1)
        cos = torch.repeat_interleave(torch.cos(freqs), 2, dim=-1)
        r, rest = x[..., :self.rotary], x[..., self.rotary:]
        return torch.cat([r * cos + _rotate_every_two(r) * sin, rest], dim=-1)

    def forward(self, x, past_k, past_v):
        b, n, d = x.shape                                                    # n new tokens after `past`
        pos = torch.arange(self.past, self.past + n)
        q = self._rope(self.q(x).view(b, n, self.heads, self.hd).transpose(1, 2), pos)
        k, v = self.kv(x).view(b, n, 1, 2 * self.hd).transpose(1, 2).split(self.hd, dim=-1)
        k = torch.cat([past_k, self._rope(k, pos)], dim=2)
        v = torch.cat([past_v, v], dim=2)
        att = (q @ k.transpose(-1, -2)) / self.hd ** 0.5                     # b h n past+n
        att = torch.softmax(att.float(), dim=-1)
        y = (att @ v).transpose(1, 2).reshape(b, n, d)
        return self.out(y), k, v


class RNNCells(nn.Module):
    def __init__(self, inputs=6, hidden=12, classes=4):
        super().__init__()
        self.lstm = nn.LSTMCell(inputs, hidden)
        self.gru = nn.GRUCell(hidden, hidden)
        self.norm = nn.LayerNorm(hidden)
        self.head = nn.Linear(hidden, classes)

    def forward(self, x):                                                    # B T I
        b = x.shape[0]
        h = c = g = torch.zeros(b, self.lstm.hidden_size)
        outs = []
        for t in range(x.shape[1]):
            h, c = self.lstm(x[:, t], (h, c))
            g = self.gru(h, g)
            outs.append(self.norm(g))
        return self.head(torch.stack(outs, 1)).log_softmax(-1)


class RealNVP(nn.Module):
    def __init__(self, c=2, hidden=8, layers=2, size=8):
        super().__init__()
        ii, jj = torch.meshgrid(torch.arange(size), torch.arange(size), indexing="ij")
        self.register_buffer("mask", ((ii + jj) % 2).float().view(1, 1, size, size))
        self.log_scale = nn.Parameter(torch.randn(1, c, 1, 1) * 0.1)
        self.bias = nn.Parameter(torch.randn(1, c, 1, 1) * 0.1)
        self.nets = nn.ModuleList(nn.Sequential(nn.Conv2d(c, hidden, 3, padding=1), nn.ReLU(),
                                                nn.Conv2d(hidden, 2 * c, 3, padding=1)) for _ in range(layers))
        self.scale = nn.Parameter(torch.ones(1, c, 1, 1))

    def forward(self, x):
        y = (x + self.bias) * torch.exp(self.log_scale)                       # actnorm
        logdet = self.log_scale.sum() * x.shape[2] * x.shape[3] * torch.ones(x.shape[0])
        for i, net in enumerate(self.nets):
            m = self.mask if i % 2 == 0 else 1 - self.mask
            s, t = net(y * m).chunk(2, dim=1)
            s = self.scale * torch.tanh(s) * (1 - m)
            y = y * m + (1 - m) * (y * torch.exp(s) + t)
            logdet = logdet + s.flatten(1).sum(-1)
        prior = -0.5 * (y ** 2 + torch.log(torch.tensor(2 * torch.pi))).flatten(1).sum(-1)
        return y, prior + logdet


class SmoothedHead(nn.Module):
    def __init__(self, d=24, classes=10, gamma=2.0):
        super().__init__()
        self.proj = nn.Linear(d, classes)
        self.ce = nn.CrossEntropyLoss(label_smoothing=0.1, ignore_index=0)
        self.gamma = gamma

    def forward(self, x, target):                                            # B T d, B T
        logits = self.proj(F.layer_norm(x, x.shape[-1:]))
        ce = self.ce(logits.flatten(0, 1), target.flatten())
        logp = F.log_softmax(logits, -1).gather(-1, target.unsqueeze(-1)).squeeze(-1)
        focal = (-(1 - logp.exp()) ** self.gamma * logp).mean()
        return ce, focal, logits.argmax(-1)


class FakeQuantMLP(nn.Module):
    def __init__(self, d=32, hidden=48, classes=8):
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(d, hidden), nn.Linear(hidden, classes)

    @staticmethod
    def _fq_weight(w):
        scale = w.abs().amax(dim=1).clamp(min=1e-8) / 127.0
        zero = torch.zeros(w.shape[0], dtype=torch.int32)
        return torch.fake_quantize_per_channel_affine(w, scale, zero, 0, -127, 127)

    @staticmethod
    def _fq_act(x, scale=0.05, zero=128):
        return torch.fake_quantize_per_tensor_affine(x, scale, zero, 0, 255)

    def forward(self, x):
        h = F.relu(F.linear(self._fq_act(x), self._fq_weight(self.fc1.weight), self.fc1.bias))
        # the hand-written spelling of the same: round, clamp, rescale
        h = (torch.clamp(torch.round(h / 0.05) + 0, 0, 255) - 0) * 0.05
        return F.linear(h, self._fq_weight(self.fc2.weight), self.fc2.bias)


class CRFViterbi(nn.Module):
    def __init__(self, inputs=8, tags=5):
        super().__init__()
        self.emit = nn.Linear(inputs, tags)
        self.transitions = nn.Parameter(torch.randn(tags, tags))
        self.start = nn.Parameter(torch.randn(tags))
        self.end = nn.Parameter(torch.randn(tags))

    def forward(self, x):                                                    # B T I
        emissions = self.emit(x)
        b, steps, tags = emissions.shape
        score = self.start + emissions[:, 0]
        history = []
        for t in range(1, steps):
            total = score.unsqueeze(2) + self.transitions + emissions[:, t].unsqueeze(1)
            score, best = total.max(dim=1)
            history.append(best)
        score = score + self.end
        best_score, last = score.max(dim=1)
        path = [last]
        for best in reversed(history):
            last = best.gather(1, last.unsqueeze(1)).squeeze(1)
            path.append(last)
        return best_score, torch.stack(path[::-1], dim=1)


class SpatialTransformer(nn.Module):
    def __init__(self, c=1, size=16, classes=10):
        super().__init__()
        self.loc = nn.Sequential(nn.Conv2d(c, 8, 5), nn.MaxPool2d(2), nn.ReLU())
        self.fc = nn.Linear(8 * ((size - 4) // 2) ** 2, 6)
        with torch.no_grad():
            self.fc.weight.mul_(0.01)
            self.fc.bias.copy_(torch.tensor([1.0, 0.1, 0.0, -0.1, 0.9, 0.05]))
        self.cls = nn.Sequential(nn.Conv2d(c, 4, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(2), nn.Flatten(),
                                 nn.Linear(16, classes))

    def forward(self, x):
        theta = self.fc(self.loc(x).flatten(1)).view(-1, 2, 3)
        grid = F.affine_grid(theta, list(x.shape), align_corners=False)
        return self.cls(F.grid_sample(x, grid, mode="bilinear", padding_mode="zeros", align_corners=False))


class TopPLogits(nn.Module):
    def __init__(self, top_k=8, top_p=0.8, temperature=0.7):
        super().__init__()
        self.top_k, self.top_p, self.temperature = top_k, top_p, temperature

    def forward(self, logits):                                               # B V
        logits = logits / self.temperature
        kth = torch.topk(logits, self.top_k, dim=-1).values[..., -1:]
        logits = logits.masked_fill(logits < kth, float("-inf"))
        sorted_logits, order = torch.sort(logits, descending=True, dim=-1)
        cum = torch.softmax(sorted_logits, dim=-1).cumsum(-1)
        remove = cum > self.top_p
        remove[..., 1:] = remove[..., :-1].clone()
        remove[..., 0] = False
        mask = remove.scatter(-1, order, remove)
        return torch.log_softmax(logits.masked_fill(mask, float("-inf")), dim=-1).clamp(min=-1e4)


class DeepFM(nn.Module):
    def __init__(self, fields=4, rows=40, d=8, dense=5, hidden=16):
        super().__init__()
        self.bags = nn.ModuleList(nn.EmbeddingBag(rows, d, mode="mean") for _ in range(fields))
        self.linear_bags = nn.ModuleList(nn.EmbeddingBag(rows, 1, mode="sum") for _ in range(fields))
        self.dense = nn.Linear(dense, d)
        self.mlp = nn.Sequential(nn.Linear((fields + 1) * d, hidden), nn.ReLU(), nn.Linear(hidden, 1))

    def forward(self, dense, ids):                                           # B F, B fields bag
        emb = torch.stack([bag(ids[:, i]) for i, bag in enumerate(self.bags)] + [self.dense(dense)], dim=1)
        first = sum(bag(ids[:, i]) for i, bag in enumerate(self.linear_bags))
        fm = 0.5 * (emb.sum(1).pow(2) - emb.pow(2).sum(1)).sum(-1, keepdim=True)
        return torch.sigmoid(first + fm + self.mlp(emb.flatten(1)))


class SegFormerBlock(nn.Module):
    def __init__(self, c=16, heads=2, sr=2, expand=2):
        super().__init__()
        self.heads, self.sr = heads, sr
        self.norm1, self.norm2, self.norm_sr = nn.LayerNorm(c), nn.LayerNorm(c), nn.LayerNorm(c)
        self.q, self.kv, self.proj = nn.Linear(c, c), nn.Linear(c, 2 * c), nn.Linear(c, c)
        self.reduce = nn.Conv2d(c, c, sr, stride=sr)
        self.fc1, self.fc2 = nn.Linear(c, c * expand), nn.Linear(c * expand, c)
        self.dw = nn.Conv2d(c * expand, c * expand, 3, padding=1, groups=c * expand)

    def forward(self, x):                                                    # B C H W
        b, c, h, w = x.shape
        t = x.flatten(2).transpose(1, 2)                                     # B N C
        y = self.norm1(t)
        q = self.q(y).view(b, -1, self.heads, c // self.heads).transpose(1, 2)
        r = self.reduce(y.transpose(1, 2).reshape(b, c, h, w)).flatten(2).transpose(1, 2)
        k, v = self.kv(self.norm_sr(r)).view(b, -1, 2, self.heads, c // self.heads).permute(2, 0, 3, 1, 4)
        a = F.scaled_dot_product_attention(q, k, v).transpose(1, 2).reshape(b, -1, c)
        t = t + self.proj(a)
        z = self.fc1(self.norm2(t))
        z = self.dw(z.transpose(1, 2).reshape(b, -1, h, w)).flatten(2).transpose(1, 2)
        t = t + self.fc2(F.gelu(z))
        return t.transpose(1, 2).reshape(b, c, h, w)


class YOLODecode(nn.Module):
    def __init__(self, c=8, anchors=((10, 13), (16, 30), (33, 23)), classes=3, stride=8):
        super().__init__()
        self.na, self.no, self.stride = len(anchors), classes + 5, stride
        self.head = nn.Conv2d(c, self.na * self.no, 1)
        self.register_buffer("anchors", torch.tensor(anchors, dtype=torch.float32).view(1, -1, 1, 1, 2))

    def forward(self, x):
        b, _, ny, nx = x.shape
        p = self.head(x).view(b, self.na, self.no, ny, nx).permute(0, 1, 3, 4, 2).sigmoid()
        yv, xv = torch.meshgrid(torch.arange(ny), torch.arange(nx), indexing="ij")
        grid = torch.stack((xv, yv), 2).view(1, 1, ny, nx, 2).float()
        xy = (p[..., :2] * 2 - 0.5 + grid) * self.stride
        wh = (p[..., 2:4] * 2) ** 2 * self.anchors
        boxes = torch.cat([xy - wh / 2, xy + wh / 2], -1).reshape(b, -1, 4)
        scores = (p[..., 4:5] * p[..., 5:]).reshape(b, -1, self.no - 5)
        lt = torch.max(boxes[:, :, None, :2], boxes[:, None, :, :2])
        rb = torch.min(boxes[:, :, None, 2:], boxes[:, None, :, 2:])
        inter = (rb - lt).clamp(min=0).prod(-1)
        area = (boxes[..., 2:] - boxes[..., :2]).prod(-1)
        iou = inter / (area[:, :, None] + area[:, None, :] - inter)
        conf, cls = scores.max(-1)
        return boxes, conf, cls, iou


class ArcFace(nn.Module):
    def __init__(self, d=16, classes=10, s=30.0, m=0.5):
        super().__init__()
        # (uniform: the exporter's inputs are randn of the same seed, class centres equal to embeddings would put
        # cdist's matmul form at sqrt(rounding noise), which differs run to run as much as torch's own)
        self.weight = nn.Parameter(torch.rand(classes, d) - 0.5)
        self.s, self.m = s, m

    def forward(self, emb, labels):
        e, w = F.normalize(emb), F.normalize(self.weight)
        cos = F.linear(e, w).clamp(-1 + 1e-7, 1 - 1e-7)
        target = torch.cos(torch.acos(cos) + self.m)
        logits = self.s * torch.where(F.one_hot(labels, cos.shape[1]).bool(), target, cos)
        return F.cross_entropy(logits, labels), torch.cdist(e, w)          # distances to the class centres
