"""cuda target, non-matmul ops (issue 14 item 3): strided copies on the device, the row-reduction and
elementwise schedules, the torch corpus on the GPU. Lowering is checked everywhere (PTX, no GPU
needed); runs on a GPU are checked against the CPU reference and torch's outputs (skipped without one)."""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from conftest import load_npys, ok
from cuda_helpers import needs_gpu, ptx_of, selected_fixture_matches_torch

ROOT = Path(__file__).resolve().parents[1]
TORCH = ROOT / "tests" / "fixtures" / "torch"

SLICE = """func.func @slice(%a: tensor<4x24xf32>) -> tensor<4x8xf32> {
  %s = tensor.extract_slice %a[0, 8] [4, 8] [1, 1] : tensor<4x24xf32> to tensor<4x8xf32>
  return %s : tensor<4x8xf32>
}
"""


def test_strided_copy_becomes_a_kernel(ctx, tmp_path):
    """A slice returned from the payload is a copy of a strided view: no single gpu.memcpy can do it,
    cuda-lower runs it as a kernel of its own (before: `memref.copy of a non-contiguous buffer`)."""
    p = tmp_path / "slice.mlir"
    p.write_text(SLICE)
    ok(ctx, f"load {p}")
    ok(ctx, "bench iterations=2")
    ok(ctx, "apply cuda-lower{chip=sm_90}")
    ir = ctx.session.current_ir
    assert "gpu.binary @" in ir and ir.count("gpu.launch_func ") >= 1
    assert ".entry" in ptx_of(ir)


@needs_gpu
def test_strided_copy_runs(ctx, tmp_path):
    p = tmp_path / "slice.mlir"
    p.write_text(SLICE)
    ok(ctx, f"load {p}")
    res = ok(ctx, f"run --target cuda --check --iterations 2 --save-outputs {tmp_path / 'o'}")
    assert res.data["run"]["check"]["passed"], res.data["run"]["check"]
    (a,), (got,) = load_npys(tmp_path / "o", "input"), load_npys(tmp_path / "o", "output")
    np.testing.assert_array_equal(got, a[:, 8:16])


def _host_code(ir: str, func: str) -> str:
    """The lowered host function `func` (llvm.func), up to the next function."""
    return ir.split(f"llvm.func @{func}(")[1].split("llvm.func ")[0]


def _lower(ctx, tmp_path: Path, name: str, text: str, select: bool = False) -> str:
    p = tmp_path / f"{name}.mlir"
    p.write_text(text)
    ok(ctx, f"load {p}")
    if select:
        ok(ctx, "target cuda")
        ok(ctx, "select --apply")
    ok(ctx, "bench iterations=2")
    ok(ctx, "apply cuda-lower{chip=sm_90}")
    return ctx.session.current_ir


CONSTANT = """func.func @addc(%a: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %c = arith.constant dense<[[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]]> : tensor<1x8xf32>
  %e = tensor.empty() : tensor<4x8xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (0, j)>, affine_map<(i, j) -> (i, j)>],
      iterator_types = ["parallel", "parallel"]} ins(%a, %c : tensor<4x8xf32>, tensor<1x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %s = arith.addf %x, %y : f32
    linalg.yield %s : f32
  } -> tensor<4x8xf32>
  return %r : tensor<4x8xf32>
}
"""


def test_constants_are_copied_to_the_device(ctx, tmp_path):
    """A dense constant (torch's weights) is a host global: kernels get a device copy of it, never
    the global's address (that read was CUDA_ERROR_ILLEGAL_ADDRESS)."""
    ir = _lower(ctx, tmp_path, "addc", CONSTANT)
    host = _host_code(ir, "addc")
    (glob,) = set(re.findall(r"(%\d+) = llvm\.mlir\.addressof @__constant", host))
    host_ptrs = {glob} | set(re.findall(rf"(%\d+) = llvm\.getelementptr {glob}\[", host))
    (dev,) = [dst for dst, src in re.findall(r"llvm\.call @mgpuMemcpy\((%\d+), (%\d+),", host) if src in host_ptrs]
    (launch,) = re.findall(r"gpu\.launch_func .*", host)
    assert f"{dev} : !llvm.ptr" in launch and not any(f"{p} : !llvm.ptr" in launch for p in host_ptrs), launch


OFFSET_SLICE = """func.func @halves(%a: tensor<4x8xf32>, %b: tensor<4x8xf32>) -> tensor<8x8xf32> {
  %e = tensor.empty() : tensor<8x8xf32>
  %0 = tensor.insert_slice %a into %e[0, 0] [4, 8] [1, 1] : tensor<4x8xf32> into tensor<8x8xf32>
  %1 = tensor.insert_slice %b into %0[4, 0] [4, 8] [1, 1] : tensor<4x8xf32> into tensor<8x8xf32>
  return %1 : tensor<8x8xf32>
}
"""


def test_copy_into_a_buffer_at_an_offset_is_a_kernel(ctx, tmp_path):
    """gpu-to-llvm lowers gpu.memcpy with the destination's aligned pointer, without its offset: a copy
    into the second half of a buffer landed in the first (gru / lstm outputs). Such copies are kernels."""
    ir = _lower(ctx, tmp_path, "halves", OFFSET_SLICE)
    host = _host_code(ir, "halves")
    # the first half (offset 0) is one memcpy, the second (offset 32) a kernel
    assert host.count("@mgpuMemcpy(") == 1 and host.count("gpu.launch_func") == 1 and ".entry" in ptx_of(ir)


SUM_ALL = """func.func @sum_all(%a: tensor<8x16xf32>) -> tensor<f32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<f32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<f32>) -> tensor<f32>
  %r = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> ()>],
      iterator_types = ["reduction", "reduction"]} ins(%a : tensor<8x16xf32>) outs(%f : tensor<f32>) {
  ^bb0(%x: f32, %o: f32):
    %s = arith.addf %x, %o : f32
    linalg.yield %s : f32
  } -> tensor<f32>
  return %r : tensor<f32>
}
"""


def test_ops_without_parallel_loops_are_one_thread_kernels(ctx, tmp_path):
    """Unscheduled, a rank-0 fill and a reduction of everything have no parallel loop for the naive
    mapping: before, their loops ran on the host over device buffers (SIGSEGV); now a kernel each."""
    ir = _lower(ctx, tmp_path, "sum_all", SUM_ALL)
    host = _host_code(ir, "sum_all")
    assert not re.search(r"llvm\.(load|store) .*: f32", host) and not re.search(r"llvm\.load .*-> f32", host)
    assert host.count("gpu.launch_func") == 2


POWI = """func.func @cube(%a: tensor<64xf32>) -> tensor<64xf32> {
  %c3 = arith.constant 3 : i64
  %e = tensor.empty() : tensor<64xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>], iterator_types = ["parallel"]}
      ins(%a : tensor<64xf32>) outs(%e : tensor<64xf32>) {
  ^bb0(%x: f32, %o: f32):
    %p = math.fpowi %x, %c3 : f32, i64
    linalg.yield %p : f32
  } -> tensor<64xf32>
  return %r : tensor<64xf32>
}
"""


def test_integer_powers_become_multiplications(ctx, tmp_path):
    ir = _lower(ctx, tmp_path, "cube", POWI)
    ptx = ptx_of(ir)
    assert "powi" not in ptx and ptx.count("mul.rn.f32") >= 2


ROW_SUM = """func.func @rowsum(%a: tensor<{r}x{n}xf32>) -> tensor<{r}xf32> {{
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<{r}xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<{r}xf32>) -> tensor<{r}xf32>
  %s = linalg.generic {{indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>],
      iterator_types = ["parallel", "reduction"]}} ins(%a : tensor<{r}x{n}xf32>) outs(%f : tensor<{r}xf32>) {{
  ^bb0(%x: f32, %o: f32):
    %x2 = arith.mulf %x, %x : f32
    %t = arith.addf %x2, %o : f32
    linalg.yield %t : f32
  }} -> tensor<{r}xf32>
  return %s : tensor<{r}xf32>
}}
"""


def test_selector_picks_the_row_reduction_kernel(ctx, tmp_path):
    """A row reduction: the cuda selector marks it for the reduction kernel with threads for its row
    length (rounded up to a power of two, 32..256) and short rows sharing a block; cuda-lower builds
    one kernel: shared-memory partials, a barrier per tree step."""
    p = tmp_path / "rowsum.mlir"
    for (r, n), (threads, rows) in (((7, 1000), (256, 1)), ((100, 20), (32, 8)), ((3, 100), (128, 2))):
        p.write_text(ROW_SUM.format(r=r, n=n))
        ok(ctx, f"load {p}")
        ok(ctx, "target cuda")
        res = ok(ctx, "select --apply")
        sel = [e for e in res.data["selections"] if "reduce.py" in e["schedule"]]
        assert len(sel) == 1 and sel[0]["schedule"].endswith("[gen=gpu_reduce]"), res.data["selections"]
        assert (sel[0]["params"]["threads"], sel[0]["params"]["rows"]) == (threads, rows), sel[0]["params"]
        assert '"lh.gpu_reduce"' in ctx.session.current_ir or "lh.gpu_reduce =" in ctx.session.current_ir
    ok(ctx, "apply cuda-lower{chip=sm_90}")
    ptx = ptx_of(ctx.session.current_ir)
    assert ".shared .align 16 .b8 __lh_reduce_smem_0[1024]" in ptx  # 2 rows x 128 threads x 4 bytes
    assert ptx.count("bar.sync") >= 1 + 7 and ".maxntid 128, 2, 1" in ptx


def test_short_rows_and_coupled_results_keep_the_naive_mapping(ctx, tmp_path):
    """Rows of fewer than 8 elements are not selected; argmax (a max and its index, combined together)
    is marked but the rewrite leaves it to the naive mapping; both still lower."""
    p = tmp_path / "short.mlir"
    p.write_text(ROW_SUM.format(r=64, n=4))
    ok(ctx, f"load {p}")
    ok(ctx, "target cuda")
    res = ctx.registry.dispatch("select --apply", ctx)
    assert not res.ok or not any("reduce.py" in e["schedule"] for e in res.data["selections"])
    ok(ctx, f"load {TORCH / 'argmax.mlir'}")
    ok(ctx, "target cuda")
    res = ok(ctx, "select --apply")
    assert any("reduce.py" in e["schedule"] for e in res.data["selections"])
    ok(ctx, "apply cuda-lower{chip=sm_90}")
    assert "__lh_reduce_smem" not in ptx_of(ctx.session.current_ir)


# -- on a GPU ---------------------------------------------------------------------------------------

@needs_gpu
@pytest.mark.parametrize("name", ["addc", "halves", "sum_all", "cube"])
def test_gpu_small_payloads_checked(ctx, tmp_path, name):
    text = {"addc": CONSTANT, "halves": OFFSET_SLICE, "sum_all": SUM_ALL, "cube": POWI}[name]
    p = tmp_path / f"{name}.mlir"
    p.write_text(text)
    ok(ctx, f"load {p}")
    res = ok(ctx, "run --target cuda --check --iterations 2")
    assert res.data["run"]["check"]["passed"], res.data["run"]["check"]


@needs_gpu
@pytest.mark.parametrize("r,n", [(7, 1000), (100, 20), (3, 100), (1, 4096)])
def test_gpu_row_reduction_kernel_matches_numpy(ctx, tmp_path, r, n):
    p = tmp_path / "rowsum.mlir"
    p.write_text(ROW_SUM.format(r=r, n=n))
    ok(ctx, f"load {p}")
    ok(ctx, "target cuda")
    ok(ctx, "select --apply")
    res = ok(ctx, f"run --target cuda --check --iterations 2 --save-outputs {tmp_path / 'o'}")
    assert res.data["run"]["check"]["passed"], res.data["run"]["check"]
    (a,), (got,) = load_npys(tmp_path / "o", "input"), load_npys(tmp_path / "o", "output")
    np.testing.assert_allclose(got, (a.astype(np.float64) ** 2).sum(axis=1), rtol=1e-5)


# torch fixtures whose reductions take the kernel (rows over blocks, several reduced dims, a reduction
# over the outer dim, whole-tensor reductions) and the fixes above (weights, offsets, rank 0, powers)
GPU_FIXTURES = ["softmax", "softmax_dim0", "log_softmax", "layer_norm", "layer_norm_bf16", "group_norm", "var_mean",
                "sum_all", "mse_loss", "rms_norm", "gelu_tanh", "gru", "cumsum_dim0", "linear", "conv2d_3x3", "sdpa",
                "cummax_dim0", "amin", "argmin"]


@pytest.mark.parametrize("name", ["amin", "argmin"])
def test_reductions_over_an_outer_dim_are_one_kernel(ctx, tmp_path, name):
    """amin / argmin over dim 0 (iterators [reduction, parallel]): the parallel dim goes first, so the
    naive mapping makes one kernel whose threads loop over the rows, not a host loop that launches a
    kernel and synchronizes per row (8 rows: 8 launches, 0.086 ms on the H200); argmin's index
    (linalg.index of the reduced dim) follows the interchange."""
    ir = _lower(ctx, tmp_path, name, (TORCH / f"{name}.mlir").read_text())
    host = _host_code(ir, "main")
    assert "llvm.cond_br" not in host and "gpu.launch_func" in host


def test_copies_of_buffers_typed_with_explicit_strides_lower(ctx, fake_h100_driver, monkeypatch):
    """cummax_dim0's results are copied out of buffers typed `strided<[5, 1]>` (contiguous, offset 0, but
    not the identity map): gpu-to-llvm lowers no memcpy of them (`ops remain outside the LLVM dialect:
    gpu.memcpy`), so they are copy kernels; `asm` lowers as `run` does and shows each kernel."""
    monkeypatch.setenv("LH_WORKBENCH_LIBCUDA", str(fake_h100_driver))
    ok(ctx, f"load {TORCH / 'cummax_dim0.mlir'}")
    ok(ctx, "target cuda")
    ok(ctx, "select --apply")
    res = ok(ctx, "asm --grep ^//.----.kernel")
    assert res.data["matches"] >= 2
    ok(ctx, "target cpu")


@needs_gpu
@pytest.mark.parametrize("name", GPU_FIXTURES)
def test_gpu_torch_fixture_selected_matches_torch(ctx, name):
    selected_fixture_matches_torch(ctx, TORCH / (name + ".mlir"))


EXP3D = """func.func @exp3(%a: tensor<4x8x100xf32>) -> tensor<4x8x100xf32> {
  %e = tensor.empty() : tensor<4x8x100xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(i, j, k) -> (i, j, k)>, affine_map<(i, j, k) -> (i, j, k)>],
      iterator_types = ["parallel", "parallel", "parallel"]} ins(%a : tensor<4x8x100xf32>) outs(%e : tensor<4x8x100xf32>) {
  ^bb0(%x: f32, %o: f32):
    %y = math.exp %x : f32
    linalg.yield %y : f32
  } -> tensor<4x8x100xf32>
  return %r : tensor<4x8x100xf32>
}
"""


def _launch_dims(host: str) -> list[tuple[int, ...]]:
    """(blocks x, y, z, threads x, y, z) of each gpu.launch_func, from the host code's index constants."""
    consts = dict(re.findall(r"(%\d+) = llvm\.mlir\.constant\((\d+) : (?:index|i64)\)", host))
    out = []
    for m in re.finditer(r"blocks in \((%\d+), (%\d+), (%\d+)\) threads in \((%\d+), (%\d+), (%\d+)\)", host):
        out.append(tuple(int(consts[v]) for v in m.groups()))
    return out


def test_elementwise_ops_are_linearized_and_coalesced(ctx, tmp_path):
    """An unscheduled elementwise op: one kernel over its 3200 iterations, 256 threads per block
    (13 blocks), the innermost dimension on consecutive threads (upstream's mapping: 32 x 32 threads
    over the two outer dims, the innermost tiled by 1 on the blocks)."""
    ir = _lower(ctx, tmp_path, "exp3", EXP3D)
    assert _launch_dims(_host_code(ir, "exp3")) == [(13, 1, 1, 256, 1, 1)]
    ptx = ptx_of(ir)
    # one linear index (blockIdx.x * 256 + threadIdx.x), split into the three loop indices
    assert "%tid.x" in ptx and "%ctaid.x" in ptx and "%tid.y" not in ptx and "%ctaid.y" not in ptx


@needs_gpu
def test_gpu_linearized_elementwise_checked(ctx, tmp_path):
    p = tmp_path / "exp3.mlir"
    p.write_text(EXP3D)
    ok(ctx, f"load {p}")
    res = ok(ctx, f"run --target cuda --check --iterations 2 --save-outputs {tmp_path / 'o'}")
    assert res.data["run"]["check"]["passed"], res.data["run"]["check"]
    (a,), (got,) = load_npys(tmp_path / "o", "input"), load_npys(tmp_path / "o", "output")
    np.testing.assert_allclose(got, np.exp(a), rtol=1e-6)


BIG_ELEMENTWISE = """#map = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d1)>
func.func @ew(%a: tensor<{m}x{n}xf32>, %b: tensor<{n}xf32>) -> tensor<{m}x{n}xf32> {{
  %e = tensor.empty() : tensor<{m}x{n}xf32>
  %r = linalg.generic {{indexing_maps = [#map, #row, #map], iterator_types = ["parallel", "parallel"]}}
      ins(%a, %b : tensor<{m}x{n}xf32>, tensor<{n}xf32>) outs(%e : tensor<{m}x{n}xf32>) {{
  ^bb0(%x: f32, %bias: f32, %o: f32):
    %s = arith.addf %x, %bias : f32
    %g = math.erf %s : f32
    %y = arith.mulf %s, %g : f32
    linalg.yield %y : f32
  }} -> tensor<{m}x{n}xf32>
  return %r : tensor<{m}x{n}xf32>
}}
"""


@pytest.mark.parametrize("m,n,unrolled,exact", [(1100, 1000, True, False), (1024, 1024, True, True),
                                                (64, 100, False, True)])
def test_large_elementwise_ops_take_several_iterations_a_thread(ctx, tmp_path, m, n, unrolled, exact):
    """A large unscheduled elementwise op (a million iterations and more): each thread takes 4, a block
    apart (each clone's accesses stay coalesced), every clone's loads before the first store (several
    loads in flight per thread); a block of 256 threads covers 1024 iterations. The last block's clones
    past the end load in bounds and skip their stores; small ops keep one iteration a thread."""
    ir = _lower(ctx, tmp_path, "ew", BIG_ELEMENTWISE.format(m=m, n=n))
    per_thread = 4 if unrolled else 1
    assert _launch_dims(_host_code(ir, "ew")) == [(-(-m * n // (256 * per_thread)), 1, 1, 256, 1, 1)]
    ptx = ptx_of(ir)
    loads = [i for i, line in enumerate(ptx.splitlines()) if "ld.global" in line]
    stores = [i for i, line in enumerate(ptx.splitlines()) if "st.global" in line]
    assert len(stores) == per_thread and len(loads) == 2 * per_thread   # x and the bias, per iteration
    assert max(loads) < min(stores)
    # the bounds check compares the linear index with the iteration count: only where blocks overhang
    bound = re.search(rf"setp\.\w+\.[su](32|64)\s+%p\d+, %r[d]?\d+, {m * n};", ptx)
    assert (bound is None) == exact, ptx[:3000]


@needs_gpu
@pytest.mark.parametrize("m,n", [(1100, 1000), (1024, 1024)])
def test_gpu_large_elementwise_checked(ctx, tmp_path, m, n):
    p = tmp_path / "ew.mlir"
    p.write_text(BIG_ELEMENTWISE.format(m=m, n=n))
    ok(ctx, f"load {p}")
    res = ok(ctx, "run --target cuda --check --iterations 2")
    assert res.data["run"]["check"]["passed"], res.data["run"]["check"]


def test_torch_softmax_selected_fuses_and_reduces_in_kernels(ctx):
    """torch-mlir's softmax (a max that also yields its index, sub, exp, a sum, a divide: 5 generics
    and 3 fills): the selector's preparation fuses the elementwise ops and drops the unread index; the
    rest (max, exp, sum, divide) is one row chain: one fused kernel (tests/test_cuda_rows.py) instead of
    8 launches; both reductions stay marked for the single-reduction kernel too (the chain's fallback)."""
    ok(ctx, f"load {TORCH / 'softmax.mlir'}")
    ok(ctx, "target cuda")
    res = ok(ctx, "select --apply")
    assert sum("reduce.py" in e["schedule"] for e in res.data["selections"]) == 2, res.data["selections"]
    assert sum("rows.py" in e["schedule"] for e in res.data["selections"]) == 1, res.data["selections"]
    ok(ctx, "bench iterations=2")
    ok(ctx, "apply cuda-lower{chip=sm_90}")
    ir = ctx.session.current_ir
    assert _host_code(ir, "main").count("gpu.launch_func") == 1


def _generic(body: str, outs: int = 1) -> str:
    out_ty = ", ".join(["memref<4xf32>"] * outs)
    out_args = ", ".join(f"%o{i}" for i in range(outs))
    maps = ", ".join(["affine_map<(i, j) -> (i, j)>"] + ["affine_map<(i, j) -> (i)>"] * outs)
    return (f"func.func @f(%a: memref<4x64xf32>, {', '.join(f'%o{i}: memref<4xf32>' for i in range(outs))}) {{\n"
            f"  linalg.generic {{indexing_maps = [{maps}], iterator_types = [\"parallel\", \"reduction\"]}}\n"
            f"      ins(%a : memref<4x64xf32>) outs({out_args} : {out_ty}) {{\n{body}\n  }}\n  return\n}}\n")


@pytest.mark.parametrize("body,outs,why", [
    # var-style: a sum and a sum of squares, each combined with its own output
    ("  ^bb0(%x: f32, %s: f32, %q: f32):\n    %xx = arith.mulf %x, %x : f32\n    %s2 = arith.addf %x, %s : f32\n"
     "    %q2 = arith.addf %xx, %q : f32\n    linalg.yield %s2, %q2 : f32, f32", 2, ""),
    ("  ^bb0(%x: f32, %m: f32):\n    %m2 = arith.maximumf %m, %x : f32\n    linalg.yield %m2 : f32", 1, ""),
    # the output read again after its combiner: partial results would change the value
    ("  ^bb0(%x: f32, %s: f32):\n    %t = arith.addf %x, %s : f32\n    %u = arith.mulf %t, %s : f32\n"
     "    linalg.yield %u : f32", 1, "read outside its combiner"),
    ("  ^bb0(%x: f32, %s: f32):\n    %t = arith.subf %s, %x : f32\n    linalg.yield %t : f32", 1,
     "not combined by an associative op"),
    ("  ^bb0(%x: f32, %s: f32):\n    %y = arith.mulf %x, %s : f32\n    %t = arith.addf %y, %s : f32\n"
     "    linalg.yield %t : f32", 1, "read outside its combiner"),
])
def test_reduction_kernel_takes_only_combinable_bodies(body, outs, why):
    from mlir import ir

    from workbench.worker.cuda.reduce_kernels import ReduceKernelError, plan

    with ir.Context(), ir.Location.unknown():
        m = ir.Module.parse(_generic(body, outs))
        op = [o for o in m.body.operations[0].regions[0].blocks[0].operations if o.name == "linalg.generic"][0]
        if not why:
            p = plan(op.operation)
            assert len(p["combiners"]) == outs and p["ranges"] == [4, 64]
        else:
            with pytest.raises(ReduceKernelError, match=why):
                plan(op.operation)
