"""Round 13 (real models at realistic sizes, docs/models-round13-real.md): the speed cliffs they found, each
fixed by a general rule, with small payloads in torch-mlir's form.

- Grouped convolutions (`linalg.conv_2d_ngchw_gfchw`: RegNet's and ResNeXt's 3x3 with 8-64 channels a group)
  strided along h and w are taken by lh-strided-conv-planes (the zero-bordered phase buffer, one grouped plane
  generic per phase), and unit-stride ones whose rows are no whole vectors by lh-conv-planes (a grouped plane
  generic): the window schedule had run the strided ones along strided rows with vectors of the group's few
  output channels (2 GFLOP/s: RegNetY-400MF's first grouped conv 10 ms of the model's 27).
"""
from __future__ import annotations

import pytest

from conftest import ok, selector_path_runs_and_matches


def _grouped(n, C, H, W, G, F, k=3, s=1, p=1) -> str:
    """torch-mlir's grouped Conv2d: the 4-D input padded, then expanded to n x g x c; the init a zero fill of
    an expanded empty; the result collapsed back."""
    c, f = C // G, F // G
    hp, wp = H + 2 * p, W + 2 * p
    oh, ow = (hp - k) // s + 1, (wp - k) // s + 1
    x, xp, xe = (f"tensor<{n}x{C}x{H}x{W}xf32>", f"tensor<{n}x{C}x{hp}x{wp}xf32>",
                 f"tensor<{n}x{G}x{c}x{hp}x{wp}xf32>")
    w, we = f"tensor<{F}x{c}x{k}x{k}xf32>", f"tensor<{G}x{f}x{c}x{k}x{k}xf32>"
    o, oe = f"tensor<{n}x{F}x{oh}x{ow}xf32>", f"tensor<{n}x{G}x{f}x{oh}x{ow}xf32>"
    return f"""func.func @main(%x: {x}, %w: {w}) -> {o} {{
  %zero = arith.constant 0.0 : f32
  %p = tensor.pad %x low[0, 0, {p}, {p}] high[0, 0, {p}, {p}] {{
  ^bb0(%a: index, %b: index, %c: index, %d: index):
    tensor.yield %zero : f32
  }} : {x} to {xp}
  %xe = tensor.expand_shape %p [[0], [1, 2], [3], [4]] output_shape [{n}, {G}, {c}, {hp}, {wp}] : {xp} into {xe}
  %we = tensor.expand_shape %w [[0, 1], [2], [3], [4]] output_shape [{G}, {f}, {c}, {k}, {k}] : {w} into {we}
  %e = tensor.empty() : {o}
  %ee = tensor.expand_shape %e [[0], [1, 2], [3], [4]] output_shape [{n}, {G}, {f}, {oh}, {ow}] : {o} into {oe}
  %init = linalg.fill ins(%zero : f32) outs(%ee : {oe}) -> {oe}
  %r = linalg.conv_2d_ngchw_gfchw {{dilations = dense<1> : vector<2xi64>, strides = dense<{s}> : vector<2xi64>}}
       ins(%xe, %we : {xe}, {we}) outs(%init : {oe}) -> {oe}
  %o = tensor.collapse_shape %r [[0], [1, 2], [3], [4]] : {oe} into {o}
  return %o : {o}
}}
"""


#: RegNet's stride-2 grouped conv at test size (odd H and W, 3 groups of 8 -> 4), a unit-stride one without
#: padding (rows of 11)
GROUPED_STRIDED = _grouped(3, 24, 15, 17, 3, 12, 3, 2, 1)
GROUPED_VALID = _grouped(3, 24, 11, 13, 4, 20, 3, 1, 0)


def _rewrite(text: str, strided: bool = True, lanes: int = 16) -> tuple[int, int, str]:
    from mlir import ir

    from workbench.worker.cpu.conv_planes import conv_planes
    from workbench.worker.cpu.strided_conv_planes import strided_conv_planes

    with ir.Context(), ir.Location.unknown():
        module = ir.Module.parse(text)
        s = strided_conv_planes(module, lanes) if strided else 0
        assert module.operation.verify()
        p = conv_planes(module, lanes)
        assert module.operation.verify()
        return s, p, str(module)


def test_a_strided_grouped_conv_becomes_grouped_plane_generics_over_one_phase_buffer():
    s, p, text = _rewrite(GROUPED_STRIDED)
    assert (s, p) == (1, 0)
    assert "linalg.conv_2d_ngchw_gfchw" not in text
    assert text.count("linalg.generic") == 4                  # one per phase, each accumulating into the last
    assert text.count("linalg.transpose") == 1                # the input's phases: one pass
    # each phase's plane read as n x g x c x positions, the group loop in the filter's and the output's maps
    assert "output_shape [3, 3, 8, 91] : tensor<3x24x91xf32> into tensor<3x3x8x91xf32>" in text
    assert "(d0, d1, d2, d3, d4, d5, d6) -> (d0, d1, d4, d3 + d5 * 10 + d6)" in text
    assert "(d0, d1, d2, d3, d4, d5, d6) -> (d1, d2, d4, d5, d6)" in text
    # the extra columns sliced off the grouped result, which is collapsed back as before
    assert "tensor<3x3x4x8x10xf32> to tensor<3x3x4x8x9xf32>" in text
    assert "tensor<3x3x4x8x9xf32> into tensor<3x12x8x9xf32>" in text


def test_a_unit_stride_grouped_conv_runs_over_its_plane_and_whole_rows_are_left():
    s, p, text = _rewrite(GROUPED_VALID)
    assert (s, p) == (0, 1)
    assert "linalg.conv_2d_ngchw_gfchw" not in text and text.count("linalg.generic") == 1
    assert "(d0, d1, d2, d3, d4, d5, d6) -> (d0, d1, d4, d3 + d5 * 13 + d6)" in text
    assert "tensor<3x24x12x13xf32> into tensor<3x24x156xf32>" in text   # one more row for the last taps
    padded = _grouped(2, 32, 14, 14, 4, 32)
    s, p, text = _rewrite(padded)
    assert (s, p) == (0, 1)
    assert text.count("tensor.pad") == 1 and "high[0, 0, 2, 1]" in text   # torch-mlir's pad widened, not padded again
    # rows of whole vectors (a stride-2 conv to 32 x 32): neither rewrite
    whole = _grouped(1, 16, 64, 64, 2, 16, 3, 2, 1)
    s, p, text = _rewrite(whole)
    assert (s, p) == (0, 0) and "linalg.conv_2d_ngchw_gfchw" in text


@pytest.mark.parametrize("cpu", ["host", "avx2"])
@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("name", ["strided", "valid", "padded_even"])
def test_grouped_convs_run_and_match(ctx, tmp_path, cpu, threads, name):
    text = {"strided": GROUPED_STRIDED, "valid": GROUPED_VALID,
            "padded_even": _grouped(2, 32, 14, 14, 2, 16, 3, 2, 1)}[name]
    payload = tmp_path / f"{name}.mlir"
    payload.write_text(text)
    ok(ctx, f"load {payload}")
    try:
        ok(ctx, f"target cpu --cpu {cpu} --threads {threads}")
        ok(ctx, "select --apply")
        labels = " ".join(a.step.label() for a in ctx.session.active_steps)
        assert ("lh-strided-conv-planes" if name != "valid" else "lh-conv-planes") in labels
        ok(ctx, "bench warmup=1 iterations=2")
        ok(ctx, "apply cpu-lower")
        assert ok(ctx, f"run --check --iterations 1 --warmup 0 --threads {threads}").data["run"]["check"]["passed"]
    finally:
        ok(ctx, "target cpu --cpu host --threads 0")


# -- 1x1 convolutions of one image as matmuls -------------------------------------------------------------------
def _pointwise(n, C, H, W, F, bias=True) -> str:
    """torch-mlir's 1x1 Conv2d with its bias broadcast as the init, a ReLU after it."""
    x, w, o = f"tensor<{n}x{C}x{H}x{W}xf32>", f"tensor<{F}x{C}x1x1xf32>", f"tensor<{n}x{F}x{H}x{W}xf32>"
    init = (f"%init = linalg.broadcast ins(%b : tensor<{F}xf32>) outs(%e : {o}) dimensions = [0, 2, 3]" if bias else
            f"%init = linalg.fill ins(%zero : f32) outs(%e : {o}) -> {o}")
    return f"""#map = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
func.func @main(%x: {x}, %w: {w}, %b: tensor<{F}xf32>) -> {o} {{
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : {o}
  {init}
  %r = linalg.conv_2d_nchw_fchw {{dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>}}
       ins(%x, %w : {x}, {w}) outs(%init : {o}) -> {o}
  %e2 = tensor.empty() : {o}
  %relu = linalg.generic {{indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}}
      ins(%r : {o}) outs(%e2 : {o}) {{
  ^bb0(%in: f32, %out: f32):
    %m = arith.maximumf %in, %zero : f32
    linalg.yield %m : f32
  }} -> {o}
  return %relu : {o}
}}
"""


def test_a_pointwise_conv_of_one_image_becomes_a_matmul_of_views():
    """DenseNet's 1x1 convolutions (192 -> 128 channels at 56 x 56): as a 1-D convolution, every block of 8
    output channels streamed the whole 2.4 MB input (7-11 ms on this host; as a matmul 0.9-1.0 ms)."""
    from mlir import ir

    from workbench.worker.cpu.pointwise_convs import pointwise_convs

    with ir.Context(), ir.Location.unknown():
        module = ir.Module.parse(_pointwise(1, 24, 7, 9, 40))
        assert pointwise_convs(module) == 1 and module.operation.verify()
        text = str(module)
    assert "linalg.conv" not in text and "linalg.copy" not in text
    assert "tensor<1x24x7x9xf32> into tensor<24x63xf32>" in text          # views, no copies
    assert "tensor<40x24x1x1xf32> into tensor<40x24xf32>" in text
    assert "linalg.matmul" in text and "-> tensor<40x63xf32>" in text
    assert "tensor<40x63xf32> into tensor<1x40x7x9xf32>" in text
    assert "tensor<1x40x7x9xf32> into tensor<40x63xf32>" in text          # the bias broadcast as the init
    # two images stay one 1-D convolution over the plane
    with ir.Context(), ir.Location.unknown():
        module = ir.Module.parse(_pointwise(2, 24, 7, 9, 40))
        assert pointwise_convs(module) == 1
        assert "linalg.conv_1d_ncw_fcw" in str(module) and "linalg.matmul" not in str(module)


@pytest.mark.parametrize("cpu", ["host", "avx2"])
@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("shape", [(1, 24, 7, 9, 40, True), (1, 64, 14, 14, 32, False), (3, 24, 7, 9, 40, True)])
def test_pointwise_convs_run_and_match(ctx, tmp_path, cpu, threads, shape):
    payload = tmp_path / "pointwise.mlir"
    payload.write_text(_pointwise(*shape))
    schedules = selector_path_runs_and_matches(ctx, payload, threads, cpu)
    assert ("matmul" in schedules) == (shape[0] == 1), schedules


# -- 1-D convolutions with many channels as one matmul per tap --------------------------------------------------
def _conv1d(n, C, W, F, k, s, d=1, pad=0) -> str:
    """torch-mlir's Conv1d (a zero pad of the input where padded), a zero init."""
    wp = W + 2 * pad
    ow = (wp - d * (k - 1) - 1) // s + 1
    x, xp, w, o = (f"tensor<{n}x{C}x{W}xf32>", f"tensor<{n}x{C}x{wp}xf32>", f"tensor<{F}x{C}x{k}xf32>",
                   f"tensor<{n}x{F}x{ow}xf32>")
    padded = (f"""%p = tensor.pad %x low[0, 0, {pad}] high[0, 0, {pad}] {{
  ^bb0(%a: index, %b: index, %c: index):
    tensor.yield %zero : f32
  }} : {x} to {xp}""" if pad else f"%p = tensor.cast %x : {x} to {xp}")
    return f"""func.func @main(%x: {x}, %w: {w}) -> {o} {{
  %zero = arith.constant 0.0 : f32
  {padded}
  %e = tensor.empty() : {o}
  %init = linalg.fill ins(%zero : f32) outs(%e : {o}) -> {o}
  %r = linalg.conv_1d_ncw_fcw {{dilations = dense<{d}> : vector<1xi64>, strides = dense<{s}> : vector<1xi64>}}
       ins(%p, %w : {xp}, {w}) outs(%init : {o}) -> {o}
  return %r : {o}
}}
"""


def test_a_wide_conv1d_of_one_image_becomes_one_matmul_per_tap():
    """wav2vec2's 512 -> 512, 3 taps, stride 2 over 3199 positions: as a window op every block of 8 output
    channels streamed the whole 6.5 MB input (196-226 ms a call on this busy host; as matmuls 56-69 ms)."""
    from mlir import ir

    from workbench.worker.cpu.tap_matmuls import tap_matmuls

    with ir.Context(), ir.Location.unknown():
        module = ir.Module.parse(_conv1d(1, 48, 101, 40, 3, 2, pad=1))
        assert tap_matmuls(module) == 1 and module.operation.verify()
        text = str(module)
    assert "linalg.conv" not in text and text.count("linalg.matmul") == 3
    # tap t: the filter's column t and every second input column from t (views), accumulated in turn
    for t in range(3):
        assert f"[0, 0, {t}] [40, 48, 1] [1, 1, 1] : tensor<40x48x3xf32> to tensor<40x48xf32>" in text
        assert f"[0, 0, {t}] [1, 48, 51] [1, 1, 2] : tensor<1x48x103xf32> to tensor<48x51xf32>" in text
    assert "tensor<40x51xf32> into tensor<1x40x51xf32>" in text
    # a dilation spaces the taps; under min-bytes, two images, few channels or a 1-tap unit-stride one: left
    with ir.Context(), ir.Location.unknown():
        module = ir.Module.parse(_conv1d(1, 48, 101, 40, 3, 1, d=4))
        assert tap_matmuls(module) == 1 and "[0, 0, 8] [1, 48, 93] [1, 1, 1]" in str(module)
        for text, min_bytes in ((_conv1d(1, 48, 101, 40, 3, 2), 48 * 101 * 4 + 1), (_conv1d(2, 48, 101, 40, 3, 2), 0),
                                (_conv1d(1, 16, 101, 40, 3, 2), 0), (_conv1d(1, 48, 101, 40, 1, 1), 0)):
            module = ir.Module.parse(text)
            assert tap_matmuls(module, min_bytes) == 0 and "linalg.conv_1d_ncw_fcw" in str(module)


@pytest.mark.parametrize("cpu", ["host", "avx2"])
@pytest.mark.parametrize("threads", [1, 2])
def test_wide_conv1d_tap_matmuls_run_and_match(ctx, tmp_path, cpu, threads):
    """An input past the L2 size (the selector's min-bytes): 64 channels x 17001 positions, 4.4 MB."""
    payload = tmp_path / "conv1d.mlir"
    payload.write_text(_conv1d(1, 64, 17001, 40, 3, 2, pad=1))
    ok(ctx, f"load {payload}")
    try:
        ok(ctx, f"target cpu --cpu {cpu} --threads {threads}")
        ok(ctx, "select --apply")
        assert "lh-tap-matmuls" in " ".join(a.step.label() for a in ctx.session.active_steps)
        ok(ctx, "bench warmup=1 iterations=2")
        ok(ctx, "apply cpu-lower")
        assert ok(ctx, f"run --check --iterations 1 --warmup 0 --threads {threads}").data["run"]["check"]["passed"]
    finally:
        ok(ctx, "target cpu --cpu host --threads 0")


def test_pointwise_matmuls_are_not_padded_to_whole_vectors(ctx, tmp_path):
    """SqueezeNet's 1x1s over 55x55 = 3025 positions: padded to 3040 each copied its input and sliced its result
    (the model 8.2 -> 10.1 ms); the tap matmuls keep the padding."""
    payload = tmp_path / "pointwise.mlir"
    payload.write_text(_pointwise(1, 64, 55, 55, 16))
    ok(ctx, f"load {payload}")
    prepared = ok(ctx, "select").data["prepared"]
    assert "pass lh-pointwise-convs" in prepared
    assert not any(step.startswith("pass lh-pad-contraction-dims") for step in prepared), prepared
