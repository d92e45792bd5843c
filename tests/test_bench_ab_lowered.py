"""bench/ab_lowered.py: the A/B of lowered modules reads its bench wrappers' timed calls from the modules (a
times buffer shorter than the wrapper's iterations was a heap overrun: 'corrupted double-linked list') and
runs under `run`'s malloc settings."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np

from conftest import ok

ROOT = Path(__file__).resolve().parents[1]


def _lowered(ctx, tmp_path, iterations: int) -> Path:
    payload = tmp_path / "add.mlir"
    payload.write_text("""func.func @main(%a: tensor<64xf32>, %b: tensor<64xf32>) -> tensor<64xf32> {
  %e = tensor.empty() : tensor<64xf32>
  %r = linalg.add ins(%a, %b : tensor<64xf32>, tensor<64xf32>) outs(%e : tensor<64xf32>) -> tensor<64xf32>
  return %r : tensor<64xf32>
}
""")
    ok(ctx, f"load {payload}")
    ok(ctx, f"bench warmup=1 iterations={iterations}")
    ok(ctx, "apply cpu-lower")
    out = tmp_path / f"add.{iterations}.mlir"
    out.write_text(ctx.session.current_ir)
    return out


def _ab(modules: list[Path], tmp_path: Path, *extra: str) -> subprocess.CompletedProcess:
    for i in range(2):
        np.save(tmp_path / f"in{i}.npy", np.full(64, i + 1, dtype=np.float32))
    env = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_")}
    env["PYTHONPATH"] = str(ROOT)
    return subprocess.run([sys.executable, str(ROOT / "bench" / "ab_lowered.py"), *map(str, modules),
                           "--npy", f"{tmp_path / 'in0.npy'},{tmp_path / 'in1.npy'}", "--outputs", "64xf32",
                           "--rounds", "2", *extra], capture_output=True, text=True, env=env, timeout=300)


def test_the_wrappers_iterations_come_from_the_modules_and_a_mismatch_stops(ctx, tmp_path):
    three = _lowered(ctx, tmp_path, 3)
    done = _ab([three, three], tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("median of medians") == 2
    for iterations in ("5", "2"):   # (more or fewer than the wrapper times)
        done = _ab([three], tmp_path, "--iterations", iterations)
        assert done.returncode == 1 and "time {" in done.stderr and f"not --iterations {iterations}" in done.stderr
    five = _lowered(ctx, tmp_path, 5)
    done = _ab([three, five], tmp_path)
    assert done.returncode == 1 and "emit them alike" in done.stderr


def test_variants_that_compute_something_else_are_reported(ctx, tmp_path):
    """Every variant's outputs are compared with the first's: the same add twice agrees (0 difference), an add
    against a subtraction is a MISMATCH with exit status 1; --random makes the inputs from their types."""
    add = _lowered(ctx, tmp_path, 3)
    sub = tmp_path / "sub.mlir"
    sub.write_text(add.read_text().replace("llvm.fadd", "llvm.fsub"))
    assert sub.read_text() != add.read_text()
    done = _ab([add, add], tmp_path)
    assert done.returncode == 0 and "differ from the first variant's by 0.00e+00" in done.stdout, done.stdout
    result = done.stdout.strip().splitlines()[-1]
    assert result.startswith("RESULT variants=2 mismatches=0 variant1_cpu_ratio="), result
    assert float(result.rsplit("=", 1)[1]) > 0
    done = _ab([add, sub], tmp_path)
    assert done.returncode == 1 and "MISMATCH" in done.stdout, done.stdout
    assert done.stdout.strip().splitlines()[-1].startswith("RESULT variants=2 mismatches=1 "), done.stdout
    env = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_")}
    env["PYTHONPATH"] = str(ROOT)
    done = subprocess.run([sys.executable, str(ROOT / "bench" / "ab_lowered.py"), str(add), str(add), "--random",
                           "64xf32,64xf32", "--outputs", "64xf32", "--rounds", "1"], capture_output=True, text=True,
                          env=env, timeout=300)
    assert done.returncode == 0 and "by 0.00e+00" in done.stdout, done.stdout + done.stderr
