"""AMX kernels of other tile shapes in one function: each in a function of its own (lh-outline-loops).

LLVM configures the eight tmm registers once per function, one tile shape (rows x bytes) per register, and its
register allocator gives a tile only a register that is free or holds that shape. A chain of three bf16 1x1
convolutions over 8 -> 16 -> 32 -> 16 channels selects three AMX kernels of 4, 8 and 16 channel pairs per
product: A tiles of 16, 32 and 64 bytes a row, B tiles of 4, 8 and 16 rows. In one function they needed more
than eight registers and the JIT failed ("ran out of registers during register allocation in function
'main'"; the bf16 MobileNetV3 block of docs/models-round12-bf16.md failed so with two). Outlined, each kernel
gets its own tile configuration. The run needs an AMX host (skipped elsewhere); the lowering is checked for
the AMX machine model on any host."""
from __future__ import annotations

import re

import pytest

from conftest import ok


def _chain(channels: list[int], size: int = 16) -> str:
    """bf16 1x1 convolutions chained through `channels`, each result rounded to bf16."""
    args = ", ".join(f"%w{i}: tensor<{co}x{ci}x1x1xbf16>" for i, (ci, co) in enumerate(zip(channels, channels[1:])))
    lines = [f"func.func @main(%x: tensor<1x{channels[0]}x{size}x{size}xbf16>, {args}) -> "
             f"tensor<1x{channels[-1]}x{size}x{size}xbf16> {{", "  %z = arith.constant 0.0 : f32"]
    cur = "%x"
    ident = "affine_map<(a, b, c, d) -> (a, b, c, d)>"
    for i, (ci, co) in enumerate(zip(channels, channels[1:])):
        t, tb = f"tensor<1x{co}x{size}x{size}xf32>", f"tensor<1x{co}x{size}x{size}xbf16>"
        lines += [f"  %e{i} = tensor.empty() : {t}",
                  f"  %o{i} = linalg.fill ins(%z : f32) outs(%e{i} : {t}) -> {t}",
                  f"  %c{i} = linalg.conv_2d_nchw_fchw {{dilations = dense<1> : vector<2xi64>, strides = dense<1> : "
                  f"vector<2xi64>}} ins({cur}, %w{i} : tensor<1x{ci}x{size}x{size}xbf16>, tensor<{co}x{ci}x1x1xbf16>) "
                  f"outs(%o{i} : {t}) -> {t}",
                  f"  %eb{i} = tensor.empty() : {tb}",
                  f"  %b{i} = linalg.generic {{indexing_maps = [{ident}, {ident}], iterator_types = "
                  f"[\"parallel\", \"parallel\", \"parallel\", \"parallel\"]}} ins(%c{i} : {t}) outs(%eb{i} : {tb}) {{",
                  "  ^bb0(%v: f32, %u: bf16):",
                  "    %r = arith.truncf %v : f32 to bf16",
                  "    linalg.yield %r : bf16",
                  f"  }} -> {tb}"]
        cur = f"%b{i}"
    lines += [f"  return {cur} : tensor<1x{channels[-1]}x{size}x{size}xbf16>", "}"]
    return "\n".join(lines) + "\n"


CHAIN = _chain([8, 16, 32, 16])


def _host_has_amx() -> bool:
    from workbench.targets.cpu_host import host_machine

    return host_machine().amx


def _functions_with_tile_products(llvm_text: str) -> dict[str, int]:
    """llvm.func name -> how many tdpbf16ps it holds (those with any)."""
    counts: dict[str, int] = {}
    name = None
    for line in llvm_text.splitlines():
        m = re.match(r"\s*llvm\.func (?:\w+ )*@([\w$.]+)\(", line)
        if m:
            name = m.group(1)
        elif "llvm.x86.tdpbf16ps.internal" in line and name is not None:
            counts[name] = counts.get(name, 0) + 1
    return counts


def test_amx_kernels_of_one_function_are_lowered_each_in_a_noinline_function(ctx, tmp_path):
    payload = tmp_path / "chain.mlir"
    payload.write_text(CHAIN)
    ok(ctx, f"load {payload}")
    try:
        ok(ctx, "target cpu --cpu sapphirerapids --threads 1")
        ok(ctx, "select --apply")
        amx_steps = [a.step.params for a in ctx.session.active_steps if "conv_amx.py" in a.step.label()]
        assert sorted(p["tile_k"] for p in amx_steps) == [4, 8, 16], amx_steps
        ok(ctx, "bench warmup=1 iterations=2")
        ok(ctx, "apply cpu-lower")
        ir = ctx.session.current_ir
        kernels = _functions_with_tile_products(ir)
        # three functions of tile products, none of them main, each kept out of line
        assert len(kernels) == 3 and "main" not in kernels, kernels
        for name in kernels:
            (decl,) = [ln for ln in ir.splitlines() if re.match(rf"\s*llvm\.func (?:\w+ )*@{name}\(", ln)]
            assert "noinline" in decl, decl
    finally:
        ok(ctx, "target cpu --cpu host")


def test_one_amx_kernel_stays_in_its_function(ctx, tmp_path):
    payload = tmp_path / "one.mlir"
    payload.write_text(_chain([32, 16]))
    ok(ctx, f"load {payload}")
    try:
        ok(ctx, "target cpu --cpu sapphirerapids --threads 1")
        ok(ctx, "select --apply")
        ok(ctx, "bench warmup=1 iterations=2")
        ok(ctx, "apply cpu-lower")
        assert list(_functions_with_tile_products(ctx.session.current_ir)) == ["main"]
    finally:
        ok(ctx, "target cpu --cpu host")


@pytest.mark.skipif(not _host_has_amx(), reason="needs an AMX host (amx_tile in /proc/cpuinfo)")
def test_amx_kernels_of_three_tile_shapes_in_one_function_run_and_match(ctx, tmp_path):
    payload = tmp_path / "chain.mlir"
    payload.write_text(CHAIN)
    ok(ctx, f"load {payload}")
    ok(ctx, "target cpu --threads 1")
    ok(ctx, "select --apply")
    assert sum("conv_amx.py" in a.step.label() for a in ctx.session.active_steps) == 3
    ok(ctx, "bench warmup=1 iterations=2")
    ok(ctx, "apply cpu-lower")
    run = ok(ctx, "run --check --iterations 1 --warmup 0").data["run"]
    assert run["check"]["passed"], run


AMX_LOOPS = """func.func @f(%m: memref<16x64xbf16>, %n: memref<16x16xf32>, %r: memref<16x16xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  scf.for %i = %c0 to %c4 step %c1 {
    %z = amx.tile_zero : !amx.tile<16x16xf32>
    amx.tile_store %n[%c0, %c0], %z : memref<16x16xf32>, !amx.tile<16x16xf32>
  }
  %t = amx.tile_load %m[%c0, %c0] : memref<16x64xbf16> into !amx.tile<16x32xbf16>
  scf.for %i = %c0 to %c4 step %c1 {
    %a = amx.tile_load %m[%c0, %c0] : memref<16x64xbf16> into !amx.tile<16x32xbf16>
    %z = amx.tile_zero : !amx.tile<16x16xf32>
    %p = amx.tile_mulf %a, %t, %z : !amx.tile<16x32xbf16>, !amx.tile<16x32xbf16>, !amx.tile<16x16xf32>
    amx.tile_store %r[%c0, %c0], %p : memref<16x16xf32>, !amx.tile<16x16xf32>
  }
  scf.for %i = %c0 to %c4 step %c1 {
    %z = amx.tile_zero : !amx.tile<16x16xf32>
    amx.tile_store %r[%c0, %c0], %z : memref<16x16xf32>, !amx.tile<16x16xf32>
  }
  return
}
"""


def test_outlined_are_the_amx_loop_nests_that_read_no_tile_from_outside():
    from mlir import ir

    from workbench.worker.cpu.outline_loops import outline_loops

    with ir.Context(), ir.Location.unknown():
        module = ir.Module.parse(AMX_LOOPS)
        # AMX ops in four top-level ops: the first and last loops go out of line; the middle one reads the
        # tile loaded before it (a call cannot pass a tile) and stays, with that load
        assert outline_loops(module) == 2
        assert module.operation.verify()
        text = str(module)
        assert text.count("call @f_loop") == 2 and text.count("passthrough = [\"noinline\"]") == 2
        (f,) = [op for op in module.body.operations if ir.StringAttr(op.attributes["sym_name"]).value == "f"]
        assert str(f).count("amx.tile_mulf") == 1 and str(f).count("scf.for") == 1
        # one loop of AMX ops (another function's are its own): nothing to outline
        module = ir.Module.parse(AMX_LOOPS.split("  %t = amx")[0] + "  return\n}\n")
        assert outline_loops(module) == 0
