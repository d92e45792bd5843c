"""Round 6 of the importer's decompositions (docs/models-round6.md): torch ops the importer still refused
after round 5, each now decomposed in torch before export (or replaced while torch.export traces:
export_overrides) in workbench/importers/torch_export.py, imported, run through the selector path on one and
two threads (`target cpu --threads N`, `select --apply`, `bench`, `cpu-lower`, `run --check --threads N`)
and compared with torch's own outputs. Each model here failed to import before; ops whose output size
depends on the data are refused with a one-line reason."""
from __future__ import annotations

import numpy as np

from conftest import run_cli
from test_torch_import import TORCH_PYTHON, needs_torch  # (one probe of the torch Python for all the files)
from test_torch_import_round5 import _import, _selected_runs_checked


SPECIAL = '''
import torch

class Special(torch.nn.Module):
    def forward(self, x, y):
        p = x.abs() + 0.05                       # (0.05, ~3]
        v = x * 4                                # negative non-integers too: the direct sum's extra terms
        return (torch.polygamma(2, p), torch.polygamma(3, v), torch.special.polygamma(4, p + 1),
                torch.special.zeta(y.abs() + 1.5, p), torch.special.zeta(y.abs() + 2, 1.5),
                torch.special.bessel_j0(v * 3), torch.special.bessel_j1(v * 3),
                torch.special.spherical_bessel_j0(v))
'''


@needs_torch
def test_polygamma_zeta_bessel_j_import_and_match_torch(tmp_path):
    """polygamma(n >= 2) and special.zeta (Cephes' Hurwitz zeta: the direct terms, negative q down to
    -32, then Euler-Maclaurin; a Python-number q), special.bessel_j0 / j1 (torch's Cephes fits, both
    branches: |x| above 5) and spherical_bessel_j0 had no torch-mlir lowering ("failed to legalize operation
    'torch.operator'"). (zeta(s, 1.5) also caught torch-mlir folding `full_like(x, 1.5) <= 0` to true: the
    decompositions compare float tensors with float literals only.)"""
    text = _import(tmp_path, SPECIAL, "Special", "6x9xf32,6x9xf32", "special")
    assert "torch.aten" not in text
    v = np.load(tmp_path / "o" / "special.input0.npy") * 4
    assert (v < -1.5).any() and (np.abs(v * 3) > 5).any()
    assert np.isfinite(np.load(tmp_path / "o" / "special.expected4.npy")).all()
    _selected_runs_checked(tmp_path, "special", 8)


GAMMAINC = '''
import torch

class Gammainc(torch.nn.Module):
    def forward(self, x, y):
        a = x.abs() * 3 + 0.15
        return torch.special.gammainc(a, y.abs() * 6), torch.special.gammaincc(a, y.abs() * 6)
'''


@needs_torch
def test_gammainc_gammaincc_import_and_match_torch(tmp_path):
    """special.gammainc / gammaincc (aten.igamma / igammac: no torch-mlir lowering): the power series below
    a + 1 (its terms one tensor, summed), Lentz's continued fraction above; both branches in the data."""
    _import(tmp_path, GAMMAINC, "Gammainc", "6x9xf32,6x9xf32", "gammainc")
    x, y = (np.load(tmp_path / "o" / f"gammainc.input{i}.npy") for i in (0, 1))
    a, z = np.abs(x) * 3 + 0.15, np.abs(y) * 6
    assert (z < a + 1).any() and (z > a + 1).any()
    _selected_runs_checked(tmp_path, "gammainc", 2)


INTEGER = '''
import torch

class Integer(torch.nn.Module):
    def forward(self, x, k, j):
        r = (x * 1.5).round()                   # few distinct values: ties for the mode
        mv, mi = torch.mode(r, 1)
        big = k * 7919                           # larger values: more of Euclid's steps
        return (torch.gcd(k, j), torch.lcm(k, j), torch.gcd(big, j * 104729), mv, mi,
                torch.mode(r, 0, keepdim=True).values, torch.mode(j, -1).indices,
                torch.bincount(k.abs().reshape(-1), minlength=40),
                torch.bincount(k.abs()[0], weights=x[0, :8], minlength=40),
                x.masked_scatter(x > 0, x.flip(0) * 10), x.masked_scatter(x[0] > 0, x.flip(1)),
                torch.nonzero_static(r, size=30), torch.nonzero_static(x > 1.5, size=5, fill_value=-7))
'''


@needs_torch
def test_gcd_lcm_mode_bincount_masked_scatter_nonzero_static_import_and_match_torch(tmp_path):
    """torch.gcd / lcm (Euclid, the type's worst-case step count, each step masked once done), torch.mode
    (the values sorted, run lengths by a max scan of the runs' starts: the smallest most frequent value,
    its last index), bincount with minlength (a scatter_add loop; weights), masked_scatter (the mask's
    cumsum indexes the source; a broadcast mask) and nonzero_static (first K coordinates, the fill value
    past the count): "failed to legalize 'torch.operator'" or tm_tensor.scatter / tm_tensor.scan before
    (nonzero_static: 'torch.constant.int')."""
    _import(tmp_path, INTEGER, "Integer", "6x8xf32,6x8xi64[-39:40],6x8xi64[-50:50]", "integer")
    k, j = (np.load(tmp_path / "o" / f"integer.input{i}.npy") for i in (1, 2))
    assert (k == 0).any() or (j == 0).any() or (np.gcd(k, j) > 1).any()
    assert (np.load(tmp_path / "o" / "integer.expected0.npy") > 1).any()
    counts = np.load(tmp_path / "o" / "integer.expected7.npy")
    assert counts.shape == (40,) and counts.max() > 1
    assert (np.load(tmp_path / "o" / "integer.expected12.npy") == -7).any()  # fewer than 5 found
    _selected_runs_checked(tmp_path, "integer", 13)


BITS = '''
import torch

class Bits(torch.nn.Module):
    def forward(self, x, y):
        v = x * torch.tensor([1e-40, 1.0, 1e30, 0.0, 3.0, -1e-42, 7.0])   # subnormals, 0, large values
        m, e = torch.frexp(v)
        d = x.double() * 1e5
        md, ed = torch.frexp(d)
        i = x.view(torch.int32)
        return (m, e, md, ed, torch.nextafter(v, y), torch.nextafter(x, x), torch.nextafter(d, d * 2),
                i & 0x7fffff, (i ^ 0x40000000).view(torch.float32))
'''


@needs_torch
def test_frexp_nextafter_and_bit_views_import_and_match_torch(tmp_path):
    """torch.frexp and nextafter (bit operations on the float's bits: aten.frexp.Tensor / nextafter had no
    lowering) and x.view(int dtype) / .view(float dtype) of one width, which failed in torch-mlir ("failed to
    legalize 'torch.constant.int'"): aten.view.dtype is now a call of a linalg.generic of arith.bitcast.
    Exact: subnormals, zeros, steps up and down, f32 and f64."""
    _import(tmp_path, BITS, "Bits", "5x7xf32,5x7xf32", "bits")
    e = np.load(tmp_path / "o" / "bits.expected1.npy")
    assert e.dtype == np.int32 and e.min() < -120 and e.max() > 90
    _selected_runs_checked(tmp_path, "bits", 9)


LINALG = '''
import torch

class Linalg(torch.nn.Module):
    def forward(self, a, b, x):
        a = (a + 3 * torch.eye(5)).roll(1, -2)                    # well conditioned, the large entries off the diagonal
        spd = a @ a.mT + torch.eye(5)
        return (torch.linalg.inv(a), torch.inverse(a[0]), torch.linalg.solve(a, b), torch.linalg.solve(a, b[..., 0]),
                torch.linalg.solve(a[0], b[0].mT, left=False), torch.linalg.cholesky(spd),
                torch.linalg.cholesky(spd[1], upper=True), torch.cov(x), torch.cov(x, correction=0),
                x.corrcoef(), torch.cov(x[0]))
'''


@needs_torch
def test_linalg_inv_solve_cholesky_cov_corrcoef_import_and_match_torch(tmp_path):
    """torch.linalg.inv / inverse / solve / cholesky (torch.export wraps their error checks in an effect the
    fx importer refuses: "Higher-order operation 'with_effects' not implemented") and torch.cov / corrcoef
    ("DataDependentOutputException: aten.equal.default"), replaced while torch.export traces: Gauss-Jordan
    with partial pivoting and the Cholesky columns unrolled over the static order, batched; torch's
    covariance formula."""
    _import(tmp_path, LINALG, "Linalg", "3x5x5xf32,3x5x2xf32,4x9xf32", "linalg")
    a = np.roll(np.load(tmp_path / "o" / "linalg.input0.npy")[0] + 3 * np.eye(5), 1, -2)
    assert np.abs(a[:, 0]).argmax() != 0                     # elimination without pivoting would go wrong here
    assert np.allclose(np.load(tmp_path / "o" / "linalg.expected1.npy"), np.linalg.inv(a), atol=1e-4)
    _selected_runs_checked(tmp_path, "linalg", 11)


DYNAMIC = {"argwhere": ("torch.argwhere(x > 0)", "torch.nonzero_static"),
           "nonzero": ("torch.nonzero(x > 0)", "torch.nonzero_static"),
           "unique_consecutive": ("torch.unique_consecutive(x.round())", "x[1:] != x[:-1]"),
           "bincount": ("torch.bincount((x.abs() * 3).long().reshape(-1))", "minlength=N")}


@needs_torch
def test_ops_of_data_dependent_output_size_are_refused_with_a_reason(tmp_path):
    """argwhere, nonzero, unique_consecutive and bincount without minlength have no static output shape: the
    import fails with one line that names the op, says why and what has a static shape (before:
    tm_tensor.scan / tm_tensor.scatter left in the payload, or torch-mlir's "failed to legalize
    'torch.constant.bool'"), and writes no payload."""
    for op, (expr, instead) in DYNAMIC.items():
        (tmp_path / f"{op}.py").write_text(f"import torch\n\nclass M(torch.nn.Module):\n"
                                           f"    def forward(self, x):\n        return {expr}\n")
        p = run_cli(["import", f"{op}.py:M", "--inputs", "4x5xf32", "--out", op], cwd=tmp_path,
                    env_extra={"LH_WORKBENCH_TORCH_PYTHON": TORCH_PYTHON}, timeout=600)
        assert p.returncode != 0
        lines = [line for line in (p.stderr + p.stdout).splitlines() if line.strip()]
        message = next(line for line in lines if "depends on the input's values" in line)
        assert f"{op}" in message and instead in message, message
        assert not (tmp_path / op / "m.mlir").exists()
