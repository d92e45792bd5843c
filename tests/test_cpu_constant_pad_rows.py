"""A convolution's constant pad as one pass of row copies (`lh-constant-pad-rows`, pad_copies.constant_pad_rows):
a `tensor.pad` with one value bufferized as a fill of the whole padded buffer and then a copy of the source into
it (two passes, the interior written twice); rewritten, each padded row is written once: a border row as vectors
of the value, an interior row as the value around the source row's vector copies. Checked against the payload
before the rewrite (`run --check`) on 1 and 2 threads, through the pass alone and through the CPU selector."""
from __future__ import annotations

import pytest

from conftest import ok


def _pad(shape: list[int], low: list[int], high: list[int], value: str = "0.0", et: str = "f32") -> str:
    out = [s + a + b for s, a, b in zip(shape, low, high)]
    t_in = f"tensor<{'x'.join(map(str, shape))}x{et}>"
    t_out = f"tensor<{'x'.join(map(str, out))}x{et}>"
    args = ", ".join(f"%i{k}: index" for k in range(len(shape)))
    return f"""func.func @main(%x: {t_in}) -> {t_out} {{
  %v = arith.constant {value} : {et}
  %p = tensor.pad %x low{low} high{high} {{
  ^bb0({args}):
    tensor.yield %v : {et}
  }} : {t_in} to {t_out}
  return %p : {t_out}
}}
"""


def _depthwise(n: int, c: int, h: int, w: int, pad: int) -> str:
    hp, wp, oh, ow = h + 2 * pad, w + 2 * pad, h + 2 * pad - 2, w + 2 * pad - 2
    return f"""func.func @main(%x: tensor<{n}x{c}x{h}x{w}xf32>, %k: tensor<{c}x3x3xf32>) -> tensor<{n}x{c}x{oh}x{ow}xf32> {{
  %z = arith.constant 0.0 : f32
  %p = tensor.pad %x low[0, 0, {pad}, {pad}] high[0, 0, {pad}, {pad}] {{
  ^bb0(%i0: index, %i1: index, %i2: index, %i3: index):
    tensor.yield %z : f32
  }} : tensor<{n}x{c}x{h}x{w}xf32> to tensor<{n}x{c}x{hp}x{wp}xf32>
  %e = tensor.empty() : tensor<{n}x{c}x{oh}x{ow}xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<{n}x{c}x{oh}x{ow}xf32>) -> tensor<{n}x{c}x{oh}x{ow}xf32>
  %r = linalg.depthwise_conv_2d_nchw_chw {{dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>}}
       ins(%p, %k : tensor<{n}x{c}x{hp}x{wp}xf32>, tensor<{c}x3x3xf32>) outs(%f : tensor<{n}x{c}x{oh}x{ow}xf32>) -> tensor<{n}x{c}x{oh}x{ow}xf32>
  return %r : tensor<{n}x{c}x{oh}x{ow}xf32>
}}
"""


def _conv3x3(n: int, c: int, f: int, h: int, w: int) -> str:
    return f"""func.func @main(%x: tensor<{n}x{c}x{h}x{w}xf32>, %k: tensor<{f}x{c}x3x3xf32>) -> tensor<{n}x{f}x{h}x{w}xf32> {{
  %z = arith.constant 0.0 : f32
  %p = tensor.pad %x low[0, 0, 1, 1] high[0, 0, 1, 1] {{
  ^bb0(%i0: index, %i1: index, %i2: index, %i3: index):
    tensor.yield %z : f32
  }} : tensor<{n}x{c}x{h}x{w}xf32> to tensor<{n}x{c}x{h + 2}x{w + 2}xf32>
  %e = tensor.empty() : tensor<{n}x{f}x{h}x{w}xf32>
  %o = linalg.fill ins(%z : f32) outs(%e : tensor<{n}x{f}x{h}x{w}xf32>) -> tensor<{n}x{f}x{h}x{w}xf32>
  %r = linalg.conv_2d_nchw_fchw {{dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>}}
       ins(%p, %k : tensor<{n}x{c}x{h + 2}x{w + 2}xf32>, tensor<{f}x{c}x3x3xf32>) outs(%o : tensor<{n}x{f}x{h}x{w}xf32>) -> tensor<{n}x{f}x{h}x{w}xf32>
  return %r : tensor<{n}x{f}x{h}x{w}xf32>
}}
"""


PADS = [
    # (shape, low, high, value): odd rows, a pad on one side only, wider pads, a value other than zero
    ([2, 8, 15, 15], [0, 0, 1, 1], [0, 0, 1, 1], "0.0"),
    ([2, 8, 9, 21], [0, 0, 0, 2], [0, 0, 3, 1], "-3.5"),
    ([1, 4, 7, 200], [0, 0, 2, 5], [0, 0, 1, 7], "0.0"),          # rows of 200: the copy as a loop of vectors
    ([2, 4, 6, 6, 7], [0, 0, 1, 1, 1], [0, 0, 1, 2, 0], "1.0"),   # a 3-D convolution's input
    ([3, 4, 33, 17], [0, 0, 3, 0], [0, 0, 0, 0], "0.0"),          # rows only (no border in the rows)
]


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("case", range(len(PADS)))
def test_constant_pads_become_row_copies_and_match(ctx, tmp_path, case, threads):
    shape, low, high, value = PADS[case]
    payload = tmp_path / "pad.mlir"
    payload.write_text(_pad(shape, low, high, value))
    ok(ctx, f"load {payload}")
    try:
        ok(ctx, f"target cpu --threads {threads}")
        ok(ctx, f"pass lh-constant-pad-rows{{lanes=16 threads={threads}}}")
        text = ok(ctx, "show 1").body
        assert "tensor.pad" not in text and "vector.transfer_write" in text, text
        assert ("scf.forall" in text) == (threads > 1)
        ok(ctx, "apply cpu-lower")
        assert ok(ctx, "run --check --iterations 1 --warmup 0").data["run"]["check"]["passed"]
    finally:
        ok(ctx, "target cpu --threads 0")


@pytest.mark.parametrize("text", [
    _pad([64, 64], [0, 0], [0, 16]),                  # a matmul operand's padded columns: its packing reads it
    _pad([2, 3, 40, 40], [0, 1, 1, 1], [0, 0, 1, 1]),  # the channels padded too
    _pad([1, 1, 4, 4], [0, 0, 1, 1], [0, 0, 1, 1]),    # small: no pass over memory
])
def test_other_pads_are_left_as_they_are(ctx, tmp_path, text):
    payload = tmp_path / "pad.mlir"
    payload.write_text(text)
    ok(ctx, f"load {payload}")
    ok(ctx, "pass lh-constant-pad-rows")
    assert "tensor.pad" in ok(ctx, "show 1").body


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("kind", ["depthwise", "depthwise_pad2", "conv3x3_planes"])
def test_the_selector_writes_a_convs_pad_as_rows(ctx, tmp_path, monkeypatch, kind, threads):
    from workbench.targets import cpu_selector

    monkeypatch.setattr(cpu_selector, "MIN_PARALLEL_WORK", 0)
    text = {"depthwise": _depthwise(2, 24, 15, 15, 1), "depthwise_pad2": _depthwise(3, 16, 12, 20, 2),
            # (28-wide rows: lh-conv-planes widens the pad by a row, the constant made in its region)
            "conv3x3_planes": _conv3x3(2, 8, 16, 13, 28)}[kind]
    payload = tmp_path / "conv.mlir"
    payload.write_text(text)
    ok(ctx, f"load {payload}")
    try:
        ok(ctx, f"target cpu --threads {threads}")
        prepared = ok(ctx, "select --apply").data["prepared"]
        assert any(s.startswith("pass lh-constant-pad-rows{") for s in prepared), prepared
        assert "tensor.pad" not in ok(ctx, f"show {len(prepared)}").body   # (after the preparation)
        ok(ctx, "bench warmup=1 iterations=2")
        ok(ctx, "apply cpu-lower")
        assert ok(ctx, "run --check --iterations 1 --warmup 0").data["run"]["check"]["passed"]
    finally:
        ok(ctx, "target cpu --threads 0")


@pytest.mark.parametrize("name", ["conv2d_3x3", "conv2d_depthwise", "conv_block", "resnet18"])
def test_torch_fixtures_with_their_pads_as_rows_match_torch(ctx, name):
    """The corpus exports (test shapes: pads under the default 4096 elements, so `min-elements=0`), their pads
    rewritten, then the CPU selector's path: torch's outputs (`expected_check`) and the unscheduled payload."""
    from conftest import FIXTURES

    ok(ctx, f"load {FIXTURES / 'torch' / (name + '.mlir')}")
    try:
        ok(ctx, "target cpu --threads 2")
        ok(ctx, "pass lh-constant-pad-rows{min-elements=0 threads=2}")
        assert "tensor.pad" not in ok(ctx, "show 1").body
        ok(ctx, "select --apply")
        ok(ctx, "bench warmup=1 iterations=2")
        ok(ctx, "apply cpu-lower")
        run = ok(ctx, "run --check").data["run"]
        assert run["check"]["passed"], run["check"]
        assert run["expected_check"]["passed"], run["expected_check"]
    finally:
        ok(ctx, "target cpu --threads 0")


@pytest.mark.parametrize("threads", [1, 2])
def test_a_pad_of_a_pad_reads_the_rows_the_first_became(ctx, tmp_path, threads):
    """A conv's zero pad whose rows lh-pad-conv-rows widens by a second pad (30-wide rows on AVX-512: 32 + 2):
    both pads are rewritten, the second reading the rows the first became (its plan read after the first
    rewrite: the listed source was the first pad's erased result, a SIGSEGV of the compile worker)."""
    payload = tmp_path / "conv.mlir"
    payload.write_text(_conv3x3(2, 8, 16, 30, 30))
    ok(ctx, f"load {payload}")
    try:
        ok(ctx, f"target cpu --threads {threads}")
        ok(ctx, "pass lh-pad-conv-rows")
        assert ok(ctx, "show 1").body.count("tensor.pad ") == 2
        ok(ctx, f"pass lh-constant-pad-rows{{lanes=16 threads={threads} min-elements=0}}")
        assert "tensor.pad" not in ok(ctx, "show 2").body
        ok(ctx, "apply cpu-lower")
        assert ok(ctx, "run --check --iterations 1 --warmup 0").data["run"]["check"]["passed"]
    finally:
        ok(ctx, "target cpu --threads 0")
