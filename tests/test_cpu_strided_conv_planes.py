"""lh-strided-conv-planes: 2-D convolutions strided along h and w become one unit-stride convolution per input
phase of both dims, each over a contiguous phase plane (one pad + transpose of the input), which lh-conv-planes
then computes over the flattened plane; the selector path runs them and matches the unscheduled payload on
AVX-512 and AVX2."""
from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from conftest import lowered_run_passes, ok, selected_step_labels

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
from _common import conv_payload  # noqa: E402  (bench/_common.py: torch-mlir's conv forms)


def _conv(n, c, h, w, f, kh, kw, s, p, bias=True) -> str:
    """torch-mlir's form: a zero pad of the input, the bias broadcast as the init (or a zero fill)."""
    return conv_payload(n, c, h, w, f, kh, kw, s, p, bias=bias)


#: the corpus's conv2d_strided at test size, a ResNet-like downsampling conv (rows of 14), a 7x7 stride-2 stem
#: (rows of 32: whole vectors, and 3 input channels to 16 output ones: an input smaller than the output, the
#: phases stay named convolutions), a 4x4 window with an unread last column
STRIDED = _conv(1, 4, 16, 16, 8, 3, 3, 2, 1)
DOWN = _conv(2, 8, 28, 28, 16, 3, 3, 2, 1, bias=False)
STEM = _conv(1, 3, 64, 64, 16, 7, 7, 2, 3)
UNREAD_COLUMN = _conv(1, 2, 11, 11, 4, 4, 4, 2, 0)


def _rewrite(text: str, planes: bool = True, lanes: int = 16, all_borders: bool = False) -> tuple[int, str]:
    from mlir import ir

    from workbench.worker.cpu.conv_planes import conv_planes
    from workbench.worker.cpu.strided_conv_planes import strided_conv_planes

    with ir.Context(), ir.Location.unknown():
        module = ir.Module.parse(text)
        n = strided_conv_planes(module, lanes, all_borders)
        assert module.operation.verify()
        if planes:
            conv_planes(module, 16)
            assert module.operation.verify()
        return n, str(module)


#: STRIDED with 2 input channels: an input (2 x 16 x 16) no larger than the output (8 x 8 x 8)
STRIDED_FEW_CHANNELS = _conv(1, 2, 16, 16, 8, 3, 3, 2, 1)


def test_a_stride_2_conv_becomes_four_phase_convolutions_over_one_transposed_input():
    # (rows of 8: whole vectors of 8 lanes, and an input no larger than the output: the phases stay named
    # convolutions over the padded input's phases)
    n, text = _rewrite(STRIDED_FEW_CHANNELS, planes=False, lanes=8)
    assert n == 1
    # the input's own pad widened to 2 * (8 + 2) rows x 2 * (8 + 1) columns, one transpose to 2x2 phase planes
    assert text.count("tensor.pad") == 1 and "high[0, 0, 3, 1]" in text and "to tensor<1x2x20x18xf32>" in text
    assert "permutation = [3, 5, 0, 1, 2, 4]" in text and "tensor<2x2x1x2x10x9xf32>" in text
    convs = re.findall(r"linalg.conv_2d_nchw_fchw .*", text)
    assert len(convs) == 4 and all("strides = dense<1>" in c for c in convs)
    # each phase's taps: a strided slice of the filter (2x2, 2x1, 1x2, 1x1: 9 taps in all, no zeros)
    for offsets, taps in (("[0, 0, 0, 0]", "8x2x2x2"), ("[0, 0, 0, 1]", "8x2x2x1"), ("[0, 0, 1, 0]", "8x2x1x2"),
                          ("[0, 0, 1, 1]", "8x2x1x1")):
        assert f"{offsets} [{taps.replace('x', ', ')}] [1, 1, 2, 2] : tensor<8x2x3x3xf32> to tensor<{taps}xf32>" in text
    # the phases accumulate: each convolution's init is the one before
    results = re.findall(r"(%\d+) = linalg.conv_2d_nchw_fchw", text)
    for prev, conv in zip(results, convs[1:]):
        assert f"outs({prev} :" in conv


def test_rows_of_whole_vectors_take_the_flat_phases_where_the_input_is_larger_than_the_output():
    """Rows of 8 on 8 lanes, 4 input channels (input 4 x 16 x 16 > output 8 x 8 x 8): the phases are plane
    generics over one zero-bordered buffer written by one transpose (no pad of the input, no named
    convolutions), as where the rows are no whole number of vectors."""
    n, text = _rewrite(STRIDED, planes=False, lanes=8)
    assert n == 1 and "tensor.pad" not in text and "linalg.conv_2d_nchw_fchw" not in text
    assert len(re.findall(r"linalg.generic .*", text)) == 4 and text.count("linalg.transpose") == 1
    # the 7x7 stem (3 channels: its input is smaller than its output) keeps the padded named convolutions
    n, text = _rewrite(STEM, planes=False, lanes=8)
    assert n == 1 and text.count("tensor.pad") == 1 and len(re.findall(r"linalg.conv_2d_nchw_fchw .*", text)) == 4


def test_each_phase_runs_over_its_flattened_plane_and_reads_the_last_one_whole():
    n, text = _rewrite(STRIDED)
    assert n == 1 and "linalg.conv_2d_nchw_fchw" not in text
    generics = re.findall(r"linalg.generic .*", text)
    assert len(generics) == 4 and all(": tensor<1x8x72xf32>)" in g for g in generics)
    assert text.count("d2 + d4 * 9 + d5") >= 1
    # no copy of a phase's result into the next one's init: one slice at the end
    assert text.count("tensor<1x8x8x9xf32> to tensor<1x8x8x8xf32>") == 1


def test_the_input_is_transposed_once_into_zero_bordered_phase_planes_without_a_pad():
    """Phase planes whose rows lh-conv-planes would flatten: no pad of the input (a fill of the whole padded
    buffer and a copy into it, then the transpose: three passes), the unpadded input transposed once into the
    interior of a 2x2x1x4x10x9 buffer whose border rows and column are zeroed where a phase reads them; each
    padded phase's plane is an input phase's plane read from its own offset: (rh, rw) reads input phase
    ((rh - 1) mod 2, (rw - 1) mod 2) from row (rh - 1) floordiv 2 + 1, column (rw - 1) floordiv 2 + 1 of the
    flattened 10 x 9 plane."""
    n, text = _rewrite(STRIDED)
    assert n == 1 and "tensor.pad" not in text
    assert text.count("linalg.transpose") == 1 and "permutation = [3, 5, 0, 1, 2, 4]" in text
    assert "tensor.expand_shape %arg0" in text and "into tensor<1x4x8x2x8x2xf32>" in text
    assert "tensor<2x2x1x4x10x9xf32> to tensor<2x2x1x4x8x8xf32>" in text   # the interior, from row 1, column 1
    # the border where a phase reads it for an output (zeros broadcast into slices, inserted back): row 0 of the
    # odd-row planes (phases rh = 0 read from row 0), column 0 of rows 1..8 of the odd-column ones; row 9 is
    # read by no output (only the flat planes' extra column, sliced off)
    boxes = re.findall(r"tensor.insert_slice %\S+ into %\S+\[(\d+, \d+), 0, 0, (\d+, \d+)\] \[(\d+, \d+), 1, 4, (\d+, \d+)\]",
                       text)
    # (planes, rows and columns from, planes, rows and columns: the last is the transposed interior)
    assert boxes == [("1, 0", "0, 0", "1, 2", "1, 9"), ("0, 1", "1, 0", "2, 1", "8, 1"),
                     ("0, 0", "1, 1", "2, 2", "8, 8")], boxes
    # the old variant (all-borders=1): rows 0 and 9 whole, column 0 of rows 1..8, in every plane
    n, text = _rewrite(STRIDED, all_borders=True)
    for offsets, box in (("[0, 0, 0, 0, 0, 0]", "2x2x1x4x1x9"), ("[0, 0, 0, 0, 9, 0]", "2x2x1x4x1x9"),
                         ("[0, 0, 0, 0, 1, 0]", "2x2x1x4x8x1")):
        assert re.search(rf"tensor.insert_slice %\S+ into %\S+{re.escape(offsets)} \[{box.replace('x', ', ')}\]", text), box
    # phase (0, 0): input phase (1, 1) from 0 (rows 0 and column 0 zero); (0, 1): (1, 0) from 1; (1, 0): (0, 1)
    # from 9; (1, 1): (0, 0) from 10 (the plane's row 1, column 1); each as long as its taps reach
    for plane, start, length in (("1, 1", 0, 82), ("1, 0", 1, 81), ("0, 1", 9, 73), ("0, 0", 10, 72)):
        assert f"[{plane}, 0, 0, {start}] [1, 1, 1, 4, {length}] [1, 1, 1, 1, 1] : tensor<2x2x1x4x90xf32> to " \
               f"tensor<1x4x{length}xf32>" in text, (plane, start, length)


def test_the_unread_last_column_and_a_stem_of_whole_rows():
    n, text = _rewrite(UNREAD_COLUMN, planes=False)
    assert n == 1 and "tensor<2x2x1x2x6x6xf32>" in text   # 11 columns: 6 per phase (the last read by none)
    n, text = _rewrite(STEM)
    assert n == 1 and text.count("linalg.conv_2d_nchw_fchw") == 4   # rows of 32: the window schedule's rows


def test_unit_strides_1x1_windows_bf16_dilations_and_too_many_phases_are_left():
    pointwise = _conv(1, 8, 16, 16, 8, 1, 1, 2, 0)
    unit = _conv(1, 4, 16, 16, 8, 3, 3, 1, 1)
    bf16 = STRIDED.replace("f32>", "bf16>").replace(": f32", ": bf16")
    dilated = STRIDED.replace("dilations = dense<1>", "dilations = dense<2>").replace("1x8x8x8", "1x8x7x7")
    patch16 = _conv(1, 3, 64, 64, 8, 16, 16, 16, 0)   # 256 phases: more than MAX_PHASES
    for text in (pointwise, unit, bf16, dilated, patch16):
        n, _ = _rewrite(text, planes=False)
        assert n == 0
    n, text = _rewrite(_conv(1, 3, 64, 64, 64, 4, 4, 4, 0), planes=False)   # ConvNeXt's 4x4 stride-4 stem: 16
    assert n == 1 and text.count("linalg.conv_2d_nchw_fchw") == 16


def test_pointwise_convs_leave_a_1x1_conv_whose_input_is_larger_than_its_output():
    """A 1x1 unit-stride phase reads a plane wider than its output: collapsing both planes would misalign rows."""
    from mlir import ir

    from workbench.worker.cpu.pointwise_convs import pointwise_convs

    text = """func.func @main(%x: tensor<1x4x10x9xf32>, %w: tensor<8x4x1x1xf32>, %o: tensor<1x8x8x8xf32>) -> tensor<1x8x8x8xf32> {
  %r = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>}
       ins(%x, %w : tensor<1x4x10x9xf32>, tensor<8x4x1x1xf32>) outs(%o : tensor<1x8x8x8xf32>) -> tensor<1x8x8x8xf32>
  return %r : tensor<1x8x8x8xf32>
}"""
    with ir.Context(), ir.Location.unknown():
        assert pointwise_convs(ir.Module.parse(text)) == 0


@pytest.mark.parametrize("cpu", ["host", "avx2"])
@pytest.mark.parametrize("name", ["strided", "down", "stem", "unread_column"])
def test_strided_conv_planes_run_and_match(ctx, tmp_path, cpu, name):
    text = {"strided": STRIDED, "down": DOWN, "stem": STEM, "unread_column": UNREAD_COLUMN}[name]
    try:
        assert "lh-strided-conv-planes" in " ".join(selected_step_labels(ctx, tmp_path, text, 1, cpu))
        lowered_run_passes(ctx)
    finally:
        ok(ctx, "target cpu --cpu host")


def test_strided_conv_planes_split_over_cores_run_and_match(ctx, tmp_path, monkeypatch):
    """On several cores each phase splits like any unit-stride convolution (batch x channel chunks)."""
    from workbench.targets import cpu_selector

    monkeypatch.setattr(cpu_selector, "MIN_PARALLEL_WORK", 0)   # small payloads: split them anyway
    payload = tmp_path / "down.mlir"
    payload.write_text(DOWN)
    ok(ctx, f"load {payload}")
    try:
        ok(ctx, "target cpu --threads 4")
        selections = ok(ctx, "select --apply").data["selections"]
        phases = [e["params"] for e in selections if "generic" in str(e["params"].get("op", ""))]
        assert phases and all(p["threads"] > 1 for p in phases), phases
        ok(ctx, "bench warmup=1 iterations=2")
        ok(ctx, "apply cpu-lower")
        assert ok(ctx, "run --check --iterations 1 --warmup 0 --threads 4").data["run"]["check"]["passed"]
    finally:
        ok(ctx, "target cpu --threads 0")


def test_a_long_phase_plane_takes_whole_vectors_and_keeps_its_output_tile_in_registers(ctx, tmp_path):
    """The corpus's strided conv at 112x112 (phases of 56 x 57 = 3192 positions, 8 short of a multiple of 16
    lanes): whole vectors along the plane and a tile of the rest, the channels and the window inside the
    spatial loops (half vectors put them outside, the output tile read and written back per window position
    and channel block), and the result matches. (AVX-512's: on AVX2 rows of 56 are 7 whole vectors of 8, and the
    phases stay convolutions over rows; selected for skylake-avx512 where the host lacks AVX-512, run only where
    it has it.)"""
    from workbench.targets.cpu_host import host_machine

    payload = tmp_path / "wide.mlir"
    payload.write_text(_conv(1, 8, 112, 112, 8, 3, 3, 2, 1))
    ok(ctx, f"load {payload}")
    try:
        cpu = "host" if "avx512f" in host_machine().features else "skylake-avx512"
        ok(ctx, f"target cpu --threads 1 --cpu {cpu}")
        selections = ok(ctx, "select --apply").data["selections"]
        phases = [e["params"] for e in selections if "generic" in str(e["params"].get("op", ""))]
        lanes = ctx.session.target.machine.vector_bits // 32
        assert phases and all(p["tile"][2] % lanes == 0 and p.get("remainder", [0])[0] == 2 for p in phases), phases
        assert all(p["interchange"][-1] != 2 for p in phases), "the plane loop is not innermost"
        missing = ctx.session.target.machine.missing_here()
        if missing:
            ok(ctx, "apply cpu-lower")
            pytest.skip(f"skylake-avx512 code needs {', '.join(missing)}, which this host lacks: not run")
        ok(ctx, "bench warmup=1 iterations=2")
        ok(ctx, "apply cpu-lower")
        assert ok(ctx, "run --check --iterations 1 --warmup 0").data["run"]["check"]["passed"]
    finally:
        ok(ctx, "target cpu --cpu host")


@pytest.mark.parametrize("width, rest", [(199, 12), (195, 6)])
def test_phase_planes_of_any_length_take_two_vector_tiles_on_avx2(ctx, tmp_path, width, rest):
    """AVX2 (16 registers): a phase plane whose length leaves a rest of two vectors (a conformer's subsampling
    conv, 39 x 199 stride 2: planes of 19 x 100 = 1900 = 118 x 16 + 12) takes 4 output channels x 2 vectors
    and a last tile of the rest, not 8 channels x 1 vector (a broadcast load per FMA: 36.0 against 25.7 cpu ms
    at 144 channels). AVX-512 keeps its 8-channel tiles. The selection runs and matches."""
    payload = tmp_path / "phases.mlir"
    payload.write_text(conv_payload(1, 16, 39, width, 16, 3, 3, 2, 0, cast_unpadded=True))
    ok(ctx, f"load {payload}")
    try:
        ok(ctx, "target cpu --threads 1 --cpu skylake-avx512")
        wide = [e["params"] for e in ok(ctx, "select").data["selections"] if "generic" in str(e["params"].get("op", ""))]
        assert all(p["tile"][1] == 8 for p in wide if p.get("contraction")), wide
        ok(ctx, "target cpu --threads 1 --cpu avx2")
        selections = ok(ctx, "select --apply").data["selections"]
        phases = [e["params"] for e in selections if e["params"].get("contraction")]
        plane = 19 * ((width + 1) // 2)
        assert phases and all(p["tile"][1:3] == [4, 16] for p in phases), phases
        assert all(p["remainder"] == [2, plane - rest, rest] for p in phases), phases
        ok(ctx, "bench warmup=1 iterations=2")
        ok(ctx, "apply cpu-lower")
        if ctx.session.target.machine.missing_here():
            pytest.skip("AVX2 code on a host without AVX2: selected and lowered")
        assert ok(ctx, "run --check --iterations 1 --warmup 0").data["run"]["check"]["passed"]
    finally:
        ok(ctx, "target cpu --cpu host")


@pytest.mark.parametrize("shape", [
    # (n, c, h, w, f, kh, kw, stride, padding): odd and even H / W, paddings 0 / 1 / 2, strides 2 and 3,
    # windows wider than the stride and equal to it, non-square
    (1, 3, 15, 13, 8, 3, 3, 2, 1),
    (2, 4, 16, 17, 8, 3, 3, 2, 0),
    (1, 4, 14, 14, 16, 5, 5, 2, 2),
    (1, 5, 19, 20, 8, 3, 3, 3, 1),
    (1, 4, 17, 16, 8, 3, 4, 3, 2),
    (1, 2, 12, 12, 4, 2, 2, 2, 0),
])
def test_zero_bordered_phase_planes_run_and_match(ctx, tmp_path, shape):
    """The selector path over the zero-bordered phase planes (no pad of the input) on shapes that are no tile
    multiples: every step applies and lowers, and the result matches the unscheduled payload."""
    payload = tmp_path / "conv.mlir"
    payload.write_text(_conv(*shape))
    ok(ctx, f"load {payload}")
    try:
        ok(ctx, "target cpu --threads 1 --cpu host")
        ok(ctx, "select --apply")
        labels = [a.step.label() for a in ctx.session.active_steps]
        step = next(i for i, label in enumerate(labels) if "lh-strided-conv-planes" in label)
        text = ctx.session.ir_at(step + 1)   # (the IR the pass left)
        n, c, h, w, f, kh, kw, stride, padding = shape
        ow = (w + 2 * padding - kw) // stride + 1
        lanes = ctx.session.target.machine.vector_bits // 32
        oh = (h + 2 * padding - kh) // stride + 1
        # (output rows of whole vectors, 8 on AVX2, and an input no larger than the output: the phases stay
        # convolutions over rows)
        if ow % lanes or c * h * w > f * oh * ow:
            assert "linalg.conv_2d_nchw_fchw" not in text and text.count("linalg.transpose") == 1
            # (a pad only to whole phases: of an input whose H or W is no multiple of the stride)
            assert ("tensor.pad" in text) == (h % stride != 0 or w % stride != 0)
        else:
            assert "linalg.conv_2d_nchw_fchw" in text
        ok(ctx, "bench warmup=1 iterations=2")
        ok(ctx, "apply cpu-lower")
        assert ok(ctx, "run --check --iterations 1 --warmup 0").data["run"]["check"]["passed"]
    finally:
        ok(ctx, "target cpu --cpu host")


def test_a_dilated_strided_conv_is_left_to_the_window_schedule_and_matches(ctx, tmp_path):
    """A stride-2 conv with dilation 2 (taps of one phase only: no phase planes) keeps its own path."""
    payload = tmp_path / "dilated.mlir"
    payload.write_text(STRIDED.replace("dilations = dense<1>", "dilations = dense<2>").replace("1x8x8x8", "1x8x7x7"))
    ok(ctx, f"load {payload}")
    try:
        ok(ctx, "target cpu --threads 1 --cpu host")
        ok(ctx, "select --apply")
        assert not any("lh-strided-conv-planes" in a.step.label() for a in ctx.session.active_steps)
        ok(ctx, "bench warmup=1 iterations=2")
        ok(ctx, "apply cpu-lower")
        assert ok(ctx, "run --check --iterations 1 --warmup 0").data["run"]["check"]["passed"]
    finally:
        ok(ctx, "target cpu --cpu host")


def _depthwise(n, c, h, w, k, s, p) -> str:
    """torch-mlir's form of a depthwise Conv2d(c, c, k, stride s, padding p, groups=c) with a bias."""
    return conv_payload(n, c, h, w, c, k, k, s, p, depthwise=True)


def test_a_strided_depthwise_conv_becomes_one_unit_stride_depthwise_conv_per_phase_over_bordered_planes():
    """efficientnet's 5x5 stride-2 depthwise (here 8 channels of 16 x 16, padding 2): four unit-stride depthwise
    convolutions, each over a 4-D view of the zero-bordered buffer (its input phase from its own offset: padding
    2 shifts every phase by one row and column), with the taps W[c, rh::2, rw::2]; no pad of the input."""
    n, text = _rewrite(_depthwise(1, 8, 16, 16, 5, 2, 2), planes=False)
    assert n == 1 and "tensor.pad" not in text and text.count("linalg.transpose") == 1
    convs = re.findall(r"linalg.depthwise_conv_2d_nchw_chw .*", text)
    assert len(convs) == 4 and all("strides = dense<1>" in c for c in convs)
    # input phase (r - 2) mod 2 = r from row / column (r - 2) floordiv 2 + 1 = 0 of a 2x2x1x8x11x10 buffer whose
    # interior (8 x 8) starts at row 1, column 1 (10 columns: the widest phase reads 8 + 3 - 1 of them)
    assert "[0, 0, 0, 0, 1, 1] [2, 2, 1, 8, 8, 8] [1, 1, 1, 1, 1, 1] : tensor<2x2x1x8x11x10xf32> to " \
           "tensor<2x2x1x8x8x8xf32>" in text
    for offsets, plane, taps in (("[0, 0, 0, 0, 0, 0]", "10x10", "8x3x3"), ("[0, 1, 0, 0, 0, 0]", "10x9", "8x3x2"),
                                 ("[1, 0, 0, 0, 0, 0]", "9x10", "8x2x3"), ("[1, 1, 0, 0, 0, 0]", "9x9", "8x2x2")):
        assert f"{offsets} [1, 1, 1, 8, {plane.replace('x', ', ')}] [1, 1, 1, 1, 1, 1] : " \
               f"tensor<2x2x1x8x11x10xf32> to tensor<1x8x{plane}xf32>" in text, offsets
        assert f"[{taps.replace('x', ', ')}] [1, 2, 2] : tensor<8x5x5xf32> to tensor<{taps}xf32>" in text, taps


@pytest.mark.parametrize("shape", [
    # (n, c, h, w, k, stride, padding): efficientnet's 3x3 and 5x5 stride-2 ones, odd sizes, padding 0, stride 3
    (1, 8, 16, 16, 3, 2, 1),
    (2, 5, 15, 13, 5, 2, 2),
    (1, 6, 17, 17, 3, 2, 0),
    (1, 4, 20, 19, 3, 3, 1),
])
def test_strided_depthwise_phases_run_and_match(ctx, tmp_path, shape):
    payload = tmp_path / "dw.mlir"
    payload.write_text(_depthwise(*shape))
    ok(ctx, f"load {payload}")
    try:
        ok(ctx, "target cpu --threads 1 --cpu host")
        ok(ctx, "select --apply")
        labels = [a.step.label() for a in ctx.session.active_steps]
        step = next(i for i, label in enumerate(labels) if "lh-strided-conv-planes" in label)
        text = ctx.session.ir_at(step + 1)
        assert text.count("linalg.depthwise_conv_2d_nchw_chw") == shape[5] ** 2
        assert "strides = dense<2>" not in text and "strides = dense<3>" not in text
        ok(ctx, "bench warmup=1 iterations=2")
        ok(ctx, "apply cpu-lower")
        assert ok(ctx, "run --check --iterations 1 --warmup 0").data["run"]["check"]["passed"]
    finally:
        ok(ctx, "target cpu --cpu host")


@pytest.mark.parametrize("read_only", [True, False])
def test_the_border_variants_through_the_selector(ctx, tmp_path, monkeypatch, read_only):
    """CpuTarget.phase_borders_read (on): the preparation's pass zeroes the border only where a phase reads it
    (one box fewer than the old variant's three in the IR the selection starts from: no bottom row); off
    (bench/cpu_models.py --all-phase-borders): `{all-borders=1}`, every plane's whole border; both match."""
    from workbench.targets.cpu import CpuTarget

    monkeypatch.setattr(CpuTarget, "phase_borders_read", read_only)
    payload = tmp_path / "strided.mlir"
    payload.write_text(STRIDED)
    ok(ctx, f"load {payload}")
    ok(ctx, "target cpu --threads 1")
    ok(ctx, "select --apply")
    labels = [a.step.label() for a in ctx.session.active_steps]
    assert any(label.startswith("lh-strided-conv-planes") and ("all-borders=1" in label) != read_only
               for label in labels), labels
    zero_boxes = [label for label in labels if "op=broadcast" in label or "op=[broadcast" in label]
    ok(ctx, "apply cpu-lower")
    assert ok(ctx, "run --check --iterations 1 --warmup 0").data["run"]["check"]["passed"]
    ids = sum(len(label.split("op=[")[1].split("]")[0].split(",")) if "op=[" in label else 1 for label in zero_boxes)
    assert ids == (2 if read_only else 3), zero_boxes
