"""The phases of a strided convolution (lh-strided-conv-planes: one unit-stride plane generic per phase, each
accumulating into the next) fused image by image (CpuTarget.phase_chain, cpu_selector.phase_chains, generic.py's
chain): one loop over the images holds every phase's register tiles, instead of one loop nest per phase over the
whole batch; the selector path applies, lowers, runs and matches on shapes that are no tile multiples."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

from conftest import ok, selected_step_labels, top_level_ops_with_nested_names

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
from _common import conv_payload  # noqa: E402  (bench/_common.py: torch-mlir's conv forms)


def _conv(n, c, h, w, f, kh, kw, s, p, bias=True) -> str:
    return conv_payload(n, c, h, w, f, kh, kw, s, p, bias=bias, cast_unpadded=True)


def _select(ctx, tmp_path, text: str, threads: int) -> list[str]:
    return selected_step_labels(ctx, tmp_path, text, threads)


def _top_level_fma_nests(text: str) -> int:
    """How many of the function's top-level ops hold vector FMAs (the phases' register tiles)."""
    return sum("vector.fma" in names for _, names in top_level_ops_with_nested_names(text))


@pytest.fixture
def chain_on(monkeypatch):
    from workbench.targets.cpu import CpuTarget

    monkeypatch.setattr(CpuTarget, "phase_chain", True)


@pytest.mark.parametrize("threads", [1, 2])
def test_the_phases_of_a_strided_conv_run_in_one_loop_over_the_images(ctx, tmp_path, chain_on, threads):
    """A 3x3 stride-2 conv of 4 images (four phases over flattened planes): with the chain, one top-level nest
    holds the multiply-adds of all four phases (each image's phases one after another); without it, each phase
    is a nest of its own over all the images (two: whole tiles and the remainder)."""
    try:
        labels = _select(ctx, tmp_path, _conv(4, 12, 19, 17, 20, 3, 3, 2, 1), threads)
        assert any("chain=1" in label and "chain_operand=2" in label for label in labels), labels
        assert _top_level_fma_nests(ctx.session.current_ir) == 1
        ok(ctx, "apply cpu-lower")
        assert ok(ctx, f"run --check --threads {threads} --iterations 1 --warmup 0").data["run"]["check"]["passed"]
    finally:
        ok(ctx, "target cpu --cpu host")


def test_by_default_each_phase_is_a_nest_of_its_own(ctx, tmp_path):
    """CpuTarget.phase_chain is off by default (not faster on the 2-core host): nests per phase."""
    try:
        labels = _select(ctx, tmp_path, _conv(4, 12, 19, 17, 20, 3, 3, 2, 1), 1)
        assert not any("chain=1" in label for label in labels), labels
        assert _top_level_fma_nests(ctx.session.current_ir) >= 4   # (a main and a remainder nest a phase)
    finally:
        ok(ctx, "target cpu --cpu host")


SHAPES = [
    # (n, c, h, w, f, kh, kw, stride, padding, bias, chained): odd H / W, channels no multiple of 8 or 16
    (3, 5, 17, 15, 20, 3, 3, 2, 0, False, True),   # padding 0, zero fill, batch 3
    (3, 6, 19, 21, 12, 3, 3, 2, 1, True, True),    # padding 1, odd H / W
    (4, 7, 13, 11, 10, 5, 5, 2, 2, True, True),    # 5x5, padding 2
    (3, 4, 16, 17, 9, 3, 3, 3, 1, True, True),     # stride 3: nine phases
    (1, 6, 19, 21, 12, 3, 3, 2, 1, True, False),   # batch 1: nothing to chain along, the phases as before
]


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("shape", SHAPES)
def test_chained_phases_run_and_match(ctx, tmp_path, chain_on, shape, threads):
    """The selector path with the chain on shapes that are no tile multiples: every step applies and lowers,
    and the result matches the unscheduled payload, on 1 and 2 threads."""
    *conv, chained = shape
    try:
        labels = _select(ctx, tmp_path, _conv(*conv), threads)
        assert any("chain=1" in label for label in labels) == chained, labels
        ok(ctx, "apply cpu-lower")
        assert ok(ctx, f"run --check --threads {threads} --iterations 1 --warmup 0").data["run"]["check"]["passed"]
    finally:
        ok(ctx, "target cpu --cpu host")
