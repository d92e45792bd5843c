"""Programs: an entry that takes and returns nothing and prints its results (upstream's integration
tests: @main allocates, calls the kernel, printMemrefF32). `run` calls it once for what it prints (the
timed calls' prints discarded), shows it, and `run --check` compares it with what the unscheduled
payload prints; a payload that frees its own buffers lowers (the deallocation pipeline is skipped)."""
from __future__ import annotations

from pathlib import Path

from conftest import ok
from cuda_helpers import needs_gpu

PAYLOADS = Path(__file__).parent / "payloads"


def test_memref_program_prints_its_result_and_is_checked(ctx):
    ok(ctx, f"load {PAYLOADS / 'program_memref.mlir'}")
    ok(ctx, "apply pipelines/lib/tile.mlir")   # a schedule on the kernel the program calls
    res = ok(ctx, "run --check --iterations 3")
    run = res.data["run"]
    # row 0: 7*2 + 3*1.5*2 = 23; rows 1, 2: 4*1.5*2 = 12
    assert "[[23,   23]," in run["stdout"] and run["stdout"].count("[12,   12]") == 2, run["stdout"]
    assert run["stdout"].count("Unranked Memref") == 1      # the plain call's print only
    assert run["check"]["passed"] and run["check"]["compared"] == "stdout"
    assert "printed by @main" in res.body and "printed output" in res.summary


def test_tensor_program_after_a_schedule_prints_the_same(ctx):
    ok(ctx, f"load {PAYLOADS / 'program_tensor.mlir'}")
    res = ok(ctx, "select --apply")      # the selector schedules the program's matmul
    assert any("matmul" in e["schedule"] for e in res.data["selections"])
    run = ok(ctx, "run --check --iterations 2").data["run"]
    assert "[121,   124,   127]" in run["stdout"] and "[147,   154,   161]" in run["stdout"], run["stdout"]
    assert run["check"]["passed"]


def test_printed_outputs_compare_line_by_line_without_addresses():
    from workbench.run_session import compare_printed

    a = "Unranked Memref base@ = 0x55aa rank = 1 data =\n[1,  2]\n"
    assert compare_printed(a, a.replace("0x55aa", "0x7f00"))["passed"]
    bad = compare_printed(a.replace("[1,  2]", "[1,  3]"), a)
    assert not bad["passed"] and "line 2" in bad["mismatch"] and "[1,  3]" in bad["mismatch"]
    assert not compare_printed(a, a + "[9]\n")["passed"]


def test_cuda_program_prints_host_copies_of_device_buffers(ctx):
    """On cuda, payload buffers live on the device: a host function the program calls (printMemrefF32)
    gets a host copy (malloc, a device-to-host memcpy, free after the call), not a device pointer."""
    import re

    ok(ctx, f"load {PAYLOADS / 'program_tensor.mlir'}")
    ok(ctx, "target cuda")
    ok(ctx, "apply cuda-lower{chip=sm_90a}")
    text = ctx.session.current_ir
    main = re.search(r"llvm\.func @main\(.*?\n  \}", text, re.S).group(0)
    calls = re.findall(r"llvm\.call @(\w+)", main)
    at = calls.index("printMemrefF32")
    assert calls[at - 1] == "mgpuStreamSynchronize" and "mgpuMemcpy" in calls[at - 3:at], calls
    assert "malloc" in calls[:at] and calls[at + 1] == "free", calls


@needs_gpu
def test_cuda_program_runs_and_prints_what_the_reference_prints(ctx):
    """On the GPU: the program's matmul runs as kernels, its print reads the host copy, and `run --check`
    compares the printed lines with the CPU reference's."""
    ok(ctx, f"load {PAYLOADS / 'program_tensor.mlir'}")
    ok(ctx, "target cuda")
    res = ok(ctx, "run --check --iterations 2")
    run = res.data["run"]
    assert "[121,   124,   127]" in run["stdout"] and "[147,   154,   161]" in run["stdout"], run["stdout"]
    assert run["check"]["passed"] and run["check"]["compared"] == "stdout"
