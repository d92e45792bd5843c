"""Round 7 (docs/models-round7.md): patterns of Hugging Face `transformers` models (bench/hf_defs.py, run by
bench/hf_models.py) that the importer or the selector path failed on, reproduced here in plain torch (CI has
no transformers): each model is imported, run through the selector path on one and two threads (`target
cpu --threads N`, `select --apply`, `bench`, `cpu-lower`, `run --check --threads N`) and compared with the
unscheduled payload and torch's own outputs."""
from __future__ import annotations

from conftest import run_cli
from test_torch_import import TORCH_PYTHON, needs_torch  # (one probe of the torch Python for all the files)
from test_torch_import_round5 import _import, _selected_runs_checked


SDPA_VIEW = '''
import torch
import torch.nn.functional as F

class SdpaView(torch.nn.Module):
    """GPT-2's attention in transformers (sdpa): heads split by view + transpose, the output transposed
    back, reshaped, made contiguous (a no-op under the op's meta: not traced) and viewed as rows for
    Conv1D's addmm."""
    def __init__(self, d=32, heads=4):
        super().__init__()
        self.heads = heads
        self.w_qkv = torch.nn.Parameter(torch.randn(d, 3 * d) * 0.2)
        self.w_out = torch.nn.Parameter(torch.randn(d, d) * 0.2)
        self.b_out = torch.nn.Parameter(torch.randn(d) * 0.1)

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = (x @ self.w_qkv).split(c, dim=2)
        q, k, v = (y.view(b, t, self.heads, c // self.heads).transpose(1, 2) for y in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        y = y.transpose(1, 2).reshape(b, t, c).contiguous()
        return torch.addmm(self.b_out, y.view(-1, c), self.w_out).view(b, t, c)
'''


@needs_torch
def test_sdpa_output_viewed_as_rows_imports_and_matches_torch(tmp_path):
    """F.scaled_dot_product_attention exports as _scaled_dot_product_flash_attention_for_cpu, whose output
    is laid out as the query is; torch's decomposition laid it out (L, N, H, E) (nn.MultiheadAttention's
    case), and the re-trace failed the view after it: "Cannot view a tensor with shape [2, 8, 32] and
    strides (32, 64, 1) as a tensor with shape (16, 32)"."""
    text = _import(tmp_path, SDPA_VIEW, "SdpaView", "2x8x32xf32", "sdpa_view")
    assert "torch.aten" not in text
    _selected_runs_checked(tmp_path, "sdpa_view", 1)


INT_COMPARISONS = '''
import torch

class IntComparisons(torch.nn.Module):
    """Constant float splats compared with integer literals (a model's own `<= 0` on a constant, and the
    decompositions' comparisons: lgamma's pole test `v <= 0` of a constant argument), constant integer and
    bool splats with float / integer literals."""
    def forward(self, x, i):
        c, n = torch.full_like(x, 1.5), torch.full_like(x, -1.5)
        k, m = torch.full_like(i, 3), torch.ones_like(i, dtype=torch.bool)
        return ((c <= 0).float() + x, (n < 0).float() + x, (c < 2).float() + x, (c == 1).float() + x,
                (c > 1).float() + x, (n >= -1).float() + x, (c != 1).float() + x, torch.lgamma(n) + x,
                torch.where(c >= 2, x, -x), (k < 2.5).float() + x, (k == 3.0).float() + x, (k > 3.5).float() + x,
                (k <= 2.9).float() + x, (m == 1).float() + x, (m < 1).float() + x, (m > 0.5).float() + x,
                (i > 1.5).float() + x, (torch.full_like(x, 0.1) == 0.1).float() + x,
                ((x * 0 + 16777217) == 16777217).float() + x)
'''


@needs_torch
def test_constant_splats_compared_with_literals_match_torch(tmp_path):
    """torch-mlir folded aten.le.Scalar(full_like(x, 1.5), 0) to true and (full_like(x, 1.5) > 1) to false
    (the float's bits read as an integer): the importer now passes integer scalars of comparisons of float
    tensors as floats, as torch promotes them (before: run --check "FAILED (max abs err 4.01, max rel err 2)").
    An integer splat against a float literal crashed the exporter (a segmentation fault in torch-mlir's
    folder), a bool splat against an int folded wrongly (`ones == 1` false), and f32 against a float scalar
    compared in f64 (`full_like(x, 0.1) == 0.1` false): each comparison is now one of two tensors in the
    promoted type, as torch compares."""
    _import(tmp_path, INT_COMPARISONS, "IntComparisons", "4x5xf32,4x5xi64[0:5]", "int_comparisons")
    _selected_runs_checked(tmp_path, "int_comparisons", 19)


GROUPED_MOE = '''
import torch
import torch.nn.functional as F


@torch.library.custom_op("transformers::grouped_mm_fallback", mutates_args=())
def grouped_mm_fallback(input: torch.Tensor, weight: torch.Tensor, offs: torch.Tensor) -> torch.Tensor:
    """transformers' op (integrations/moe.py) as it defines it: opaque to torch.export."""
    output = torch.zeros(input.size(0), weight.size(2), dtype=input.dtype)
    start = 0
    for i, end in enumerate(offs.tolist()):
        if start != end:
            torch.mm(input[start:end], weight[i], out=output[start:end])
        start = end
    return output


@grouped_mm_fallback.register_fake
def _(input, weight, offs):
    return torch.empty(input.size(0), weight.size(2), dtype=input.dtype)


class GroupedMoe(torch.nn.Module):
    """Mixtral's experts in transformers 5 (grouped_mm_experts_forward): top-k routing, the (token, slot)
    pairs sorted by expert, histc + cumsum offsets, the library's grouped matmul per projection (its custom op,
    what transformers calls under torch.export for f32 weights), unsorted by an index_put."""
    def __init__(self, d=32, ff=48, experts=4, k=2):
        super().__init__()
        self.k, self.experts = k, experts
        self.router = torch.nn.Linear(d, experts, bias=False)
        self.gate_up = torch.nn.Parameter(torch.randn(experts, d, 2 * ff) * 0.2)
        self.down = torch.nn.Parameter(torch.randn(experts, ff, d) * 0.2)

    def forward(self, x):
        b, t, d = x.shape
        h = x.reshape(-1, d)
        weights, index = torch.topk(torch.softmax(self.router(h), -1), self.k, dim=-1)
        weights = weights / weights.sum(-1, keepdim=True)
        expert_ids, perm = torch.sort(index.reshape(-1), stable=True)
        rows = h[perm // self.k]
        counts = torch.histc(expert_ids.float(), bins=self.experts, min=0, max=self.experts - 1)
        offs = torch.cumsum(counts, dim=0, dtype=torch.int32)
        gate, up = torch.ops.transformers.grouped_mm_fallback(rows, self.gate_up, offs).chunk(2, dim=-1)
        out = torch.ops.transformers.grouped_mm_fallback(F.silu(gate) * up, self.down, offs)
        out = out * weights.reshape(-1)[perm].unsqueeze(-1)
        inverse = torch.empty_like(perm)
        inverse[perm] = torch.arange(perm.size(0))
        return out[inverse].reshape(b * t, self.k, d).sum(1).reshape(b, t, d)
'''


@needs_torch
def test_grouped_mm_moe_imports_and_matches_torch(tmp_path):
    """transformers' custom op
    `transformers::grouped_mm_fallback` (its MoE experts under torch.export: Mixtral, Qwen-MoE, ...) reached
    torch-mlir as an unknown op: "failed to legalize operation 'torch.operator' ... torch.transformers.
    grouped_mm_fallback". It is now one batched matmul over all groups and a gather of each row's own group."""
    text = _import(tmp_path, GROUPED_MOE, "GroupedMoe", "2x8x32xf32", "grouped_moe")
    assert "torch.operator" not in text and "torch.aten" not in text
    _selected_runs_checked(tmp_path, "grouped_moe", 1)


UNLOWERED = '''
import torch

class Unlowered(torch.nn.Module):
    def forward(self, x):
        y = x * 2
        return torch.special.airy_ai(y) + 1
'''


@needs_torch
def test_torch_mlir_refusal_names_the_op_and_the_model_line(tmp_path):
    """torch-mlir prints its diagnostics on stderr, not in the exception: the import's one line was "...
    Lowering TorchFX IR -> Torch Backend IR failed with the following diagnostics:" and nothing after it
    (Mixtral's custom op, special.airy_ai). Now it carries the first diagnostic at its source line."""
    (tmp_path / "model.py").write_text(UNLOWERED)
    p = run_cli(["import", "model.py:Unlowered", "--inputs", "3x4xf32", "--out", "o"], cwd=tmp_path,
                env_extra={"LH_WORKBENCH_TORCH_PYTHON": TORCH_PYTHON}, timeout=600)
    assert p.returncode == 1
    line = next(ln for ln in (p.stderr + p.stdout).splitlines() if "import failed" in ln)
    assert "model.py:7: failed to legalize operation 'torch.operator'" in line, line
    assert "torch.aten.special_airy_ai" in line, line
