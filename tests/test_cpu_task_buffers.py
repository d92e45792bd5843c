"""lh-task-buffers-on-stack (workbench/worker/cpu/task_buffers.py): a forall chunk's scratch buffers on the
stack of its task, in cpu-lower after any multi-threaded schedule."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from conftest import matmul_payload, ok

CHUNK = """func.func private @use(memref<64x64xf32>)
func.func @f(%out: memref<2x64xf32>) {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %z = arith.constant 0.0 : f32
  scf.forall (%i) in (2) {{
{body}
  }}
  return
}}
"""
# a packing buffer read through a view, freed at the end of the chunk
PACK = """    %p = memref.alloc() {{alignment = 64 : i64}} : {t}
    %v = memref.subview %p[0, 0] [1, 64] [1, 1] : {t} to memref<64xf32, strided<[1]>>
    memref.store %z, %v[%c0] : memref<64xf32, strided<[1]>>
    %x = memref.load %v[%c0] : memref<64xf32, strided<[1]>>
    memref.store %x, %out[%i, %c0] : memref<2x64xf32>
    memref.dealloc %p : {t}"""


def _promote(body: str) -> tuple[int, str]:
    from mlir import ir

    from workbench.worker.cpu.task_buffers import promote_task_buffers

    with ir.Context():
        module = ir.Module.parse(CHUNK.format(body=body))
        n = promote_task_buffers(module)
        module.operation.verify()
        return n, str(module)


def test_a_chunk_scratch_buffer_goes_on_the_stack_and_is_not_freed():
    n, out = _promote(PACK.format(t="memref<64x64xf32>"))
    assert n == 1
    assert "memref.alloca() {alignment = 64 : i64} : memref<64x64xf32>" in out
    assert "memref.alloc()" not in out and "memref.dealloc" not in out


@pytest.mark.parametrize("body, why", [
    (PACK.format(t="memref<512x1024xf32>"), "2 MiB: more than one buffer may take"),
    ("    scf.for %j = %c0 to %c4 step %c1 {\n" + PACK.format(t="memref<64x64xf32>") + "\n    }",
     "in a loop inside the chunk: each trip would take more stack"),
    ("    %p = memref.alloc() : memref<64x64xf32>\n    func.call @use(%p) : (memref<64x64xf32>) -> ()",
     "passed to a call: its memory may outlive the chunk"),
])
def test_buffers_that_must_stay_on_the_heap_stay(body, why):
    n, out = _promote(body)
    assert n == 0, why
    assert "memref.alloca" not in out and "memref.alloc()" in out, why


def test_a_chunk_takes_at_most_four_mib_of_stack():
    bufs = "\n".join(PACK.format(t="memref<512x512xf32>").replace("%p", f"%p{k}").replace("%v", f"%v{k}")
                     .replace("%x", f"%x{k}") for k in range(5))   # five buffers of 1 MiB
    n, out = _promote(bufs)
    assert n == 4 and out.count("memref.alloca") == 4 and out.count("memref.alloc()") == 1


def test_the_selector_path_allocates_nothing_in_its_tasks(ctx, tmp_path):
    """select --apply on 2 threads, cpu-lower: the tasks of the forall make no malloc (they made two per
    chunk and call), and the result still matches."""
    ok(ctx, f"load {matmul_payload(tmp_path / 'mm.mlir', 256, 512, 256)}")
    ok(ctx, "target cpu --threads 2")
    ok(ctx, "bench iterations=2")
    ok(ctx, "select --apply")
    assert "scf.forall" in ctx.session.current_ir and "memref.alloc()" in ctx.session.current_ir
    ok(ctx, "apply cpu-lower")
    ir = ctx.session.current_ir
    tasks = re.findall(r"llvm\.func (?:internal |private )?@(?:parallel_compute_fn\w*|\w+_lh_par\d+)\(.*?\n  \}", ir, flags=re.S)
    assert tasks and not any("llvm.call @malloc" in t or "llvm.call @aligned_alloc" in t for t in tasks)
    assert any("llvm.alloca" in t for t in tasks)
    assert ok(ctx, "run --check --threads 2").data["run"]["check"]["passed"]
