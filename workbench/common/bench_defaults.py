"""The benchmark wrapper's names and default parameters (both sides: the `bench` step validates
them, the worker's generator in workbench/worker/bench_wrapper.py uses them)."""
from __future__ import annotations

WRAPPER_CALL = "_lh_call"
WRAPPER_BENCH = "_lh_bench"
DEFAULT_PARAMS = {"entry": "", "warmup": 1, "iterations": 10, "outputs": "", "calls_per_sample": 1}
#: the most calls one timed sample may make back to back (the wrapper unrolls nothing: a loop bound)
MAX_CALLS_PER_SAMPLE = 100_000
#: the most warm-up or timed calls of a wrapper (a loop bound it writes as an i64 constant; more never ends anyway)
MAX_BENCH_CALLS = 10**9
