"""Element types: MLIR element type names -> numpy dtypes, and the check's tolerance per type.

numpy has no bf16 or fp8: those come from `ml_dtypes` (bfloat16, float8_e4m3fn, float8_e5m2, ...),
whose arrays are ordinary numpy arrays of 1- or 2-byte items. They cross the worker boundary by
pickle (both sides import ml_dtypes through this module) and are handed to generated code as raw
bytes of the right itemsize (`raw_view`).
"""
from __future__ import annotations

import re

import numpy as np

try:  # a declared dependency; without it only the numpy-native element types work
    import ml_dtypes
except ModuleNotFoundError:  # pragma: no cover - exercised only on machines without it
    ml_dtypes = None

_NUMPY = {"f32": np.float32, "f64": np.float64, "f16": np.float16, "i8": np.int8, "i16": np.int16,
          "i32": np.int32, "i64": np.int64, "i1": np.bool_, "index": np.int64,
          "ui8": np.uint8, "ui16": np.uint16, "ui32": np.uint32, "ui64": np.uint64,
          # MLIR lays a complex element out as numpy does: the real part, then the imaginary part
          "complex<f32>": np.complex64, "complex<f64>": np.complex128}
# MLIR float types numpy lacks -> ml_dtypes attribute names
_ML_DTYPES = {"bf16": "bfloat16", "f8E4M3FN": "float8_e4m3fn", "f8E5M2": "float8_e5m2",
              "f8E4M3": "float8_e4m3", "f8E4M3FNUZ": "float8_e4m3fnuz", "f8E5M2FNUZ": "float8_e5m2fnuz",
              "f8E4M3B11FNUZ": "float8_e4m3b11fnuz", "f8E3M4": "float8_e3m4", "f8E8M0FNU": "float8_e8m0fnu",
              "f6E2M3FN": "float6_e2m3fn", "f6E3M2FN": "float6_e3m2fn", "f4E2M1FN": "float4_e2m1fn"}
# maximum error of the correctness check relative to the reference's largest magnitude, by element
# type: about 2^-(mantissa bits) times a small factor for accumulation-order differences
TOLERANCE = {"f64": 1e-9, "f32": 1e-4, "complex<f64>": 1e-9, "complex<f32>": 1e-4, "f16": 2e-2, "bf16": 3e-2,
             "f8E4M3FN": 1.25e-1, "f8E4M3": 1.25e-1, "f8E4M3FNUZ": 1.25e-1, "f8E4M3B11FNUZ": 1.25e-1,
             "f8E5M2": 2.5e-1, "f8E5M2FNUZ": 2.5e-1, "f8E3M4": 6.25e-2}
INPUT_KINDS = ("random", "zeros", "ones")


class RunInputError(ValueError):
    pass


def numpy_dtype(mlir_dtype: str) -> np.dtype:
    """The numpy dtype of an MLIR element type name (`f32`, `bf16`, `f8E4M3FN`, `i1`, ...)."""
    if mlir_dtype in _NUMPY:
        return np.dtype(_NUMPY[mlir_dtype])
    if mlir_dtype in _ML_DTYPES:
        if ml_dtypes is None:
            raise RunInputError(f"element type {mlir_dtype} needs the ml_dtypes package (pip install ml_dtypes)")
        return np.dtype(getattr(ml_dtypes, _ML_DTYPES[mlir_dtype]))
    raise RunInputError(f"element type {mlir_dtype} has no numpy equivalent for inputs")


_SHAPED_PREFIXES = ("tensor<", "memref<", "vector<")
_DIM = re.compile(r"(\?|\*|\d+|\[\d+\])x")


def element_type_of(type_text: str) -> str:
    """The element type of a printed tensor / memref / vector type (`tensor<8x32xbf16>` -> `bf16`,
    `memref<?x4xf32, strided<[4, 1]>>` -> `f32`, `tensor<2xcomplex<f32>>` -> `complex<f32>`); any other
    type as it is. (Splitting at the last `x` cut `complex<f32>` to `<f32` and kept a memref's layout.)"""
    if not type_text.startswith(_SHAPED_PREFIXES) or not type_text.endswith(">"):
        return type_text
    inner = type_text[type_text.index("<") + 1:-1]
    while (m := _DIM.match(inner)) is not None:
        inner = inner[m.end():]
    depth = 0
    for i, c in enumerate(inner):   # the element type ends at a top-level comma (layout, memory space, encoding)
        depth += c in "<([{"
        depth -= c in ">)]}"
        if c == "," and depth == 0:
            return inner[:i].strip()
    return inner.strip()


def itemsize(mlir_dtype: str) -> int:
    """Bytes per element of an MLIR element type with a numpy equivalent (RunInputError otherwise)."""
    return np.dtype(numpy_dtype(mlir_dtype)).itemsize


def dtype_by_name(name: str) -> np.dtype:
    """A numpy dtype from its name as `np.dtype(...).name` gives it (`float32`, `bfloat16`, ...): the
    form output buffer specs travel in, since `.str` of an ml_dtypes type is only `<V2`."""
    if ml_dtypes is not None and hasattr(ml_dtypes, name):
        return np.dtype(getattr(ml_dtypes, name))
    return np.dtype(name)


def is_extended_float(dtype) -> bool:
    """An ml_dtypes float (bf16, fp8, ...): a float numpy itself does not know."""
    return ml_dtypes is not None and np.dtype(dtype).name in _ML_DTYPES.values()


def is_float(dtype) -> bool:
    return np.issubdtype(np.dtype(dtype), np.floating) or is_extended_float(dtype)


def is_complex(dtype) -> bool:
    return np.issubdtype(np.dtype(dtype), np.complexfloating)


def widened(arr: np.ndarray) -> np.ndarray:
    """`arr` as float64 (bf16/fp8/bool/int), or complex128 for complex elements (a float64 cast drops
    the imaginary part), for comparisons."""
    return np.asarray(arr).astype(np.complex128 if is_complex(np.asarray(arr).dtype) else np.float64)


def smallest_normal(dtype: np.dtype) -> float:
    """The smallest normal magnitude of a floating (or complex) element type, 0.0 for others: what a code
    that flushes subnormals to zero (x86 FTZ/DAZ, lh-flush-denormals) cannot tell from zero."""
    dtype = np.dtype(dtype)
    try:
        return float(np.finfo(dtype).smallest_normal) if (is_float(dtype) or is_complex(dtype)) else 0.0
    except (TypeError, ValueError):   # (an ml_dtypes float numpy's finfo does not know)
        try:
            import ml_dtypes
            return float(ml_dtypes.finfo(dtype).smallest_normal)
        except Exception:
            return 0.0


def raw_view(arr: np.ndarray) -> np.ndarray:
    """The same memory as unsigned integers of the same itemsize when ctypes has no type for the
    elements (ml_dtypes floats): generated code only needs the bytes, the pointer and the strides."""
    if is_extended_float(arr.dtype):
        return arr.view(np.dtype(f"u{arr.dtype.itemsize}"))
    return arr


def tolerance(mlir_dtype: str) -> float:
    return TOLERANCE.get(mlir_dtype, 0.0)
