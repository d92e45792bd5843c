"""`run`'s time limits: the run worker's JIT compile has its own (`run --compile-timeout`), `run --timeout` starts
when the code is compiled (the worker says so: workbench/worker/protocol.py `compiled()`), and a run killed at
either names the phase. Session 21: DenseNet-121's `run --check` needed `--timeout 600` because the LLVM -O3
compile alone took 20-67 s of the 120 s meant for its calls."""
from __future__ import annotations

from conftest import failed, matmul_payload, ok, with_progress

from pathlib import Path

PAYLOADS = Path(__file__).parent / "payloads"
DELAY = "LH_WORKBENCH_TEST_COMPILE_DELAY_S"   # protocol.COMPILE_DELAY_ENV: the compile phase sleeps this long


def test_a_slow_compile_does_not_count_against_the_run_timeout(ctx, tmp_path, monkeypatch):
    """The compile phase sleeps 8 s (past the 2 s run limit and the worker's own 5 s grace): the run and its
    check's reference run pass, and the front end heard the compile, then the run."""
    matmul_payload(tmp_path / "mm.mlir", 8, 8, 8)
    ok(ctx, f"load {tmp_path / 'mm.mlir'}")
    monkeypatch.setenv(DELAY, "8")
    res, heard = with_progress(ctx, "run --check --iterations 2 --warmup 0 --timeout 2")
    assert res.ok, res.error
    assert res.data["run"]["check"]["passed"]
    assert [m for m in heard if m.startswith("JIT-compiling")] and [m for m in heard if m.startswith("compiled in ")]
    assert [m for m in heard if m.startswith("reference: compiled in ")], heard
    compiled = next(m for m in heard if m.startswith("compiled in "))
    assert float(compiled.split()[2]) >= 8, heard


def test_a_hanging_kernel_still_times_out_and_the_error_names_the_run(ctx):
    ok(ctx, f"load {PAYLOADS / 'spin.mlir'}")
    err = failed(ctx, "run --iterations 1 --warmup 0 --timeout 3")
    assert "run worker timed out after 3 s while running the compiled code and was killed" in err, err
    assert "(`run --timeout 600` allows longer; it covers the 0 + 1 calls of the compiled code, not its compile)" in err


def test_a_compile_past_its_own_limit_names_the_compile(ctx, tmp_path, monkeypatch):
    matmul_payload(tmp_path / "mm.mlir", 8, 8, 8)
    ok(ctx, f"load {tmp_path / 'mm.mlir'}")
    monkeypatch.setenv(DELAY, "60")
    import time

    t0 = time.monotonic()
    err = failed(ctx, "run --iterations 1 --warmup 0 --timeout 60 --compile-timeout 2")
    assert time.monotonic() - t0 < 30
    assert "run worker timed out after 2 s while JIT-compiling the module and was killed" in err, err
    assert "`run --compile-timeout 8` allows longer; it covers the JIT compile of the module of " in err, err
    monkeypatch.delenv(DELAY)
    assert ok(ctx, "run --iterations 1 --warmup 0").data["run"]["error"] is None   # the session goes on


def test_the_default_compile_limit_is_generous():
    from workbench.execution.runner import jit_compile_timeout

    assert jit_compile_timeout(120) == 600 and jit_compile_timeout(300) == 1500
