"""lh-cache-gpu-temporaries (workbench/worker/cuda/cached_allocs.py): which alloc/free pairs it
keeps, and what the kept-buffer helpers do when run (on the CPU, against a stand-in runtime that
counts its allocations and frees)."""
from __future__ import annotations

import ctypes

import pytest

# a stand-in for the CUDA runtime's mgpuMemAlloc / mgpuMemFree: a fresh address per allocation,
# counters of both; @temp is a host function with a same-block pair (kept), @escapes frees in another
# block (left alone), @_lh_bench is the wrapper (left alone)
MODULE = """
llvm.mlir.global internal @allocs(0 : i64) {addr_space = 0 : i32} : i64
llvm.mlir.global internal @frees(0 : i64) {addr_space = 0 : i32} : i64
llvm.func @mgpuMemAlloc(%size: i64, %stream: !llvm.ptr, %shared: i8) -> !llvm.ptr {
  %at = llvm.mlir.addressof @allocs : !llvm.ptr
  %n = llvm.load %at : !llvm.ptr -> i64
  %one = llvm.mlir.constant(1 : i64) : i64
  %n1 = llvm.add %n, %one : i64
  llvm.store %n1, %at : i64, !llvm.ptr
  %page = llvm.mlir.constant(4096 : i64) : i64
  %addr = llvm.mul %n1, %page : i64
  %p = llvm.inttoptr %addr : i64 to !llvm.ptr
  llvm.return %p : !llvm.ptr
}
llvm.func @mgpuMemFree(%p: !llvm.ptr, %stream: !llvm.ptr) {
  %at = llvm.mlir.addressof @frees : !llvm.ptr
  %n = llvm.load %at : !llvm.ptr -> i64
  %one = llvm.mlir.constant(1 : i64) : i64
  %n1 = llvm.add %n, %one : i64
  llvm.store %n1, %at : i64, !llvm.ptr
  llvm.return
}
llvm.func @temp(%size: i64) -> i64 {
  %null = llvm.mlir.zero : !llvm.ptr
  %c0 = llvm.mlir.constant(0 : i8) : i8
  %p = llvm.call @mgpuMemAlloc(%size, %null, %c0) : (i64, !llvm.ptr, i8) -> !llvm.ptr
  %a = llvm.ptrtoint %p : !llvm.ptr to i64
  llvm.call @mgpuMemFree(%p, %null) : (!llvm.ptr, !llvm.ptr) -> ()
  llvm.return %a : i64
}
llvm.func @escapes(%size: i64) -> i64 {
  %null = llvm.mlir.zero : !llvm.ptr
  %c0 = llvm.mlir.constant(0 : i8) : i8
  %p = llvm.call @mgpuMemAlloc(%size, %null, %c0) : (i64, !llvm.ptr, i8) -> !llvm.ptr
  llvm.br ^later
^later:
  llvm.call @mgpuMemFree(%p, %null) : (!llvm.ptr, !llvm.ptr) -> ()
  %a = llvm.ptrtoint %p : !llvm.ptr to i64
  llvm.return %a : i64
}
llvm.func @_lh_bench(%size: i64) {
  %null = llvm.mlir.zero : !llvm.ptr
  %c0 = llvm.mlir.constant(0 : i8) : i8
  %p = llvm.call @mgpuMemAlloc(%size, %null, %c0) : (i64, !llvm.ptr, i8) -> !llvm.ptr
  llvm.call @mgpuMemFree(%p, %null) : (!llvm.ptr, !llvm.ptr) -> ()
  llvm.return
}
llvm.func @counts() -> i64 {
  %a = llvm.mlir.addressof @allocs : !llvm.ptr
  %f = llvm.mlir.addressof @frees : !llvm.ptr
  %na = llvm.load %a : !llvm.ptr -> i64
  %nf = llvm.load %f : !llvm.ptr -> i64
  %k = llvm.mlir.constant(1000 : i64) : i64
  %hi = llvm.mul %na, %k : i64
  %both = llvm.add %hi, %nf : i64
  llvm.return %both : i64
}
"""


def _cached(max_mib: int):
    from mlir import ir

    from workbench.worker.cuda.cached_allocs import cache_temporaries

    ctx = ir.Context()
    with ctx, ir.Location.unknown():
        module = ir.Module.parse(MODULE)
        kept = cache_temporaries(module, max_mib)
        module.operation.verify()
    return ctx, module, kept


def test_only_same_block_pairs_outside_the_wrapper_are_kept():
    ctx, module, kept = _cached(1)
    with ctx:
        text = str(module)
    assert kept == 1
    temp = text[text.index("llvm.func @temp("):text.index("llvm.func @escapes(")]
    escapes = text[text.index("llvm.func @escapes("):text.index("llvm.func @_lh_bench(")]
    bench = text[text.index("llvm.func @_lh_bench("):text.index("llvm.func @counts(")]
    assert "@lh_cached_gpu_alloc(" in temp and "@lh_cached_gpu_free(" in temp and "@mgpuMem" not in temp
    assert "@lh_cached" not in escapes and "@mgpuMemAlloc(" in escapes
    assert "@lh_cached" not in bench and "@mgpuMemFree(" in bench


@pytest.mark.parametrize("max_mib", [1, 0])
def test_kept_buffer_is_allocated_once_and_never_freed(max_mib):
    """Run @temp three times: with room for the buffer (1 MiB) one allocation serves every call and
    no free happens; a larger request than the kept size allocates and frees its own; with no room
    (0 MiB) every call allocates and frees as before."""
    from mlir import execution_engine

    ctx, module, _ = _cached(max_mib)
    with ctx:
        engine = execution_engine.ExecutionEngine(module, opt_level=0)

    def call(name: str, *args: int) -> int:
        """The engine's packed entry of `name`: one array of pointers, to each argument and the result."""
        values = [ctypes.c_int64(a) for a in args] + [ctypes.c_int64()]
        packed = (ctypes.c_void_p * len(values))(*[ctypes.cast(ctypes.pointer(v), ctypes.c_void_p) for v in values])
        ctypes.CFUNCTYPE(None, ctypes.c_void_p)(engine.raw_lookup(name))(packed)
        return values[-1].value

    first, second, third = (call("temp", 1024) for _ in range(3))
    if max_mib:
        assert first == second == third
        assert divmod(call("counts"), 1000) == (1, 0)
        bigger = call("temp", 4096)
        assert bigger != first and divmod(call("counts"), 1000) == (2, 1)
        assert call("temp", 512) == first
    else:
        assert len({first, second, third}) == 3
        assert divmod(call("counts"), 1000) == (3, 3)
