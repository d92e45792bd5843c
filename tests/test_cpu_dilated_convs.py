"""Convolutions over a stride-dilated input (torch-mlir's transposed convolutions) as one dense
convolution per output phase (`lh-dilated-input-convs`, workbench/worker/cpu/transposed_convs.py): no
multiply-adds of the inserted zeros, and the same results as the unscheduled payload and torch."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from conftest import fixture_io_flags, ok

FIXTURES = Path(__file__).parent / "fixtures" / "torch"
GAPS = Path(__file__).parent / "payloads" / "dilated_conv" / "conv_transpose_gaps.mlir"


def _conv_flops(ctx) -> float:
    info = ok(ctx, "inspect").data["inspect"]
    return sum(op.get("flops", 0) for op in info["ops"] if op["op"].startswith("linalg.conv_"))


@pytest.mark.parametrize("name, phases, conv", [
    ("conv_transpose1d", 2, "linalg.conv_1d_ncw_fcw"),    # kernel 4, stride 2: two phases of 2 taps
    ("conv_transpose2d", 4, "linalg.conv_2d_nchw_fchw"),  # 3x3, stride 2: 2x2, 2x1, 1x2, 1x1 taps
])
def test_one_dense_convolution_per_phase(ctx, name, phases, conv):
    """The convolution of the dilated input becomes one convolution per output phase, none of them reading
    the zero-filled, dilated input (no strided insert feeds a convolution) and together doing the
    multiply-adds of the nonzero taps only: a stride-2 2-D one a quarter of the old work."""
    ok(ctx, f"load {FIXTURES / (name + '.mlir')}")
    before = _conv_flops(ctx)
    ok(ctx, "apply pass lh-dilated-input-convs")
    text = ctx.session.current_ir
    assert text.count(conv + " ") == phases
    assert not re.search(r"tensor\.insert_slice %arg0 into %\w+\[[^\]]*\] \[[^\]]*\] \[[^\]]*2[^\]]*\]", text)
    after = _conv_flops(ctx)
    assert 0 < after <= before / phases * 1.2, (before, after)


@pytest.mark.parametrize("name", ["conv_transpose1d", "conv_transpose2d"])
def test_phases_are_selected_lowered_and_equal_torch(ctx, name):
    """`select --apply` prepares the payload with the rewrite and schedules every phase's convolution as a
    window op (the old selection had one convolution); 1 and 2 threads equal torch's outputs."""
    fixture = FIXTURES / f"{name}.mlir"
    ok(ctx, f"load {fixture}")
    res = ok(ctx, "select --apply")
    assert "pass lh-dilated-input-convs" in res.data["prepared"]
    # (each phase a named convolution, or its plane form where lh-conv-planes took it: a generic)
    convs = [e["params"] for e in res.data["selections"] if e["params"].get("contraction") == 1]
    assert convs and all(str(p.get("op")).startswith(("conv_", "generic", "['")) for p in convs), convs
    assert sum(len(p["op"]) if isinstance(p["op"], list) else 1 for p in convs) >= 2
    ok(ctx, "bench warmup=1 iterations=2")
    ok(ctx, "apply cpu-lower")
    for threads in (1, 2):
        run = ok(ctx, f"run --check --threads {threads} {fixture_io_flags(fixture)}").data["run"]
        assert run["check"]["passed"] and run["expected_check"]["passed"], run


def test_phases_without_taps_keep_the_bias(ctx):
    """Kernel 2, stride 3: one output phase meets no tap (the bias alone there); the others become
    convolutions, the init stays the result's base, and the run matches the unscheduled payload."""
    ok(ctx, f"load {GAPS}")
    ok(ctx, "apply pass lh-dilated-input-convs")
    text = ctx.session.current_ir
    assert text.count("linalg.conv_1d_ncw_fcw ") == 2
    assert "[1, 1, 3]" in text   # the phases inserted with the stride
    ok(ctx, "undo")
    ok(ctx, "select --apply")
    ok(ctx, "bench warmup=1 iterations=2")
    ok(ctx, "apply cpu-lower")
    assert ok(ctx, "run --check").data["run"]["check"]["passed"]


def test_a_rest_of_one_column_takes_the_last_vector_with_it():
    """A phase of 513 output columns (1026 / 2) with 16 lanes: 32 whole vectors and a rest of one, whose
    folded tile would be a matrix-vector product that no named contraction matches (the step failed);
    the rest takes the last whole vector with it: 496 + 17."""
    from workbench.targets.cpu_selector import window_params

    conv1d = {"iterators": ["parallel", "parallel", "parallel", "reduction", "reduction"],
              "operand_dims": [[0, 3, -1], [1, 3, 4], [0, 1, 2]],
              "operand_terms": [[[[0, 1]], [[3, 1]], [[2, 1], [4, 1]]], [[[1, 1]], [[3, 1]], [[4, 1]]],
                                [[[0, 1]], [[1, 1]], [[2, 1]]]],
              "num_inputs": 2, "body": ["arith.mulf", "arith.addf", "linalg.yield"], "projected": False,
              "domain": [16, 64, 513, 64, 2]}
    p = window_params(conv1d, 16)
    assert p["contraction"] == 1 and p["tile"][2] == 16 and p["remainder"] == [2, 496, 17]
    conv1d["domain"][2] = 1026   # a rest of two: as it was
    assert window_params(conv1d, 16)["remainder"] == [2, 1024, 2]
