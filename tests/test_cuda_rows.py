"""cuda target, fused row kernels (issue 14 item 1 of the row chains): a chain of row reductions and
elementwise ops over the same rows (softmax, log_softmax, layer_norm, rms_norm, any such chain) is one
kernel: the row in registers, vector loads / stores, warp-shuffle reductions. Lowering is checked
everywhere (PTX, no GPU needed); runs on a GPU are checked against numpy, the CPU reference and
torch's outputs (skipped without one)."""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from conftest import load_npys, ok
from cuda_helpers import needs_gpu, ptx_of, selected_fixture_matches_torch

ROOT = Path(__file__).resolve().parents[1]
TORCH = ROOT / "tests" / "fixtures" / "torch"

# a chain no torch op makes: sum of squares, scale by rsqrt(mean + eps), max of |y|, divide by it; the
# sum of squares is returned too (a row value stored by the kernel). R1 x R2 rows of N elements.
CHAIN = """#full = affine_map<(i, j, k) -> (i, j, k)>
#row = affine_map<(i, j, k) -> (i, j)>
func.func @chain(%a: tensor<{r1}x{r2}x{n}xf32>) -> (tensor<{r1}x{r2}x{n}xf32>, tensor<{r1}x{r2}xf32>) {{
  %zero = arith.constant 0.0 : f32
  %eps = arith.constant 1.0e-3 : f32
  %n = arith.constant {n}.0 : f32
  %e1 = tensor.empty() : tensor<{r1}x{r2}xf32>
  %f1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<{r1}x{r2}xf32>) -> tensor<{r1}x{r2}xf32>
  %s = linalg.generic {{indexing_maps = [#full, #row], iterator_types = ["parallel", "parallel", "reduction"]}}
      ins(%a : tensor<{r1}x{r2}x{n}xf32>) outs(%f1 : tensor<{r1}x{r2}xf32>) {{
  ^bb0(%x: f32, %acc: f32):
    %x2 = arith.mulf %x, %x : f32
    %t = arith.addf %x2, %acc : f32
    linalg.yield %t : f32
  }} -> tensor<{r1}x{r2}xf32>
  %e2 = tensor.empty() : tensor<{r1}x{r2}x{n}xf32>
  %y = linalg.generic {{indexing_maps = [#full, #row, #full], iterator_types = ["parallel", "parallel", "parallel"]}}
      ins(%a, %s : tensor<{r1}x{r2}x{n}xf32>, tensor<{r1}x{r2}xf32>) outs(%e2 : tensor<{r1}x{r2}x{n}xf32>) {{
  ^bb0(%x: f32, %ss: f32, %o: f32):
    %m = arith.divf %ss, %n : f32
    %me = arith.addf %m, %eps : f32
    %r = math.rsqrt %me : f32
    %v = arith.mulf %x, %r : f32
    linalg.yield %v : f32
  }} -> tensor<{r1}x{r2}x{n}xf32>
  %f2 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<{r1}x{r2}xf32>) -> tensor<{r1}x{r2}xf32>
  %mx = linalg.generic {{indexing_maps = [#full, #row], iterator_types = ["parallel", "parallel", "reduction"]}}
      ins(%y : tensor<{r1}x{r2}x{n}xf32>) outs(%f2 : tensor<{r1}x{r2}xf32>) {{
  ^bb0(%x: f32, %acc: f32):
    %ab = math.absf %x : f32
    %t = arith.maximumf %ab, %acc : f32
    linalg.yield %t : f32
  }} -> tensor<{r1}x{r2}xf32>
  %z = linalg.generic {{indexing_maps = [#full, #row, #full], iterator_types = ["parallel", "parallel", "parallel"]}}
      ins(%y, %mx : tensor<{r1}x{r2}x{n}xf32>, tensor<{r1}x{r2}xf32>) outs(%e2 : tensor<{r1}x{r2}x{n}xf32>) {{
  ^bb0(%x: f32, %m: f32, %o: f32):
    %v = arith.divf %x, %m : f32
    linalg.yield %v : f32
  }} -> tensor<{r1}x{r2}x{n}xf32>
  return %z, %s : tensor<{r1}x{r2}x{n}xf32>, tensor<{r1}x{r2}xf32>
}}
"""


def _chain_numpy(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    a = a.astype(np.float64)
    s = (a * a).sum(axis=-1)
    y = a / np.sqrt(s / a.shape[-1] + 1e-3)[..., None]
    return y / np.abs(y).max(axis=-1)[..., None], s


def _host_code(ir: str, func: str) -> str:
    return ir.split(f"llvm.func @{func}(")[1].split("llvm.func ")[0]


def _select_and_lower(ctx, path: Path) -> tuple[list[dict], str]:
    ok(ctx, f"load {path}")
    ok(ctx, "target cuda")
    res = ok(ctx, "select --apply")
    ok(ctx, "bench iterations=2")
    ok(ctx, "apply cuda-lower{chip=sm_90}")
    return res.data["selections"], ctx.session.current_ir


@pytest.mark.parametrize("name,ops", [("softmax", 4), ("log_softmax", 4), ("layer_norm", 5), ("rms_norm", 2),
                                      ("softmax_bf16", 5), ("layer_norm_bf16", 6)])
def test_torch_row_chains_are_one_kernel(ctx, name, ops):
    """torch-mlir's decompositions, after the preparation's fusion, are chains of generics on the same
    rows; the selector finds each as one chain (every generic of it) and cuda-lower emits ONE kernel
    (before: one per reduction and per elementwise op), warp shuffles, no shared-memory tree for rows of
    32 (a warp per row or less), 16-byte loads and stores (the rows' 32 elements are 8 x 4 in f32, 4 x 8
    in bf16: vectors of 16 bytes of the narrowest element type)."""
    sel, ir = _select_and_lower(ctx, TORCH / f"{name}.mlir")
    rows = [e for e in sel if e["schedule"].endswith("rows.py[gen=gpu_rows]")]
    assert len(rows) == 1, sel
    vector = 8 if "bf16" in name else 4
    assert len(rows[0]["params"]["op"].split(",")) == ops and rows[0]["params"]["vector"] == vector, rows
    assert _host_code(ir, "main").count("gpu.launch_func") == 1
    ptx = ptx_of(ir)
    assert "shfl.sync.bfly" in ptx and "__lh_reduce_smem" not in ptx
    assert "ld.global.v4" in ptx and "st.global.v4" in ptx


@pytest.mark.parametrize("name,kernels_before", [("logsumexp", 4), ("var_mean", 2), ("mean_dim", 2)])
def test_ops_over_the_rows_alone_join_the_row_chain(ctx, name, kernels_before):
    """Elementwise ops over the rows alone (mean_dim's division by N, var_mean's mean feeding the squared
    differences, logsumexp's log(sum) + max) join the chain as row ops: one kernel where there were one
    per reduction and per row op; each thread of a row computes the row value, the first stores it."""
    sel, ir = _select_and_lower(ctx, TORCH / f"{name}.mlir")
    rows = [e for e in sel if e["schedule"].endswith("rows.py[gen=gpu_rows]")]
    assert len(rows) == 1, sel
    reductions = [e for e in sel if e["schedule"].endswith("reduce.py[gen=gpu_reduce]")]
    assert len(rows[0]["params"]["op"].split(",")) > len(reductions) >= 1
    assert _host_code(ir, "main").count("gpu.launch_func") == 1 < kernels_before
    assert "shfl.sync.bfly" in ptx_of(ir)


@pytest.mark.parametrize("name,ops", [("sdpa", 3), ("group_norm", 3)])
def test_row_ops_do_not_merge_chains_of_other_domains(ctx, name, ops):
    """A reduction's result read by another reduction (sdpa: the scores' sum over the head dim, then
    softmax's max over the keys) or by an op over other dims (group_norm's per-channel scale of the
    group statistics) links ops of different domains: the chain is the largest set over one domain
    and its rows, not nothing (both lost their row kernel when row ops first joined chains)."""
    sel, _ = _select_and_lower(ctx, TORCH / f"{name}.mlir")
    rows = [e["params"]["op"] for e in sel if e["schedule"].endswith("rows.py[gen=gpu_rows]")]
    assert len(rows) == 1 and len(rows[0].split(",")) >= ops, sel


def test_any_row_chain_is_one_kernel(ctx, tmp_path):
    """Not a pattern match on torch ops: a hand-written chain (sum of squares, scale, max |y|, divide)
    over 2-D rows is one kernel that also stores the sum it returns; rows of 37 (odd) take scalar loads
    and a guarded last slot, rows of 4096 take 256 threads, 16-byte loads and the warps' partials through
    shared memory (a barrier per reduction)."""
    p = tmp_path / "chain.mlir"
    p.write_text(CHAIN.format(r1=3, r2=5, n=37))
    sel, ir = _select_and_lower(ctx, p)
    rows = [e["params"] for e in sel if "rows.py" in e["schedule"]]
    assert rows and rows[0]["vector"] == 1 and rows[0]["threads"] == 32, rows
    assert _host_code(ir, "chain").count("gpu.launch_func") == 1
    ptx = ptx_of(ir)
    assert "ld.global.v" not in ptx and ptx.count("shfl.sync.bfly") == 10  # 2 reductions x 5 steps
    p.write_text(CHAIN.format(r1=2, r2=3, n=4096))
    sel, ir = _select_and_lower(ctx, p)
    rows = [e["params"] for e in sel if "rows.py" in e["schedule"]]
    assert rows == [{"threads": 256, "rows": 1, "vector": 4, "group": 0, "op": rows[0]["op"]}], rows
    assert _host_code(ir, "chain").count("gpu.launch_func") == 1
    ptx = ptx_of(ir)
    assert ptx.count("ld.global.v4") == 4 and ptx.count("st.global.v4") == 4  # 4096 / 256 / 4 slots
    assert ptx.count("bar.sync") == 2 and "__lh_reduce_smem" in ptx
    # a unit row dim: the preparation folds it, views (collapse / expand_shape) sit between the ops
    p.write_text(CHAIN.format(r1=5, r2=1, n=1000))
    sel, ir = _select_and_lower(ctx, p)
    assert _host_code(ir, "chain").count("gpu.launch_func") == 1
    assert "shfl.sync.bfly" in ptx_of(ir)


def test_row_selection_parameters():
    from workbench.targets.cpu import _load_library_module

    rows = _load_library_module("cuda/rows.py")
    assert rows.select(4096, 4096, 4096) == {"threads": 256, "rows": 1, "vector": 4}
    assert rows.select(8, 32, 32) == {"threads": 8, "rows": 8, "vector": 4}
    assert rows.select(100, 768, 768) == {"threads": 64, "rows": 4, "vector": 4}
    assert rows.select(15, 37, 37) == {"threads": 32, "rows": 8, "vector": 1}
    assert rows.select(4, 50, 50)["vector"] == 2
    assert rows.select(4, 1 << 17, 1 << 17) is None  # 128 elements a thread: left to the reduction kernels


BAD_ROWS = """#full = affine_map<(i, j) -> (i, j)>
#row = affine_map<(i, j) -> (i)>
#other = affine_map<(i, j) -> (j)>
func.func @f(%a: memref<64x64xf32>, %o: memref<64x64xf32>) {{
  %zero = arith.constant 0.0 : f32
  %s = memref.alloc() : memref<64xf32>
  linalg.fill ins(%zero : f32) outs(%s : memref<64xf32>)
  linalg.generic {{indexing_maps = [#full, #row], iterator_types = ["parallel", "reduction"]}}
      ins(%a : memref<64x64xf32>) outs(%s : memref<64xf32>) attrs = {{lh.gpu_rows = {{group = 0 : i64, threads = 32 : i64, rows = 1 : i64, vector = 4 : i64}}}} {{
  ^bb0(%x: f32, %acc: f32):
    %t = arith.addf %x, %acc : f32
    linalg.yield %t : f32
  }}
  linalg.generic {{indexing_maps = [#full, {m}, #full], iterator_types = ["parallel", "parallel"]}}
      ins(%a, %s : memref<64x64xf32>, memref<64xf32>) outs(%o : memref<64x64xf32>) attrs = {{lh.gpu_rows = {{group = 0 : i64, threads = 32 : i64, rows = 1 : i64, vector = 4 : i64}}}} {{
  ^bb0(%x: f32, %t: f32, %y: f32):
    %v = arith.divf %x, %t : f32
    linalg.yield %v : f32
  }}
  return
}}
"""


@pytest.mark.parametrize("m,why", [("#row", ""), ("#other", "read at other rows")])
def test_row_kernel_refuses_reads_across_rows(m, why):
    """A chain whose op reads the reduction's result at another row (x[i, j] / s[j]: needs every row's
    sum) is no row kernel: the rewrite drops its marks (the reductions keep their own kernels); the same
    chain through the row map (x[i, j] / s[i]) becomes one gpu.launch and its private buffer goes."""
    from mlir import ir

    from workbench.worker.cuda import row_kernels

    with ir.Context(), ir.Location.unknown():
        module = ir.Module.parse(BAD_ROWS.format(m=m))
        built = row_kernels.rewrite_marked(module)
        text = str(module)
        if why:
            assert built == 0 and "lh.gpu_rows" not in text and text.count("linalg.generic") == 2
            ops = [o.operation for o in module.body.operations[0].regions[0].blocks[0].operations
                   if o.name == "linalg.generic"]
            with pytest.raises(row_kernels.RowKernelError, match=why):
                row_kernels.plan_group(ops)
        else:
            assert built == 1 and text.count("gpu.launch") == 1 and "linalg" not in text
            assert "memref.alloc" not in text and "gpu.shuffle  xor" in text


REUSED_TEMPORARY = """#full = affine_map<(i, j) -> (i, j)>
#row = affine_map<(i, j) -> (i)>
func.func @f(%a: memref<64x64xf32>, %o: memref<64x64xf32>, %early: memref<64x64xf32>, %late: memref<64x64xf32>) {{
  %zero = arith.constant 0.0 : f32
  %t = memref.alloc() : memref<64x64xf32>
  %flat = memref.collapse_shape %t [[0, 1]] : memref<64x64xf32> into memref<4096xf32>
  linalg.copy ins(%a : memref<64x64xf32>) outs(%t : memref<64x64xf32>)
  linalg.copy ins(%t : memref<64x64xf32>) outs(%early : memref<64x64xf32>)
  %s = memref.alloc() : memref<64xf32>
  linalg.fill ins(%zero : f32) outs(%s : memref<64xf32>)
  linalg.generic {{indexing_maps = [#full, #row], iterator_types = ["parallel", "reduction"]}}
      ins(%a : memref<64x64xf32>) outs(%s : memref<64xf32>) attrs = {{lh.gpu_rows = {{group = 0 : i64, threads = 32 : i64, rows = 1 : i64, vector = 4 : i64}}}} {{
  ^bb0(%x: f32, %acc: f32):
    %r = arith.addf %x, %acc : f32
    linalg.yield %r : f32
  }}
  linalg.generic {{indexing_maps = [#full, #row, #full], iterator_types = ["parallel", "parallel"]}}
      ins(%a, %s : memref<64x64xf32>, memref<64xf32>) outs(%t : memref<64x64xf32>) attrs = {{lh.gpu_rows = {{group = 0 : i64, threads = 32 : i64, rows = 1 : i64, vector = 4 : i64}}}} {{
  ^bb0(%x: f32, %sum: f32, %y: f32):
    %v = arith.divf %x, %sum : f32
    linalg.yield %v : f32
  }}
  linalg.generic {{indexing_maps = [#full, #full], iterator_types = ["parallel", "parallel"]}}
      ins(%t : memref<64x64xf32>) outs(%o : memref<64x64xf32>) attrs = {{lh.gpu_rows = {{group = 0 : i64, threads = 32 : i64, rows = 1 : i64, vector = 4 : i64}}}} {{
  ^bb0(%x: f32, %y: f32):
    %v = arith.mulf %x, %x : f32
    linalg.yield %v : f32
  }}
  {after}
  return
}}
"""


@pytest.mark.parametrize("after,stored", [
    ("", ["%o"]),   # %t held the copy of %a before the group; the group's values in it are read by nobody
    ("linalg.copy ins(%t : memref<64x64xf32>) outs(%late : memref<64x64xf32>)", ["%t", "%o"]),
    ("memref.copy %flat, %flat : memref<4096xf32> to memref<4096xf32>", ["%t", "%o"]),  # a view taken before
])
def test_row_kernel_stores_what_is_read_after_it(after, stored):
    """A buffer the chain writes is stored only where something may read it after the chain: a buffer
    that bufferization reused (attention's exp(s - max) landed in Q K^T's f32 C buffer, written out as
    64 MB nobody read) is used before the chain only, so the chain keeps its values in registers; a
    read after it, directly or through a view taken earlier, keeps the store."""
    from mlir import ir

    from workbench.worker.cuda import row_kernels

    with ir.Context(), ir.Location.unknown():
        module = ir.Module.parse(REUSED_TEMPORARY.format(after=after))
        body = module.body.operations[0].regions[0].blocks[0]
        ops = [o.operation for o in body.operations if "lh.gpu_rows" in o.attributes]
        allocs = [o.result for o in body.operations if o.operation.name == "memref.alloc"]
        names = {"%o": body.arguments[1], "%t": allocs[0], "%s": allocs[1]}
        plan = row_kernels.plan_group(ops)
        assert len(plan["stored"]) == len(stored) and all(names[n] in plan["stored"] for n in stored)
        assert plan["private"] == [names["%s"]]
        assert row_kernels.rewrite_marked(module) == 1
        text = str(module)
        launch = text[text.index("gpu.launch"):]
        # one 4-wide store per thread and stored buffer (64 columns, 32 threads x 4 lanes: one slot);
        # %t stays allocated (the copies before the chain use it), %s is gone
        assert launch.count("vector.store") == len(stored)
        assert "memref.alloc() : memref<64x64xf32>" in text and "memref<64xf32>" not in text


# -- on a GPU ---------------------------------------------------------------------------------------

@needs_gpu
@pytest.mark.parametrize("r1,r2,n", [(3, 5, 37), (7, 3, 8), (5, 1, 1000), (2, 3, 4096), (3, 1, 6000)])
def test_gpu_row_chain_matches_numpy(ctx, tmp_path, r1, r2, n):
    p = tmp_path / "chain.mlir"
    p.write_text(CHAIN.format(r1=r1, r2=r2, n=n))
    ok(ctx, f"load {p}")
    ok(ctx, "target cuda")
    res = ok(ctx, "select --apply")
    assert any("rows.py" in e["schedule"] for e in res.data["selections"])
    res = ok(ctx, f"run --target cuda --check --iterations 2 --save-outputs {tmp_path / 'o'}")
    assert res.data["run"]["check"]["passed"], res.data["run"]["check"]
    (a,), (z, s) = load_npys(tmp_path / "o", "input"), load_npys(tmp_path / "o", "output")
    z_ref, s_ref = _chain_numpy(a)
    np.testing.assert_allclose(s, s_ref, rtol=1e-4)
    np.testing.assert_allclose(z, z_ref, rtol=1e-4, atol=1e-6)


@needs_gpu
@pytest.mark.parametrize("name", ["softmax", "log_softmax", "layer_norm", "rms_norm", "softmax_bf16",
                                  "layer_norm_bf16", "instance_norm", "var_mean", "group_norm", "batch_norm2d",
                                  "logsumexp", "mean_dim"])
def test_gpu_torch_row_chains_match_torch(ctx, name):
    selected_fixture_matches_torch(ctx, TORCH / (name + ".mlir"))


def test_small_constants_are_device_globals(ctx):
    """rms_norm's weights (a 32-float dense_resource): the row kernel reads them from an initialized
    device global (its own memref.get_global, cloned into the gpu.module by outlining) instead of a
    device copy made in every call (gpu.alloc + memcpy + dealloc in the timed function: ~100 us a call
    at the bench shape); the PTX holds the fixture's bytes."""
    import struct

    text = (TORCH / "rms_norm.mlir").read_text()
    blob = re.search(r'torch_tensor_32_torch\.float32: "0x([0-9A-F]+)"', text).group(1)
    weights = bytes.fromhex(blob)[4:]  # after the blob's 4-byte alignment header
    sel, ir = _select_and_lower(ctx, TORCH / "rms_norm.mlir")
    host = _host_code(ir, "main")
    assert "mgpuMemcpy" not in host and "mgpuMemAlloc" not in host
    m = re.search(r"\.global \.align \d+ \.b8 (\w+)\[128\] = \{([\d, ]+)\}", ptx_of(ir))
    assert m, ptx_of(ir)[:2000]
    assert bytes(int(b) for b in m.group(2).split(", ")) == weights
    assert struct.unpack("<f", weights[:4])[0] == 0.5


def test_results_are_written_straight_into_the_outputs(ctx, tmp_path):
    """The row chain has two results; the GPU wrapper hands both output buffers to the entry (no
    device allocation or copy in the timed call), for several payloads in one compile worker."""
    for r1, r2, n in ((3, 5, 37), (7, 3, 8), (5, 1, 1000), (3, 1, 6000)):
        p = tmp_path / f"chain_{r1}_{r2}_{n}.mlir"
        p.write_text(CHAIN.format(r1=r1, r2=r2, n=n))
        ok(ctx, f"load {p}")
        ok(ctx, "target cuda")
        ok(ctx, "select --apply")
        ok(ctx, "bench")
        ok(ctx, "apply cuda-lower{chip=sm_90a}")
        timed = _host_code(ctx.session.current_ir, "_lh_device_call")
        assert "llvm.call @chain(" in timed
        assert "mgpuMemAlloc" not in timed and "mgpuMemcpy" not in timed, timed


def test_run_does_its_compile_side_work_in_one_worker(fake_h100_driver, tmp_path, monkeypatch):
    """`run --target cuda --check` on a machine whose (stand-in) driver reports an H100: the wrapper,
    cuda-lower and the check's reference are built for payload after payload in one compile worker,
    and only the run worker (no real driver to load) fails. The GPU wrapper once erased ops it still
    held handles to, so the compile worker crashed (SIGSEGV) on the third payload of this loop."""
    from workbench.commands import CommandContext, default_registry
    from workbench.session import Session

    monkeypatch.setenv("LH_WORKBENCH_LIBCUDA", str(fake_h100_driver))
    monkeypatch.setenv("LH_WORKBENCH_STATE_DIR", str(tmp_path / "state"))
    session = Session()
    try:
        ctx = CommandContext(session, default_registry())
        for r1, r2, n in ((3, 5, 37), (7, 3, 8), (5, 1, 1000), (2, 3, 4096), (3, 1, 6000)):
            p = tmp_path / f"chain_{r1}_{r2}_{n}.mlir"
            p.write_text(CHAIN.format(r1=r1, r2=r2, n=n))
            for line in (f"load {p}", "target cuda", "select --apply"):
                ok(ctx, line)
            res = ctx.registry.dispatch("run --target cuda --check --iterations 2", ctx)
            # the failure comes from running (`run failed: ...`: the run worker dies, or on a machine with
            # a GPU the runtime's calls reach the stand-in), never from preparing the run
            assert res.ok or res.error.startswith("run failed: "), (n, res.error, res.detail)
    finally:
        session.close()
