"""The bench step's `calls_per_sample`: each timed sample makes B calls back to back between its two clock
readings and records their mean; on cuda the B calls' kernels are launched back to back with one stream
synchronization a sample (workbench/worker/bench_wrapper.py, cuda/gpu_wrapper.py, cuda/stream_syncs.py)."""
from __future__ import annotations

from pathlib import Path

import pytest

from conftest import do, failed, ok
from cuda_helpers import needs_gpu

ROOT = Path(__file__).resolve().parents[1]
SYNC = "mgpuStreamSynchronize"


def _calls_by_function(text: str) -> dict[str, list[str]]:
    """Each defined llvm.func of a lowered module -> its calls in block order (launches as "launch")."""
    from mlir import ir

    with ir.Context() as c:
        c.allow_unregistered_dialects = True
        module = ir.Module.parse(text)
        found = {}
        for op in module.body.operations:
            if op.operation.name != "llvm.func" or not len(op.regions[0].blocks):
                continue
            calls = []
            for block in op.regions[0].blocks:
                for inner in block.operations:
                    if inner.name == "llvm.call":
                        calls.append(ir.FlatSymbolRefAttr(inner.attributes["callee"]).value)
                    elif inner.name == "gpu.launch_func":
                        calls.append("launch")
            found[ir.StringAttr(op.attributes["sym_name"]).value] = calls
    return found


def _timed_region(calls: list[str]) -> list[str]:
    """The calls between the two rtclock readings of @_lh_bench's timed loop."""
    first = calls.index("rtclock")
    return calls[first + 1:calls.index("rtclock", first + 1)]


# --- the step and its wrapper (any target) ---------------------------------------------------------

def test_each_sample_makes_the_calls_and_records_their_mean(ctx):
    ok(ctx, f"load {ROOT / 'examples/matmul.mlir'}")
    ok(ctx, "target cpu")
    ok(ctx, "bench iterations=2 calls_per_sample=4")
    wrapper = ctx.session.current_ir[ctx.session.current_ir.index("func.func @_lh_bench"):]
    timed = wrapper[wrapper.index("rtclock"):wrapper.rindex("rtclock")]
    # three calls in a loop whose results are dropped, then the call whose results are copied out
    assert "arith.constant 3 : index" in timed and timed.count("call @matmul(") == 2, timed
    assert "arith.divf" in wrapper and "4.000000e+00 : f64" in wrapper
    res = ok(ctx, "run --check")
    run = res.data["run"]
    assert run["calls_per_sample"] == 4 and run["iterations"] == 2 and run["check"]["passed"]
    assert "2 samples of 4 calls" in res.summary


def test_one_call_a_sample_keeps_the_wrapper_as_it_was(ctx):
    ok(ctx, f"load {ROOT / 'examples/matmul.mlir'}")
    ok(ctx, "bench iterations=2")
    wrapper = ctx.session.current_ir[ctx.session.current_ir.index("func.func @_lh_bench"):]
    timed = wrapper[wrapper.index("rtclock"):wrapper.rindex("rtclock")]
    assert "arith.divf" not in wrapper
    assert timed.count("call @matmul(") == 1 and "scf.for" not in timed, timed


@pytest.mark.parametrize("value, word", [("0", "calls_per_sample"), ("100001", "calls_per_sample"),
                                         ("two", "calls_per_sample")])
def test_bad_counts_are_refused_in_one_line_and_change_nothing(ctx, value, word):
    ok(ctx, f"load {ROOT / 'examples/matmul.mlir'}")
    before = ctx.session.current_ir
    assert word in failed(ctx, f"bench calls_per_sample={value}")
    assert ctx.session.current_ir == before


def test_run_asks_for_it_when_it_inserts_the_wrapper_and_warns_when_one_differs(ctx):
    ok(ctx, f"load {ROOT / 'examples/matmul.mlir'}")
    ok(ctx, "target cpu")
    run = ok(ctx, "run --iterations 2 --calls-per-sample 3").data["run"]
    assert run["calls_per_sample"] == 3 and run["median_s"] > 0
    ok(ctx, "bench iterations=2 calls_per_sample=2")
    res = do(ctx, "run --calls-per-sample 5")
    assert res.ok and res.data["run"]["calls_per_sample"] == 2
    warning = res.data["run"]["warning"]
    assert warning.startswith("--calls-per-sample 5: ") and "calls_per_sample=2" in warning, warning


def test_the_saved_session_replays_the_count(ctx, tmp_path):
    ok(ctx, f"load {ROOT / 'examples/matmul.mlir'}")
    ok(ctx, "bench iterations=2 calls_per_sample=3")
    ok(ctx, f"save {tmp_path / 's.yaml'}")
    text = (tmp_path / "s.yaml").read_text()
    assert "calls_per_sample: 3" in text, text


# --- cuda: one synchronization a sample (compiles without a GPU) ------------------------------------

def _lowered_cuda(ctx, payload: Path, bench: str) -> dict[str, list[str]]:
    ok(ctx, f"load {payload}")
    ok(ctx, "target cuda")
    ok(ctx, "select --apply")
    ok(ctx, bench)
    ok(ctx, "apply cuda-lower{chip=sm_90a}")
    return _calls_by_function(ctx.session.current_ir)


def test_cuda_samples_launch_back_to_back_and_synchronize_once(ctx):
    funcs = _lowered_cuda(ctx, ROOT / "examples/matmul_f16.mlir", "bench iterations=2 calls_per_sample=5")
    timed = _timed_region(funcs["_lh_bench"])
    # the loop's call and the sample's last, then the one synchronization (the loop's trip count is data)
    assert timed.count("_lh_device_call_timed") == 2 and timed.count(SYNC) == 1 and timed[-1] == SYNC, timed
    # the timed copy reaches the kernel through internal copies of the entry and its kernel's host
    # function, none of which waits for the stream
    chain, name = [], "_lh_device_call_timed"
    while name in funcs:
        chain.append(name)
        assert SYNC not in funcs[name], (name, funcs[name])
        if "launch" in funcs[name]:
            break
        name = next(c for c in funcs[name] if c in funcs)
    assert "launch" in funcs[chain[-1]] and all(n.endswith("_lh_chained") for n in chain[1:]), chain
    # the entry itself and the untimed calls keep their synchronizations (the host reads results after them)
    kernel_host = next(c for c in funcs["matmul_f16"] if c in funcs)
    assert SYNC in funcs[kernel_host] and "_lh_chained" not in kernel_host


def test_cuda_one_call_a_sample_makes_no_copies(ctx):
    funcs = _lowered_cuda(ctx, ROOT / "examples/matmul_f16.mlir", "bench iterations=2")
    assert not [n for n in funcs if n.endswith("_lh_chained") or n == "_lh_device_call_timed"], list(funcs)
    timed = _timed_region(funcs["_lh_bench"])
    assert timed == ["_lh_device_call"], timed


def test_cuda_chain_of_several_kernels_synchronizes_once_a_sample(ctx):
    """examples/mlp.mlir: three matmuls (and their fills) a sample, the kernels of all calls back to back."""
    funcs = _lowered_cuda(ctx, ROOT / "examples/mlp.mlir", "bench iterations=2 calls_per_sample=3")
    timed = _timed_region(funcs["_lh_bench"])
    assert timed.count(SYNC) == 1 and timed[-1] == SYNC, timed
    reached, todo = set(), ["_lh_device_call_timed"]
    while todo:
        name = todo.pop()
        if name in reached or name not in funcs:
            continue
        reached.add(name)
        assert SYNC not in funcs[name], (name, funcs[name])
        todo += funcs[name]
    assert sum(funcs[n].count("launch") for n in reached) >= 3, reached


@needs_gpu
def test_cuda_samples_of_several_calls_run_and_match(ctx, tmp_path):
    ok(ctx, f"load {ROOT / 'examples/matmul_f16.mlir'}")
    ok(ctx, "target cuda")
    ok(ctx, "select --apply")
    ok(ctx, "bench iterations=3 calls_per_sample=10")
    run = ok(ctx, "run --check").data["run"]
    assert run["check"]["passed"] and run["calls_per_sample"] == 10 and run["median_s"] > 0
