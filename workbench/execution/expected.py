"""Outputs a framework computed (e.g. torch's, written by `import`): the sidecar and the comparison.

`NAME.expected.json` beside `NAME.mlir` names the inputs the model was exported with and the outputs
the framework computed on them (`.npy`, in the order of the entry's results). `load` picks it up;
`run` then uses those inputs by default, and `run --check` compares the outputs with the framework's
as well as with the unscheduled payload. `run --expect a.npy,b.npy` gives expected outputs by hand.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from workbench.common.dtypes import widened

SIDECAR_SUFFIX = ".expected.json"
# elementwise: |got - want| <= atol + atol_scale * max|want| + rtol * |want|, by the output's element type
# (integers: exact; max|want| over the output's finite elements)
DEFAULT_TOLERANCES = {"f64": (1e-6, 1e-8), "f32": (1e-3, 1e-4), "f16": (1e-2, 1e-3), "bf16": (5e-2, 0.0)}
#: the part of atol proportional to the output's largest magnitude, by element type: bf16's 8-bit mantissa
#: makes an absolute atol either too loose for small outputs (logits of max |y| 0.6: 5e-2 let an error of
#: 40% of a typical one pass) or too tight for large ones; 2^-5 max|want| is about 4 bf16 ulps of the
#: largest element, as the check against the unscheduled payload allows (workbench/common/dtypes.py)
DEFAULT_ATOL_SCALES = {"bf16": 2.0 ** -5}
#: a sidecar's tolerance entry written by every import before the scaled atol (the then default, an
#: absolute atol): read as today's default for that type (re-importing writes the new entry)
_FORMER_DEFAULTS = {"bf16": {"rtol": 5e-2, "atol": 5e-2}}
_NUMPY_NAMES = {"float64": "f64", "float32": "f32", "float16": "f16", "bfloat16": "bf16"}


class ExpectedError(ValueError):
    pass


@dataclass
class ExpectedOutputs:
    expected: list[Path]
    inputs: list[Path] = field(default_factory=list)
    source: str = ""                       # what made them: the sidecar, or `--expect`
    tolerances: dict[str, tuple[float, float]] = field(default_factory=lambda: dict(DEFAULT_TOLERANCES))
    atol_scales: dict[str, float] = field(default_factory=lambda: dict(DEFAULT_ATOL_SCALES))

    def to_json(self) -> dict[str, Any]:
        return {"source": self.source, "inputs": [str(p) for p in self.inputs],
                "expected": [str(p) for p in self.expected]}


def sidecar_path(payload: Path) -> Path:
    return payload.with_name(payload.name.removesuffix(".mlir") + SIDECAR_SUFFIX)


def find_sidecar(payload: Path) -> ExpectedOutputs | None:
    """The sidecar beside `payload`, if any (a malformed one is an error, not silently ignored)."""
    path = sidecar_path(Path(payload))
    if not path.is_file():
        return None
    try:
        doc = json.loads(path.read_text())
        base = path.parent
        given = {k: v for k, v in (doc.get("tolerances") or {}).items() if _FORMER_DEFAULTS.get(k) != v}
        tol = {k: (float(v["rtol"]), float(v["atol"])) for k, v in given.items()}
        # (an entry without atol_scale: its atol alone, as written)
        scales = {k: float(v.get("atol_scale", 0.0)) for k, v in given.items()}
        found = ExpectedOutputs(expected=[base / f for f in doc["expected"]], inputs=[base / f for f in doc["inputs"]],
                                source=str(path), tolerances={**DEFAULT_TOLERANCES, **tol},
                                atol_scales={**DEFAULT_ATOL_SCALES, **scales})
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise ExpectedError(f"{path}: not a valid expected-outputs sidecar ({type(e).__name__}: {e})")
    missing = [str(p) for p in found.expected + found.inputs if not p.is_file()]
    if missing:
        raise ExpectedError(f"{path}: missing files: {', '.join(missing)}")
    return found


def element_type(arr: np.ndarray) -> str:
    return _NUMPY_NAMES.get(np.dtype(arr.dtype).name, np.dtype(arr.dtype).name)


def compare_expected(got: list[np.ndarray], expected: ExpectedOutputs) -> dict[str, Any]:
    """Elementwise closeness of the run's outputs to the expected ones (allclose with per-type rtol/atol, the
    atol of bf16 proportional to the output's largest magnitude)."""
    report: dict[str, Any] = {"passed": True, "max_abs_err": 0.0, "max_rel_err": 0.0, "source": expected.source,
                              "outputs": []}
    if len(got) != len(expected.expected):
        report.update(passed=False, error=f"the run has {len(got)} outputs, {expected.source} expects "
                                          f"{len(expected.expected)}")
        return report
    for j, (g, path) in enumerate(zip(got, expected.expected)):
        try:
            want = np.load(path, allow_pickle=False)
        except (OSError, ValueError) as e:
            report.update(passed=False, error=f"cannot read expected output {path}: {e}")
            return report
        if want.ndim == 0 and g.shape == (1,):   # a scalar result: the run stores it in a memref<1xT>
            g = g.reshape(())
        if want.dtype.kind == "u" and g.dtype.kind == "i" and want.dtype.itemsize == g.dtype.itemsize:
            g = g.view(want.dtype)   # torch's uint8 is the payload's signless i8: the same bits (200 read as -56)
        if tuple(g.shape) != tuple(want.shape):
            report.update(passed=False, error=f"output {j}: shape {list(g.shape)} vs expected {list(want.shape)} "
                                              f"({path})")
            return report
        etype = element_type(g)
        exact = not np.issubdtype(np.dtype(want.dtype), np.floating) and etype not in expected.tolerances
        rtol, atol = (0.0, 0.0) if exact else expected.tolerances.get(etype, DEFAULT_TOLERANCES["f32"])
        g64, w64 = widened(g), widened(want)
        if g64.size == 0:
            report["outputs"].append({"index": j, "type": etype, "passed": True})
            continue
        with np.errstate(invalid="ignore", over="ignore"):   # inf - inf: NaN, said by the check, not on stderr
            diff = np.abs(g64 - w64)
            both_nan = np.isnan(g64) & np.isnan(w64)
            same_inf = np.isinf(w64) & (g64 == w64)
            magnitude = float(np.max(np.abs(np.where(np.isfinite(w64), w64, 0.0))))
            atol_scale = 0.0 if exact else expected.atol_scales.get(etype, 0.0)
            atol_total = atol + atol_scale * magnitude
            bad = ~((diff <= atol_total + rtol * np.abs(w64)) | both_nan | same_inf)
        finite = np.where(both_nan | same_inf, 0.0, diff)
        max_abs = float(np.nanmax(finite)) if not np.isnan(finite).all() else float("inf")
        if np.isnan(finite).any():
            max_abs = float("inf")
        scale = magnitude or 1.0
        item = {"index": j, "type": etype, "rtol": rtol, "atol": atol_total, "max_abs_err": max_abs,
                "max_rel_err": max_abs / scale, "mismatched": int(bad.sum()), "size": int(bad.size),
                "passed": not bad.any()}
        if not exact and 0.0 < magnitude < atol and not bad.any():
            # torchvision's EfficientNet-B0 / MnasNet / MobileNetV3 at their default init give logits of 1e-14 ..
            # 1e-8: every |got - want| is below atol 1e-3 whatever the run computed, and the pass said nothing
            note = (f"expected output {j}: every value is below atol (largest |want| {magnitude:.3g} < {atol:g}), so "
                    f"the elementwise check cannot fail there; its error relative to that largest value is "
                    f"{max_abs / scale:.3g}")
            item["below_atol"] = True
            report["warning"] = "; ".join(w for w in (report.get("warning"), note) if w)
        elif not exact and magnitude == 0.0 and not bad.any() and not np.isnan(w64).all():
            # every expected value is 0 (HF MobileViTV2 at its default init: its activations underflow to
            # subnormals, its logits to 0): passing says only that the run's values are within atol of 0
            largest = float(np.max(np.abs(np.where(np.isfinite(g64), g64, 0.0))))
            note = (f"expected output {j}: every value is 0, so the check says only that the run's values are "
                    f"within atol {atol_total:g} of 0 (largest |got| {largest:.3g}); a model whose output is 0 at "
                    f"these inputs is not checked by it")
            item["below_atol"] = True
            report["warning"] = "; ".join(w for w in (report.get("warning"), note) if w)
        report["outputs"].append(item)
        report["max_abs_err"] = max(report["max_abs_err"], max_abs)
        report["max_rel_err"] = max(report["max_rel_err"], max_abs / scale)
        report["passed"] = report["passed"] and item["passed"]
    return report
