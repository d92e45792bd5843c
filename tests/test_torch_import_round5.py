"""Round 5 of the importer's decompositions (docs/models-round5.md): torch ops torch-mlir refused, each now
decomposed in torch before export (workbench/importers/torch_export.py), imported, run through the selector
path on one and two threads (`target cpu --threads N`, `select --apply`, `bench`, `cpu-lower`,
`run --check --threads N`) and compared with torch's own outputs. Each model here failed to import before."""
from __future__ import annotations

import json

import numpy as np

from conftest import run_cli
from test_torch_import import TORCH_PYTHON, needs_torch  # (one probe of the torch Python for both files)


def _import(tmp_path, source: str, name: str, inputs: str, stem: str) -> str:
    """Export model.py:NAME on INPUTS; the payload's text (no torch-mlir leftovers in it)."""
    (tmp_path / "model.py").write_text(source)
    p = run_cli(["import", f"model.py:{name}", "--inputs", inputs, "--out", "o"], cwd=tmp_path,
                env_extra={"LH_WORKBENCH_TORCH_PYTHON": TORCH_PYTHON}, timeout=600)
    assert p.returncode == 0, p.stderr + p.stdout
    sidecar = json.loads((tmp_path / "o" / f"{stem}.expected.json").read_text())
    assert sidecar["unsupported_ops"] == []
    return (tmp_path / "o" / f"{stem}.mlir").read_text()


def _selected_runs_checked(tmp_path, stem: str, outputs: int) -> None:
    """The payload through the selector path planned and run on 1 and on 2 threads, each run equal to the
    unscheduled payload and to torch."""
    for threads in (1, 2):
        script = tmp_path / f"s{threads}.lhw"
        script.write_text(f"target cpu --threads {threads}\nselect --apply\nbench warmup=1 iterations=2\n"
                          f"apply cpu-lower\nrun --check --threads {threads}\n")
        answer = tmp_path / f"r{threads}.json"
        p = run_cli([tmp_path / "o" / f"{stem}.mlir", "--script", script, "--json", answer], cwd=tmp_path,
                    timeout=600)
        assert p.returncode == 0, p.stderr
        run = json.loads(answer.read_text())["run"]
        assert run["check"]["passed"] and run["expected_check"]["passed"], run
        assert len(run["expected_check"]["outputs"]) == outputs


SPECIAL = '''
import torch

class Special(torch.nn.Module):
    def forward(self, x):
        v = x * 5                        # negative non-integers, |x| > 8 (the Bessel functions' far branch)
        return (torch.lgamma(v), torch.special.gammaln(x * 30), torch.special.i0(v), torch.special.i0e(v),
                torch.special.i1(v), torch.special.i1e(v), torch.digamma(v), torch.special.psi(x.abs() + 0.01),
                torch.polygamma(1, v), torch.special.multigammaln(x.abs() + 2, 3))
'''


@needs_torch
def test_lgamma_bessel_i0_i1_digamma_trigamma_import_and_match_torch(tmp_path):
    """torch.lgamma (Lanczos, the reflection below 1/2: negative non-integers), special.i0 / i0e / i1 / i1e
    (Cephes' Chebyshev series, both intervals), digamma (torch's recurrence, series and reflection) and
    polygamma(1) (torch's trigamma) had no torch-mlir lowering ("failed to legalize operation
    'torch.operator' ... torch.aten.lgamma"); multigammaln goes through lgamma."""
    text = _import(tmp_path, SPECIAL, "Special", "6x9xf32", "special")
    assert "torch.aten" not in text
    v = np.load(tmp_path / "o" / "special.input0.npy") * 5
    assert (v < -0.5).any() and (np.abs(v) > 8).any()
    _selected_runs_checked(tmp_path, "special", 10)


HIST = '''
import torch

class Hist(torch.nn.Module):
    def forward(self, x):
        c = x.clamp(-0.5, 0.5)                      # many values exactly at min and max
        return (torch.histc(x, bins=6, min=-1, max=1), torch.histc(x, bins=5), torch.histc(c, 4, -0.5, 0.5),
                torch.histc(x * 0 + 2, 3))          # min == max == the data's: [1, 3]
'''


@needs_torch
def test_histc_imports_and_matches_torch(tmp_path):
    """torch.histc (no torch-mlir lowering): torch's linear bins, values equal to max in the last bin, values
    outside [min, max] not counted, min == max taking the data's min and max (widened by 1 if equal)."""
    _import(tmp_path, HIST, "Hist", "5x8xf32", "hist")
    first = np.load(tmp_path / "o" / "hist.expected0.npy")
    assert first.sum() < 40                       # some values were outside [-1, 1]
    assert np.load(tmp_path / "o" / "hist.expected2.npy")[-1] > 0
    _selected_runs_checked(tmp_path, "hist", 4)


CTC = '''
import torch
import torch.nn.functional as F

class Ctc(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.loss = torch.nn.CTCLoss(blank=5, reduction="sum", zero_infinity=True)
    def forward(self, x, targets):
        lp = x.log_softmax(-1)                              # [T=6, N=3, C=6]
        il, tl = torch.tensor([6, 5, 4]), torch.tensor([2, 3, 0])
        t = targets % 5 + 1                                  # labels 1..5, blank 0
        t = torch.cat([t[:, :1], t], 1)                      # a repeated label (needs a blank between)
        flat = t.reshape(-1)[:5]                             # concatenated targets: 2 + 3
        infeasible = torch.tensor([3, 3, 4])                 # sample 2 has 4 frames: too few for 4 labels
        return (F.ctc_loss(lp, t, il, tl, reduction="none"), F.ctc_loss(lp, flat, il, tl),
                self.loss(lp, t % 5, il, infeasible))
'''


@needs_torch
def test_ctc_loss_imports_and_matches_torch(tmp_path):
    """F.ctc_loss / nn.CTCLoss (torch's export failed: DynamicOutputShapeException on aten._ctc_loss): the
    alpha recursion in log space unrolled over the static input length, per-sample input and target
    lengths, padded and concatenated targets, repeated labels, a blank index, reductions and zero_infinity
    (an infeasible sample). (Unbatched input and list lengths: checked against torch in eager only.)"""
    _import(tmp_path, CTC, "Ctc", "6x3x6xf32,3x3xi64[0:100]", "ctc")
    assert np.isfinite(np.load(tmp_path / "o" / "ctc.expected2.npy")).all()
    _selected_runs_checked(tmp_path, "ctc", 3)


MORE = '''
import torch
import torch.nn.functional as F

class More(torch.nn.Module):
    def forward(self, x, y, k):
        u = torch.tanh(x)                                    # in (-1, 1)
        p = torch.sigmoid(x * 3)                             # in (0, 1), tails near 0 and 1
        z = x * 0.6                                          # around [-1, 1], some outside
        return (torch.erfc(x * 2), torch.special.erfcx(x * 3), torch.special.log_ndtr(x * 5),
                torch.erfinv(u), torch.special.ndtri(p), torch.hypot(x, y), torch.fmod(x * 3, 0.7),
                torch.copysign(y, x), torch.signbit(x), torch.angle(x), F.pdist(x), F.pdist(y, p=1),
                k << 3, k >> 2, torch.bitwise_left_shift(k, 60), k & 3, k | 8, k ^ 5,
                torch.special.chebyshev_polynomial_t(z, 3), torch.special.chebyshev_polynomial_t(z, 9),
                torch.special.hermite_polynomial_h(z, 4), torch.special.legendre_polynomial_p(z, 5),
                torch.special.laguerre_polynomial_l(x * 2, 4))
'''


@needs_torch
def test_erfc_erfinv_ndtri_hypot_fmod_signbit_pdist_shifts_polynomials_import_and_match_torch(tmp_path):
    """Less common ops torch-mlir refused ("failed to legalize operation 'torch.operator'" or
    "'torch.constant.int' / 'torch.constant.float'"), each decomposed: erfc / erfcx (Numerical Recipes'
    t exp(P(t)), log_ndtr through them), erfinv (Giles), ndtri (Acklam, tails from p itself), hypot
    (scaled), fmod by a scalar (the Tensor form), signbit (copysign's decomposition uses it), angle of a real
    tensor, pdist (the upper triangle's pairs), shifts and & | ^ by a constant, and the Chebyshev T (torch's
    cos(n acos x) for n > 6), Hermite H, Legendre P and Laguerre L polynomials of a constant degree."""
    _import(tmp_path, MORE, "More", "6x5xf32,6x5xf32,9xi64[-1000:1000]", "more")
    assert np.load(tmp_path / "o" / "more.expected8.npy").any()            # some signs set
    _selected_runs_checked(tmp_path, "more", 23)


NANMEDIAN = '''
import torch

class NanMedian(torch.nn.Module):
    def forward(self, x):
        y = torch.where(x > 1.0, float("nan"), x.round())   # NaNs (no all-NaN row) and ties
        v, i = torch.nanmedian(y, 1)
        return (v, i, torch.nanmedian(y, 0, keepdim=True).values,
                torch.special.modified_bessel_i0(x * 5), torch.special.modified_bessel_i1(x * 5))
'''


@needs_torch
def test_nanmedian_and_modified_bessel_import_and_match_torch(tmp_path):
    """torch.nanmedian (aten.nanmedian.dim / .default: no torch-mlir lowering): the stable bitonic sort (NaN
    last) read at each row's ((non-NaN count - 1) // 2)-th entry, values and torch's indices, ties;
    special.modified_bessel_i0 / i1 are i0 / i1 (the same Cephes series in torch). (y.nanmedian() over all
    elements imports too, but its selector path aborts in LLVM, "Cannot emit physreg copy instruction": the
    open bug of docs/models-round4.md, docs/models-round5.md.)"""
    _import(tmp_path, NANMEDIAN, "NanMedian", "6x7xf32", "nan_median")
    x = np.load(tmp_path / "o" / "nan_median.input0.npy")
    assert (x > 1.0).any() and not (x > 1.0).all(axis=1).any()
    _selected_runs_checked(tmp_path, "nan_median", 5)


SCATTER_REDUCE = '''
import torch

class ScatterReduce(torch.nn.Module):
    def forward(self, x, src, idx, k):
        z = torch.zeros(3, 7)
        rows = torch.tensor([0, 2, 0])
        return (z.scatter_reduce(0, idx, src, "amax"), x.scatter_reduce(0, idx, src, "mean", include_self=False),
                x.scatter_reduce(1, idx[:4] % 7, src[:4], "prod"), k.scatter_reduce(0, idx, k[:1].expand(6, 7) * 0 + 5, "sum"),
                x.index_reduce(0, rows, src[:3], "amin"), x.index_reduce(0, rows, src[:3], "mean", include_self=False))
'''


@needs_torch
def test_scatter_reduce_and_index_reduce_import_and_match_torch(tmp_path):
    """Tensor.scatter_reduce (exported as tm_tensor.scatter, which upstream cannot load) and index_reduce (no
    torch-mlir lowering): loops over the index combining each entry into its target (tests/
    test_torch_import_index_loops.py), amax / amin / prod / mean / sum, include_self or not, untouched targets
    keeping x, integer mean by floor division."""
    _import(tmp_path, SCATTER_REDUCE, "ScatterReduce", "4x7xf32,6x7xf32,6x7xi64[0:3],4x7xi64[-9:9]",
            "scatter_reduce")
    _selected_runs_checked(tmp_path, "scatter_reduce", 6)
