"""A convolution over long rows (a plane of lh-conv-planes or of a stride-2 phase, lh-strided-conv-planes) takes
its plane tiles outside its blocks of output channels (cpu_selector.plane_order: n, p, f, taps, c instead of n, f,
p, taps, c) where the whole filter fits in half of L2: each block of plane positions is read once for every block
of output channels; the selector path applies, lowers, runs and matches on shapes that are no tile multiples.
Only for a convolution split over threads (PLANE_ORDER_MIN_THREADS): on one thread the 16-core device measured the
old order faster; the tests on one thread lower that bound to 1 to exercise the order."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

import workbench.targets.cpu_selector as cpu_selector
from conftest import ok, selected_step_labels

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
from _common import conv_payload  # noqa: E402  (bench/_common.py: torch-mlir's conv forms)


def _conv(n, c, h, w, f, kh, kw, s, p, bias=True) -> str:
    return conv_payload(n, c, h, w, f, kh, kw, s, p, bias=bias, cast_unpadded=True)


def _avx512() -> str:
    """The machine the plane order tests select for: this host where it has AVX-512, else skylake-avx512 (the
    order is AVX-512's: register tiles of 2 x 16 positions; AVX2's of 2 x 8 keep the old order, see
    test_avx2_tiles_of_16_positions_keep_the_channel_blocks_outside), whose code `_run_matches` runs only where
    the host can."""
    from workbench.targets.cpu_host import host_machine

    return "host" if "avx512f" in host_machine().features else "skylake-avx512"


def _run_matches(ctx, threads: int) -> None:
    ok(ctx, "apply cpu-lower")
    missing = ctx.session.target.machine.missing_here()
    if missing:
        pytest.skip(f"code for {ctx.session.target.machine.name} needs {', '.join(missing)}, which this host lacks: "
                    "selected and lowered, not run")
    assert ok(ctx, f"run --check --threads {threads} --iterations 1 --warmup 0").data["run"]["check"]["passed"]


@pytest.fixture(autouse=True)
def _plane_order_on_one_thread_too(monkeypatch, request):
    if "keeps_the_old_order_on_one_thread" not in request.node.name:
        monkeypatch.setattr(cpu_selector, "PLANE_ORDER_MIN_THREADS", 1)


def test_a_convolution_keeps_the_old_order_on_one_thread_by_default(ctx, tmp_path):
    """Default bounds: the stride-2 conv on one thread keeps n, f, p; split over 2 threads it takes n, p, f."""
    try:
        assert not any("interchange=[0,2,1" in label
                       for label in _plane_steps(ctx, tmp_path, _conv(2, 64, 46, 46, 64, 3, 3, 2, 1), 1, _avx512()))
        steps = _plane_steps(ctx, tmp_path, _conv(2, 64, 46, 46, 64, 3, 3, 2, 1), 2, _avx512())
        assert steps and all("interchange=[0,2,1,4,5,3]" in label for label in steps), steps
    finally:
        ok(ctx, "target cpu --cpu host")


def _plane_steps(ctx, tmp_path, text: str, threads: int, cpu: str = "host") -> list[str]:
    """The labels of the selector's steps for the plane generics (window schedules with a remainder or long
    plane tiles: fold_unit_dims and contraction)."""
    labels = selected_step_labels(ctx, tmp_path, text, threads, cpu)
    return [label for label in labels if "fold_unit_dims=1" in label and "contraction=1" in label]


@pytest.mark.parametrize("threads", [1, 2])
def test_plane_tiles_go_outside_the_output_channel_blocks(ctx, tmp_path, threads):
    """A 3x3 stride-2 conv, 64 -> 64 channels, of 2 images at 46 x 46 (phases over planes of 24 x 24 positions:
    576, a remainder tile): the phases' loops (n, f, p, c, kh, kw) go n, p, f, kh, kw, c (before: n, f, p, ...),
    and the result matches."""
    try:
        steps = _plane_steps(ctx, tmp_path, _conv(2, 64, 46, 46, 64, 3, 3, 2, 1), threads, _avx512())
        assert steps and all("interchange=[0,2,1,4,5,3]" in label for label in steps), steps
        _run_matches(ctx, threads)
    finally:
        ok(ctx, "target cpu --cpu host")


def test_a_filter_larger_than_half_of_l2_keeps_the_channel_blocks_outside(ctx, tmp_path):
    """256 -> 288 channels, 3x3 (2.6 MB of filter, more than half of any L2 of the machine models): the output
    channel blocks stay outside the plane tiles (the whole filter re-read for each block of positions would come
    from L3)."""
    try:
        steps = _plane_steps(ctx, tmp_path, _conv(1, 256, 18, 18, 288, 3, 3, 1, 1), 1)
        assert steps and not any("interchange=[0,2,1" in label for label in steps), steps
    finally:
        ok(ctx, "target cpu --cpu host")


def test_avx2_tiles_of_16_positions_keep_the_channel_blocks_outside(ctx, tmp_path):
    """Under --cpu avx2 (register tiles of 2 x 8 plane positions) the same stride-2 conv's phases with window
    taps keep n, f, p: the filter would be read from L2 once per 16 positions. Its one phase of a single tap
    (of a 3x3 window at stride 2: the odd rows' odd columns) is a pointwise convolution and walks the positions
    outside the channel blocks as one does on AVX2 (cpu_selector, the note after FEW_REGISTERS_MIN_CHANNELS:
    the corpus's conv2d_strided one Zen 3 core 49.0 -> 43.6 ms with it, 5 alternated rounds)."""
    try:
        steps = _plane_steps(ctx, tmp_path, _conv(2, 64, 46, 46, 64, 3, 3, 2, 1), 1, cpu="avx2")
        positions_outside = [label for label in steps if "interchange=[0,2,1" in label]
        assert len(steps) >= 2 and len(positions_outside) == 1, steps
        ok(ctx, "apply cpu-lower")
        assert ok(ctx, "run --check --threads 1 --iterations 1 --warmup 0").data["run"]["check"]["passed"]
    finally:
        ok(ctx, "target cpu --cpu host")


SHAPES = [
    # (n, c, h, w, f, kh, kw, stride, padding, bias): odd H / W, channels no multiple of 8 or 16, batch 1 and 3
    (1, 5, 31, 29, 20, 3, 3, 2, 1, True),      # stride 2, padding 1, odd H / W: four phases
    (3, 6, 33, 27, 12, 3, 3, 2, 0, False),     # stride 2, padding 0, zero fill
    (3, 7, 17, 15, 10, 5, 5, 1, 2, True),      # unit stride, 5x5, padding 2: one plane of 21 x 19
    (1, 12, 19, 21, 24, 3, 3, 1, 1, True),     # unit stride, padding 1
    (3, 4, 25, 23, 18, 3, 3, 2, 2, True),      # stride 2, padding 2
]


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("shape", SHAPES)
def test_plane_ordered_convs_run_and_match(ctx, tmp_path, shape, threads):
    """The selector path on shapes that are no tile multiples, each with a plane schedule whose channel blocks
    went inside its plane tiles: every step applies and lowers, and the result matches the unscheduled payload,
    on 1 and 2 threads. On a host without AVX-512 its own selection (AVX2's register tiles of 2 x 8 positions:
    the old order, n, f, p) runs and matches."""
    from workbench.targets.cpu_host import host_machine

    avx512 = "avx512f" in host_machine().features
    try:
        steps = _plane_steps(ctx, tmp_path, _conv(*shape), threads)
        assert steps and any("interchange=[0,2,1," in label for label in steps) == avx512, steps
        _run_matches(ctx, threads)
    finally:
        ok(ctx, "target cpu --cpu host")
