"""Mid-size f32 contractions split over a few cores (one chunk per MIN_TASK_MACS multiply-adds) where the
parallel loops run on libgomp's team, and every parallel region on the whole team (a loop of fewer
iterations than threads included): an LSTM's 16 x 1024 x 256 step matmul on 8 of 16 threads; a small one
and every one on MLIR's async runtime stay on one core; the split results equal numpy's."""
from __future__ import annotations


import numpy as np
import pytest

from conftest import FIXTURES, load_npys, ok
from workbench.common.parallel_runtime import find_gomp
from workbench.targets.cpu import MIN_PARALLEL_MATMUL, MIN_TASK_MACS, contraction_cores

needs_gomp = pytest.mark.skipif(find_gomp() is None, reason="no libgomp on this machine")


def _step(m: int, k: int, n: int) -> str:
    return f"""
func.func @step(%h: tensor<{m}x{k}xf32>, %w: tensor<{k}x{n}xf32>, %b: tensor<{m}x{n}xf32>) -> tensor<{m}x{n}xf32> {{
  %c0 = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<{m}x{n}xf32>
  %f = linalg.fill ins(%c0 : f32) outs(%e : tensor<{m}x{n}xf32>) -> tensor<{m}x{n}xf32>
  %mm = linalg.matmul ins(%h, %w : tensor<{m}x{k}xf32>, tensor<{k}x{n}xf32>) outs(%f : tensor<{m}x{n}xf32>) -> tensor<{m}x{n}xf32>
  %r = linalg.add ins(%mm, %b : tensor<{m}x{n}xf32>, tensor<{m}x{n}xf32>) outs(%e : tensor<{m}x{n}xf32>) -> tensor<{m}x{n}xf32>
  return %r : tensor<{m}x{n}xf32>
}}
"""


def _selected_threads(ctx, tmp_path, m, k, n, threads) -> int:
    path = tmp_path / f"step_{m}x{k}x{n}.mlir"
    path.write_text(_step(m, k, n))
    ok(ctx, f"load {path}")
    ok(ctx, f"target cpu --threads {threads}")
    res = ok(ctx, "select")
    (contraction,) = [s for s in res.data["selections"] if "matmul" in s["schedule"]]
    return contraction["params"].get("threads", 1)


def test_how_many_cores_a_contraction_takes():
    assert contraction_cores(MIN_PARALLEL_MATMUL, 16, team=False) == 16
    assert contraction_cores(16 * 1024 * 256, 16, team=True) == 16       # the LSTM step
    assert contraction_cores(128 * 256 * 256, 16, team=True) == 16       # BERT-mini's projections
    assert contraction_cores(64 * 64 * 256, 16, team=True) == 4          # 1 M multiply-adds: 4 chunks
    assert contraction_cores(16 * 1024 * 256, 16, team=False) == 1       # the async runtime: not split
    assert contraction_cores(2 * MIN_TASK_MACS - 1, 16, team=True) == 1  # one chunk's worth: not split
    assert contraction_cores(64 * MIN_TASK_MACS, 2, team=True) == 2      # never more than the cores


@needs_gomp
def test_an_lstm_step_matmul_is_split_over_eight_of_sixteen_threads(ctx, tmp_path, monkeypatch):
    """16 chunks asked (4 M multiply-adds), 8 given: N = 1024 in chunks at least 128 columns wide."""
    monkeypatch.delenv("LH_WORKBENCH_PARALLEL_RUNTIME", raising=False)
    assert _selected_threads(ctx, tmp_path, 16, 256, 1024, 16) == 8


def test_on_the_async_runtime_it_stays_on_one_core(ctx, tmp_path, monkeypatch):
    monkeypatch.setenv("LH_WORKBENCH_PARALLEL_RUNTIME", "async")
    assert _selected_threads(ctx, tmp_path, 16, 256, 1024, 16) == 1


@needs_gomp
@pytest.mark.parametrize("shape", [(16, 256, 1024), (40, 200, 270)])
def test_split_mid_size_contractions_match_numpy(ctx, tmp_path, monkeypatch, shape):
    monkeypatch.delenv("LH_WORKBENCH_PARALLEL_RUNTIME", raising=False)
    m, k, n = shape
    assert _selected_threads(ctx, tmp_path, m, k, n, 2) == 2
    ok(ctx, "bench iterations=2")
    ok(ctx, "select --apply")
    ok(ctx, "apply cpu-lower")
    ok(ctx, f"run --threads 2 --save-outputs {tmp_path / 'out'}")
    h, w, b = load_npys(tmp_path / "out", "input")
    (out,) = load_npys(tmp_path / "out", "output")
    np.testing.assert_allclose(out, h @ w + b, rtol=1e-4, atol=1e-4)


@needs_gomp
def test_every_parallel_region_runs_on_the_whole_team(ctx, tmp_path):
    """A 3-iteration loop on 4 threads: each iteration sees a team of 4 (it had a team of 3: teams whose
    size changes from loop to loop re-form, which made the split contractions slower than none)."""
    ok(ctx, f"load {FIXTURES / 'payloads' / 'forall_team_size.mlir'}")
    ok(ctx, "bench iterations=2")
    ok(ctx, "apply cpu-lower")
    ok(ctx, f"run --threads 4 --save-outputs {tmp_path}")
    (a,) = load_npys(tmp_path, "input")
    (out,) = load_npys(tmp_path, "output")
    np.testing.assert_array_equal(out - a, [4.0, 4.0, 4.0])
