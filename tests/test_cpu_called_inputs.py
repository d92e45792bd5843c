"""An op whose input is a call's result (the last step of an outlined stack of layers, lh-outline-repeated-steps,
its result read directly): transform.structured.fuse, which init_registers tiles the output with, clones the call
into every register tile (a call is no op that canonicalization may erase), so char_rnn_lm's last LSTM step ran
once more per 32 columns of its 1 x 1024 gate matmul. The selector leaves init_registers off there
(cpu_selector.CLONED_INPUTS); the same op reading a block argument keeps it."""
from __future__ import annotations

import pytest

from conftest import ok

STEP = """
  func.func private @step(%h: tensor<1x256xf32>) -> tensor<1x256xf32> {
    %e = tensor.empty() : tensor<1x256xf32>
    %r = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>],
        iterator_types = ["parallel", "parallel"]} ins(%h : tensor<1x256xf32>) outs(%e : tensor<1x256xf32>) {
    ^bb0(%in: f32, %out: f32):
      %t = math.tanh %in : f32
      linalg.yield %t : f32
    } -> tensor<1x256xf32>
    return %r : tensor<1x256xf32>
  }
"""


def _payload(called: bool) -> str:
    """main: a call of @step on x (or x itself) times w (256 x 256: within
    either L2, where a vector-matrix product keeps init_registers: cpu_selector.streams_an_input_across_rows),
    from a zero fill."""
    source = "%h = func.call @step(%x) : (tensor<1x256xf32>) -> tensor<1x256xf32>" if called else ""
    value = "%h" if called else "%x"
    return f"""module {{{STEP if called else ""}
  func.func @main(%x: tensor<1x256xf32>, %w: tensor<256x256xf32>) -> tensor<1x256xf32> {{
    %cst = arith.constant 0.000000e+00 : f32
    {source}
    %e = tensor.empty() : tensor<1x256xf32>
    %f = linalg.fill ins(%cst : f32) outs(%e : tensor<1x256xf32>) -> tensor<1x256xf32>
    %m = linalg.matmul ins({value}, %w : tensor<1x256xf32>, tensor<256x256xf32>) outs(%f : tensor<1x256xf32>) -> tensor<1x256xf32>
    return %m : tensor<1x256xf32>
  }}
}}
"""


def _matmul_params(ctx) -> dict:
    (params,) = [s["params"] for s in ok(ctx, "select --apply").data["selections"]
                 if "matmul" in str(s["params"].get("op", ""))]
    return params


@pytest.mark.parametrize("cpu", ["zen3", "skylake-avx512"])
def test_a_called_input_leaves_the_init_out_of_the_register_tiles(ctx, tmp_path, cpu):
    """Both ISAs: with the call, no init_registers and one call in main after the selection; reading the
    argument, init_registers as before."""
    for called in (True, False):
        payload = tmp_path / f"called{int(called)}.mlir"
        payload.write_text(_payload(called))
        ok(ctx, f"load {payload}")
        try:
            ok(ctx, f"target cpu --threads 1 --cpu {cpu}")
            params = _matmul_params(ctx)
            assert bool(params.get("init_registers")) is not called, params
            if called:
                assert ctx.session.current_ir.count("call @step(") == 1, ctx.session.current_ir
        finally:
            ok(ctx, "target cpu --cpu host --threads 0")


def test_a_called_input_runs_once_and_matches(ctx, tmp_path):
    """The host's ISA: the call once in main after the selection (the clone of a call that writes no argument
    is erased by cpu-lower; one with destination arguments, as an outlined layer's, stayed), lowered, run --check
    passes."""
    payload = tmp_path / "called.mlir"
    payload.write_text(_payload(True))
    ok(ctx, f"load {payload}")
    try:
        ok(ctx, "target cpu --threads 1")
        ok(ctx, "select --apply")
        assert ctx.session.current_ir.count("call @step(") == 1, ctx.session.current_ir
        ok(ctx, "bench warmup=1 iterations=2")
        ok(ctx, "apply cpu-lower")
        assert ctx.session.current_ir.count("llvm.call @step(") == 1
        assert ok(ctx, "run --check --iterations 1 --warmup 0 --threads 1").data["run"]["check"]["passed"]
    finally:
        ok(ctx, "target cpu --cpu host --threads 0")


def test_the_selector_rule_on_a_called_input():
    """cpu_selector.init_registers: an input that a func.call defines: {}."""
    from workbench.targets.cpu_selector import init_registers

    ops = [{"op": "linalg.fill", "consumers": [1], "other_uses": False},
           {"op": "linalg.matmul", "producers": [-1, -1, 0],
            "loops": {"num_inputs": 2, "iterators": ["parallel", "parallel", "reduction"],
                      "domain": [1, 1024, 256], "operand_dims": [[0, 2], [2, 1], [0, 1]]}}]
    params = {"fold_unit_dims": 1, "tile": [1, 32, 1], "threads": 1}
    ops[1]["operand_owners"] = ["func.call", "arith.constant", "linalg.fill"]
    assert init_registers(ops[1], ops, params) == {}
    ops[1]["operand_owners"] = ["", "arith.constant", "linalg.fill"]
    assert init_registers(ops[1], ops, params)["init_registers"] == 1
