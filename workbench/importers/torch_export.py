"""Torch -> linalg-on-tensors, in a process of its own (torch and the MLIR wheels never share one).

Run by path with a Python that has torch and torch-mlir (the `[torch]` extra):

    python torch_export.py MODEL.py[:NAME] --inputs 8x3x224x224xf32[,...] --out DIR [--dtype bf16]

This file imports only the standard library, numpy, torch and torch_mlir (never `workbench`, never
the upstream `mlir` package), so any interpreter with the extra installed can run it. It writes

    DIR/NAME.mlir              torch-mlir's fx importer, output_type="linalg-on-tensors", entry @main
    DIR/NAME.input<i>.npy      the inputs it exported with
    DIR/NAME.expected<j>.npy   torch's outputs on those inputs (eager, torch.no_grad)
    DIR/NAME.expected.json        the sidecar: which files are inputs / expected outputs, element types,
                               tolerances, versions (`load` picks it up; `run --check` compares with it)

and prints one JSON line (`{"ok": ..., "mlir": ..., ...}`) as its last line of stdout.

NAME in MODEL.py:NAME is an nn.Module subclass (`Model` is built with the file's `get_init_inputs()`
when it has one, KernelBench style), a function returning a module, or a module instance. Without :NAME, the
file's `Model` (KernelBench) is used. Without --inputs, the file's `get_inputs()` gives the inputs of its
`Model`, or of the one nn.Module class the file defines that its other classes do not use (a block
built of helper modules).

torch-mlir turns a few aten ops into its own `tm_tensor` dialect (cumsum, cumprod, logcumsumexp ->
tm_tensor.scan, sort / argsort / topk -> tm_tensor.sort, scatter / scatter_add -> tm_tensor.scatter, where
its lowering ran out of memory, x[mask] = v -> nonzero, tm_tensor.scan and tm_tensor.scatter), which upstream MLIR cannot load, and fails on cummax / cummin,
per-channel fake quantization (QAT), cdist, searchsorted, EmbeddingBag max, grid_sample's reflection
padding, kthvalue and median. They are decomposed *in torch,
before export* (UPSTREAM_DECOMPOSITIONS below) into ops torch-mlir lowers to upstream linalg/tensor:
an inclusive scan as blocked masked reductions (`_scan`), a sort as a bitonic network of
compare-exchanges on reshaped tensors. Doing it in torch keeps the rewrite independent of
torch-mlir's textual form and of its dialect's semantics, and the result is ordinary linalg that
every workbench schedule and target handles.

Scatters (scatter src / value, scatter_add) are the exception: no torch op writes through an index
but scatter itself, and the one-hot compare of every target with every index entry they went through
was quadratic in the scattered dim. They are kept through torch-mlir's torch-level pipeline and lowered
by `lower_to_linalg` to a loop nest over the index (scf.for, tensor.extract / tensor.insert): linear, in
the index's order (of duplicate targets the last entry wins; scatter_add sums them).
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import math
import re
import sys
import traceback
from pathlib import Path

import numpy as np

_DTYPE_NAMES = {"f32": "float32", "f64": "float64", "f16": "float16", "bf16": "bfloat16", "i64": "int64",
                "i32": "int32", "i16": "int16", "i8": "int8", "ui8": "uint8", "i1": "bool"}
_MLIR_NAMES = {v: k for k, v in _DTYPE_NAMES.items()}
# torch vs the compiled payload, elementwise: |got - want| <= atol + rtol * |want|
TOLERANCES = {"f64": (1e-6, 1e-8), "f32": (1e-3, 1e-4), "f16": (1e-2, 1e-3), "bf16": (5e-2, 5e-2)}


class ImportFailure(RuntimeError):
    pass


# ---------------------------------------------------------------------------------------------
# input specs: 8x3x224x224xf32, 4x16xi64[0:100] (integers drawn from [0, 100)), f32 (a scalar tensor)

_SPEC = re.compile(r"^(?P<dims>(?:\d+x)*)(?P<dtype>[a-z]+\d*)(?:\[(?P<lo>-?\d+):(?P<hi>-?\d+)\])?$")


def parse_input_spec(text: str) -> dict:
    m = _SPEC.match(text.strip())
    if not m or m.group("dtype") not in _DTYPE_NAMES:
        raise ImportFailure(f"bad input spec {text!r}: expected e.g. 8x3x224x224xf32 or 4x16xi64[0:100] "
                            f"(element types: {', '.join(_DTYPE_NAMES)})")
    shape = [int(d) for d in m.group("dims").split("x") if d]
    spec = {"shape": shape, "dtype": m.group("dtype")}
    if m.group("lo") is not None:
        spec["range"] = [int(m.group("lo")), int(m.group("hi"))]
    return spec


def split_specs(text: str) -> list[str]:
    """Split a comma-separated spec list, keeping commas inside [..] (none today, but cheap)."""
    return [p for p in re.split(r",(?![^\[]*\])", text) if p.strip()]


def make_input(spec: dict, generator):
    import torch

    dtype = getattr(torch, _DTYPE_NAMES[spec["dtype"]])
    shape = spec["shape"]
    if dtype.is_floating_point:
        return torch.randn(shape, generator=generator, dtype=torch.float32).to(dtype)
    if dtype == torch.bool:
        return torch.randint(0, 2, shape, generator=generator).to(torch.bool)
    lo, hi = spec.get("range", [0, 8])
    return torch.randint(lo, hi, shape, generator=generator, dtype=dtype)


# ---------------------------------------------------------------------------------------------
# decompositions into ops that torch-mlir lowers to upstream dialects

#: scans at most this long are one masked reduction (cost: n per element); longer ones are blocked
SCAN_SINGLE = 32
#: the block length of a blocked scan (cost per element: about SCAN_BLOCK, plus the scan of the totals)
SCAN_BLOCK = 16
#: ... for a combiner of transcendental functions (logaddexp: an exp and a log1p), whose unrolled chain
#: costs `block` combines per element: shorter blocks, more levels of block totals (1024x1024
#: logcumsumexp on one core: 50 -> 36 ms)
SCAN_BLOCK_COSTLY = 4


def _masked_scan(x, dim: int, reduce, identity, strict: bool = False):
    """Scan along `dim` as one reduction: y_i = (+)_{j <= i} x_j (j < i: `strict`, exclusive), x_j
    replaced by the identity where j > i. The loop j comes before i, so the generic torch-mlir writes
    is a reduction whose output keeps the innermost loops (vectors along i or the dims after `dim`),
    with the mask and the select fused into it (no n x n intermediate)."""
    import torch

    n = x.shape[dim]
    j = torch.arange(n, device=x.device).reshape([n, 1] + [1] * (x.dim() - dim - 1))
    i = torch.arange(n, device=x.device).reshape([1, n] + [1] * (x.dim() - dim - 1))
    keep = (j < i) if strict else (j <= i)                      # [j, i, 1...]
    wide = x.unsqueeze(dim + 1)                                  # [..., j, 1 (i), ...]
    selected = torch.where(keep, wide, torch.full((), identity, dtype=x.dtype, device=x.device))
    return reduce(selected, dim)


def _unrolled_scan(x, dim: int, combine, identity, start=None):
    """Scan along `dim` (short) as one elementwise chain: y = start (+) x_0 (+) x_1 (+) ... with x_j
    broadcast along `dim` and replaced by the identity where i < j: torch-mlir writes n small pointwise
    ops that elementwise fusion makes one op, its partial results in registers (no accumulator in
    memory, one pass over x). `start` (broadcast along `dim`): what each scan starts from."""
    import torch

    n = x.shape[dim]
    i = torch.arange(n, device=x.device).reshape([n] + [1] * (x.dim() - dim - 1))
    fill = torch.full((), identity, dtype=x.dtype, device=x.device)
    acc = start
    for j in range(n):   # (j = 0 too: a select like the others, fused with them; a bare broadcast is not)
        term = torch.where(i >= j, x.narrow(dim, j, 1), fill)
        acc = term if acc is None else combine(acc, term)
    return acc


def _scan(x, dim: int, reduce, combine, identity, block: int = SCAN_BLOCK):
    """Inclusive scan along `dim`, blocked (blocks of `block`, SCAN_BLOCK by default, padded with the identity): the
    exclusive prefix of the block totals (a masked reduction, `_masked_scan`, or this scan again when
    there are many blocks) combined with the scan within each block. Along the innermost dim each
    block is scanned from its prefix by one fused elementwise chain (`_unrolled_scan`: prefix (+) x_0
    (+) x_1 ..., one pass over x); along an outer dim by a masked reduction (vectors along the dims
    after it), the prefix combined afterwards. Each output combines in sequential order (earlier
    blocks' totals, then its block's elements): as accurate as a loop. Scans of up to SCAN_SINGLE
    elements are one masked reduction."""
    import torch

    n = x.shape[dim]
    if n <= SCAN_SINGLE:
        return _masked_scan(x, dim, reduce, identity)
    nb = -(-n // block)
    if nb * block != n:   # pad with the identity to whole blocks
        pad_shape = list(x.shape)
        pad_shape[dim] = nb * block - n
        x = torch.cat([x, torch.full(pad_shape, identity, dtype=x.dtype, device=x.device)], dim=dim)
    shape = list(x.shape)
    blocks = x.reshape(shape[:dim] + [nb, block] + shape[dim + 1:])
    innermost = math.prod(shape[dim + 1:]) == 1
    if innermost:
        # along the innermost dim: the block totals first, each block then scanned from its prefix by
        # the fused chain (vectors along the block: its mask is a constant per step), one pass over x
        totals = reduce(blocks, dim + 1)                                  # [..., nb, ...]
    else:
        # along an outer dim (vectors along the dims after it): the prefix within each block by a
        # masked reduction, its last element the block's total, the earlier blocks' added after
        inner = _masked_scan(blocks, dim + 1, reduce, identity)
        totals = inner.narrow(dim + 1, block - 1, 1).squeeze(dim + 1)
    if nb <= SCAN_SINGLE:
        offsets = _masked_scan(totals, dim, reduce, identity, strict=True)
    else:
        scanned = _scan(totals, dim, reduce, combine, identity, block)
        head_shape = list(totals.shape)
        head_shape[dim] = 1
        offsets = torch.cat([torch.full(head_shape, identity, dtype=x.dtype, device=x.device),
                             scanned.narrow(dim, 0, nb - 1)], dim=dim)
    if innermost:
        out = _unrolled_scan(blocks, dim + 1, combine, identity, start=offsets.unsqueeze(dim + 1))
    else:
        out = combine(inner, offsets.unsqueeze(dim + 1))
    out = out.reshape(shape)
    return out.narrow(dim, 0, n) if nb * block != n else out


def _scan_dtype(x, dtype):
    import torch

    if dtype is not None:
        return x.to(dtype)
    if not x.dtype.is_floating_point and not x.dtype.is_complex:
        return x.to(torch.int64)  # torch's rule for integer and bool cumsum/cumprod
    return x


def cumsum_decomposition(x, dim, *, dtype=None):
    x = _scan_dtype(x, dtype)
    if x.dim() == 0:
        return x.clone()
    return _scan(x, dim % x.dim(), lambda t, d: t.sum(d), lambda a, b: a + b, 0)


def cumprod_decomposition(x, dim, *, dtype=None):
    x = _scan_dtype(x, dtype)
    if x.dim() == 0:
        return x.clone()
    return _scan(x, dim % x.dim(), lambda t, d: t.prod(d), lambda a, b: a * b, 1)


def _logsumexp(t, d):
    """log(sum(exp(t))) along `d`, an all -inf row giving -inf (not NaN: its max is taken as 0)."""
    import torch

    m = t.amax(d, keepdim=True)
    m = torch.where(torch.isinf(m), torch.zeros_like(m), m)
    return (t - m).exp().sum(d).log() + m.squeeze(d)


def _logaddexp(a, b):
    """log(exp(a) + exp(b)), exact where either is infinite (-inf with -inf: -inf, not NaN)."""
    import torch

    m = torch.maximum(a, b)
    return torch.where(torch.isinf(m), m, m + torch.log1p(torch.exp(-torch.abs(a - b))))


def logcumsumexp_decomposition(x, dim):
    if x.dim() == 0:
        return x.clone()
    return _scan(x, dim % x.dim(), _logsumexp, _logaddexp, float("-inf"), SCAN_BLOCK_COSTLY)


def _cumulative_extreme(x, dim, largest: bool):
    """(values, indices) of cummax / cummin: the values a max (min) scan, the indices a max scan of the
    positions where x equals the running extreme (or is NaN), torch's last index on ties."""
    import torch

    if x.dim() == 0:
        return x.clone(), torch.zeros((), dtype=torch.int64, device=x.device)
    dim = dim % x.dim()
    if largest:
        values = _scan(x, dim, lambda t, d: t.amax(d), torch.maximum, _extreme(x.dtype, largest=False))
    else:
        values = _scan(x, dim, lambda t, d: t.amin(d), torch.minimum, _extreme(x.dtype, largest=True))
    n = x.shape[dim]
    positions = torch.arange(n, device=x.device).reshape([n] + [1] * (x.dim() - dim - 1)).expand(x.shape[dim:])
    hit = (x == values) | (torch.isnan(x) if x.dtype.is_floating_point else torch.zeros_like(x, dtype=torch.bool))
    marked = torch.where(hit, positions, torch.full((), -1, dtype=torch.int64, device=x.device))
    indices = _scan(marked, dim, lambda t, d: t.amax(d), torch.maximum, -1)
    return values, indices


def cummax_decomposition(x, dim):
    return _cumulative_extreme(x, dim, largest=True)


def cummin_decomposition(x, dim):
    return _cumulative_extreme(x, dim, largest=False)


#: a sort with at least this many independent rows (the product of the other dims) runs its network
#: with the rows innermost: every compare-exchange stage is a vector pass along them; fewer rows keep
#: the sorted dim innermost (vectors along the runs of each stage)
SORT_ROWS_INNERMOST = 8
#: a top-k with k at most this is k rounds of selection (two reductions over x each) instead of a sort
TOPK_BY_SELECTION_MAX_K = 8


def _extreme(dtype, largest: bool):
    import torch

    if dtype.is_floating_point:
        return math.inf if largest else -math.inf
    if dtype == torch.bool:
        return largest
    info = torch.iinfo(dtype)
    return info.max if largest else info.min


def _sort_key_before(descending: bool):
    """before(p, ip, q, iq): whether (p, ip) sorts before (q, iq), a strict total order on (value, index)
    pairs: by value as torch orders them (NaN above everything, so last ascending and first descending),
    equal values by index (the lower first: stable). The arguments are functions giving a fresh tensor
    for each use: every op of the comparison has one user, so elementwise fusion takes the whole
    comparison into the op that selects by it (a shared operand would be written out)."""
    import torch

    def before(p, ip, q, iq):
        if p().dtype.is_floating_point:
            if descending:
                strictly = (p() > q()) | (torch.isnan(p()) & ~torch.isnan(q()))
            else:
                strictly = (p() < q()) | (torch.isnan(q()) & ~torch.isnan(p()))
            equal = (p() == q()) | (torch.isnan(p()) & torch.isnan(q()))
        else:
            strictly = (p() > q()) if descending else (p() < q())
            equal = p() == q()
        return strictly | (equal & (ip() < iq()))

    return before


def _sort_padding(dtype, descending: bool):
    """A value that sorts at or after every other value (ties go by index: padding comes last)."""
    import torch

    if dtype.is_floating_point:
        return -math.inf if descending else math.nan
    if dtype == torch.bool:
        return not descending
    info = torch.iinfo(dtype)
    return info.min if descending else info.max


def bitonic_sort(x, dim: int = -1, descending: bool = False):
    """(values, int64 indices) of a stable sort along `dim`: a bitonic network on the next power of two
    (padding sorts last). Stage (k, j) compare-exchanges element i with i + j in runs of 2j, ascending
    in blocks of k where bit k of i is 0 and descending where it is 1 (the last merge all ascending):
    with the sorted dim viewed as [size/2k, 2 (direction), k/2j, 2 (pair), j], a stage reads the two
    halves of each pair as slices broadcast along the pair dim and writes one elementwise op per output
    (values, indices), comparison fused: no gathers, no stack, one pass per stage once elementwise fusion
    has put the comparison and both selects into one op. The comparison orders (value, index) pairs, a
    total order, so the result is the stable one (torch's `stable=True`; its default leaves ties
    unordered) and NaNs go where torch puts them. The indices travel as int32 when they fit
    (less to move per stage). The other dims are flattened into rows, innermost when there are
    SORT_ROWS_INNERMOST or more (vectors along the rows), else outermost."""
    import torch

    if x.dim() == 0:
        return x, torch.zeros((), dtype=torch.int64, device=x.device)
    dim = dim % x.dim()
    n = x.shape[dim]
    others = [s for d, s in enumerate(x.shape) if d != dim]
    rows = math.prod(others)
    size = 1 << max(0, (n - 1).bit_length())
    index_dtype = torch.int32 if size < 2 ** 31 else torch.int64
    rows_inner = rows >= SORT_ROWS_INNERMOST
    sorted_at = 0 if rows_inner else 1   # [size, rows] or [rows, size]
    moved_to = 0 if rows_inner else -1   # (of x's dims)
    v = x.movedim(dim, moved_to).reshape([n, rows] if rows_inner else [rows, n])
    if size != n:
        pad = [size - n, rows] if rows_inner else [rows, size - n]
        v = torch.cat([v, torch.full(pad, _sort_padding(v.dtype, descending), dtype=v.dtype, device=v.device)],
                      dim=sorted_at)
    idx = torch.arange(size, dtype=index_dtype, device=x.device).unsqueeze(1 - sorted_at).expand(v.shape)
    before = _sort_key_before(descending)

    def view(t, shape):   # the sorted dim as `shape`, the rows where they are
        return t.reshape(shape + [rows] if rows_inner else [rows] + shape)

    pair_dim = -3 if rows_inner else -2   # [..., 2, j, rows] or [rows, ..., 2, j]
    # the direction of the runs: the dim of size 2 in [size/2k, 2, k/2j, 2 (pair), j]
    descending_runs = (torch.arange(2, device=x.device) == 1).reshape(
        [1, 2, 1, 1, 1, 1] if rows_inner else [1, 1, 2, 1, 1, 1])
    first_of_pair = (torch.arange(2, device=x.device) == 0).reshape([2, 1, 1] if rows_inner else [2, 1])
    vv_shape = list(v.shape)
    block = 2
    while block <= size:
        span = block // 2
        while span >= 1:
            last_merge = block == size   # (all ascending)
            shape = ([size // (2 * span), 2, span] if last_merge
                     else [size // (2 * block), 2, block // (2 * span), 2, span])
            vv, ii = view(v, shape), view(idx, shape)
            a, b = vv.narrow(pair_dim, 0, 1), vv.narrow(pair_dim, 1, 1)   # (broadcast along the pair dim)
            ia, ib = ii.narrow(pair_dim, 0, 1), ii.narrow(pair_dim, 1, 1)

            def exchanged(xa, xb):
                # slot s of a pair gets b where `before(partner, own)`: at slot 0 b sorts first, at
                # slot 1 a does (b stays last); else a (reversed in descending runs)
                own = lambda xa_, xb_: lambda: torch.where(first_of_pair, xa_, xb_)  # noqa: E731
                partner = lambda xa_, xb_: lambda: torch.where(first_of_pair, xb_, xa_)  # noqa: E731
                take_b = before(partner(a, b), partner(ia, ib), own(a, b), own(ia, ib))
                if not last_merge:
                    take_b = take_b ^ descending_runs
                return torch.where(take_b, xb, xa)

            v, idx = exchanged(a, b), exchanged(ia, ib)
            v, idx = v.reshape(vv_shape), idx.reshape(vv_shape)
            span //= 2
        block *= 2
    shape = [n] + others if rows_inner else others + [n]
    v, idx = v.narrow(sorted_at, 0, n), idx.narrow(sorted_at, 0, n).to(torch.int64)
    return v.reshape(shape).movedim(moved_to, dim).contiguous(), idx.reshape(shape).movedim(moved_to, dim).contiguous()


def topk_by_selection(x, k: int, dim: int, largest: bool):
    """(values, int64 indices) of the k largest (smallest) along `dim`, in order: k rounds, each a max
    (min) over the elements earlier rounds did not take, then the lowest index holding it (two
    reductions over x, the mask of taken indices recomputed in their bodies from the indices taken:
    nothing the size of x is written). Ties: the lower index first. NaN is above every value, as in
    torch: taken first when largest, last when smallest (the index reduction ranks the NaNs left
    before or after the elements equal to the round's max or min of the others)."""
    import torch

    n = x.shape[dim]
    position = torch.arange(n, device=x.device).reshape([n] + [1] * (x.dim() - dim - 1))
    skipped = _extreme(x.dtype, not largest)
    nan = torch.isnan(x) if x.dtype.is_floating_point else None
    values, indices = [], []
    for _ in range(k):
        taken = None
        for earlier in indices:
            taken = (position == earlier) if taken is None else taken | (position == earlier)
        skip = taken if nan is None else (nan if taken is None else nan | taken)
        kept = x if skip is None else torch.where(skip, skipped, x)
        value = kept.amax(dim, keepdim=True) if largest else kept.amin(dim, keepdim=True)
        hit = x == value if skip is None else (x == value) & ~skip
        if nan is None:
            index = torch.where(hit, position, n).amin(dim, keepdim=True)
        else:
            nan_left = nan if taken is None else nan & ~taken
            first, second = (nan_left, hit) if largest else (hit, nan_left)
            rank = torch.where(first, position, torch.where(second, position + n, 2 * n)).amin(dim, keepdim=True)
            index = torch.where(rank >= n, rank - n, rank)
            value = torch.where((rank < n) if largest else (rank >= n), math.nan, value)   # (a NaN's rank)
        values.append(value)
        indices.append(index)
    return torch.cat(values, dim=dim), torch.cat(indices, dim=dim)


def sort_decomposition(x, dim=-1, descending=False):
    return bitonic_sort(x, dim, descending)


def sort_stable_decomposition(x, *, stable=None, dim=-1, descending=False):
    return bitonic_sort(x, dim, descending)


def topk_decomposition(x, k, dim=-1, largest=True, sorted=True):
    if x.dim() > 0 and k <= TOPK_BY_SELECTION_MAX_K:
        return topk_by_selection(x, k, dim % x.dim(), largest)
    values, indices = bitonic_sort(x, dim, descending=largest)
    dim = dim % max(x.dim(), 1)
    return values.narrow(dim, 0, k).contiguous(), indices.narrow(dim, 0, k).contiguous()


def scatter_value_decomposition(x, dim, index, value):
    """x.scatter(dim, index, value): a scatter of a tensor of the value (index's shape), lowered with the
    other scatters to a loop over the index (scatters_as_loops)."""
    import torch

    return x.scatter(dim, index, torch.full(index.shape, value, dtype=x.dtype, device=x.device))


#: the most elements of the one-hot (targets x index entries) an integer index_put decomposes through
MAX_ONE_HOT_ELEMENTS = 1 << 26


def _integer_index_put(x, indices, values, accumulate: bool):
    """x[i0, i1, ...] = v / += v (index_add, x[idx] = v, x[idx] += v) with integer index tensors on
    consecutive dims (None before them: untouched dims): the indexed dims flattened to N targets, the
    broadcast index entries to P; a (N x P) one-hot. accumulate: x + one-hot @ values (a matmul: every
    entry naming a target adds to it); else each target takes the value of the last entry naming it
    (torch leaves duplicates unspecified) through a gather and a where. torch's own path is
    tm_tensor.scatter, which upstream MLIR cannot load. None: left to torch (bool or huge one-hots)."""
    import torch

    first = next(i for i, t in enumerate(indices) if t is not None)
    index_tensors = list(indices[first:])
    if any(t is None or t.dtype == torch.bool for t in index_tensors) or x.dtype == torch.bool:
        return None
    k = len(index_tensors)
    dims = list(range(first, first + k))
    sizes = [x.shape[d] for d in dims]
    broadcast = torch.broadcast_shapes(*(t.shape for t in index_tensors))
    n, p = 1, 1
    for s in sizes:
        n *= s
    for s in broadcast:
        p *= s
    if n * p > MAX_ONE_HOT_ELEMENTS:
        return None
    flat = torch.zeros(broadcast, dtype=torch.int64, device=x.device)
    for t, size in zip(index_tensors, sizes):
        t = t.to(torch.int64)
        flat = flat * size + torch.where(t < 0, t + size, t)
    flat = flat.reshape(p)
    # x with the indexed dims first and flattened: [N, rest]; values likewise: [P, rest]
    order = dims + [d for d in range(x.dim()) if d not in dims]
    moved = x.permute(order)
    rest = moved.shape[k:]
    x_rows = moved.reshape(n, -1)
    out_shape = tuple(x.shape[:first]) + tuple(broadcast) + tuple(x.shape[first + k:])
    nb = len(broadcast)
    v = values.to(x.dtype).expand(out_shape)
    v_order = list(range(first, first + nb)) + [d for d in range(len(out_shape)) if not first <= d < first + nb]
    v_rows = v.permute(v_order).reshape(p, -1)
    hit = flat.unsqueeze(0) == torch.arange(n, device=x.device).unsqueeze(1)          # [N, P]
    if accumulate:
        rows = x_rows + torch.matmul(hit.to(x.dtype), v_rows)
    else:
        last = torch.where(hit, torch.arange(p, device=x.device).unsqueeze(0), -1).amax(1)   # [N]
        rows = torch.where((last >= 0).unsqueeze(1), v_rows[last.clamp(min=0)], x_rows)
    inverse = [order.index(d) for d in range(x.dim())]
    return rows.reshape(tuple(sizes) + tuple(rest)).permute(inverse)


def index_put_decomposition(x, indices, values, accumulate=False):
    """x[mask] = v (aten.index_put with one bool mask over x's leading dims, v one value or broadcastable
    over the masked rows' trailing dims) as a torch.where: torch's own path goes through nonzero (a
    data-dependent shape, tm_tensor.scan and tm_tensor.scatter). Integer indices (index_add, x[idx] = v,
    x[idx] += v): `_integer_index_put`. Other index forms are left to torch."""
    import torch

    if all(t is None for t in indices):
        return NotImplemented
    if len(indices) != 1 or indices[0] is None or indices[0].dtype != torch.bool:
        result = _integer_index_put(x, indices, values, accumulate)
        return NotImplemented if result is None else result
    mask = indices[0]
    tail = x.shape[mask.dim():]
    if values.dim() > len(tail) or any(v not in (1, t) for v, t in zip(reversed(values.shape), reversed(tail))):
        return NotImplemented                                  # (one value per masked row: data-dependent)
    mask = mask.reshape(tuple(mask.shape) + (1,) * len(tail))
    values = values.to(x.dtype)
    return torch.where(mask, x + values if accumulate else values, x)


def embedding_bag_decomposition(weight, indices, offsets, scale_grad_by_freq=False, mode=0, sparse=False,
                                per_sample_weights=None, include_last_offset=False, padding_idx=-1):
    """nn.EmbeddingBag / F.embedding_bag in sum or mean mode: the rows looked up (an embedding gather), then
    summed into their bags by a (bags x indices) membership matmul. torch-mlir's own lowering tests
    every index against every bag for every element of a row (bags x indices x dim scalar steps with a
    lookup each: DLRM's eight 64-bag tables took 4.4 ms, torch 0.5). Also returns offset2bag, bag_size
    and max_indices (zeros) for the op's other results, which nn.EmbeddingBag drops. In max mode (which
    torch-mlir does not lower either) each bag's rows are masked to -inf outside it and reduced by max (an
    empty bag gives zeros, as in torch); max_indices are the rows taken. Huge membership masks are left to
    torch (with a padding index: aten.embedding_bag.padding_idx, which torch-mlir does not lower at all)."""
    import torch

    n = indices.shape[0]
    bags = offsets.shape[0] - (1 if include_last_offset else 0)
    if (mode not in (0, 1, 2) or indices.dim() != 1 or bags * n > MAX_ONE_HOT_ELEMENTS
            or (mode == 2 and bags * n * weight.shape[1] > MAX_ONE_HOT_ELEMENTS)):
        return NotImplemented
    positions = torch.arange(n, device=indices.device)
    starts = offsets[:bags]
    ends = offsets[1:bags + 1] if include_last_offset else torch.cat([offsets[1:], offsets.new_full((1,), n)])
    member = (starts.unsqueeze(1) <= positions.unsqueeze(0)) & (positions.unsqueeze(0) < ends.unsqueeze(1))
    if padding_idx is not None and padding_idx >= 0:
        member = member & (indices != padding_idx).unsqueeze(0)
    rows = weight[indices]
    if per_sample_weights is not None:
        rows = rows * per_sample_weights.to(rows.dtype).unsqueeze(1)
    bag_size = member.sum(1)
    offset2bag = (starts.unsqueeze(0) <= positions.unsqueeze(1)).sum(1) - 1
    if mode == 2:
        masked = torch.where(member.unsqueeze(-1), rows.unsqueeze(0), float("-inf"))
        out, taken = masked.max(dim=1)
        filled = (bag_size > 0).unsqueeze(1)
        return (torch.where(filled, out, 0.0).to(rows.dtype), offset2bag, bag_size,
                torch.where(filled, indices[taken], 0))
    out = torch.matmul(member.to(rows.dtype), rows)
    if mode == 1:
        out = out / bag_size.clamp(min=1).to(out.dtype).unsqueeze(1)
    return out, offset2bag, bag_size, torch.zeros_like(bag_size)


def _fake_quantize_per_channel(x, scale, zero_point, axis: int, quant_min: int, quant_max: int):
    """(out, in-range mask) of torch's per-channel fake quantization, the way its kernel computes it:
    (clamp(nearbyint(x * (1 / scale)) + zero_point, quant_min, quant_max) - zero_point) * scale."""
    import torch

    shape = [1] * x.dim()
    shape[axis] = x.shape[axis]
    s = scale.to(x.dtype).reshape(shape)
    z = zero_point.to(x.dtype).reshape(shape)
    q = torch.round(x * (1.0 / s)) + z
    return (torch.clamp(q, quant_min, quant_max) - z) * s, (q >= quant_min) & (q <= quant_max)


def fake_quantize_per_channel_decomposition(x, scale, zero_point, axis, quant_min, quant_max):
    """torch.fake_quantize_per_channel_affine (QAT weights): torch's own decomposition gives
    fake_quantize_per_channel_affine_cachemask, which torch-mlir does not lower (the export then failed on
    the zero points' si32 literal, its operand)."""
    return _fake_quantize_per_channel(x, scale, zero_point, axis, quant_min, quant_max)[0]


def fake_quantize_per_channel_cachemask_decomposition(x, scale, zero_point, axis, quant_min, quant_max):
    return _fake_quantize_per_channel(x, scale, zero_point, axis, quant_min, quant_max)


#: the most elements of the (rows x rows x features) differences a cdist takes directly; larger ones take
#: torch's matmul form (|a|^2 + |b|^2 - 2 a.b)
MAX_CDIST_DIFFERENCES = 1 << 22


def cdist_decomposition(x1, x2, p, compute_mode=None):
    """torch.cdist (aten._cdist_forward: torch-mlir has no lowering, the export failed): p-norms of the
    pairwise differences of x1's rows [..., P, M] and x2's [..., R, M]. For p = 2 torch itself uses the matmul
    form when a side has more than 25 rows (compute_mode None or 0), or always / never as compute_mode says
    (1 / 2); it is taken there, and where the differences would be too many, the differences elsewhere."""
    import torch

    rows1, rows2, feats = x1.shape[-2], x2.shape[-2], x1.shape[-1]
    mm = compute_mode == 1 or (compute_mode in (None, 0) and (rows1 > 25 or rows2 > 25))
    if p == 2 and compute_mode != 2 and (mm or rows1 * rows2 * feats > MAX_CDIST_DIFFERENCES):
        n1, n2 = x1.pow(2).sum(-1, keepdim=True), x2.pow(2).sum(-1, keepdim=True)
        squared = n1 - 2 * torch.matmul(x1, x2.transpose(-1, -2)) + n2.transpose(-1, -2)
        return squared.clamp_min(0).sqrt()
    d = (x1.unsqueeze(-2) - x2.unsqueeze(-3)).abs()
    if p == 0:
        return (d != 0).to(x1.dtype).sum(-1)
    if p == 1:
        return d.sum(-1)
    if p == 2:
        return d.pow(2).sum(-1).sqrt()
    if math.isinf(p):
        return d.amax(-1)
    return d.pow(p).sum(-1).pow(1.0 / p)


def searchsorted_decomposition(sorted_sequence, values, *, out_int32=False, right=False, side=None, sorter=None):
    """torch.searchsorted (aten.searchsorted.Tensor: torch-mlir has no lowering, the export failed): the
    insertion index of each value is how many entries of its sorted row are below it (<= with right=True or
    side="right"); a 1-D sequence serves every value, an N-D one the values of the same leading indices.
    (torch.bucketize, which torch-mlir lowers, is the same count.) With a sorter it is left to torch."""
    import torch

    if sorter is not None:
        return NotImplemented
    if side is not None:
        right = side == "right"
    v = values.unsqueeze(-1)
    seq = sorted_sequence if sorted_sequence.dim() == 1 else sorted_sequence.unsqueeze(-2)
    below = (seq <= v) if right else (seq < v)
    return below.sum(-1).to(torch.int32 if out_int32 else torch.int64)


def _reflect(coord, twice_low: int, twice_high: int):
    """torch's grid-sampler reflect_coordinates: coord reflected off the bounds twice_low / 2, twice_high / 2."""
    import torch

    if twice_low == twice_high:
        return torch.zeros_like(coord)
    low, span = twice_low / 2, (twice_high - twice_low) / 2
    c = (coord - low).abs()
    flips = torch.floor(c / span)
    extra = c - flips * span           # fmod (c >= 0): torch-mlir does not lower aten.fmod.Scalar
    return torch.where(torch.remainder(flips, 2) == 0, extra + low, span - extra + low)


def grid_sampler_2d_decomposition(x, grid, interpolation_mode, padding_mode, align_corners):
    """F.grid_sample with padding_mode="reflection" (torch-mlir fails to lower it: "failed to legalize
    operation 'torch.constant.float'"): the grid reflected and clipped into the image as torch's kernel does
    (in pixels), normalized back and sampled with border padding, which then clamps nothing. Zeros and
    border padding take torch's own decomposition (torch._decomp), which torch-mlir lowers, as before."""
    import torch
    from torch._decomp import decomposition_table as core

    torchs = core[torch.ops.aten.grid_sampler_2d.default]
    if padding_mode != 2:
        return torchs(x, grid, interpolation_mode, padding_mode, align_corners)
    h, w = x.shape[-2], x.shape[-1]
    out = []
    for size, g in ((w, grid[..., 0]), (h, grid[..., 1])):
        if align_corners:
            c = _reflect((g + 1) / 2 * (size - 1), 0, 2 * (size - 1))
        else:
            c = _reflect(((g + 1) * size - 1) / 2, -1, 2 * size - 1)
        c = c.clamp(0, size - 1)
        out.append(c / (size - 1) * 2 - 1 if align_corners and size > 1 else
                   (torch.zeros_like(c) if align_corners else (2 * c + 1) / size - 1))
    return torchs(x, torch.stack(out, -1), interpolation_mode, 1, align_corners)


def kthvalue_decomposition(x, k, dim=-1, keepdim=False):
    """torch.kthvalue (torch-mlir exports tm_tensor.topk, which upstream cannot load): the k-th entry of the
    stable bitonic sort (ties: the first index)."""
    dim = dim % max(x.dim(), 1)
    v, i = bitonic_sort(x, dim, False)
    v, i = v.narrow(dim, k - 1, 1), i.narrow(dim, k - 1, 1)
    return (v, i) if keepdim else (v.squeeze(dim), i.squeeze(dim))


def median_dim_decomposition(x, dim=0, keepdim=False):
    """x.median(dim) (aten.median.dim: no torch-mlir lowering): torch's lower median, the
    ((n - 1) // 2 + 1)-th value."""
    return kthvalue_decomposition(x, (x.shape[dim] - 1) // 2 + 1, dim, keepdim)


def median_decomposition(x):
    """x.median() over all elements: the lower median of the flattened tensor."""
    return kthvalue_decomposition(x.reshape(-1), (x.numel() - 1) // 2 + 1, 0)[0]


def upstream_decompositions() -> dict:
    """aten op overload -> decomposition, for ops torch-mlir would lower to its own tm_tensor dialect."""
    import torch

    aten = torch.ops.aten
    return {aten.cumsum.default: cumsum_decomposition, aten.cumprod.default: cumprod_decomposition,
            aten.logcumsumexp.default: logcumsumexp_decomposition, aten.cummax.default: cummax_decomposition,
            aten.cummin.default: cummin_decomposition,
            aten.sort.default: sort_decomposition, aten.sort.stable: sort_stable_decomposition,
            aten.topk.default: topk_decomposition, aten.scatter.value: scatter_value_decomposition,
            aten.index_put.default: index_put_decomposition,
            aten._embedding_bag.default: embedding_bag_decomposition,
            aten.embedding_bag.default: embedding_bag_decomposition,
            aten.embedding_bag.padding_idx: embedding_bag_decomposition,
            aten.fake_quantize_per_channel_affine.default: fake_quantize_per_channel_decomposition,
            aten.fake_quantize_per_channel_affine_cachemask.default: fake_quantize_per_channel_cachemask_decomposition,
            aten._cdist_forward.default: cdist_decomposition,
            aten.searchsorted.Tensor: searchsorted_decomposition,
            aten.grid_sampler_2d.default: grid_sampler_2d_decomposition,
            aten.kthvalue.default: kthvalue_decomposition, aten.median.dim: median_dim_decomposition,
            aten.median.default: median_decomposition}


def decomposition_table() -> dict:
    from torch_mlir.extras.fx_decomp_util import get_decomposition_table

    table = dict(get_decomposition_table())
    table.update(upstream_decompositions())
    return table


# ---------------------------------------------------------------------------------------------
# loading the model

def load_module(target: str):
    """MODEL.py[:NAME] -> (nn.Module in eval mode, the file's python module)."""
    import torch

    path_text, _, name = target.partition(":") if not re.match(r"^[A-Za-z]:\\", target) else (target, "", "")
    path = Path(path_text)
    if not path.is_file():
        raise ImportFailure(f"{path}: no such model file")
    spec = importlib.util.spec_from_file_location(f"lh_model_{path.stem}", path)
    source = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(path.resolve().parent))
    try:
        spec.loader.exec_module(source)
    except Exception as e:
        raise ImportFailure(f"{path}: the model file failed to run: {type(e).__name__}: {e}")
    if not name:   # KernelBench's `Model`, else the one model class the file defines (helpers aside)
        classes = _root_module_classes(source)
        name = classes[0].__name__ if not hasattr(source, "Model") and len(classes) == 1 else "Model"
    if not hasattr(source, name):
        found = [c.__name__ for c in _module_classes(source)]
        raise ImportFailure(f"{path}: no {name!r} (nn.Module classes here: {', '.join(found) or 'none'}; "
                            f"name one as {path}:NAME)")
    obj = getattr(source, name)
    # KernelBench's convention: get_init_inputs() builds its `Model`
    init_args = list(source.get_init_inputs()) if name == "Model" and hasattr(source, "get_init_inputs") else []
    try:
        module = obj(*init_args) if callable(obj) and not isinstance(obj, torch.nn.Module) else obj
    except Exception as e:
        raise ImportFailure(f"{path}:{name}: building the module failed: {type(e).__name__}: {e}")
    if not isinstance(module, torch.nn.Module):
        raise ImportFailure(f"{path}:{name} is not an nn.Module (nor a class or function returning one)")
    return module.eval(), source


# ---------------------------------------------------------------------------------------------
# export

def flatten_outputs(out) -> list:
    import torch

    if isinstance(out, torch.Tensor):
        return [out]
    if isinstance(out, (list, tuple)):
        return [t for o in out for t in flatten_outputs(o)]
    if isinstance(out, dict):
        return [t for k in out for t in flatten_outputs(out[k])]
    if out is None:
        return []
    return [torch.as_tensor(out)]


def to_numpy(t) -> tuple[np.ndarray, str]:
    """A tensor as numpy plus its MLIR element type; bf16 is widened to f32 (exactly)."""
    import torch

    t = t.detach().cpu().contiguous()
    dtype = _MLIR_NAMES.get(str(t.dtype).removeprefix("torch."), str(t.dtype))
    if t.dtype == torch.bfloat16:
        return t.to(torch.float32).numpy(), dtype
    return t.numpy(), dtype


def _state_in_lists_as_values(program) -> None:
    """A parameter, buffer or constant tensor used inside a list argument (`z[:, self.rows, self.cols]`:
    aten.index.Tensor's index list) reaches that op through a clone: torch-mlir's frozen import puts
    the state tensor itself in the list, which its list import refuses ("Heterogeneous lists are not
    supported: expected vtensor, got torch.Tensor"); a direct operand becomes a literal."""
    import torch

    graph = program.graph
    user_inputs = set(program.graph_signature.user_inputs)
    state = {n for n in graph.nodes if n.op == "placeholder" and n.name not in user_inputs}
    for node in list(graph.nodes):
        if node.op != "call_function":
            continue
        for position, arg in enumerate(node.args):
            if not isinstance(arg, (list, tuple)) or not any(a in state for a in arg):
                continue
            values = []
            for a in arg:
                if a in state:
                    with graph.inserting_before(node):
                        copy = graph.call_function(torch.ops.aten.clone.default, (a,))
                    copy.meta.update(a.meta)
                    a = copy
                values.append(a)
            node.update_arg(position, type(arg)(values))
    program.graph_module.recompile()


def _non_persistent_buffers_as_state(program) -> None:
    """A buffer registered with `persistent=False` (rotary cos/sin tables, causal masks, Swin's attention mask:
    what real models keep out of their checkpoints) is kept by torch.export in `program.constants`, not in
    `program.state_dict`; torch-mlir's frozen import looks every buffer up in the state dict ("Could not find
    state mapping for buffer"): the state dict gets them too."""
    for name in program.graph_signature.inputs_to_buffers.values():
        if name not in program.state_dict and name in getattr(program, "constants", {}):
            program.state_dict[name] = program.constants[name]


# ---------------------------------------------------------------------------------------------
# scatters as loops over the index

#: aten scatters (after torch-mlir's torch-level pipeline) lowered to a loop nest over the index tensor:
#: op -> how a written element combines with the one there ("": replaced). torch-mlir's own lowering
#: (tm_tensor.scatter) crashes in this build and upstream MLIR cannot load its result; a one-hot compare of
#: every target with every index entry (what the importer did before) is quadratic in the scattered dim
#: (top_p_logits' 8x1024 scatter: 8x1024x1024 compares, 0.16x torch).
SCATTER_LOOP_OPS = {"torch.aten.scatter.src": "", "torch.aten.scatter_add": "add"}

#: torch-mlir's torch-backend-to-linalg-on-tensors-backend-pipeline, its contract check last
BACKEND_PIPELINE = "torch-backend-to-linalg-on-tensors-backend-pipeline"
BACKEND_CONTRACT = "torch-verify-linalg-on-tensors-backend-contract"


def _builtin_tensor_type(vtensor: str) -> str:
    """!torch.vtensor<[2,5],si64> -> tensor<2x5xi64> (what torch_c.to_builtin_tensor gives: signless)."""
    m = re.fullmatch(r"!torch\.vtensor<\[([^\]]*)\],(\w+)>", vtensor)
    if not m:
        raise ValueError(f"not a ranked value tensor: {vtensor}")
    dims = ["?" if d.strip() == "-1" else d.strip() for d in m.group(1).split(",") if d.strip()]
    elem = re.sub(r"^[su]i", "i", m.group(2))
    return "tensor<" + "".join(d + "x" for d in dims) + elem + ">"


def scatter_loop_function(name: str, x_type: str, index_type: str, src_type: str, dim: int, combine: str) -> str:
    """A private function (builtin tensors) scattering src into x along `dim` at index: a loop nest over the
    index's elements in row-major order, each writing x[..., index[i], ...] (src[i] combined with the element
    there for scatter_add), so that of duplicate targets the last entry wins (torch leaves which one
    unspecified) and scatter_add sums them all. Entries outside [0, x.shape[dim]) write nothing (torch
    raises on them). Linear in the index's size."""
    rank = x_type.count("x") if "<" in x_type else 0
    elem = x_type[x_type.rindex("x") + 1:-1] if rank else x_type[len("tensor<"):-1]
    lines = [f"func.func private @{name}(%x: {x_type}, %idx: {index_type}, %src: {src_type}) -> {x_type} {{",
             "  %c0 = arith.constant 0 : index", "  %c1 = arith.constant 1 : index",
             "  %zero = arith.constant 0 : i64"]
    for k in range(rank):
        lines += [f"  %d{k} = arith.constant {k} : index", f"  %n{k} = tensor.dim %idx, %d{k} : {index_type}"]
    lines += [f"  %size = tensor.dim %x, %d{dim} : {x_type}",
              "  %size64 = arith.index_cast %size : index to i64"]
    ivs = [f"%i{k}" for k in range(rank)]
    pad = "  "
    for k in range(rank):
        acc_in = "%x" if k == 0 else f"%a{k - 1}"
        lines.append(f"{pad}%r{k} = scf.for %i{k} = %c0 to %n{k} step %c1 iter_args(%a{k} = {acc_in}) -> ({x_type}) {{")
        pad += "  "
    acc = f"%a{rank - 1}"
    target = ", ".join("%t" if k == dim else ivs[k] for k in range(rank))
    at = ", ".join(ivs)
    lines += [f"{pad}%t64 = tensor.extract %idx[{at}] : {index_type}",
              f"{pad}%lo = arith.cmpi sge, %t64, %zero : i64",
              f"{pad}%hi = arith.cmpi slt, %t64, %size64 : i64",
              f"{pad}%in = arith.andi %lo, %hi : i1",
              f"{pad}%w = scf.if %in -> ({x_type}) {{",
              f"{pad}  %t = arith.index_cast %t64 : i64 to index",
              f"{pad}  %v = tensor.extract %src[{at}] : {src_type}"]
    value = "%v"
    if combine == "add":
        op = "arith.addf" if elem.startswith(("f", "bf")) else ("arith.ori" if elem == "i1" else "arith.addi")
        lines += [f"{pad}  %old = tensor.extract {acc}[{target}] : {x_type}",
                  f"{pad}  %sum = {op} %old, %v : {elem}"]
        value = "%sum"
    lines += [f"{pad}  %new = tensor.insert {value} into {acc}[{target}] : {x_type}",
              f"{pad}  scf.yield %new : {x_type}",
              f"{pad}}} else {{",
              f"{pad}  scf.yield {acc} : {x_type}",
              f"{pad}}}"]
    result = "%w"
    for k in reversed(range(rank)):
        lines.append(f"{pad}scf.yield {result} : {x_type}")
        pad = pad[:-2]
        lines.append(f"{pad}}}")
        result = f"%r{k}"
    lines += [f"  return %r0 : {x_type}", "}"]
    return "\n".join(lines) + "\n"


def scatters_as_calls(module) -> dict:
    """Each scatter of SCATTER_LOOP_OPS in `module` (torch dialect, torch-mlir's backend contract) becomes a
    call of a private function declared with its types (the backend pipeline converts both to builtin
    tensors; define_scatter_functions then gives them their loop nests). {function name: (dim, combine)}."""
    from torch_mlir import ir

    found = []

    def visit(op):
        if op.name in SCATTER_LOOP_OPS:
            found.append(op)
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit)
    specs = {}
    with module.context, ir.Location.unknown():
        for n, op in enumerate(found):
            x, dim_value, index, src = list(op.operands)
            dim_op = dim_value.owner
            if not hasattr(dim_op, "name") or dim_op.name != "torch.constant.int":
                raise ValueError(f"{op.name} along a dimension that is not a constant")
            rank = len(_builtin_tensor_type(str(x.type)).split("x")) - 1
            name = f"lh_scatter_{n}"
            specs[name] = (ir.IntegerAttr(dim_op.attributes["value"]).value % max(rank, 1), SCATTER_LOOP_OPS[op.name])
            ft = ir.FunctionType.get([x.type, index.type, src.type], [op.results[0].type])
            with ir.InsertionPoint.at_block_begin(module.body):
                ir.Operation.create("func.func", regions=1, attributes={
                    "sym_name": ir.StringAttr.get(name), "function_type": ir.TypeAttr.get(ft),
                    "sym_visibility": ir.StringAttr.get("private")})
            with ir.InsertionPoint(op):
                call = ir.Operation.create("func.call", results=[op.results[0].type], operands=[x, index, src],
                                           attributes={"callee": ir.FlatSymbolRefAttr.get(name)})
            op.results[0].replace_all_uses_with(call.result)
            op.erase()
    return specs


def define_scatter_functions(module, specs: dict) -> None:
    """The declarations of scatters_as_calls (now of builtin tensors) get their loop nests."""
    from torch_mlir import ir

    with module.context, ir.Location.unknown():
        for op in list(module.body.operations):
            op = op.operation
            if op.name != "func.func" or ir.StringAttr(op.attributes["sym_name"]).value not in specs:
                continue
            name = ir.StringAttr(op.attributes["sym_name"]).value
            ft = ir.FunctionType(ir.TypeAttr(op.attributes["function_type"]).value)
            parsed = ir.Module.parse(scatter_loop_function(name, *(str(t) for t in ft.inputs), *specs[name]))
            func = parsed.body.operations[0]        # (parsed stays alive until its function is moved out)
            func.operation.detach_from_parent()
            ir.InsertionPoint(op).insert(func)
            op.erase()
            del parsed


def lower_to_linalg(module) -> None:
    """torch-mlir's backend pipeline on a torch-dialect module (as fx.export_and_import's
    output_type="linalg-on-tensors" runs it); scatters become calls of functions of loop nests, inlined
    (and erased) before the backend contract is checked."""
    from torch_mlir import passmanager
    from torch_mlir.compiler_utils import BackendLoweringOptions, run_pipeline_with_repro_report

    pipeline = (f"builtin.module({BACKEND_PIPELINE}{{allow-non-finites="
                f"{str(BackendLoweringOptions().allow_non_finites).lower()}}})")
    specs = scatters_as_calls(module)
    if not specs:
        run_pipeline_with_repro_report(module, pipeline, "lowering to linalg")
        return
    with module.context:
        passes = str(passmanager.PassManager.parse(pipeline))
    head, contract, _ = passes.rpartition(f",{BACKEND_CONTRACT})")
    if not contract:
        raise ValueError(f"unexpected torch-mlir backend pipeline: {passes[:200]}")
    run_pipeline_with_repro_report(module, head + ")", "lowering to linalg")
    define_scatter_functions(module, specs)
    run_pipeline_with_repro_report(module, f"builtin.module(inline,symbol-dce,func.func(canonicalize),{BACKEND_CONTRACT})",
                                   "lowering to linalg (scatters as loops)")


def export_module(module, inputs: list, out_dir: Path, name: str, *, source: str = "") -> dict:
    """Export `module` on `inputs`: writes NAME.mlir, the .npy files and the sidecar; returns the sidecar."""
    import torch
    import torch_mlir
    from torch_mlir import fx

    out_dir.mkdir(parents=True, exist_ok=True)
    with torch.no_grad():
        expected = flatten_outputs(module(*[t.clone() for t in inputs]))
        try:
            program = torch.export.export(module, tuple(inputs)).run_decompositions(decomposition_table())
            _state_in_lists_as_values(program)
            _non_persistent_buffers_as_state(program)
            mlir_module = fx.export_and_import(program, output_type="torch", func_name="main",
                                               decomposition_table={})
            lower_to_linalg(mlir_module)
        except Exception as e:
            first = (str(e).strip().splitlines() or [type(e).__name__])[0]
            raise ImportFailure(f"torch-mlir export failed: {type(e).__name__}: {first[:400]}")
    text = str(mlir_module)
    leftover = sorted(set(re.findall(r"\b((?:tm_tensor|torch|torch_c)\.[a-z_.0-9]+)\b(?=[ (<{])", text)))
    mlir_path = out_dir / f"{name}.mlir"
    mlir_path.write_text(text if text.endswith("\n") else text + "\n")
    input_files, input_types, expected_files, expected_types = [], [], [], []
    for i, t in enumerate(inputs):
        arr, dtype = to_numpy(t)
        path = out_dir / f"{name}.input{i}.npy"
        np.save(path, arr)
        input_files.append(path.name)
        input_types.append(f"{'x'.join(map(str, arr.shape))}{'x' if arr.shape else ''}{dtype}")
    for j, t in enumerate(expected):
        arr, dtype = to_numpy(t)
        path = out_dir / f"{name}.expected{j}.npy"
        np.save(path, arr)
        expected_files.append(path.name)
        expected_types.append(f"{'x'.join(map(str, arr.shape))}{'x' if arr.shape else ''}{dtype}")
    sidecar = {"format": "lh-workbench expected outputs 1", "source": source, "framework": "torch",
               "versions": {"torch": torch.__version__,
                            "torch_mlir": getattr(torch_mlir, "__version__", _dist_version("torch-mlir"))},
               "mlir": mlir_path.name, "inputs": input_files, "input_types": input_types,
               "expected": expected_files, "expected_types": expected_types,
               "tolerances": {k: {"rtol": r, "atol": a} for k, (r, a) in TOLERANCES.items()},
               "unsupported_ops": leftover}
    (out_dir / f"{name}.expected.json").write_text(json.dumps(sidecar, indent=2) + "\n")
    return sidecar


def _dist_version(dist: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(dist)
    except PackageNotFoundError:
        return "unknown"


def _module_classes(source) -> list:
    """The nn.Module subclasses a model file defines itself (not those it imports)."""
    import torch

    return [v for v in vars(source).values() if isinstance(v, type) and issubclass(v, torch.nn.Module)
            and v.__module__ == source.__name__]


def _root_module_classes(source) -> list:
    """The file's nn.Module classes that no other class of the file names (its models, not their parts:
    LlamaBlock, not the RMSNorm it builds), from the file's syntax tree."""
    import ast

    classes = _module_classes(source)
    tree = ast.parse(Path(source.__file__).read_text())
    names_in = {node.name: {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}
                for node in ast.walk(tree) if isinstance(node, ast.ClassDef)}
    return [c for c in classes
            if not any(c.__name__ in names_in.get(o.__name__, ()) for o in classes if o is not c)]


def _get_inputs_serves(source, name: str) -> bool:
    """Whether the file's get_inputs() is meant for the class NAME: KernelBench's Model (or no NAME), or
    the one model class of the file (the one nn.Module the others do not use)."""
    return name in ("", "Model") or [c.__name__ for c in _root_module_classes(source)] == [name]


def snake_case(name: str) -> str:
    """A class name as a file stem: a word starts at each capital followed by a lowercase letter, so
    acronyms stay whole: TinyViTBlock -> tiny_vit_block, TopKMoE -> topk_moe, MLPMixer -> mlp_mixer."""
    return re.sub(r"(?<!^)(?<!_)(?=[A-Z][a-z])", "_", name).lower()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="torch_export", description=__doc__.split("\n\n")[0])
    p.add_argument("model", help="MODEL.py[:NAME]")
    p.add_argument("--inputs", help="input specs, comma-separated: 8x3x224x224xf32,4x16xi64[0:100]")
    p.add_argument("--out", default="out", help="output directory (default: out)")
    p.add_argument("--name", help="file stem of the outputs (default: the model's name, snake_case)")
    p.add_argument("--dtype", choices=["f32", "bf16", "f16", "f64"],
                   help="cast the module's parameters and floating-point inputs to this type")
    p.add_argument("--seed", type=int, default=0, help="seed of the random inputs and of module init")
    args = p.parse_args(argv)
    try:
        import torch
    except ImportError as e:
        print(json.dumps({"ok": False, "error": f"torch is not importable by {sys.executable}: {e} (pip install "
                                                "'lh-workbench[torch]', or name a Python that has torch and torch-mlir: "
                                                "--torch-python PY or $LH_WORKBENCH_TORCH_PYTHON)"}))
        return 1
    try:
        import torch_mlir  # noqa: F401
    except ImportError as e:
        print(json.dumps({"ok": False, "error": f"torch-mlir is not importable by {sys.executable}: {e} "
                                                "(pip install 'lh-workbench[torch]')"}))
        return 1
    try:
        torch.manual_seed(args.seed)
        module, source = load_module(args.model)
        generator = torch.Generator().manual_seed(args.seed)
        if args.inputs:
            inputs = [make_input(parse_input_spec(s), generator) for s in split_specs(args.inputs)]
        elif hasattr(source, "get_inputs") and _get_inputs_serves(source, args.model.partition(":")[2]):
            inputs = list(source.get_inputs())
        elif hasattr(source, "get_inputs"):
            roots = [c.__name__ for c in _root_module_classes(source)]
            which = (f"here {roots[0]}, which builds the others" if len(roots) == 1
                     else f"the file has several models: {', '.join(roots)}")
            raise ImportFailure(f"{args.model}: no --inputs, and the file's get_inputs() is taken for its Model "
                                f"(KernelBench) or its one nn.Module only ({which})")
        else:
            raise ImportFailure(f"{args.model}: no --inputs and the file has no get_inputs()")
        if args.dtype:
            dtype = getattr(torch, _DTYPE_NAMES[args.dtype])
            module = module.to(dtype)
            inputs = [t.to(dtype) if t.is_floating_point() else t for t in inputs]
        name = args.name or snake_case(args.model.partition(":")[2] or Path(args.model).stem)
        sidecar = export_module(module, inputs, Path(args.out), name, source=args.model)
    except ImportFailure as e:
        print(json.dumps({"ok": False, "error": str(e)}))
        return 1
    except Exception as e:  # a bug in the model or in torch: one line, the traceback on stderr
        traceback.print_exc()
        print(json.dumps({"ok": False, "error": f"{type(e).__name__}: {e}".splitlines()[0][:500]}))
        return 1
    out = Path(args.out)
    print(json.dumps({"ok": True, "mlir": str(out / sidecar["mlir"]), "sidecar": str(out / f"{name}.expected.json"),
                      "inputs": [str(out / f) for f in sidecar["inputs"]],
                      "expected": [str(out / f) for f in sidecar["expected"]],
                      "input_types": sidecar["input_types"], "expected_types": sidecar["expected_types"],
                      "unsupported_ops": sidecar["unsupported_ops"]}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
