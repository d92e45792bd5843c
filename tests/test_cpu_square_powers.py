"""The CPU fusion step makes `math.powf %x, 2.0` (torch's `x.pow(2.0)`, the weight norm of Wav2Vec2's /
Hubert's positional convolution) a multiplication: LLVM called libm's powf per element (0.083 ms of
Wav2Vec2's 1.16 ms, one Zen 4 thread). Other exponents stay powf."""
from __future__ import annotations

from conftest import ok

PAYLOAD = """#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
func.func @main(%x: tensor<16x64xf32>, %p: tensor<16x64xf32>) -> (tensor<16xf32>, tensor<16x64xf32>) {
  %two = arith.constant 2.0 : f32
  %three = arith.constant 3.0 : f32
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<16xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<16xf32>) -> tensor<16xf32>
  %sq = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]} ins(%x : tensor<16x64xf32>) outs(%z : tensor<16xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %m = math.absf %a : f32
    %s = math.powf %m, %two : f32
    %r = arith.addf %s, %acc : f32
    linalg.yield %r : f32
  } -> tensor<16xf32>
  %e2 = tensor.empty() : tensor<16x64xf32>
  %o = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]} ins(%x, %p : tensor<16x64xf32>, tensor<16x64xf32>) outs(%e2 : tensor<16x64xf32>) {
  ^bb0(%a: f32, %b: f32, %c: f32):
    %m = math.absf %a : f32
    %c3 = math.powf %m, %three : f32
    %v = math.powf %m, %b : f32
    %r = arith.addf %c3, %v : f32
    linalg.yield %r : f32
  } -> tensor<16x64xf32>
  return %sq, %o : tensor<16xf32>, tensor<16x64xf32>
}
"""


def test_square_powers_become_multiplications_and_match(ctx, tmp_path):
    """powf(|x|, 2.0) -> |x| * |x| (the sum of squares no longer calls powf); powf(|x|, 3.0) and
    powf(|x|, p) stay; the selector path's run matches the unscheduled payload on 1 thread."""
    path = tmp_path / "powers.mlir"
    path.write_text(PAYLOAD)
    ok(ctx, f"load {path}")
    ok(ctx, "apply pass lh-fuse-elementwise")
    text = ctx.session.current_ir
    assert text.count("math.powf") == 2, text
    reduction = text[text.index('"reduction"'):]
    reduction = reduction[:reduction.index("} ->")]
    assert "math.powf" not in reduction and "arith.mulf" in reduction, reduction
    ok(ctx, f"load {path}")
    ok(ctx, "target cpu --threads 1")
    ok(ctx, "select --apply")
    ok(ctx, "bench warmup=1 iterations=2")
    ok(ctx, "apply cpu-lower")
    run = ok(ctx, "run --check --threads 1").data["run"]
    assert run["check"]["passed"], run["check"]
