"""mpi target: sharded payloads partitioned, benchmarked after the partition, run on 2 ranks (issue 7)."""
from __future__ import annotations

import json
import tempfile
from pathlib import Path

import numpy as np
import pytest

from workbench.execution.mpi_launch import availability
from conftest import do, ok, rank_processes, run_cli

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
PAYLOADS = Path(__file__).parent / "payloads"

_ok, _why = availability()
pytestmark = pytest.mark.skipif(not _ok, reason=f"mpi target unavailable: {_why}")


def load(d: Path, prefix: str) -> list[np.ndarray]:
    return [np.load(p) for p in sorted(d.glob(f"{prefix}*.npy"), key=lambda p: int(p.stem[len(prefix):]))]


def _signature(ir: str, name: str) -> str:
    return ir.split(f"func.func @{name}(")[1].split("{")[0]


def test_sharded_matmul_partition_bench_lower_run_2_ranks(ctx, tmp_path):
    ok(ctx, f"load {EXAMPLES / 'sharded_matmul.mlir'}")
    ok(ctx, "apply mpi-partition")
    sig = _signature(ctx.session.current_ir, "matmul")
    # global shapes became per-rank shapes: A and C by rows, B replicated
    assert "tensor<128x512xf32>" in sig and "tensor<512x128xf32>" in sig and "tensor<256" not in sig
    ok(ctx, "bench warmup=1 iterations=3")
    assert "call @matmul(" in ctx.session.current_ir and "memref<128x512xf32>" in ctx.session.current_ir
    ok(ctx, "apply mpi-lower")
    res = ok(ctx, f"run --target mpi --ranks 2 --check --save-outputs {tmp_path}")
    run = res.data["run"]
    assert run["target"] == "mpi" and run["ranks"] == 2 and run["error"] is None
    assert res.summary.startswith("mpi @matmul on 2 ranks: median")
    assert run["check"]["passed"], run["check"]
    # per-iteration time is the slowest rank's
    assert len(run["rank_times_s"]) == 2 and all(len(t) == 3 for t in run["rank_times_s"])
    assert run["times_s"] == [max(a, b) for a, b in zip(*run["rank_times_s"])]
    # the host saw global shapes: inputs and the reassembled output, checked against numpy too
    a, b, c = load(tmp_path, "input")
    assert a.shape == (256, 512) and b.shape == (512, 128) and c.shape == (256, 128)
    (out,) = load(tmp_path, "output")
    assert out.shape == (256, 128)
    want = c.astype(np.float64) + a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_allclose(out, want, rtol=1e-4, atol=1e-3)
    # both row blocks were computed (a rank that did nothing would leave its block at C)
    assert not np.allclose(out[128:], c[128:]) and not np.allclose(out[:128], c[:128])


def test_sharded_mlp_all_reduce_2_ranks(ctx, tmp_path):
    ok(ctx, f"load {EXAMPLES / 'sharded_mlp.mlir'}")
    ok(ctx, "apply mpi-partition")
    cur = ctx.session.current_ir
    assert "shard.all_reduce" in cur
    assert "tensor<128x128xf32>" in _signature(cur, "mlp") and "tensor<128x64xf32>" in _signature(cur, "mlp")
    ok(ctx, "bench iterations=2")
    ok(ctx, "apply mpi-lower")
    assert "MPI_Allreduce" in ctx.session.current_ir
    res = ok(ctx, f"run --check --save-outputs {tmp_path}")  # target stays mpi; ranks from the partition
    run = res.data["run"]
    assert run["target"] == "mpi" and run["ranks"] == 2 and run["check"]["passed"], run
    x, w1, w2 = [v.astype(np.float64) for v in load(tmp_path, "input")]
    assert w1.shape == (128, 256) and w2.shape == (256, 64)
    want = np.maximum(x @ w1, 0) @ w2
    np.testing.assert_allclose(load(tmp_path, "output")[0], want, rtol=1e-4, atol=1e-3)
    # one half of the hidden dimension alone is far off: the all-reduce really summed both ranks
    half = np.maximum(x @ w1[:, :128], 0) @ w2[:128]
    assert np.abs(load(tmp_path, "output")[0] - half).max() > 1e-2


def test_bench_before_partition_is_refused(ctx):
    ok(ctx, f"load {EXAMPLES / 'sharded_mlp.mlir'}")
    res = do(ctx, "bench")
    assert not res.ok
    assert "sharding annotations" in res.error and "per-rank shapes" in res.error and "mpi-partition" in res.error
    assert ctx.session.cursor == 0 and "_lh_bench" not in ctx.session.current_ir
    # `run` would insert the wrapper at the end: also refused, nothing runs
    res = do(ctx, "run --target mpi --iterations 1")
    assert not res.ok and "sharding annotations" in res.error
    # after the partition the same step works
    ok(ctx, "apply mpi-partition")
    ok(ctx, "bench iterations=1")


def test_ranks_must_match_the_partition_and_target(ctx):
    ok(ctx, f"load {EXAMPLES / 'sharded_matmul.mlir'}")
    ok(ctx, "apply mpi-partition")
    res = do(ctx, "run --target mpi --ranks 3 --iterations 1")
    assert not res.ok and "partitioned for 2 ranks" in res.error
    res = do(ctx, "run --target cpu --ranks 2 --iterations 1")
    assert not res.ok and "runs in one process" in res.error
    ok(ctx, "history")


def test_one_rank_crashing_is_reported_and_session_continues(ctx, tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # the ranks' work directory: ours alone
    ok(ctx, f"load {PAYLOADS / 'mpi_rank_fault.mlir'}")
    res = do(ctx, "run --target mpi --ranks 2 --iterations 1 --timeout 60")
    assert not res.ok
    assert "rank 1 died while running the compiled code (Aborted (signal 6))" in res.error, res.error
    assert "all ranks were killed" in res.error
    assert not rank_processes(tmp_path)
    ok(ctx, "pass canonicalize")
    ok(ctx, "undo")


def test_hanging_rank_times_out_and_all_ranks_are_killed(ctx, tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    ok(ctx, f"load {PAYLOADS / 'mpi_rank_hang.mlir'}")
    res = do(ctx, "run --target mpi --ranks 2 --iterations 1 --warmup 0 --timeout 4")
    assert not res.ok and "timed out after 4 s" in res.error and "rank 1 had not finished" in res.error
    assert not rank_processes(tmp_path)
    ok(ctx, "history")


def test_mpiexec_missing_is_a_clear_error(ctx, monkeypatch):
    ok(ctx, f"load {EXAMPLES / 'sharded_matmul.mlir'}")
    ok(ctx, "apply mpi-partition")
    monkeypatch.setenv("LH_WORKBENCH_MPIEXEC", "/nonexistent/mpiexec")
    res = do(ctx, "run --target mpi --iterations 1")
    assert not res.ok and "cannot run here" in res.error and "mpiexec not found" in res.error
    monkeypatch.delenv("LH_WORKBENCH_MPIEXEC")
    ok(ctx, "run --target mpi --iterations 1")


def test_shipped_mpi_script_and_session(tmp_path):
    out = tmp_path / "script.json"
    p = run_cli(["examples/sharded_mlp.mlir", "--script", "commands/sharded-mlp-mpi.lhw", "--json", str(out)], timeout=300)
    assert p.returncode == 0, p.stderr
    doc = json.loads(out.read_text())
    assert "mpi-partition" in doc["steps"][0]["spec"] and "mpi-lower" in doc["steps"][2]["spec"]
    assert [s["kind"] for s in doc["steps"]] == ["pipeline", "bench", "pipeline"]
    assert doc["run"]["ranks"] == 2 and doc["run"]["check"]["passed"]
    out = tmp_path / "replay.json"
    p = run_cli(["replay", "sessions/sharded-mlp-mpi.yaml", "--check", "--json", str(out)], timeout=300)
    assert p.returncode == 0, p.stderr
    doc = json.loads(out.read_text())
    assert doc["reproduced"] is True and doc["run"]["target"] == "mpi" and doc["run"]["check"]["passed"]


def test_shipped_reshard_script(tmp_path):
    out = tmp_path / "script.json"
    p = run_cli(["examples/sharded_mlp_reshard.mlir", "--script", "commands/sharded-mlp-reshard-mpi.lhw",
                 "--json", str(out)], timeout=300)
    assert p.returncode == 0, p.stderr
    doc = json.loads(out.read_text())
    assert doc["run"]["ranks"] == 2 and doc["run"]["check"]["passed"] and doc["run"]["rank_comm_splits"] == [2, 2]


def test_2d_grid_matmul_on_4_ranks(ctx, tmp_path):
    """M and N split over a 2x2 grid (4 ranks, oversubscribed on 2 cores: correctness only)."""
    ok(ctx, f"load {EXAMPLES / 'sharded_matmul_2d.mlir'}")
    ok(ctx, "apply mpi-partition")
    sig = _signature(ctx.session.current_ir, "matmul")
    assert "tensor<128x512xf32>" in sig and "tensor<512x64xf32>" in sig and "tensor<128x64xf32>" in sig
    ok(ctx, "bench warmup=0 iterations=2")
    ok(ctx, "apply mpi-lower")
    res = ok(ctx, f"run --target mpi --check --save-outputs {tmp_path}")
    run = res.data["run"]
    assert run["ranks"] == 4 and run["check"]["passed"], run["check"]
    a, b, c = load(tmp_path, "input")
    (out,) = load(tmp_path, "output")
    assert out.shape == (256, 128)
    np.testing.assert_allclose(out, c + a @ b, rtol=1e-4, atol=1e-3)  # every block landed in its place
    res = do(ctx, "run --target mpi --ranks 2")
    assert not res.ok and "partitioned for 4 ranks (a 2x2 grid)" in res.error


def test_k_split_with_all_reduce_on_2_ranks(ctx, tmp_path):
    ok(ctx, f"load {EXAMPLES / 'sharded_matmul_k.mlir'}")
    ok(ctx, "apply mpi-partition")
    assert "shard.all_reduce" in ctx.session.current_ir
    ok(ctx, "bench warmup=0 iterations=2")
    ok(ctx, "apply mpi-lower")
    assert "MPI_Allreduce" in ctx.session.current_ir
    res = ok(ctx, f"run --target mpi --ranks 2 --check --save-outputs {tmp_path}")
    assert res.data["run"]["check"]["passed"]
    a, b, c = load(tmp_path, "input")
    (out,) = load(tmp_path, "output")
    np.testing.assert_allclose(out, c + a @ b, rtol=1e-4, atol=1e-3)


def test_nd_blocks_cut_and_reassemble_in_grid_order():
    from workbench.targets.mpi import _assemble_nd, _block_nd

    a = np.arange(8 * 16, dtype=np.float32).reshape(8, 16)
    grid = [2, 4]
    for axes in ([[0], [1]], [[1], [0]], [[0, 1]], [[], [0, 1]], [[0]], None):
        parts = [_block_nd(a, axes, grid, r) for r in range(8)]
        np.testing.assert_array_equal(_assemble_nd(parts, axes, grid), a)
    # rank 5 is (1, 1) on a 2x4 grid: rows half 1, columns quarter 1
    np.testing.assert_array_equal(_block_nd(a, [[0], [1]], grid, 5), a[4:8, 4:8])
    # both axes on the rows: rank r gets row block r
    np.testing.assert_array_equal(_block_nd(a, [[0, 1]], grid, 5), a[5:6])


def _func_body(ir: str, name: str) -> str:
    body = ir.split(f"func.func @{name}(")[1]
    return body.split("\n  func.func ")[0]


def test_per_rank_heap_buffers_are_freed_and_the_bench_loop_does_not_grow(ctx, tmp_path):
    """Buffers over promote-buffers-to-stack's 1 MiB (the all-reduce's copies, the zero-filled partial
    sums of the ranks other than 0) are freed after their last use (before: 8-10 MiB kept per call)."""
    import re

    ok(ctx, f"load {PAYLOADS / 'mpi_allreduce_2mib.mlir'}")
    ok(ctx, "apply mpi-partition")
    ok(ctx, "bench warmup=0 iterations=100")
    ok(ctx, "pass convert-shard-to-mpi")
    ok(ctx, "apply mpi-bufferize")
    ir = ctx.session.current_ir
    assert "mpi.allreduce" in ir and "__lh_hidden" not in ir and "lh.mpi_op" not in ir  # the MPI ops are back
    body = _func_body(ir, "mm_relu")
    allocs = re.findall(r"(%alloc\w*) = memref\.alloc\(\)[^\n]*: memref<1024x512xf32>", body)
    (returned,) = re.findall(r"return (%\w+)", body)
    freed = set(re.findall(r"memref\.dealloc (%\w+)", body))
    # an alloc yielded by scf.if through a cast is freed through the base buffer of the scf.if's result
    for r, src in re.findall(r"(%\w+) = scf\.if [^\n]*\{\n(.*?)\n    \}\n", body, re.S):
        base = re.search(rf"(%base_buffer\w*), [^\n]*= memref\.extract_strided_metadata {r} ", body)
        if base and base.group(1) in freed:
            freed |= {a for a in allocs if f"memref.cast {a} " in src and f"= memref.cast {a} " in src}
    assert len(allocs) >= 4 and returned in allocs
    assert set(allocs) - {returned} <= freed, (allocs, returned, freed)
    assert returned not in freed
    ok(ctx, "undo")
    ok(ctx, "undo")
    ok(ctx, "apply mpi-lower")
    assert "@free" in ctx.session.current_ir
    res = ok(ctx, "run --target mpi --ranks 2 --check")
    run = res.data["run"]
    assert run["check"]["passed"], run["check"]
    # 100 calls kept (almost) nothing: a leak of even one 2 MiB buffer per call would be 200 MiB
    growth = run["rank_bench_rss_growth_mb"]
    assert len(growth) == 2 and max(growth) < 60, growth


def test_collective_communicators_are_made_once_per_process(ctx, tmp_path):
    """convert-shard-to-mpi splits a communicator for every collective on every call; after mpi-lower each
    split site makes it on its first call only (300 timed calls + the checked call: one split per rank)."""
    import re

    ok(ctx, f"load {EXAMPLES / 'sharded_matmul_k.mlir'}")
    ok(ctx, "apply mpi-partition")
    ok(ctx, "bench warmup=2 iterations=300")
    ok(ctx, "pass convert-shard-to-mpi")
    assert ctx.session.current_ir.count("mpi.comm_split") == 1    # one collective, one split site
    ok(ctx, "undo")
    ok(ctx, "apply mpi-lower")
    ir = ctx.session.current_ir
    # the payload calls the site's helper; MPI_Comm_split is called from the helper alone
    payload = ir.split("llvm.func @matmul(")[1].split("\n  }\n")[0]
    assert "llvm.call @lh_mpi_comm_split_once_0(" in payload and "@MPI_Comm_split" not in payload
    assert len(re.findall(r"llvm\.call @MPI_Comm_split\(", ir)) == 1
    helper = ir.split("llvm.func internal @lh_mpi_comm_split_once_0(")[1].split("\n  }\n")[0]
    assert "llvm.call @MPI_Comm_split(" in helper and "llvm.cond_br" in helper
    res = ok(ctx, f"run --target mpi --ranks 2 --check --save-outputs {tmp_path}")
    run = res.data["run"]
    assert run["check"]["passed"], run["check"]
    assert run["rank_comm_splits"] == [1, 1], run.get("rank_comm_splits")
    a, b, c = load(tmp_path, "input")
    np.testing.assert_allclose(load(tmp_path, "output")[0], c + a @ b, rtol=1e-4, atol=1e-3)


def _reshard_mlp_want(x, w1, w2, w3):
    x, w1, w2, w3 = (v.astype(np.float64) for v in (x, w1, w2, w3))
    return np.maximum(np.maximum(x @ w1, 0) @ w2, 0) @ w3


@pytest.mark.parametrize("ranks,method", [(2, "p2p"), (4, "p2p"), (2, "allreduce")])
def test_resharding_mlp_chain(ctx, tmp_path, ranks, method):
    """Layers alternating column and row splits: the partition inserts all_to_all (columns -> rows) and
    all_gather (rows -> replicated), which MLIR 22's convert-shard-to-mpi does not lower; mpi-lower
    rewrites them (lh-shard-collectives: pairwise send/recv by default, or through all-reduces) and the
    chain runs on 2 ranks and, oversubscribed, on 4."""
    src = (EXAMPLES / "sharded_mlp_reshard.mlir").read_text()
    if ranks != 2:
        src = src.replace("shape = 2)", f"shape = {ranks})").replace('"MPI:comm_world_size" = 2', f'"MPI:comm_world_size" = {ranks}')
    payload = tmp_path / f"reshard_{ranks}.mlir"
    payload.write_text(src)
    ok(ctx, f"load {payload}")
    ok(ctx, "apply mpi-partition")
    cur = ctx.session.current_ir
    assert "shard.all_to_all" in cur and "shard.all_gather" in cur and "shard.all_reduce" not in cur
    sig = _signature(cur, "mlp")
    assert f"tensor<128x{256 // ranks}xf32>" in sig and f"tensor<128x{64 // ranks}xf32>" in sig
    assert f"-> tensor<64x{64 // ranks}xf32>" in cur
    ok(ctx, "bench warmup=1 iterations=3")
    ok(ctx, f"pass lh-shard-collectives{{method={method}}}")
    cur = ctx.session.current_ir
    assert "shard.all_to_all" not in cur and "shard.all_gather" not in cur
    if method == "p2p":
        assert "shard.all_reduce" not in cur and cur.count("mpi.send(") == 4 and cur.count("mpi.recv(") == 4
    else:
        assert cur.count("shard.all_reduce") == 2 and "mpi.send(" not in cur
    if method == "p2p":
        ok(ctx, "undo")     # mpi-lower runs lh-shard-collectives itself (p2p by default)
    ok(ctx, "apply mpi-lower")
    lowered = ctx.session.current_ir
    import re

    assert not re.search(r"\bshard\.[a-z]", lowered)
    assert ("llvm.call @MPI_Send(" in lowered) == (method == "p2p") and ("MPI_Allreduce" in lowered) == (method != "p2p")
    out_dir = tmp_path / "out"
    res = ok(ctx, f"run --target mpi --check --save-outputs {out_dir}")
    run = res.data["run"]
    assert run["ranks"] == ranks and run["check"]["passed"], run["check"]
    assert run["rank_comm_splits"] == [2] * ranks      # two collectives, each split once
    inputs = load(out_dir, "input")
    assert [a.shape for a in inputs] == [(64, 128), (128, 256), (256, 128), (128, 64)]
    (out,) = load(out_dir, "output")
    want = _reshard_mlp_want(*inputs)
    np.testing.assert_allclose(out, want, rtol=1e-4, atol=1e-3)
    # every rank's column block of the result, and the exchange really happened: the local rows of
    # layer 1 alone (no all_to_all) would give a different layer 2
    x, w1, w2, w3 = inputs
    no_exchange = np.maximum(np.maximum(x @ w1[:, :256 // ranks], 0) @ w2[:256 // ranks], 0) @ w3
    assert np.abs(out - no_exchange).max() > 1e-2


def test_resharded_inputs_all_slice_all_gather_all_to_all(ctx, tmp_path):
    ok(ctx, f"load {PAYLOADS / 'mpi_reshard_inputs.mlir'}")
    ok(ctx, "apply mpi-partition")
    cur = ctx.session.current_ir
    assert all(f"shard.{op}" in cur for op in ("all_slice", "all_gather", "all_to_all"))
    ok(ctx, "bench warmup=0 iterations=2")
    ok(ctx, "apply mpi-lower")
    res = ok(ctx, f"run --target mpi --ranks 2 --check --save-outputs {tmp_path}")
    assert res.data["run"]["check"]["passed"], res.data["run"]["check"]
    a, b, c = load(tmp_path, "input")
    (out,) = load(tmp_path, "output")
    np.testing.assert_allclose(out, c + a.astype(np.float64) @ b, rtol=1e-4, atol=1e-3)


def test_reduce_scatter_sum_and_max_then_all_gather(ctx, tmp_path):
    """A payload written with the collectives themselves (no reference: it is already per rank)."""
    ok(ctx, f"load {PAYLOADS / 'mpi_reduce_scatter.mlir'}")
    ok(ctx, "pass lh-shard-collectives")
    cur = ctx.session.current_ir
    assert "shard.reduce_scatter" not in cur and "reduction = max" in cur.replace("=  max", "= max")
    ok(ctx, "undo")
    ok(ctx, "bench warmup=0 iterations=1")
    ok(ctx, "apply mpi-lower")
    res = ok(ctx, f"run --target mpi --ranks 2 --save-outputs {tmp_path}")
    assert res.data["run"]["ranks"] == 2
    (x,) = load(tmp_path, "input")
    summed, maxed = load(tmp_path, "output")
    np.testing.assert_array_equal(summed, 2 * x)     # each rank's row block of x + x, gathered
    np.testing.assert_array_equal(maxed, x)          # max(x, x), by column blocks


def test_gather_on_a_group_of_3_goes_through_an_all_reduce(ctx, tmp_path):
    """The pairwise exchange needs a power-of-two group: on 3 ranks a gather is summed zero-filled blocks."""
    payload = tmp_path / "gather3.mlir"
    payload.write_text("""module attributes {mpi.dlti = #dlti.map<"MPI:Implementation" = "MPICH", "MPI:comm_world_size" = 3>} {
  shard.grid @grid(shape = 3) {sym_visibility = "private"}
  func.func @f(%x: tensor<2x4xf32>) -> tensor<2x12xf32> {
    %g = shard.all_gather %x on @grid grid_axes = [0] gather_axis = 1 : tensor<2x4xf32> -> tensor<2x12xf32>
    return %g : tensor<2x12xf32>
  }
}
""")
    ok(ctx, f"load {payload}")
    ok(ctx, "pass lh-shard-collectives")
    cur = ctx.session.current_ir
    assert "shard.all_gather" not in cur and "shard.all_reduce" in cur and "mpi.send(" not in cur
    ok(ctx, "undo")
    ok(ctx, "bench warmup=0 iterations=1")
    ok(ctx, "apply mpi-lower")
    res = ok(ctx, f"run --target mpi --ranks 3 --save-outputs {tmp_path / 'out'}")
    assert res.data["run"]["ranks"] == 3
    (x,) = load(tmp_path / "out", "input")
    (out,) = load(tmp_path / "out", "output")
    np.testing.assert_array_equal(out, np.concatenate([x, x, x], axis=1))   # every block arrived (a lost one stays zero)


def test_code_that_frees_its_own_buffers_is_left_alone(ctx, tmp_path):
    ok(ctx, f"load {PAYLOADS / 'mpi_frees_itself.mlir'}")
    before = ctx.session.current_ir
    assert not do(ctx, "pass buffer-deallocation-pipeline").ok   # refuses the MPI op (and the free)
    ok(ctx, "pass lh-mpi-buffer-deallocation")
    assert ctx.session.current_ir == before
    ok(ctx, "undo")
    # the whole lowering runs: x summed over both ranks lands in y
    ok(ctx, "bench warmup=0 iterations=2")
    ok(ctx, "apply mpi-lower")
    res = ok(ctx, f"run --target mpi --ranks 2 --save-outputs {tmp_path}")
    assert res.data["run"]["ranks"] == 2
    x, _y = load(tmp_path, "input")
    (y,) = load(tmp_path, "output")
    np.testing.assert_array_equal(y, 2 * x)


def test_ranks_keep_freed_memory_with_the_allocator(monkeypatch):
    """Freed multi-MiB buffers are reused warm by the next timed call instead of faulted in anew."""
    from workbench.targets import get_target

    mpi = get_target("mpi")
    for name in ("MALLOC_TRIM_THRESHOLD_", "MALLOC_MMAP_THRESHOLD_"):
        monkeypatch.delenv(name, raising=False)
    env = mpi.run_env(None)
    assert int(env["MALLOC_TRIM_THRESHOLD_"]) >= 1 << 30 and int(env["MALLOC_MMAP_THRESHOLD_"]) >= 1 << 30
    assert env["OMP_NUM_THREADS"] == "1"
    monkeypatch.setenv("MALLOC_TRIM_THRESHOLD_", "131072")      # the user's own setting wins
    assert "MALLOC_TRIM_THRESHOLD_" not in mpi.run_env(2) and mpi.run_env(2)["OMP_NUM_THREADS"] == "2"


def test_the_mpi_selector_sizes_schedules_for_one_core_per_rank(ctx, tmp_path, monkeypatch):
    """The ranks are the parallelism: a per-rank matmul large enough for the cpu target's multi-core
    schedule (2^24+ multiply-adds on a 4-core model) gets the single-core one under the mpi target
    (16 threads in each of 8 ranks crashed the 4096^3 bench on the 16-core host)."""
    import dataclasses

    import workbench.targets.cpu as cpu
    from conftest import matmul_payload
    from workbench.targets import get_target

    machine = dataclasses.replace(cpu.host_machine(), usable_cpus=4)
    monkeypatch.setattr(cpu, "host_machine", lambda: machine)
    ok(ctx, f"load {matmul_payload(tmp_path / 'mm.mlir', 256, 512, 256)}")
    info = ctx.session.inspect()
    (cpu_spec, _), = get_target("cpu").select_params(info)
    assert "matmul_parallel" in cpu_spec
    (spec, params), = get_target("mpi").select_params(info)
    assert "matmul_parallel" not in spec and not any(k.startswith("threads") for k in params)


@pytest.mark.parametrize("name", ["sharded_matmul_k", "sharded_mlp", "sharded_mlp_reshard"])
def test_select_after_the_partition_schedules_modules_with_collectives(ctx, name):
    """`select --apply` on a partitioned module with collectives failed in the schedules' bufferization
    (`op was not bufferized` at shard.all_reduce / all_to_all): the mpi target's preparation makes them
    MPI ops first, as mpi-lower would. Before the partition select says what to do in one line."""
    ok(ctx, f"load {EXAMPLES / f'{name}.mlir'}")
    ok(ctx, "target mpi")
    res = do(ctx, "select --apply")
    assert not res.ok and "still carries sharding annotations" in res.error and "apply mpi-partition" in res.error
    assert ctx.session.cursor == 0
    ok(ctx, "apply mpi-partition")
    ok(ctx, "select --apply")
    assert "shard.all_" not in ctx.session.current_ir and "mpi." in ctx.session.current_ir
    ok(ctx, "bench iterations=2")
    ok(ctx, "apply mpi-lower")
    run = ok(ctx, "run --check --ranks 2").data["run"]
    assert run["ranks"] == 2 and run["check"]["passed"], run


def test_ranks_bind_big_weights_to_the_jit_as_data(ctx, tmp_path, monkeypatch):
    """The ranks compile as the cpu run worker does (run_worker.jit_compile): the module comes as bytecode and a
    `dense_resource` weight of 4 KB or more is bound to each rank's JIT as data, not translated into its code.
    The outputs are the model's, and bit for bit those of the weights compiled in."""
    rng = np.random.default_rng(3)
    act, w = "tensor<4x64xf32>", "tensor<64x64xf32>"
    weights = [rng.uniform(-1, 1, (64, 64)).astype(np.float32) for _ in range(2)]
    blobs = ",\n".join(f'      weight_{i}: "0x04000000{a.tobytes().hex().upper()}"' for i, a in enumerate(weights))
    (tmp_path / "w.mlir").write_text(
        f"func.func @main(%x: {act}) -> {act} {{\n  %zero = arith.constant 0.0 : f32\n"
        f"  %e = tensor.empty() : {act}\n  %z = linalg.fill ins(%zero : f32) outs(%e : {act}) -> {act}\n"
        f"  %w0 = arith.constant dense_resource<weight_0> : {w}\n  %w1 = arith.constant dense_resource<weight_1> : {w}\n"
        f"  %h0 = linalg.matmul ins(%x, %w0 : {act}, {w}) outs(%z : {act}) -> {act}\n"
        f"  %h1 = linalg.matmul ins(%h0, %w1 : {act}, {w}) outs(%z : {act}) -> {act}\n  return %h1 : {act}\n}}\n"
        f"{{-#\n  dialect_resources: {{\n    builtin: {{\n{blobs}\n    }}\n  }}\n#-}}\n")
    ok(ctx, f"load {tmp_path / 'w.mlir'}")
    run = ok(ctx, f"run --target mpi --ranks 2 --check --iterations 1 --warmup 0 "
                  f"--save-outputs {tmp_path / 'data'}").data["run"]
    assert run["error"] is None and run["check"]["passed"], run
    assert run["rank_external_weights"] == [{"globals": 2, "bytes": 2 * 64 * 64 * 4}] * 2, run
    (x,), (got,) = load(tmp_path / "data", "input"), load(tmp_path / "data", "output")
    np.testing.assert_allclose(got, x.astype(np.float64) @ weights[0] @ weights[1], rtol=1e-4, atol=1e-4)
    monkeypatch.setenv("LH_WORKBENCH_WEIGHTS_AS_CODE", "1")   # the weights compiled into each rank's code
    run = ok(ctx, f"run --iterations 1 --warmup 0 --save-outputs {tmp_path / 'code'}").data["run"]
    assert run["error"] is None and "rank_external_weights" not in run
    assert np.array_equal(load(tmp_path / "code", "output")[0].view(np.uint32), got.view(np.uint32))
