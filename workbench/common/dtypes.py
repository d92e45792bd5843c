"""Element types: MLIR element type names -> numpy dtypes, and the check's tolerance per type."""
from __future__ import annotations

import numpy as np

_DTYPES = {"f32": np.float32, "f64": np.float64, "f16": np.float16, "i8": np.int8, "i16": np.int16,
           "i32": np.int32, "i64": np.int64, "i1": np.bool_, "index": np.int64}
# relative tolerance of the correctness check, by element type
TOLERANCE = {"f64": 1e-9, "f32": 1e-4, "f16": 2e-2, "bf16": 2e-2}
INPUT_KINDS = ("random", "zeros", "ones")


class RunInputError(ValueError):
    pass


def numpy_dtype(mlir_dtype: str):
    try:
        return _DTYPES[mlir_dtype]
    except KeyError:
        raise RunInputError(f"element type {mlir_dtype} has no numpy equivalent for inputs")
