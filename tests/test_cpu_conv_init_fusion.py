"""A convolution's init (a zero fill, or its bias broadcast) is computed tile by tile inside the window
schedule's loop nest (generic.py's fuse_init / init_operand: fused into a serial forall over the leading
parallel tiles and into the thread chunks), not in a pass of its own over the whole output before the
convolution; the selector path applies, lowers, runs and matches on shapes that are no tile multiples."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

from conftest import ok, selected_step_labels, top_level_ops_with_nested_names

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
from _common import conv_payload  # noqa: E402  (bench/_common.py: torch-mlir's conv forms)


def _conv(n, c, h, w, f, kh, kw, s, p, bias=True) -> str:
    """torch-mlir's form of Conv2d(c, f, (kh, kw), stride s, padding p): a zero pad of the input (none for
    p = 0), the bias broadcast as the init (or a zero fill)."""
    return conv_payload(n, c, h, w, f, kh, kw, s, p, bias=bias, cast_unpadded=True)


def _depthwise(n, c, h, w, k, s, p) -> str:
    """torch-mlir's form of a depthwise Conv2d(c, c, k, stride s, padding p, groups=c) with a bias."""
    return conv_payload(n, c, h, w, c, k, k, s, p, depthwise=True)


def _select(ctx, tmp_path, text: str, threads: int) -> list[str]:
    return selected_step_labels(ctx, tmp_path, text, threads)


def _top_level_writers(text: str) -> list[str]:
    """The names of the function's top-level ops that write vectors or run linalg fills / broadcasts, each
    with whether it holds the convolution's multiply-adds (`+fma`)."""
    return [name + ("+fma" if "vector.fma" in names else "") for name, names in top_level_ops_with_nested_names(text)
            if names & {"vector.transfer_write", "vector.store", "linalg.fill", "linalg.broadcast"}]


@pytest.fixture(autouse=True)
def init_fusion_on(monkeypatch, request):
    """The fusion is off by default (CpuTarget.init_fusion: not a clear gain on the device yet); these tests
    switch it on, except the one that checks the default."""
    from workbench.targets.cpu import CpuTarget

    monkeypatch.setattr(CpuTarget, "init_fusion", "default" not in request.node.name)
    # (the init in the register tiles, on by default, is tests/test_cpu_init_registers.py's: these are the
    # forall fusion's and the old separate pass's)
    monkeypatch.setattr(CpuTarget, "init_registers", False)


def test_by_default_the_init_is_a_step_of_its_own(ctx, tmp_path):
    """Without CpuTarget.init_fusion the selector leaves the bias broadcast to a pass of its own before the
    convolution (the default until a device A/B shows the fusion faster), and the path still matches."""
    try:
        labels = _select(ctx, tmp_path, _conv(2, 24, 7, 9, 20, 1, 1, 1, 0, True), 1)
        assert not any("init_operand=2" in label for label in labels), labels
        assert any("op=broadcast" in label for label in labels), labels
        assert len(_top_level_writers(ctx.session.current_ir)) >= 2
        ok(ctx, "apply cpu-lower")
        assert ok(ctx, "run --check --threads 1 --iterations 1 --warmup 0").data["run"]["check"]["passed"]
    finally:
        ok(ctx, "target cpu --cpu host")


@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("threads", [1, 2])
def test_the_init_is_written_inside_the_convolutions_loop_nest(ctx, tmp_path, bias, threads):
    """A 1x1 conv (lh-pointwise-convs: a conv_1d over the collapsed plane of 7 x 9 = 63 positions, a
    remainder tile) and a 3x3 one over rows of whole vectors (no pad, no plane): the only top-level nest that
    writes anything is the convolution's (its init written tile by tile inside it); before, the fill or the
    bias broadcast was a top-level pass (a loop nest or a linalg.fill) over the whole output."""
    try:
        for text in (_conv(2, 24, 7, 9, 20, 1, 1, 1, 0, bias), _conv(1, 8, 6, 34, 16, 3, 3, 1, 0, bias)):
            labels = _select(ctx, tmp_path, text, threads)
            assert any("init_operand=2" in label for label in labels), labels
            writers = _top_level_writers(ctx.session.current_ir)
            assert len(writers) == 1 and writers[0].endswith("+fma"), writers
            ok(ctx, "apply cpu-lower")
            assert ok(ctx, f"run --check --threads {threads} --iterations 1 --warmup 0").data["run"]["check"]["passed"]
    finally:
        ok(ctx, "target cpu --cpu host")


SHAPES = [
    # (n, c, h, w, f, kh, kw, stride, padding, bias): odd H / W, channels no multiple of 8 or 16, batch 1 and 3
    (1, 3, 15, 13, 10, 3, 3, 1, 1, True),      # planes (rows of 13), padding 1
    (3, 5, 17, 17, 20, 3, 3, 2, 0, False),     # stride 2, padding 0: phases, zero fill
    (3, 7, 11, 9, 5, 5, 5, 1, 2, True),        # padding 2, 5 output channels
    (3, 16, 14, 14, 24, 1, 1, 1, 0, True),     # pointwise, 196 positions (batch 3: one image is a matmul)
    (3, 6, 19, 21, 12, 3, 3, 2, 1, True),      # stride 2, padding 1, odd H / W
]


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("shape", SHAPES)
def test_fused_inits_run_and_match(ctx, tmp_path, shape, threads):
    """The selector path with the init fused on shapes that are no tile multiples: every step applies and
    lowers, and the result matches the unscheduled payload, on 1 and 2 threads."""
    try:
        labels = _select(ctx, tmp_path, _conv(*shape), threads)
        assert any("init_operand=2" in label for label in labels), labels
        ok(ctx, "apply cpu-lower")
        assert ok(ctx, f"run --check --threads {threads} --iterations 1 --warmup 0").data["run"]["check"]["passed"]
    finally:
        ok(ctx, "target cpu --cpu host")


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("shape", [(1, 12, 15, 15, 3, 1, 1), (3, 20, 13, 11, 3, 2, 0), (1, 10, 17, 17, 5, 2, 2)])
def test_fused_depthwise_inits_run_and_match(ctx, tmp_path, shape, threads):
    """Depthwise convolutions (unit stride: the window schedule's elementwise tile; stride 2: one per phase)
    with their bias broadcast fused: every step applies, lowers, and the result matches."""
    try:
        labels = _select(ctx, tmp_path, _depthwise(*shape), threads)
        assert any("init_operand=2" in label for label in labels), labels
        ok(ctx, "apply cpu-lower")
        assert ok(ctx, f"run --check --threads {threads} --iterations 1 --warmup 0").data["run"]["check"]["passed"]
    finally:
        ok(ctx, "target cpu --cpu host")


def test_an_avx2_depthwise_remainder_row_of_one_applies_and_matches(ctx, tmp_path):
    """On AVX2 (zen3: 8 lanes) a stride-2 depthwise window with its bias fused splits off a remainder of one
    output row: that part's folded tile has one loop left, so the folded order of the main part's two loops is
    no order for it (it failed: `iterator_interchange` has length (2) different from the number of loops (1))."""
    from workbench.targets.cpu_host import machine_for

    try:
        labels = selected_step_labels(ctx, tmp_path, _depthwise(1, 10, 17, 17, 5, 2, 2), 1, cpu="zen3")
        assert any("init_operand=2" in label and "folded_order=[1,0]" in label and "remainder=[2,8,1]" in label
                   for label in labels), labels
        ok(ctx, "apply cpu-lower")
        missing = machine_for("zen3").missing_here()
        if missing:
            pytest.skip(f"zen3 code needs {', '.join(missing)}, which this host lacks: not run")
        assert ok(ctx, "run --check --threads 1 --iterations 1 --warmup 0").data["run"]["check"]["passed"]
    finally:
        ok(ctx, "target cpu --cpu host")
