"""`lh-outline-loops`: a function with many top-level loop nests (an unrolled model) gets each nest
in a noinline function of its own, so LLVM compiles many small functions instead of one giant one;
the results stay the same."""
from __future__ import annotations

from conftest import ok


def _chain(path, ops: int, n: int = 64):
    """A chain of `ops` elementwise ops (x * 1.01 + 0.5 each) on a tensor of n x n."""
    t = f"tensor<{n}x{n}xf32>"
    lines = ["#id = affine_map<(d0, d1) -> (d0, d1)>",
             f"func.func @main(%x: {t}) -> {t} {{",
             "  %a = arith.constant 1.01 : f32", "  %b = arith.constant 0.5 : f32",
             f"  %e = tensor.empty() : {t}"]
    prev = "%x"
    for i in range(ops):
        lines += [f"  %v{i} = linalg.generic {{indexing_maps = [#id, #id], iterator_types = [\"parallel\", \"parallel\"]}}"
                  f" ins({prev} : {t}) outs(%e : {t}) {{",
                  "  ^bb0(%in: f32, %o: f32):",
                  "    %m = arith.mulf %in, %a : f32", "    %s = arith.addf %m, %b : f32", "    linalg.yield %s : f32",
                  f"  }} -> {t}"]
        prev = f"%v{i}"
    lines += [f"  return {prev} : {t}", "}"]
    path.write_text("\n".join(lines) + "\n")
    return path


def test_many_loop_nests_are_outlined_and_still_match(ctx, tmp_path):
    ok(ctx, f"load {_chain(tmp_path / 'chain.mlir', 12)}")
    ok(ctx, "bench warmup=0 iterations=1")
    ok(ctx, "apply pipelines/lib/bufferize.mlir")
    ok(ctx, "pass func.func(convert-linalg-to-loops)")
    before = ctx.session.current_ir
    assert before.count("scf.for") >= 12 and "_loop" not in before
    # fewer top-level loops than min-loops: nothing changes
    ok(ctx, "pass lh-outline-loops{min-loops=100}")
    assert "main_loop" not in ctx.session.current_ir
    ok(ctx, "undo")
    ok(ctx, "pass lh-outline-loops{min-loops=8}")
    ir = ctx.session.current_ir
    outlined = [line for line in ir.splitlines() if "func.func" in line and "@main_loop" in line]
    assert len(outlined) == 12, outlined   # one function per top-level loop nest of @main
    assert all('passthrough = ["noinline"]' in line for line in outlined)
    assert ir.count("call @main_loop") == 12
    assert "lh.outline" not in ir           # the marks are gone
    ok(ctx, "apply cpu-lower")
    assert "noinline" in ctx.session.current_ir    # kept through the LLVM lowering
    assert ok(ctx, "run --check").data["run"]["check"]["passed"]


def test_the_cpu_lowering_outlines_a_whole_model_and_leaves_small_functions_alone(ctx, tmp_path):
    """cpu-lower (through lib/llvm-lowering.yaml) outlines a function of 64+ loop nests by itself; a
    function of a few keeps them inline."""
    ok(ctx, f"load {_chain(tmp_path / 'long.mlir', 70, n=8)}")
    ok(ctx, "bench warmup=0 iterations=1")
    ok(ctx, "apply cpu-lower")
    ir = ctx.session.current_ir
    assert sum(1 for line in ir.splitlines() if "llvm.func" in line and "@main_loop" in line) == 70
    assert ok(ctx, "run --check").data["run"]["check"]["passed"]
    ok(ctx, f"load {_chain(tmp_path / 'short.mlir', 3, n=8)}")
    ok(ctx, "bench warmup=0 iterations=1")
    ok(ctx, "apply cpu-lower")
    assert "@main_loop" not in ctx.session.current_ir
