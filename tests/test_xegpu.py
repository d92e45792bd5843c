"""The xegpu target: XeGPU schedule (upstream transform.xegpu.* ops), its lowering through the
upstream xegpu-* passes to subgroups, lanes and XeVM/LLVM, `export reproducer` of it, and `run`
failing with one clear line where there is no Intel GPU (issue 6)."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from workbench.targets import get_target
from conftest import ok

ROOT = Path(__file__).resolve().parents[1]
PAYLOAD = ROOT / "examples" / "matmul_f16.mlir"
SCHEDULE = "pipelines/xegpu/matmul.py[gen=xegpu_matmul]"


def test_schedule_maps_matmul_to_workgroup_xegpu_with_layouts(ctx):
    ok(ctx, f"load {PAYLOAD}")
    ok(ctx, f"apply {SCHEDULE}{{wg_m=128 wg_n=128 sg_m=32 sg_n=32}}")
    ir = ctx.session.current_ir
    # a kernel launched on a 2x2 grid of work-groups with 16 subgroups x 16 work-items each
    assert re.search(r"gpu.launch_func\s+@matmul_f16_kernel::@matmul_f16_kernel blocks in \(%c2, %c2, %c1\) "
                     r"threads in \(%c256, %c1, %c1\)", ir), ir[:2000]
    assert "#xevm.target" in ir
    kernel = ir[ir.index("gpu.module"):]
    assert "xegpu.dpas" in kernel and "xegpu.load_nd" in kernel and "xegpu.prefetch_nd" in kernel
    assert "vector.transfer_read" not in kernel
    # the layouts the transform.xegpu ops set: C / DPAS result, A and B operands of DPAS
    assert "layout_cd = #xegpu.layout<sg_layout = [4, 4], sg_data = [32, 32], inst_data = [8, 16]>" in kernel
    assert "layout_a = #xegpu.layout<sg_layout = [4, 4], sg_data = [32, 32], inst_data = [8, 16]>" in kernel
    assert "layout_b = #xegpu.layout<sg_layout = [4, 4], sg_data = [32, 32], inst_data = [16, 16]>" in kernel
    # anchor layouts on the loads/stores, the accumulator's load before the K loop included: what
    # xegpu-wg-to-sg-distribute types the loop's iter_arg by
    c_layout = "#xegpu.layout<sg_layout = [4, 4], sg_data = [32, 32], inst_data = [8, 16]>"
    acc_load = re.search(r"(%\w+) = xegpu.load_nd [^<]*<\{layout = " + re.escape(c_layout) + r"\}> .*-> vector<128x128xf32>",
                         kernel)
    assert acc_load and re.search(r"scf.for .* iter_args\(%\w+ = " + acc_load.group(1) + r"\)", kernel)
    assert re.search(r"xegpu.store_nd [^<]*<\{layout = " + re.escape(c_layout), kernel)


def test_schedule_parameters_reach_the_ir_and_are_checked(ctx):
    ok(ctx, f"load {PAYLOAD}")
    ok(ctx, f"apply {SCHEDULE}{{wg_m=64 wg_n=128 sg_m=32 sg_n=32 prefetch_b_k=16}}")
    ir = ctx.session.current_ir
    assert re.search(r"blocks in \(%c4, %c2, %c1\) threads in \(%c128, %c1, %c1\)", ir)
    assert "sg_layout = [2, 4]" in ir
    res = ctx.registry.dispatch("params 1 sg_m=48", ctx)
    assert not res.ok and "multiple of the subgroup tile" in (res.error + str(res.detail))


def test_selector_picks_the_xegpu_schedule_for_f16_matmuls():
    t = get_target("xegpu")
    info = {"ops": [{"op": "linalg.matmul", "dtype": "f16", "dims": {"m": 256, "n": 96, "k": 256}},
                    {"op": "linalg.matmul", "dtype": "f32", "dims": {"m": 8, "n": 8, "k": 8}}]}
    chosen = t.select_params(info)
    (spec, p), = chosen
    assert spec == "pipelines/xegpu/matmul.py[gen=xegpu_matmul]"
    assert 256 % p["wg_m"] == 0 and 96 % p["wg_n"] == 0


def _kernel(ir: str) -> str:
    return ir[ir.index("gpu.module"):]


def test_distribute_reaches_lane_level_xegpu(ctx):
    """xegpu-distribute (the XeGPU part of upstream's gpu-lower-to-xevm-pipeline): work-group tiles
    -> one 32x32 tile per subgroup -> DPAS/block-load instruction tiles -> the 16 lanes of a subgroup.
    The K loop carries the accumulator as 8 lane fragments (8x16 DPAS tiles, 8x1 per lane)."""
    ok(ctx, f"load {PAYLOAD}")
    ok(ctx, f"apply {SCHEDULE}")
    ok(ctx, "apply xegpu-distribute")
    kernel = _kernel(ctx.session.current_ir)
    assert "gpu.subgroup_id" in kernel                       # work-group -> subgroup offsets
    assert "sg_layout" not in kernel and "inst_data" not in kernel and "xegpu.convert_layout" not in kernel
    assert re.search(r"scf.for .* iter_args\(.*\) -> \(" + ", ".join(["vector<8x1xf32>"] * 8) + r"\)", kernel)
    dpas = re.findall(r"xegpu.dpas .*", kernel)
    assert len(dpas) == 16                                   # (32/8) x (32/16) x (32/16) per subgroup
    assert all(d.endswith(": vector<8xf16>, vector<16xf16>, vector<8xf32> -> vector<8xf32>") for d in dpas)
    # the load tiles the schedule asked for (load_a 32x16, load_b 32x16 VNNI-packed), per lane
    assert len(re.findall(r"xegpu.load_nd [^:<]*: !xegpu.tensor_desc<32x16xf16, [^>]*>> -> vector<32xf16>", kernel)) == 2
    assert len(re.findall(r"xegpu.load_nd [^:<]*<\{packed\}> : !xegpu.tensor_desc<32x16xf16, [^>]*>> -> vector<32xf16>",
                          kernel)) == 2
    assert len(re.findall(r"xegpu.store_nd [^:<]*: vector<8xf32>, !xegpu.tensor_desc<8x16xf32", kernel)) == 8


def test_lower_reaches_llvm_kernel_with_dpas_and_block_io(ctx):
    """xegpu-lower: lane-level XeGPU -> XeVM -> LLVM (SPIR-V flavoured: spir_kernelcc, OpenCL Intel
    subgroup builtins) inside the gpu.module; the host keeps its gpu.launch_func. gpu-module-to-binary
    (xegpu-binary) then needs LLVM's SPIR-V backend, which the pinned wheels lack: one clear line."""
    ok(ctx, f"load {PAYLOAD}")
    ok(ctx, f"apply {SCHEDULE}")
    ok(ctx, "apply xegpu-lower")
    ir = ctx.session.current_ir
    kernel = _kernel(ir)
    assert "gpu.launch_func" in ir[:ir.index("gpu.module")]
    assert "xegpu." not in kernel and not re.search(r"\bxevm\.(mma|blockload|blockstore|blockprefetch)", kernel)
    assert "llvm.func spir_kernelcc @matmul_f16_kernel" in kernel
    calls = re.findall(r"llvm.call spir_funccc @(\w+)", kernel)
    assert calls.count("_Z38intel_sub_group_f16_f16_matrix_mad_k16Dv8_sDv8_iDv8_f") == 16
    assert sum("intel_sub_group_2d_block_read_16b_32r16x1c" in c for c in calls) == 2
    assert sum("intel_sub_group_2d_block_read_transform_16b_32r16x1c" in c for c in calls) == 2
    assert sum("intel_sub_group_2d_block_write_32b_8r16x1c" in c for c in calls) == 8
    assert any("intel_sub_group_2d_block_prefetch" in c for c in calls)


def _spirv_translator() -> bool:
    import importlib.util
    import shutil

    return importlib.util.find_spec("dpcpp_llvm_spirv") is not None or shutil.which("llvm-spirv") is not None


@pytest.mark.skipif(not _spirv_translator(), reason="no llvm-spirv translator (pip install 'lh-workbench[xegpu]')")
def test_binary_is_a_spirv_module_with_the_kernel(ctx):
    """xegpu-binary: LLVM IR of the XeVM kernels -> llvm-as -> llvm-spirv -> gpu.binary of SPIR-V (the
    wheels have no SPIR-V backend for gpu-module-to-binary); the SYCL host plan finds the kernel in it."""
    ok(ctx, f"load {PAYLOAD}")
    ok(ctx, f"apply {SCHEDULE}")
    ok(ctx, "apply xegpu-lower")
    ok(ctx, "apply xegpu-binary")
    ir = ctx.session.current_ir
    assert "gpu.module" not in ir and "llvm.func spir_kernelcc" not in ir
    m = re.search(r'gpu.binary @matmul_f16_kernel\s+\[#gpu.object<#xevm.target<O = 3>, bin = "((?:\\[0-9A-F]{2}|\\\\|[^"\\])*)"', ir)
    assert m, ir[:2000]
    data = _unescape(m.group(1))
    assert data[:4] == b"\x03\x02\x23\x07" and len(data) > 1000    # SPIR-V magic, a real module
    assert b"matmul_f16_kernel" in data                              # its OpEntryPoint's name
    assert b"intel_sub_group_f16_f16_matrix_mad_k16" in data          # the DPAS builtin it calls
    assert "gpu.launch_func" in ir                                    # the host side is unchanged


def _unescape(text: str) -> bytes:
    out, i = bytearray(), 0
    while i < len(text):
        if text[i:i + 2] == "\\\\":           # an escaped backslash
            out.append(0x5C)
            i += 2
        elif text[i] == "\\":                 # \XX: a byte in hex
            out.append(int(text[i + 1:i + 3], 16))
            i += 3
        else:
            out += text[i].encode()
            i += 1
    return bytes(out)


def test_binary_without_a_translator_says_so_in_one_line(ctx, monkeypatch):
    monkeypatch.setenv("LH_WORKBENCH_LLVM_SPIRV", "/nonexistent/llvm-spirv")
    from workbench.session import Session

    s = Session()          # a worker started with the setting
    try:
        c = type(ctx)(s, ctx.registry)
        ok(c, f"load {PAYLOAD}")
        ok(c, f"apply {SCHEDULE}")
        ok(c, "apply xegpu-lower")
        res = c.registry.dispatch("apply xegpu-binary", c)
        assert not res.ok and "\n" not in res.error and "LH_WORKBENCH_LLVM_SPIRV" in res.error
        assert "gpu.module" in s.current_ir       # the failed step left the session as it was
    finally:
        s.close()


def test_export_reproducer_of_the_lowering(ctx, tmp_path):
    """`export reproducer`: the IR after the (Python) schedule plus the xegpu-lower passes; the wheel's
    mlir-opt, where present, replays it to the session's IR."""
    ok(ctx, f"load {PAYLOAD}")
    ok(ctx, f"apply {SCHEDULE}")
    ok(ctx, "apply xegpu-lower")
    out = tmp_path / "xegpu-repro.mlir"
    res = ok(ctx, f"export reproducer {out}")
    assert res.data["start_step"] == 1
    text = out.read_text()
    assert "xegpu-wg-to-sg-distribute" in text and "convert-xegpu-to-xevm" in text and "mlir_reproducer" in text
    assert "xegpu.dpas" in text                              # the input is the scheduled, work-group-level IR
    import mlir
    tool = Path(list(mlir.__path__)[0]) / "bin" / "mlir-opt"
    if not tool.exists():
        pytest.skip("the wheel's mlir-opt is not installed")
    import subprocess

    def canon(args, stdin=None):
        p = subprocess.run([str(tool), *args], input=stdin, capture_output=True, text=True, timeout=300)
        assert p.returncode == 0, p.stderr[-2000:]
        return p.stdout

    replayed = canon(["--run-reproducer", str(out)])
    assert canon(["-"], replayed) == canon(["-"], ctx.session.current_ir)


def test_run_without_intel_gpu_fails_with_one_clear_line(ctx):
    ok_, why = get_target("xegpu").can_run()
    if ok_:
        pytest.skip(f"an Intel GPU is present: {why}")
    ok(ctx, f"load {PAYLOAD}")
    ok(ctx, f"apply {SCHEDULE}")
    res = ctx.registry.dispatch("run --target xegpu --iterations 1", ctx)
    assert not res.ok and "\n" not in res.error
    assert res.error.startswith("target xegpu cannot run here: ")
    assert ("no Intel GPU SYCL device (dpctl.get_devices(device_type='gpu')" in res.error
            or "dpctl is not installed" in res.error)
