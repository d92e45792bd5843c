"""A strided convolution's phases over long planes whose input plane does not stay in L2 across the blocks of output
channels sweep the channel blocks over one L2-sized block of plane positions at a time (cpu_selector.plane_blocks:
generic.py's cache_tile along the plane), and a deinterleaving transpose that reads whole contiguous input rows reads
them flat (pipelines/cpu/flatten-reads.yaml: lh-flatten-contiguous-transfers{writes=0} before the finish step).
docs/models-round20-conv.md. The block depends on the L2 of the machine model (the host's): the tests set the budget
(PLANE_BLOCK_L2_FRACTION) from the host's L2 so that the blocks are the same on any host."""
from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

import workbench.targets.cpu_selector as cpu_selector
from conftest import ok, selected_step_labels

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
from _common import conv_payload  # noqa: E402  (bench/_common.py: torch-mlir's conv forms)

#: 2 x 64 x 64 x 64, 3x3 stride 2, pad 1 -> 32 channels: four phases over planes of 32 rows x 33 columns (1056
#: positions, 270 KB of input channels an image); the blocks' budget set to BUDGET bytes: at most 300 positions
#: ((64 + 32) channels x 300 x 4 bytes): AVX2 264 (33 vectors of 8), AVX-512 176 (11 vectors of 16)
CONV = conv_payload(2, 64, 64, 64, 32, 3, 3, 2, 1, bias=True, cast_unpadded=True)
BUDGET = 115_200


def _budget(monkeypatch, budget: int = BUDGET) -> None:
    from workbench.targets.cpu_host import host_machine

    monkeypatch.setattr(cpu_selector, "PLANE_BLOCK_L2_FRACTION", budget / host_machine().l2_bytes)


def _phase_steps(labels: list[str]) -> list[str]:
    return [label for label in labels if "fold_unit_dims=1" in label and "contraction=1" in label]


@pytest.mark.parametrize("cpu, block, remainder", [("avx2", 264, "remainder=[2,256,8]"),
                                                    ("skylake-avx512", 176, "remainder=[2,160,16]")])
def test_phases_over_a_plane_larger_than_the_budget_take_blocks_of_positions(ctx, tmp_path, monkeypatch, cpu, block,
                                                                    remainder):
    """The phases with more than one tap take blocks of positions (cache_tile) with the channel blocks inside, each
    block's last tile one vector (AVX2: 16 tiles of 2 x 8 and one of 8; AVX-512: 5 of 2 x 16 and one of 16); AVX2's
    code runs and matches,
    AVX-512's compiles (asm). Fails without plane_blocks (no cache_tile)."""
    _budget(monkeypatch)
    try:
        steps = _phase_steps(selected_step_labels(ctx, tmp_path, CONV, 1, cpu))
        blocked = [label for label in steps if f"cache_tile=[1,0,{block},0,0,0]" in label]
        assert blocked and all("interchange=[0,1,2,4,5,3]" in label for label in blocked), steps
        assert all(remainder in label for label in blocked), steps
        if cpu == "avx2":
            ok(ctx, "apply cpu-lower")
            missing = ctx.session.target.machine.missing_here()
            if missing:
                pytest.skip(f"AVX2 code needs {', '.join(missing)}, which this host lacks: selected and lowered")
            assert ok(ctx, "run --check --threads 1 --iterations 1 --warmup 0").data["run"]["check"]["passed"]
        else:
            ok(ctx, "apply cpu-lower")
            ok(ctx, "asm")   # (compiled for the AVX-512 machine: llvm-objdump of its object code)
    finally:
        ok(ctx, "target cpu --cpu host")


def test_a_plane_whose_input_fits_the_budget_keeps_the_whole_plane(ctx, tmp_path, monkeypatch):
    """With a budget larger than an image's input plane (270 KB) no phase takes blocks (the channel blocks sweep the
    plane from L2)."""
    _budget(monkeypatch, 400_000)
    try:
        steps = _phase_steps(selected_step_labels(ctx, tmp_path, CONV, 1, "avx2"))
        assert steps and not any("cache_tile=[1" in label for label in steps), steps
    finally:
        ok(ctx, "target cpu --cpu host")


@pytest.mark.parametrize("cpu", ["avx2", "skylake-avx512"])
def test_the_deinterleaving_transpose_reads_whole_input_rows_flat(ctx, tmp_path, cpu):
    """The strided conv's transpose [n, c, hq, 2, wq, 2] -> [2, 2, n, c, hq, wq] (a tile of lanes x 2 of each
    input row, contiguous) is followed by flatten-reads before the finish step: after it the transpose reads one
    flat vector of 2 x lanes elements (a load and the even / odd shuffles), where the vector lowering read each
    pair of columns on its own (vector<...x8x2xf32>). Fails without the step."""
    try:
        labels = selected_step_labels(ctx, tmp_path, CONV, 1, cpu)
        flat = [i for i, label in enumerate(labels) if "flatten-reads.yaml" in label]
        assert len(flat) == 1 and "finish.py" in labels[flat[0] + 1], labels
        lanes = 8 if cpu == "avx2" else 16
        after = ctx.session.ir_at(flat[0] + 1)
        assert re.search(rf"vector\.transfer_read .*vector<{2 * lanes}xf32>", after), after[-3000:]
        assert f"x{lanes}x2xf32>, vector<1x1x1x1x{lanes}x2xf32>" not in after
    finally:
        ok(ctx, "target cpu --cpu host")


def test_the_corpus_strided_conv_runs_and_matches(ctx, tmp_path):
    """conv2d_strided's shape at one image (1 x 64 x 112 x 112, 3x3 stride 2 -> 64) on AVX2 with the host's
    selection (blocks where the host's L2 is small, the flat transpose reads): run --check."""
    try:
        selected_step_labels(ctx, tmp_path, conv_payload(1, 64, 112, 112, 64, 3, 3, 2, 1, bias=True,
                                                         cast_unpadded=True), 1, "avx2")
        ok(ctx, "apply cpu-lower")
        assert ok(ctx, "run --check --threads 1 --iterations 1 --warmup 0").data["run"]["check"]["passed"]
    finally:
        ok(ctx, "target cpu --cpu host")


READ_OF_A_SLICE = """func.func @main(%t: tensor<16x4xf32>) -> vector<{flat}xf32> {{
  %c0 = arith.constant 0 : index
  %p = arith.constant 0.0 : f32
  %s = tensor.extract_slice %t[0, 0] [8, {cols}] [1, 1] : tensor<16x4xf32> to tensor<8x{cols}xf32>
  %v = vector.transfer_read %s[%c0, %c0], %p {{in_bounds = [true, true]}} : tensor<8x{cols}xf32>, vector<8x{cols}xf32>
  %f = vector.shape_cast %v : vector<8x{cols}xf32> to vector<{flat}xf32>
  return %f : vector<{flat}xf32>
}}
"""


@pytest.mark.parametrize("cols, flattened", [(4, 1), (2, 0)])
def test_a_read_of_a_slice_is_flat_only_where_the_slice_keeps_whole_rows(cols, flattened):
    """lh-flatten-contiguous-transfers reads a tile of a tensor flat only where the extract_slice it reads keeps the
    rows whole (8 x 4 of 16 x 4: contiguous once bufferized); 8 x 2 of 16 x 4 is a strided view, whose collapse the
    bufferization would copy: left 2-D. Fails without the check (both flattened)."""
    from mlir import ir

    from workbench.worker.cpu import flatten_transfers

    with ir.Context(), ir.Location.unknown():
        module = ir.Module.parse(READ_OF_A_SLICE.format(cols=cols, flat=8 * cols))
        assert flatten_transfers.flatten_contiguous_reads(module) == flattened
        module.operation.verify()
