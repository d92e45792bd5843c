"""Ops that write through an index tensor (integer index_put with and without accumulate, index_add with alpha,
index_copy, index_fill, scatter_reduce / index_reduce) import as loop nests over the index
(workbench/importers/torch_export.py: scatter / scatter_add / scatter_reduce, `scatter_loop_function`), not
as the one-hot compare of every index entry with every target they went through before (quadratic in the
index size); each runs through the selector path on 1 and 2 threads and matches torch, with duplicate and
negative indices and shapes that are no multiple of a tile."""
from __future__ import annotations

import re

import numpy as np

from test_torch_import import TORCH_PYTHON, needs_torch  # (one probe of the torch Python for all files)
from test_torch_import_round5 import _import, _selected_runs_checked

# x: 37 x 13 targets, 29 index entries (i: [0, 37), duplicates; j: [-13, 13), negative ones)
INDEX_WRITES = '''
import torch

class IndexWrites(torch.nn.Module):
    def forward(self, x, i, v, j, n):
        put = x.clone()
        put[i] = v                                     # last writer wins among duplicates
        acc = x.clone()
        acc.index_put_((i, j), v[:, 0], accumulate=True)   # two index tensors, negative columns wrap
        neg = x[:11].clone()
        neg[:, j] = 0.5 * x[:11, :1]                   # an index after a full slice (negative entries), v broadcast
        added = x.index_add(0, i, v, alpha=-1.5)
        copied = x.index_copy(0, i, v)
        filled = x.index_fill(1, j, 7.0)
        counts = torch.zeros(37, dtype=torch.int64).index_add(0, i, n)     # integers add up
        flags = torch.zeros(37, 13, dtype=torch.bool)
        flags[i] = v > 0                               # bools
        return put, acc, neg, added, copied, filled, counts, flags
'''


def _one_hot_compares(mlir: str) -> list[str]:
    """The equality compares of the payload (the one-hot form compared index entries with target positions:
    an `arith.cmpi eq` in a generic over index-size x target-size); none in the loop form."""
    return re.findall(r"arith\.cmpi eq[^\n]*", mlir)


@needs_torch
def test_index_put_add_copy_fill_are_loops_over_the_index_and_match_torch(tmp_path):
    """index_put (assignment, last writer wins; accumulate over two index tensors; an index on dim 1 after a
    full slice), index_add with alpha (floats, integers), index_copy, index_fill and a bool index_put: loops
    over the 29 index entries, no 29 x 37 (or 37 x 29) one-hot and no compare of index entries with targets;
    equal to torch on 1 and 2 threads."""
    mlir = _import(tmp_path, INDEX_WRITES, "IndexWrites", "37x13xf32,29xi64[0:37],29x13xf32,29xi64[-13:13],29xi64[0:5]",
                   "index_writes")
    i = np.load(tmp_path / "o" / "index_writes.input1.npy")
    j = np.load(tmp_path / "o" / "index_writes.input3.npy")
    assert len(set(i.tolist())) < len(i) and (j < 0).any()       # duplicate targets, negative indices
    assert "tm_tensor" not in mlir and mlir.count("scf.for") >= 8
    assert not _one_hot_compares(mlir), _one_hot_compares(mlir)[:3]
    assert not re.search(r"tensor<(29x37|37x29|29x13x37|37x29x13)x", mlir)
    # index_add of 29 rows: one index load per row (the broadcast index read unexpanded), 13 adds a row
    assert re.search(r"tensor\.extract %\S+\[%\S+, %c0\S*\] : tensor<29x1xi64>", mlir)
    _selected_runs_checked(tmp_path, "index_writes", 8)


REDUCES = '''
import torch

class Reduces(torch.nn.Module):
    def forward(self, x, i, v, k, c):
        return (x.index_reduce(0, i, v, "amax"), x.index_reduce(0, i, v, "amin", include_self=False),
                x.index_reduce(0, i, v, "prod"), x.index_reduce(0, i, v, "mean"),
                k.index_reduce(0, i, c, "amax", include_self=False), k.index_reduce(0, i, c, "mean"),
                x.scatter_reduce(1, i[:13].view(1, 13).expand(37, 13) % 13, v[:, :13].repeat(2, 1)[:37], "sum"))
'''


@needs_torch
def test_scatter_reduce_and_index_reduce_are_loops_over_the_index(tmp_path):
    """index_reduce / scatter_reduce (amax, amin, prod, mean, sum; include_self or not; floats and integers):
    loop nests combining each entry into its target (maximumf / minimumf / mulf, maxsi for integers), no
    one-hot compare; equal to torch on 1 and 2 threads."""
    mlir = _import(tmp_path, REDUCES, "Reduces", "37x13xf32,29xi64[0:37],29x13xf32,37x13xi64[-50:50],29x13xi64[-50:50]",
                   "reduces")
    assert not _one_hot_compares(mlir), _one_hot_compares(mlir)[:3]
    assert not re.search(r"tensor<(29x37|37x29|29x13x37|29x37x13)x", mlir)
    for op in ("arith.maximumf", "arith.minimumf", "arith.mulf", "arith.maxsi"):
        assert re.search(op + r" %\S+, %\S+ : \w+\n\s+%\S+ = tensor\.insert", mlir), op
    _selected_runs_checked(tmp_path, "reduces", 7)


PUT_MASKED = '''
import torch

class PutMasked(torch.nn.Module):
    def forward(self, x, i, v, mask, rows):
        spots = torch.arange(29) * 17 % 481 - 240               # distinct flat positions, negative ones
        put = x.put(spots, v[:, 0])
        added = x.put(i * 13 + 5, v[:, 1], accumulate=True)     # duplicates add up
        return put, added, x.masked_scatter(mask, v), x.masked_scatter(rows, v)   # rows: 37x1, broadcast
'''


@needs_torch
def test_put_and_masked_scatter_import_and_match_torch(tmp_path):
    """Tensor.put (aten.put: 'torch.operator' before) is a scatter of the flat tensor (negative positions
    wrap, accumulate adds duplicates up); masked_scatter left torch-mlir's cumsum (tm_tensor.scan, which load
    refuses) and is a cumsum of the mask and a gather: both import and match torch on 1 and 2 threads."""
    mlir = _import(tmp_path, PUT_MASKED, "PutMasked", "37x13xf32,29xi64[0:37],29x13xf32,37x13xi1,37x1xi1",
                   "put_masked")
    assert "tm_tensor" not in mlir and "torch.aten" not in mlir
    assert not _one_hot_compares(mlir), _one_hot_compares(mlir)[:3]
    assert re.search(r"arith\.addf %\S+, %\S+ : f32\n\s+%\S+ = tensor\.insert %\S+ into %\S+\[%\S+\] : tensor<481xf32>", mlir)
    _selected_runs_checked(tmp_path, "put_masked", 4)
