"""lh-drop-redundant-stream-syncs (workbench/worker/cuda/stream_syncs.py): a host synchronization of the
one stream goes only where a later one covers it with nothing but stream-safe host work between."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from conftest import ok
from cuda_helpers import ptx_of

ROOT = Path(__file__).resolve().parents[1]

HOST = """module {{
  llvm.func @lh_reused_gpu_stream() -> !llvm.ptr
  llvm.func @mgpuStreamSynchronize(!llvm.ptr)
  llvm.func @lh_cached_gpu_free(!llvm.ptr, !llvm.ptr, !llvm.ptr)
  llvm.func @k(%p: !llvm.ptr) {{
    %s = llvm.call @lh_reused_gpu_stream() : () -> !llvm.ptr
    llvm.call @mgpuStreamSynchronize(%s) : (!llvm.ptr) -> ()
    llvm.return
  }}
  llvm.func @main(%p: !llvm.ptr) -> i64 attributes {{llvm.emit_c_interface}} {{
    llvm.call @k(%p) : (!llvm.ptr) -> ()
    llvm.call @k(%p) : (!llvm.ptr) -> ()
{between}
    %v = llvm.load %p : !llvm.ptr -> i64
    %s = llvm.call @lh_reused_gpu_stream() : () -> !llvm.ptr
    llvm.call @mgpuStreamSynchronize(%s) : (!llvm.ptr) -> ()
    llvm.return %v : i64
  }}
}}
"""


def _syncs_left(text: str) -> dict[str, int]:
    from mlir import ir

    from workbench.worker.cuda.stream_syncs import drop_redundant_syncs

    with ir.Context():
        module = ir.Module.parse(text)
        drop_redundant_syncs(module)
        out = str(module)
    return {chunk.split("(")[0]: chunk.count("llvm.call @mgpuStreamSynchronize(")
            for chunk in out.split("llvm.func @")[1:]}


@pytest.mark.parametrize("between, kept_in_k", [
    ("", True),  # the host reads device data (an argument's memory) right after the second call
    ("    %t = llvm.call @lh_reused_gpu_stream() : () -> !llvm.ptr\n"
     "    llvm.call @mgpuStreamSynchronize(%t) : (!llvm.ptr) -> ()", False),  # main waits before it
    # a temporary's free (nothing for a kept one, else a cuMemFree, which waits for the device) before
    # main's synchronization: k's synchronization goes (a transpose kernel's function before a matmul)
    ("    %t = llvm.call @lh_reused_gpu_stream() : () -> !llvm.ptr\n"
     "    llvm.call @lh_cached_gpu_free(%p, %p, %t) : (!llvm.ptr, !llvm.ptr, !llvm.ptr) -> ()\n"
     "    llvm.call @mgpuStreamSynchronize(%t) : (!llvm.ptr) -> ()", False),
])
def test_a_sync_stays_where_the_host_touches_device_data_next(between, kept_in_k):
    left = _syncs_left(HOST.format(between=between))
    assert left["k"] == int(kept_in_k), left
    # main's own synchronizations before its load and its return stay (public function, device data)
    assert left["main"] == (2 if between else 1), left


def test_attention_kernels_run_back_to_back(ctx):
    """The f16 attention chain (two wgmma host functions and a row kernel): no host synchronization
    between its kernels, one before main returns; the benchmark wrapper still synchronizes."""
    ok(ctx, f"load {ROOT / 'tests/payloads/attention_f16/attention.mlir'}")
    ok(ctx, "target cuda")
    ok(ctx, "select --apply")
    ok(ctx, "bench")
    ok(ctx, "apply cuda-lower{chip=sm_90a}")
    ir = ctx.session.current_ir
    assert len(re.findall(r"\.entry (\w+)", ptx_of(ir))) == 3

    def calls(name):
        body = ir[ir.index(f"llvm.func @{name}("):]
        return re.findall(r"llvm\.call @(\w+)|gpu\.launch_func", body[:body.index("\n  }")])

    main = calls("main")
    kernels = [i for i, c in enumerate(main) if c.startswith("lh_wgmma_matmul") or c == ""]
    assert "mgpuStreamSynchronize" not in main[:kernels[-1]], main
    assert main[-1] == "mgpuStreamSynchronize", main
    assert "mgpuStreamSynchronize" in calls("_lh_bench")


LOOP = """module {{
  llvm.func @lh_reused_gpu_stream() -> !llvm.ptr
  llvm.func @mgpuStreamSynchronize(!llvm.ptr)
  llvm.func @k(%p: !llvm.ptr) {{
    %s = llvm.call @lh_reused_gpu_stream() : () -> !llvm.ptr
    llvm.call @mgpuStreamSynchronize(%s) : (!llvm.ptr) -> ()
    llvm.return
  }}
  llvm.func @main(%p: !llvm.ptr, %n: i64) -> i64 attributes {{llvm.emit_c_interface}} {{
    %c0 = llvm.mlir.constant(0 : i64) : i64
    %c1 = llvm.mlir.constant(1 : i64) : i64
    llvm.br ^head(%c0 : i64)
  ^head(%i: i64):
    %more = llvm.icmp "slt" %i, %n : i64
    llvm.cond_br %more, ^body, ^exit
  ^body:
    llvm.call @k(%p) : (!llvm.ptr) -> ()
    %next = llvm.add %i, %c1 : i64
    llvm.br ^head(%next : i64)
  ^exit:
{after}
    %v = llvm.load %p : !llvm.ptr -> i64
    llvm.return %v : i64
  }}
}}
"""


@pytest.mark.parametrize("after, kept_in_k", [
    ("    %t = llvm.call @lh_reused_gpu_stream() : () -> !llvm.ptr\n"
     "    llvm.call @mgpuStreamSynchronize(%t) : (!llvm.ptr) -> ()", False),  # every path reaches it
    ("", True),  # the exit path reads device data with nothing waiting first
])
def test_a_loop_of_calls_is_followed_through_its_branches(after, kept_in_k):
    left = _syncs_left(LOOP.format(after=after))
    assert left["k"] == int(kept_in_k), left


CHAIN = """module {
  llvm.func @lh_reused_gpu_stream() -> !llvm.ptr
  llvm.func @mgpuStreamSynchronize(!llvm.ptr)
  llvm.func @_lh_stream_sync()
  llvm.func @kernel_host(%p: !llvm.ptr) {
    %s = llvm.call @lh_reused_gpu_stream() : () -> !llvm.ptr
    llvm.call @mgpuStreamSynchronize(%s) : (!llvm.ptr) -> ()
    llvm.return
  }
  llvm.func @entry(%p: !llvm.ptr) attributes {llvm.emit_c_interface} {
    llvm.call @kernel_host(%p) : (!llvm.ptr) -> ()
    llvm.return
  }
  llvm.func @timed(%p: !llvm.ptr) {
    llvm.call @entry(%p) : (!llvm.ptr) -> ()
    llvm.call @entry(%p) : (!llvm.ptr) -> ()
    llvm.call @_lh_stream_sync() : () -> ()
    llvm.return
  }
  llvm.func @host_reads(%p: !llvm.ptr) -> i64 {
    llvm.call @entry(%p) : (!llvm.ptr) -> ()
    %v = llvm.load %p : !llvm.ptr -> i64
    llvm.return %v : i64
  }
}
"""


def test_calls_a_later_sync_covers_go_to_internal_copies_of_a_public_chain():
    """The public entry and its kernel's host function keep their synchronization for the caller that reads
    device data; the calls that the marker's synchronization covers go to copies without one."""
    from mlir import ir

    from workbench.worker.cuda.stream_syncs import drop_redundant_syncs

    with ir.Context():
        module = ir.Module.parse(CHAIN)
        drop_redundant_syncs(module)
        out = str(module)
    left = {chunk.split("(")[0]: chunk.count("llvm.call @mgpuStreamSynchronize(")
            for chunk in out.split("llvm.func ")[1:]}
    assert left["@kernel_host"] == 1 and left["internal @kernel_host_lh_chained"] == 0, left
    assert left["@timed"] == 1 and "_lh_stream_sync" not in out, left   # the marker became the sync
    assert out.count("llvm.call @entry_lh_chained(") == 2 and out.count("llvm.call @entry(") == 1, out
    assert "llvm.call @kernel_host_lh_chained(" in out
