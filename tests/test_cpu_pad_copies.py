"""Reflection / replication pads as row copies (`lh-pad-copies`, workbench/worker/cpu/pad_copies.py):
torch-mlir's gathers over index tables are recognized from the values their indices take (each dim's pad
map), rewritten into one forall of row copies (vector transfers, scalar border elements), and the CPU
selector's path through them matches torch on 1 and 2 threads.

The fixtures in tests/fixtures/pads are torch-mlir exports (F.pad with mode="reflect" / "replicate",
1-d/2-d/3-d, asymmetric pads, pads of 0 on a side, f32 / f64 / i32) with torch's inputs and outputs."""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from conftest import fixture_io_flags, ok

PADS = Path(__file__).parent / "fixtures" / "pads"
TORCH = Path(__file__).parent / "fixtures" / "torch"
TORCHLIKE = Path(__file__).parent / "payloads" / "torchlike"

R, P, I = "reflect", "replicate", "identity"
#: fixture -> the pad map of each loop of the gather the fusion leaves (unit dims folded): (kind, p, q)
#: from F.pad's widths, given last dim first (reflect2d: (1, 2, 0, 3): W 1 | 2, H 0 | 3)
EXPECTED = {
    PADS / "pad_reflect1d.mlir": [(I, 0, 0), (R, 2, 3)],                            # 1x2x6, (2, 3)
    PADS / "pad_reflect1d_widest.mlir": [(I, 0, 0), (R, 3, 3)],                     # 2x4, (3, 3): n - 1
    PADS / "pad_reflect1d_long_row.mlir": [(I, 0, 0), (I, 0, 0), (R, 5, 7)],        # rows of 200: chunk loop
    PADS / "pad_reflect2d.mlir": [(I, 0, 0), (R, 0, 3), (R, 1, 2)],                 # 0 on a side
    PADS / "pad_reflect2d_f64.mlir": [(I, 0, 0), (R, 1, 2), (R, 2, 1)],
    PADS / "pad_reflect3d.mlir": [(I, 0, 0), (R, 3, 2), (R, 2, 1), (R, 1, 0)],
    PADS / "pad_replicate1d.mlir": [(I, 0, 0), (I, 0, 0), (P, 0, 3)],
    PADS / "pad_replicate2d.mlir": [(I, 0, 0), (P, 3, 0), (P, 2, 1)],
    PADS / "pad_replicate2d_i32.mlir": [(I, 0, 0), (P, 2, 1), (P, 1, 2)],
    PADS / "pad_replicate3d.mlir": [(P, 2, 1), (P, 0, 1), (P, 1, 2)],
    TORCH / "pad_reflect.mlir": [(I, 0, 0), (R, 1, 0), (R, 1, 2)],                  # the corpus entry
}


def _fused(path: Path):
    """The fixture parsed and fused as the selector's preparation does before lh-pad-copies."""
    from mlir import ir

    from workbench.worker.cpu import fusion

    module = ir.Module.parse(path.read_text())
    fusion.fuse_elementwise(module)
    return module


def test_pad_maps_are_recognized_from_their_values():
    from workbench.worker.cpu.pad_copies import pad_map, runs

    j = np.arange
    assert pad_map(np.array([1, 0, 1, 2, 3, 4, 3, 2]), 5) == ("reflect", 1, 2)
    assert pad_map(np.array([0, 0, 0, 1, 2, 3, 4, 4]), 5) == ("replicate", 2, 1)
    assert pad_map(np.array([4, 0, 1, 2, 3, 4, 0, 1]), 5) == ("circular", 1, 2)
    assert pad_map(np.array([3, 2, 1, 0, 1, 2, 3, 2, 1, 0]), 4) == ("reflect", 3, 3)   # widths up to n - 1
    assert pad_map(j(5), 5) == ("identity", 0, 0)
    assert pad_map(j(5), 3) is None                      # a longer copy: no pad
    assert pad_map(j(5)[::-1].copy(), 5) is None         # a flip
    assert pad_map((j(5) + 2) % 5, 5) is None            # a roll: same extent, no widths
    assert pad_map(np.array([1, 2, 3, 4, 4]), 5) is None   # shifted by one, not padded
    # a reflection's border elements are single copies, its interior one run
    assert runs(np.array([1, 0, 1, 2, 3, 4, 3, 2])) == [(0, 1, 1), (1, 0, 5), (6, 3, 1), (7, 2, 1)]


@pytest.mark.parametrize("path", list(EXPECTED), ids=lambda p: p.stem)
def test_torch_mlir_pads_are_recognized_and_rewritten(path):
    """Every loop's map as F.pad gave it; rewritten into one forall of row copies (vector transfers along
    the row, a constant table of source rows for each padded outer dim): no generic, no gather left."""
    from mlir import ir

    from workbench.worker.cpu import pad_copies

    with ir.Context(), ir.Location.unknown():
        found = pad_copies._pads(_fused(path))
        assert [plan["maps"] for _, plan in found] == [EXPECTED[path]]
        module = _fused(path)
        assert pad_copies.pad_copies(module) == 1   # (one thread: scf.for loops over the rows)
        text = str(module)
        split = _fused(path)
        assert pad_copies.pad_copies(split, threads=2, min_work=0) == 1
        threaded = str(split)
        small = _fused(path)
        assert pad_copies.pad_copies(small, threads=2, min_work=1 << 30) == 1
        assert str(small) == text   # (below min-work: as on one thread)
    for form in (text, threaded):
        assert "linalg.generic" not in form and "vector.gather" not in form
        assert "vector.transfer_read" in form and "vector.transfer_write" in form
    rows = len(EXPECTED[path]) > 1
    assert ("scf.forall" in threaded) == rows and "scf.forall" not in text
    assert text.count("scf.for ") == len(EXPECTED[path]) - 1 + (path.stem == "pad_reflect1d_long_row")
    if path.stem == "pad_reflect1d_long_row":
        assert "scf.for " in text   # 200 elements: a loop over 16-element chunks, not 12 unrolled
    if path.stem == "pad_reflect2d":   # H reflected at the bottom only: rows 0..4, then 3, 2, 1
        assert "dense<[0, 1, 2, 3, 4, 3, 2, 1]> : tensor<8xindex>" in text


def _lookalike(text: str, old: str, new: str, tmp_path: Path) -> Path:
    assert old in text
    path = tmp_path / "lookalike.mlir"
    path.write_text(text.replace(old, new))
    return path


@pytest.mark.parametrize("variant, old, new", [
    # the far edge reflected about 98.5 instead of 99: the last column reads 97, not 98
    ("off-by-one reflection", "%c198 = arith.constant 198 : i64", "%c198 = arith.constant 197 : i64"),
    # a flip of the row (99 - j): every index computed, none a pad's
    ("flip", "%s = arith.subi %ji, %c1 : i64", "%s = arith.subi %c99, %ji : i64"),
    # the row's index read along the other loop (a transpose-like gather)
    ("other loop", "%ji = arith.index_cast %j : index to i64", "%ji = arith.index_cast %i : index to i64"),
])
def test_lookalike_gathers_are_left_alone(tmp_path, variant, old, new):
    """Gathers written like a reflection whose indices compute something else: not rewritten, the module not
    touched (the recognition runs on a copy)."""
    from mlir import ir

    from workbench.worker.cpu import pad_copies

    path = _lookalike((TORCHLIKE / "reflect_pad.mlir").read_text(), old, new, tmp_path)
    with ir.Context(), ir.Location.unknown():
        module = ir.Module.parse(path.read_text())
        before = str(module)
        assert pad_copies.pad_copies(module) == 0, variant
        assert str(module) == before
        original = ir.Module.parse((TORCHLIKE / "reflect_pad.mlir").read_text())
        assert pad_copies.pad_copies(original) == 1   # (the unmodified payload is one)


def test_other_gathers_are_not_touched():
    """index_select and embedding (gathers at ids read from a tensor): the pass changes nothing."""
    from mlir import ir

    from workbench.worker.cpu import pad_copies

    for name in ("index_select", "embedding"):
        with ir.Context(), ir.Location.unknown():
            module = _fused(TORCH / f"{name}.mlir")
            before = str(module)
            assert pad_copies.pad_copies(module) == 0 and str(module) == before, name


@pytest.mark.parametrize("split", [False, True], ids=["loops", "forall"])
@pytest.mark.parametrize("path", list(EXPECTED), ids=lambda p: p.stem)
def test_pads_through_the_selector_match_torch(ctx, monkeypatch, path, split):
    """select (planned for 2 threads: the pad step in the preparation, no generic schedule and no gather
    for the pad; these small pads as loops on one thread, or with MIN_PARALLEL_WORK 0 their rows split
    over the threads) -> cpu-lower -> run --check on 1 and 2 threads: the unscheduled payload's outputs and
    torch's."""
    from workbench.targets import cpu_selector

    if split:
        monkeypatch.setattr(cpu_selector, "MIN_PARALLEL_WORK", 0)
    ok(ctx, f"load {path}")
    try:
        ok(ctx, "target cpu --threads 2")
        res = ok(ctx, "select --apply").data
        step = next((s for s in res["prepared"] if s.startswith("pass lh-pad-copies{lanes=")), None)
        assert step is not None, res["prepared"]
        assert not [e for e in res["selections"] if "generic.py" in e["schedule"]]
        assert "vector.gather" not in ctx.session.current_ir
        rows = len(EXPECTED[path]) > 1
        assert ("scf.forall" in ctx.session.ir_at(res["prepared"].index(step) + 1)) == (split and rows)
        _lowered_run_matches_torch(ctx, path)
    finally:
        ok(ctx, "target cpu --threads 0")


def _lowered_run_matches_torch(ctx, path: Path) -> None:
    """bench, cpu-lower, then `run --check` on 1 and 2 threads against the unscheduled payload and torch."""
    ok(ctx, "bench warmup=1 iterations=2")
    ok(ctx, "apply cpu-lower")
    for threads in (1, 2):
        run = ok(ctx, f"run --check --threads {threads} {fixture_io_flags(path)}").data["run"]
        assert run["check"]["passed"] and run["expected_check"]["passed"], (threads, run)


def test_pads_between_convolutions_match_torch(ctx):
    """A style-transfer-like block (ReflectionPad2d(1), Conv2d, ReLU, ReplicationPad2d((2, 1, 0, 2)), Conv2d,
    Tanh): both pads become row copies, the convolutions keep their own schedules, and the whole path
    matches torch on 1 and 2 threads."""
    path = PADS / "pad_conv_block.mlir"
    ok(ctx, f"load {path}")
    try:
        ok(ctx, "target cpu --threads 2")
        res = ok(ctx, "select --apply").data
        step = next(i for i, s in enumerate(res["prepared"]) if s.startswith("pass lh-pad-copies"))
        prepared = ctx.session.ir_at(step + 1)
        # (small pads, below MIN_PARALLEL_WORK: loops of rows on one thread, not split over the two)
        assert prepared.count("tensor.insert_slice") == 2 and "scf.forall" not in prepared
        assert "linalg.conv_2d_nchw_fchw" in prepared
        assert "vector.gather" not in ctx.session.current_ir
        _lowered_run_matches_torch(ctx, path)
    finally:
        ok(ctx, "target cpu --threads 0")


def test_a_rank_one_pad_is_one_row(ctx):
    """No outer dims: no forall, the row's chunks and border elements written into the output itself;
    checked against the unscheduled payload on 1 and 2 threads."""
    ok(ctx, f"load {TORCHLIKE / 'reflect_pad_1d.mlir'}")
    res = ok(ctx, "select --apply").data
    from workbench.worker.cpu.pad_copies import MAX_UNROLLED_CHUNKS

    step = next(s for s in res["prepared"] if s.startswith("pass lh-pad-copies{lanes="))
    lanes = int(re.search(r"lanes=(\d+)", step).group(1))
    text = ctx.session.ir_at(1)
    assert "scf.forall" not in text and "linalg.generic" not in text
    # 100 elements from column 2 in vectors of `lanes` (16 with AVX-512: six and one of 4, a loop over
    # chunks past MAX_UNROLLED_CHUNKS); columns 0, 1 and 102 single copies
    full, tail = divmod(100, lanes)
    writes = (1 if full > MAX_UNROLLED_CHUNKS else full) + (1 if tail else 0)
    assert text.count("vector.transfer_write") == writes and text.count("tensor.insert ") == 3
    ok(ctx, "bench warmup=1 iterations=2")
    ok(ctx, "apply cpu-lower")
    for threads in (1, 2):
        assert ok(ctx, f"run --check --threads {threads}").data["run"]["check"]["passed"]
