"""Random weights back into fixtures whose weights were shrunk to splats, so they compile as real models do:

    python scripts/random_weights.py IN_DIR OUT_DIR [--value 1.000000e-02] [--scale S] [--seed 0]

`scripts/sweep_constant_weights.py`'s `splat_payload` (or any shrinking of an export) turns every
`dense_resource<...>` weight into `dense<VALUE>`: a few KB per fixture instead of megabytes, which is what
fits the device's carry limit. But a splat weight is not what a model has: the CPU pipeline folds it
(`lh-fold-constant-weights`: a matmul by a splat is a row sum), so the program measured is not the model's
(a transformer layer's projections become reductions). This puts it back: each float tensor constant
`dense<VALUE> : tensor<AxBx..xf32|f16|bf16|f64>` (VALUE exactly as printed, rank >= 1) becomes a
`dense_resource` blob of random values (seeded, per constant: fan-in scaled matrices and filters, vectors in [0.5, 1.5]; `--scale S`: uniform in [-S, S]), written in the
module's `dialect_resources` section as torch exports are. Other constants (zeros, masks, scalars) stay.
Each NAME.mlir of IN_DIR is written to OUT_DIR with its NAME.expected.json (whose expected outputs no
longer apply: use `bench/cpu_models.py --random-inputs`, which checks nothing but runs and times).
"""
from __future__ import annotations

import argparse
import re
import shutil
import sys
from pathlib import Path

import numpy as np

_SPLAT = re.compile(r"dense<(?P<value>[-+0-9.eE]+)>(?P<type>\s*:\s*tensor<(?P<shape>(?:\d+x)+)(?P<elt>f32|f16|bf16|f64)>)")


def _bytes(values: np.ndarray, elt: str) -> bytes:
    if elt == "bf16":
        bits = values.astype(np.float32).view(np.uint32)
        return ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16).tobytes()
    return values.astype({"f32": np.float32, "f16": np.float16, "f64": np.float64}[elt]).tobytes()


def _values(rng, shape: list[int], scale: float) -> np.ndarray:
    """Random values for one weight of `shape`. `scale` > 0: uniform in [-scale, scale]. 0 (the default): what
    a trained model's values look like to the arithmetic, so that a benchmark times the model's program on
    ordinary numbers: a matrix or filter (rank >= 2) uniform in +-sqrt(3 / fan_in) (fan_in: all dims but the
    first; activations keep their size from layer to layer), a vector (a norm's scale, variance, mean or
    shift, a bias) uniform in [0.5, 1.5] (positive: sqrt(var + eps) stays real). Weights of +-0.05 everywhere
    made batch norms' variances negative: NaN, and the products of many small factors subnormal numbers,
    whose arithmetic is many times slower (EfficientNet's SiLUs on the device: 6x)."""
    count = int(np.prod(shape))
    if scale > 0:
        return rng.uniform(-scale, scale, size=count)
    if len(shape) >= 2:
        bound = float(np.sqrt(3.0 / max(int(np.prod(shape[1:])), 1)))
        return rng.uniform(-bound, bound, size=count)
    return rng.uniform(0.5, 1.5, size=count)


def random_weights(text: str, value: str = "1.000000e-02", scale: float = 0.0, seed: int = 0) -> tuple[str, int]:
    """`text` with each splat of `value` (a float tensor of rank >= 1) replaced by a random blob (`_values`);
    the count."""
    rng = np.random.default_rng(seed)
    blobs: list[tuple[str, str]] = []

    def blob(m: re.Match) -> str:
        if m.group("value") != value:
            return m.group(0)
        shape = [int(d) for d in m.group("shape").rstrip("x").split("x")]
        name = f"lh_random_weight_{len(blobs)}"
        data = _bytes(_values(rng, shape, scale), m.group("elt"))
        alignment = {"f64": 8, "f32": 4}.get(m.group("elt"), 2)
        blobs.append((name, "0x" + alignment.to_bytes(4, "little").hex() + data.hex()))
        return f"dense_resource<{name}>{m.group('type')}"

    out = _SPLAT.sub(blob, text)
    if not blobs:
        return text, 0
    entries = ",\n".join(f'      {name}: "{hexdata}"' for name, hexdata in blobs)
    section = "{-#\n  dialect_resources: {\n    builtin: {\n" + entries + "\n    }\n  }\n#-}\n"
    if "{-#" in out:   # a section already there (kept integer tables): the blobs join its builtin block
        head, sep, rest = out.partition("builtin: {")
        if not sep:
            raise ValueError("the module's resource section has no builtin block to add the weights to")
        return head + sep + "\n" + entries + "," + rest, len(blobs)
    return out.rstrip() + "\n\n" + section, len(blobs)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("inputs", type=Path)
    ap.add_argument("out", type=Path)
    ap.add_argument("--value", default="1.000000e-02", help="the splat value the shrinking wrote, as printed")
    ap.add_argument("--scale", type=float, default=0.0,
                    help="uniform in [-scale, scale] for every weight; 0 (default): fan-in scaled matrices, vectors in [0.5, 1.5]")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    total = 0
    for path in sorted(args.inputs.glob("*.mlir")):
        text, n = random_weights(path.read_text(), args.value, args.scale, args.seed)
        (args.out / path.name).write_text(text)
        side = path.with_suffix(".expected.json")
        if side.exists():
            shutil.copy(side, args.out / side.name)
        total += n
        print(f"{path.stem}: {n} weight(s)")
    print(f"{total} splat weights made random in {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
