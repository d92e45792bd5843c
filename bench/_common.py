"""Pieces the benchmark scripts share: the numpy baseline and the square matmul payload."""
from __future__ import annotations

import statistics
import time
from pathlib import Path

import numpy as np


def numpy_matmul_gflops(n: int, threads: int | None, repeats: int) -> float:
    """Median GFLOP/s of numpy `A @ B` (f32, n^3) on `threads` BLAS threads (None: all), seeded inputs."""
    from threadpoolctl import threadpool_limits

    rng = np.random.default_rng(0)
    a = rng.uniform(-1, 1, (n, n)).astype(np.float32)
    b = rng.uniform(-1, 1, (n, n)).astype(np.float32)
    with threadpool_limits(limits=threads):
        a @ b
        times = []
        for _ in range(repeats):
            t0 = time.perf_counter()
            a @ b
            times.append(time.perf_counter() - t0)
    return 2 * n ** 3 / statistics.median(times) / 1e9


def write_matmul_payload(path: Path, n: int) -> Path:
    """A tensor f32 n x n x n matmul payload (@matmul: C + A x B)."""
    t = f"tensor<{n}x{n}xf32>"
    path.write_text(f"func.func @matmul(%A: {t}, %B: {t}, %C: {t}) -> {t} {{\n"
                    f"  %0 = linalg.matmul ins(%A, %B : {t}, {t}) outs(%C : {t}) -> {t}\n"
                    f"  return %0 : {t}\n}}\n")
    return path
