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
