"""CPU target: benchmark wrapper at any point, isolated runs, correctness checks (issue 3)."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from workbench.execution.runner import compare, make_inputs, RunInputError
from conftest import REPO, do, load_npys as load_outputs, matmul_payload, ok, runs_parallel_loops_on_threads

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
PAYLOADS = Path(__file__).parent / "payloads"


def _matmul_ref(d: Path) -> np.ndarray:
    a, b, c = load_outputs(d, "input")[:3]
    return c.astype(np.float64) + a.astype(np.float64) @ b.astype(np.float64)


def test_bench_before_bufferization_tensor_entry(ctx, tmp_path):
    ok(ctx, f"load {EXAMPLES / 'matmul.mlir'}")
    ok(ctx, "apply pipelines/lib/tile.mlir")
    ok(ctx, "bench warmup=0 iterations=3")
    assert "_lh_bench" in ctx.session.current_ir and "tensor<" in ctx.session.current_ir
    res = ok(ctx, f"run --check --save-outputs {tmp_path}")
    run = res.data["run"]
    assert run["iterations"] == 3 and run["warmup"] == 0 and len(run["times_s"]) == 3
    assert run["check"]["passed"] and run["error"] is None
    assert run["gflops"] > 0 and run["min_s"] <= run["median_s"]
    out = load_outputs(tmp_path, "output")[0]
    np.testing.assert_allclose(out, _matmul_ref(tmp_path), rtol=1e-4, atol=1e-3)


def test_bench_after_bufferization_memref_entry(ctx, tmp_path):
    ok(ctx, f"load {EXAMPLES / 'matmul.mlir'}")
    ok(ctx, "apply cpu-bufferize")
    assert "tensor<" not in ctx.session.current_ir
    ok(ctx, "bench iterations=2")
    assert "memref.copy" in ctx.session.current_ir  # memref result copied into the wrapper's output
    res = ok(ctx, f"run --check --save-outputs {tmp_path}")
    assert res.data["run"]["check"]["passed"]
    np.testing.assert_allclose(load_outputs(tmp_path, "output")[0], _matmul_ref(tmp_path), rtol=1e-4, atol=1e-3)


def test_bench_after_signature_changing_schedule(ctx, tmp_path):
    ok(ctx, f"load {EXAMPLES / 'matmul.mlir'}")
    ok(ctx, "apply cpu-bufferize")
    before = ctx.session.current_ir
    ok(ctx, "pass buffer-results-to-out-params{modify-public-functions=true}")
    after = ctx.session.current_ir
    assert "-> memref" in before and "-> memref" not in after.split("@matmul")[1].split("{")[0]
    ok(ctx, "bench iterations=2")
    res = ok(ctx, f"run --check --save-outputs {tmp_path}")
    run = res.data["run"]
    assert run["check"]["passed"], run
    # the out-parameter is the output: compare with numpy
    np.testing.assert_allclose(load_outputs(tmp_path, "output")[0], _matmul_ref(tmp_path), rtol=1e-4, atol=1e-3)


def test_run_without_bench_step_inserts_it_at_the_end(ctx):
    ok(ctx, f"load {EXAMPLES / 'matmul.mlir'}")
    ok(ctx, "apply pipelines/lib/tile.mlir")
    ir_before = ctx.session.current_ir
    res = ok(ctx, "run --iterations 2 --warmup 0")
    assert res.data["run"]["inserted_wrapper"] is True and res.data["run"]["iterations"] == 2
    assert ctx.session.current_ir == ir_before  # the session's steps are unchanged


def test_run_after_the_targets_lowering_without_bench_wraps_before_it(ctx):
    """`apply cpu-lower` then `run` (no `bench` step): an entry with arguments has nothing left to wrap once
    lowered, so run puts the wrapper in before the lowering step and lowers again, says so, and leaves the
    session as it was; a second run does the same (it was refused before, `run --profile` was not)."""
    ok(ctx, f"load {EXAMPLES / 'matmul.mlir'}")
    ok(ctx, "apply cpu-lower")
    lowered = ctx.session.current_ir
    for _ in range(2):
        res = ok(ctx, "run --check --iterations 2 --warmup 0")
        assert res.data["run"]["check"]["passed"] and res.data["run"]["inserted_wrapper"] is True
        assert "no `bench` step before step 1 (`apply cpu-lower`)" in res.data["run"]["warning"]
        assert ctx.session.current_ir == lowered and len(ctx.session.active_steps) == 1


def test_mlp_checked_against_numpy(ctx, tmp_path):
    ok(ctx, f"load {EXAMPLES / 'mlp.mlir'}")
    ok(ctx, "apply pipelines/lib/mlp-cpu.yaml")
    res = do(ctx, "run")
    assert not res.ok and "apply a `bench` step before the lowering" in res.error
    ok(ctx, "undo")
    ok(ctx, "bench")
    # tile-and-fuse + vectorize; vector transfers lowered without stack temporaries in loops
    ok(ctx, "apply pipelines/lib/mlp-cpu.yaml")
    res = ok(ctx, f"run --check --iterations 2 --save-outputs {tmp_path}")
    assert res.data["run"]["check"]["passed"]
    x, w1, b1, w2, b2, w3, b3 = [a.astype(np.float64) for a in load_outputs(tmp_path, "input")]
    relu = lambda v: np.maximum(v, 0)
    want = relu(relu(relu(x @ w1 + b1) @ w2 + b2) @ w3 + b3)
    np.testing.assert_allclose(load_outputs(tmp_path, "output")[0], want, rtol=1e-4, atol=1e-3)


def test_softmax_checked_against_numpy(ctx, tmp_path):
    ok(ctx, f"load {EXAMPLES / 'softmax.mlir'}")
    res = ok(ctx, f"run --check --iterations 2 --save-outputs {tmp_path}")
    assert res.data["run"]["check"]["passed"]
    (x,) = load_outputs(tmp_path, "input")
    e = np.exp(x - x.max(axis=1, keepdims=True))
    np.testing.assert_allclose(load_outputs(tmp_path, "output")[0], e / e.sum(axis=1, keepdims=True),
                               rtol=1e-5, atol=1e-6)


def test_segfault_in_generated_code_fails_cleanly(ctx):
    ok(ctx, f"load {PAYLOADS / 'segfault.mlir'}")
    res = do(ctx, "run --iterations 1")
    assert not res.ok
    assert "run worker" in res.error and ("SIGSEGV" in res.error or "SIGBUS" in res.error)
    # the session is intact and usable
    assert ctx.session.loaded and ctx.session.cursor == 0
    ok(ctx, "pass canonicalize")
    ok(ctx, "undo")


def test_hang_in_generated_code_times_out(ctx):
    ok(ctx, f"load {PAYLOADS / 'spin.mlir'}")
    res = do(ctx, "run --iterations 1 --warmup 0 --timeout 3")
    assert not res.ok and "timed out after 3 s" in res.error
    ok(ctx, "history")


def test_bad_npy_rejected_with_expected_shape(ctx, tmp_path):
    ok(ctx, f"load {EXAMPLES / 'matmul.mlir'}")
    bad = tmp_path / "a.npy"
    np.save(bad, np.zeros((3, 3), np.float32))
    res = do(ctx, f"run --npy 0={bad}")
    assert not res.ok and "expected float32[256, 512]" in res.error
    np.save(bad, np.zeros((256, 512), np.float64))
    res = do(ctx, f"run --npy 0={bad}")
    assert not res.ok and "got float64[256, 512]" in res.error


def test_npy_inputs_are_used(ctx, tmp_path):
    ok(ctx, f"load {EXAMPLES / 'matmul.mlir'}")
    files = []
    for i, shape in enumerate([(256, 512), (512, 128), (256, 128)]):
        p = tmp_path / f"in{i}.npy"
        np.save(p, np.full(shape, 0.5 if i < 2 else 1.0, np.float32))
        files.append(str(p))
    out = tmp_path / "out"
    ok(ctx, f"run --npy {','.join(files)} --save-outputs {out} --iterations 1")
    np.testing.assert_allclose(load_outputs(out, "output")[0], np.full((256, 128), 1.0 + 512 * 0.25), rtol=1e-6)


def test_compare_detects_wrong_results():
    ref = [np.ones((4, 4), np.float32)]
    assert compare([ref[0].copy()], ref, "f32").passed
    bad = ref[0].copy()
    bad[2, 3] = 1.5
    chk = compare([bad], ref, "f32")
    assert not chk.passed and chk.max_abs_err == pytest.approx(0.5)
    assert not compare([np.ones((4, 5), np.float32)], ref, "f32").passed
    nan = ref[0].copy()
    nan[0, 0] = np.nan
    assert not compare([nan], ref, "f32").passed


def test_make_inputs_seeded_and_kinds():
    spec = [{"shape": [4, 4], "dtype": "f32"}, {"shape": [3], "dtype": "i32"}]
    a = make_inputs(spec, seed=1)
    b = make_inputs(spec, seed=1)
    c = make_inputs(spec, seed=2)
    assert np.array_equal(a[0], b[0]) and not np.array_equal(a[0], c[0])
    assert a[1].dtype == np.int32
    assert not make_inputs(spec, kind="zeros")[0].any()
    with pytest.raises(RunInputError):
        make_inputs(spec, kind="bogus")


def test_headless_run_json_contract(tmp_path):
    script = tmp_path / "run.lhw"
    script.write_text("# tile, bench, lower, run\napply pipelines/lib/tile.mlir\nbench iterations=2\n"
                      "apply cpu-lower\nrun --check\n")
    out = tmp_path / "out.json"
    env = dict(__import__("os").environ, LH_WORKBENCH_STATE_DIR=str(tmp_path / "st"))
    p = subprocess.run([sys.executable, "-m", "workbench.cli", str(EXAMPLES / "matmul.mlir"), "--script", str(script),
                        "--json", str(out)], cwd=ROOT, capture_output=True, text=True, env=env, timeout=300)
    assert p.returncode == 0, p.stderr
    doc = json.loads(out.read_text())
    run = doc["run"]
    for key in ("target", "entry", "iterations", "warmup", "min_s", "median_s", "mean_s", "stddev_s", "gflops",
                "check", "error"):
        assert key in run
    assert run["target"] == "cpu" and run["entry"] == "matmul" and run["iterations"] == 2
    assert run["check"]["passed"] is True and run["error"] is None
    assert set(run["check"]) >= {"passed", "max_abs_err", "max_rel_err"}


def test_cpu_selector_and_shipped_matmul_schedule(ctx, tmp_path, monkeypatch):
    import workbench.targets.cpu as cpu
    from workbench.targets import get_target

    monkeypatch.setattr(cpu, "MIN_TASK_MACS", 1 << 40)   # the one-core schedule (2M multiply-adds: 2 cores)

    n, m, k = 128, 256, 64
    payload = matmul_payload(tmp_path / "mm.mlir", m, n, k, "mm")
    ok(ctx, f"load {payload}")
    chosen = get_target("cpu").select_params(ctx.session.inspect())
    (spec, params), = chosen
    assert spec.endswith("cpu/matmul.py[gen=matmul_tiling]")
    assert n % params["block_n"] == 0 and k % params["block_k"] == 0, params
    main_m = params.get("main_m", 0)
    if main_m:   # (AVX2: rows of 6 split M = 256 into main blocks and a tail of its own row tile)
        assert main_m % params["block_m"] == 0 and main_m + params["tail_m"] == m, params
    else:
        assert m % params["block_m"] == 0, params
    ok(ctx, f"apply {spec}{{" + " ".join(f"{key}={v}" for key, v in params.items()) + "}")
    assert params.items() <= ctx.session.steps[-1].step.params.items()  # the selection is recorded on the step
    ok(ctx, "bench iterations=2")
    ok(ctx, "apply cpu-matmul-lower")
    assert "vector<" in ctx.session.current_ir or "llvm.intr.fmuladd" in ctx.session.current_ir
    res = ok(ctx, f"run --check --save-outputs {tmp_path / 'o'}")
    assert res.data["run"]["check"]["passed"]
    np.testing.assert_allclose(load_outputs(tmp_path / "o", "output")[0], _matmul_ref(tmp_path / "o"),
                               rtol=1e-4, atol=1e-3)


def test_parallel_matmul_on_a_thread_runtime_checked(ctx, tmp_path):
    n = 256
    payload = matmul_payload(tmp_path / "mm.mlir", n, n, n, "mm")
    ok(ctx, f"load {payload}")
    ok(ctx, "bench iterations=2")
    ok(ctx, "apply pipelines/cpu/matmul_parallel.py[gen=matmul_parallel]{threads=2 block_n=128}")
    assert "scf.forall" in ctx.session.current_ir
    ok(ctx, "apply cpu-matmul-parallel-lower")
    assert runs_parallel_loops_on_threads(ctx.session.current_ir)  # chunks go to a thread runtime
    for threads in (1, 2):
        res = ok(ctx, f"run --check --threads {threads} --save-outputs {tmp_path / str(threads)}")
        assert res.data["run"]["check"]["passed"]
        np.testing.assert_allclose(load_outputs(tmp_path / str(threads), "output")[0],
                                   _matmul_ref(tmp_path / str(threads)), rtol=1e-4, atol=1e-3)


def test_parallel_matmul_on_a_2d_thread_grid(ctx, tmp_path):
    """threads_m x threads chunks (M x N: each task packs a part of A and of B), 16 tasks on this host's cores."""
    n = 256
    ok(ctx, f"load {matmul_payload(tmp_path / 'mm.mlir', n, n, n, 'mm')}")
    ok(ctx, "bench iterations=2")
    ok(ctx, "apply pipelines/cpu/matmul_parallel.py[gen=matmul_parallel]{threads=4 threads_m=4 block_m=64 block_n=64}")
    assert "scf.forall" in ctx.session.current_ir and "in (4, 4)" in ctx.session.current_ir
    ok(ctx, "apply cpu-matmul-parallel-lower")
    res = ok(ctx, f"run --check --save-outputs {tmp_path / 'o'}")
    assert res.data["run"]["check"]["passed"]
    np.testing.assert_allclose(load_outputs(tmp_path / "o", "output")[0], _matmul_ref(tmp_path / "o"),
                               rtol=1e-4, atol=1e-3)


def test_thread_grid_splits_n_first_down_to_128_columns_and_m_in_two_on_many_cores():
    import sys

    sys.path.insert(0, str(ROOT / "pipelines" / "cpu"))
    import matmul_parallel

    assert matmul_parallel.thread_grid(2048, 2048, 2) == (1, 2)      # N only on 2 cores (measured)
    assert matmul_parallel.thread_grid(2048, 2048, 16) == (2, 8)     # each task packs half of A, not all
    assert matmul_parallel.thread_grid(4096, 4096, 16) == (2, 8)
    assert matmul_parallel.thread_grid(2048, 2048, 4) == (1, 4)      # few tasks: N only
    assert matmul_parallel.thread_grid(128, 2048, 16) == (1, 16)     # A is small: halving M packs more
    assert matmul_parallel.thread_grid(1024, 1024, 16) == (2, 8)     # 64 columns would be too narrow
    assert matmul_parallel.thread_grid(128, 2048, 8) == (1, 8)
    assert matmul_parallel.thread_grid(512, 96, 4) == (4, 1)         # nothing 128 wide: the widest chunks
    assert matmul_parallel.thread_grid(7, 7, 4) == (1, 1)            # nothing divides
    p = matmul_parallel.default_params(1024, 1024, 1024, 16, vector_bits=512, vector_registers=32)
    assert (p["threads_m"], p["threads"]) == (2, 8) and 512 % p["block_m"] == 0 and 128 % p["block_n"] == 0
    for lanes in (8, 16):   # whole vectors in every chunk: the grids are the same as without lanes
        assert matmul_parallel.thread_grid(2048, 2048, 16, lanes) == (2, 8)
        assert matmul_parallel.thread_grid(128, 2048, 16, lanes) == (1, 16)


@pytest.mark.parametrize("lanes, grid, reg_n", [(16, (4, 4), 16), (8, (2, 8), 8)])
def test_thread_grid_keeps_whole_vectors_in_each_chunk(lanes, grid, reg_n):
    """EfficientNet's pointwise convolution (96 x 3136) on 16 cores: 16 chunks of 196 columns left register
    tiles of 4 columns (a quarter of a zmm, half a ymm); with the machine's lanes the grid is the one whose chunks
    keep the most lanes busy, with as many tasks."""
    import sys

    sys.path.insert(0, str(ROOT / "pipelines" / "cpu"))
    import matmul_parallel

    assert matmul_parallel.thread_grid(96, 3136, 16) == (1, 16)
    assert matmul_parallel.thread_grid(96, 3136, 16, lanes) == grid
    p = matmul_parallel.default_params(96, 3136, 144, 16, vector_bits=32 * lanes,
                                       vector_registers=32 if lanes == 16 else 16)
    assert (p["threads_m"], p["threads"]) == grid and p["reg_n"] == reg_n, p
    assert matmul_parallel.lane_use(196, lanes) < 1 and matmul_parallel.lane_use(3136 // grid[1], lanes) == 1


def test_target_threads_plans_the_schedules_for_that_many_cores(ctx, tmp_path):
    """`target --threads 1` makes the selector plan for one core (the single-core matmul schedule, not a
    split that one core would run chunk after chunk, repacking per chunk); it is saved and replayed, and
    a bad value changes nothing."""
    from workbench.session import read_session_file

    p = tmp_path / "mm.mlir"
    t = "tensor<512x512xf32>"
    p.write_text(f"func.func @mm(%A: {t}, %B: {t}, %C: {t}) -> {t} {{\n"
                 f"  %0 = linalg.matmul ins(%A, %B : {t}, {t}) outs(%C : {t}) -> {t}\n  return %0 : {t}\n}}\n")
    ok(ctx, f"load {p}")
    res = ok(ctx, "target cpu --threads 1")
    assert res.data["machine"]["usable_cpus"] == 1 and res.data["threads"] == 1
    assert ok(ctx, "select").data["selections"][0]["schedule"].endswith("matmul.py[gen=matmul_tiling]")
    res = ctx.registry.dispatch("target cpu --threads -2", ctx)
    assert not res.ok and "threads must be an integer" in res.error and ctx.session.cpu_threads == 1
    ok(ctx, "select --apply")
    ok(ctx, f"save {tmp_path / 's.yaml'}")
    loaded = read_session_file(tmp_path / "s.yaml")
    assert loaded.meta["cpu_threads"] == 1
    ok(ctx, "target cpu --threads 3")
    assert ctx.session.target.machine.usable_cpus == 3


def test_threads_pin_the_run_worker(monkeypatch):
    import os

    if not hasattr(os, "sched_getaffinity"):
        pytest.skip("no sched_setaffinity on this platform")
    code = ("import os; from workbench.worker.run_worker import limit_cores; limit_cores(); "
            "print(len(os.sched_getaffinity(0)))")
    env = dict(os.environ, LH_WORKBENCH_THREADS="1")
    p = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == "1"


def test_reference_run_is_reused_for_the_same_inputs(ctx, monkeypatch):
    from workbench.targets import get_target

    cpu = get_target("cpu")
    calls = []
    real = type(cpu).execute

    def counting(self, artifact, meta, inputs, **kw):
        calls.append(kw.get("bench"))
        return real(self, artifact, meta, inputs, **kw)

    monkeypatch.setattr(type(cpu), "execute", counting)
    ok(ctx, f"load {EXAMPLES / 'matmul.mlir'}")
    ok(ctx, "apply pipelines/lib/tile.mlir")
    ok(ctx, "run --check --iterations 1")
    assert calls == [True, False]           # the run, then the reference run
    ok(ctx, "params 1")                      # a no-op command in between
    ok(ctx, "run --check --iterations 1")
    assert calls == [True, False, True]     # same payload and inputs: the reference outputs are reused
    ok(ctx, "run --check --iterations 1 --seed 7")
    assert calls == [True, False, True, True, False]  # other inputs: a new reference run


def test_an_unscheduled_integer_power_runs(tmp_path):
    """A conv + batch norm + gelu (tanh form) + pool + linear + log_softmax + topk block exported from torch
    (tests/payloads/conv_bn_gelu/model.py, `lh-workbench import`): its x ** 3 (`math.fpowi` with an i64
    exponent) left scalar in unscheduled code had LLVM widen llvm.powi, which x86 instruction selection
    refuses ("POWI exponent does not match sizeof(int)"), so neither the plain run nor a check's reference
    ran. The power becomes a call of a generated function (convert-math-to-funcs): the run matches
    torch's outputs."""
    import json

    from conftest import run_cli

    d = REPO / "tests" / "payloads" / "conv_bn_gelu"
    script = tmp_path / "run.lhw"
    script.write_text(f"bench warmup=1 iterations=2\napply cpu-lower\nrun --npy {d / 'block.input0.npy'} "
                      f"--expect {d / 'block.expected0.npy'},{d / 'block.expected1.npy'}\n")
    out = tmp_path / "out.json"
    proc = run_cli([str(d / "block.mlir"), "--script", str(script), "--json", str(out)], timeout=300)
    assert proc.returncode == 0, proc.stderr
    run = json.loads(out.read_text())["run"]
    assert run["error"] is None and run["expected_check"]["passed"], run


def test_the_lowering_run_applies_again_keeps_the_steps_options(ctx):
    """The step `run` lowers again from is the session's own, options included (`cuda-lower{chip=sm_80}`, not
    the target's defaults); lowering needs no GPU."""
    from workbench.run_session import unwrapped_lowering_base

    ok(ctx, f"load {EXAMPLES / 'matmul.mlir'}")
    ok(ctx, "target cuda")
    ok(ctx, "apply cuda-lower{chip=sm_80}")
    key, step, options = unwrapped_lowering_base(ctx.session)
    assert step == 1 and key == ctx.session.key_at(0) and options.get("chip") == "sm_80", options
    ok(ctx, "pass canonicalize")   # a later step: the live module is what runs
    assert unwrapped_lowering_base(ctx.session)[1:] == (None, None)


def test_a_pointwise_convolution_shape_runs_in_whole_vector_chunks(ctx, tmp_path):
    """`select` on AVX2 for 16 cores: the 96 x 3136 product's chunks are 392 columns (whole ymm tiles), not 196,
    and the 16-thread run matches the reference."""
    ok(ctx, f"load {matmul_payload(tmp_path / 'mm.mlir', 96, 3136, 144, 'mm')}")
    ok(ctx, "target cpu --cpu avx2 --threads 16")
    ok(ctx, "select --apply")
    (step,) = [a.step for a in ctx.session.active_steps if "matmul_parallel" in a.step.label()]
    assert (step.params["threads_m"], step.params["threads"], step.params["reg_n"]) == (2, 8, 8), step.params
    if ctx.session.target.machine.missing_here():
        pytest.skip("AVX2 code does not run on this host: selected, not run")
    ok(ctx, "bench warmup=0 iterations=2")
    ok(ctx, "apply cpu-lower")
    assert ok(ctx, "run --check --threads 16").data["run"]["check"]["passed"]
