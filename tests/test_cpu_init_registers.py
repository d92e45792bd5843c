"""A convolution's init (its bias broadcast, or a zero fill) fused into the window schedule's register tiles
(cpu_selector.init_registers, generic.py's init_registers: the output loops tiled by transform.structured.fuse
with the init's producer, the remainder's loop peeled): the accumulators start from the init's vectors, no pass
over the whole output before the convolution and no write and read back of the init in the tiles; the selector
path applies, lowers, runs and matches on shapes that are no tile multiples, on 1 and 2 threads."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

from conftest import ok, selected_step_labels, top_level_ops_with_nested_names

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
from _common import conv_payload  # noqa: E402  (bench/_common.py: torch-mlir's conv forms)


def _conv(n, c, h, w, f, kh, kw, s, p, bias=True) -> str:
    return conv_payload(n, c, h, w, f, kh, kw, s, p, bias=bias, cast_unpadded=True)


def _depthwise(n, c, h, w, k, s, p) -> str:
    return conv_payload(n, c, h, w, c, k, k, s, p, depthwise=True)


def _writers(text: str) -> list[tuple[str, int]]:
    """(name, vector stores in it) of the function's top-level ops that store vectors or run fills / broadcasts,
    the name with `+fma` where the op holds the convolution's multiply-adds."""
    out = []
    for name, names in top_level_ops_with_nested_names(text):
        if names & {"vector.transfer_write", "vector.store", "linalg.fill", "linalg.broadcast"}:
            out.append(name + ("+fma" if "vector.fma" in names else ""))
    return out


def _stores(text: str) -> int:
    """The vector stores of the lowered module's function (after the selection's finish step)."""
    return text.count("vector.store ") + text.count("vector.transfer_write ")


@pytest.fixture(autouse=True)
def host_target(ctx):
    yield
    ok(ctx, "target cpu --cpu host")


# (1x1 over an 80-position plane: a remainder tile of 16; a 3x3 over flattened planes; a depthwise 3x3)
CASES = {"pointwise": lambda: _conv(2, 24, 8, 10, 20, 1, 1, 1, 0),
         "planes": lambda: _conv(1, 8, 13, 13, 16, 3, 3, 1, 1),
         "depthwise": lambda: _depthwise(2, 16, 15, 15, 3, 1, 1)}


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_bias_starts_the_register_tiles(ctx, tmp_path, case):
    """The convolution's step takes init_registers with every output loop in fuse_init; fewer top-level nests
    store anything than without it (the broadcast's own pass; the remainder's part a nest of its own), and the nests store fewer vectors than
    with the init fused as a tile of its own written and read back (CpuTarget.init_fusion's variant): the
    accumulators' stores only."""
    from workbench.targets.cpu import CpuTarget

    labels = selected_step_labels(ctx, tmp_path, CASES[case](), 1)
    assert any("init_registers=1" in label and "fuse_init=" in label for label in labels), labels
    assert not any("op=broadcast" in label for label in labels), labels
    writers, stores = len(_writers(ctx.session.current_ir)), _stores(ctx.session.current_ir)
    ok(ctx, "apply cpu-lower")
    assert ok(ctx, "run --check --threads 1 --iterations 1 --warmup 0").data["run"]["check"]["passed"]
    before = (CpuTarget.init_registers, CpuTarget.init_fusion)
    try:
        CpuTarget.init_registers = False
        labels = selected_step_labels(ctx, tmp_path, CASES[case](), 1)
        assert any("op=broadcast" in label for label in labels), labels
        assert len(_writers(ctx.session.current_ir)) > writers
        CpuTarget.init_fusion = True
        labels = selected_step_labels(ctx, tmp_path, CASES[case](), 1)
        assert not any("init_registers=1" in label for label in labels), labels
        if case != "depthwise":   # (its fused init tile is the elementwise tile: as many store ops in the text)
            assert _stores(ctx.session.current_ir) > stores
    finally:
        CpuTarget.init_registers, CpuTarget.init_fusion = before


def test_switched_off_the_bias_is_a_pass_of_its_own(ctx, tmp_path, monkeypatch):
    """CpuTarget.init_registers False (bench/cpu_models.py --no-init-registers): the old variant, the bias
    broadcast its own step, and the path still matches."""
    from workbench.targets.cpu import CpuTarget

    monkeypatch.setattr(CpuTarget, "init_registers", False)
    labels = selected_step_labels(ctx, tmp_path, CASES["pointwise"](), 1)
    assert not any("init_registers=1" in label for label in labels), labels
    assert any("op=broadcast" in label for label in labels), labels
    ok(ctx, "apply cpu-lower")
    assert ok(ctx, "run --check --threads 1 --iterations 1 --warmup 0").data["run"]["check"]["passed"]


SHAPES = [
    # (n, c, h, w, f, kh, kw, stride, padding, bias): odd H / W, channels no multiple of 8 or 16, batch 1 and 3
    (1, 3, 16, 14, 10, 3, 3, 1, 1, True),      # planes (rows of 14), padding 1, 10 output channels
    (3, 5, 17, 17, 20, 3, 3, 2, 0, False),     # stride 2, padding 0: phases, zero fill
    (3, 7, 11, 9, 5, 5, 5, 1, 2, True),        # padding 2, 5 output channels
    (3, 16, 14, 14, 24, 1, 1, 1, 0, True),     # pointwise, 196 positions
    (3, 6, 19, 21, 12, 3, 3, 2, 1, True),      # stride 2, padding 1, odd H / W (the first phase's init)
    (2, 16, 40, 40, 32, 3, 3, 2, 1, True),     # stride 2 over rows of 20: flat phases with a remainder
]


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("shape", SHAPES)
def test_inits_in_registers_run_and_match(ctx, tmp_path, shape, threads):
    """Every step applies and lowers, and the result matches the unscheduled payload, on 1 and 2 threads."""
    labels = selected_step_labels(ctx, tmp_path, _conv(*shape), threads)
    assert any("init_registers=1" in label for label in labels), labels
    ok(ctx, "apply cpu-lower")
    assert ok(ctx, f"run --check --threads {threads} --iterations 1 --warmup 0").data["run"]["check"]["passed"]


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("shape", [(2, 16, 15, 15, 3, 1, 1), (3, 20, 13, 11, 3, 2, 0), (1, 10, 17, 17, 5, 2, 2)])
def test_depthwise_inits_in_registers_run_and_match(ctx, tmp_path, shape, threads):
    labels = selected_step_labels(ctx, tmp_path, _depthwise(*shape), threads)
    assert any("init_registers=1" in label for label in labels), labels
    ok(ctx, "apply cpu-lower")
    assert ok(ctx, f"run --check --threads {threads} --iterations 1 --warmup 0").data["run"]["check"]["passed"]


def test_avx2_applies_and_matches(ctx, tmp_path):
    """AVX2's 16 ymm (zen3's machine model): the 1x1 and the 3x3 select it with their own register tiles; a
    stride-2 depthwise 5x5 whose peeled remainder is one output row (its folded tile one loop fewer)."""
    from workbench.targets.cpu_host import machine_for

    for text in (CASES["pointwise"](), _conv(2, 16, 22, 22, 32, 3, 3, 2, 1), _depthwise(1, 10, 17, 17, 5, 2, 2)):
        labels = selected_step_labels(ctx, tmp_path, text, 1, cpu="zen3")
        assert any("init_registers=1" in label for label in labels), labels
        ok(ctx, "apply cpu-lower")
        if not machine_for("zen3").missing_here():
            assert ok(ctx, "run --check --threads 1 --iterations 1 --warmup 0").data["run"]["check"]["passed"]


def _op(owners, producers, remainder=(2, 768, 16), tile=(1, 8, 32, 8, 1)):
    ops = [{"op": "linalg.broadcast", "consumers": [1], "other_uses": False},
           {"op": "linalg.conv_1d_ncw_fcw", "producers": list(producers), "operand_owners": list(owners),
            "loops": {"num_inputs": 2, "iterators": ["parallel"] * 3 + ["reduction"] * 2,
                      "domain": [8, 256, 784, 256, 1], "operand_dims": [[0, 3, 2], [1, 3, 4], [0, 1, 2]]}}]
    params = {"fold_unit_dims": 1, "tile": list(tile), "remainder": list(remainder), "threads": 1}
    return ops[1], ops, params


def test_the_selector_rule():
    """Where it applies (a 1x1's conv_1d: its three output loops), and where not: an input read from a pad or
    a linalg op (the fusion would take it into the tiles too), a remainder not at the last whole tile, a tile
    that does not divide its loop."""
    from workbench.targets.cpu_selector import init_registers

    op, ops, params = _op(["tensor.collapse_shape", "arith.constant", "linalg.broadcast"], [-1, -1, 0])
    assert init_registers(op, ops, params) == {"init_operand": 2, "fuse_init": [0, 1, 2], "init_registers": 1}
    op, ops, params = _op(["tensor.pad", "arith.constant", "linalg.broadcast"], [-1, -1, 0])
    assert init_registers(op, ops, params) == {}
    op, ops, params = _op(["linalg.generic", "arith.constant", "linalg.broadcast"], [1, -1, 0])
    assert init_registers(op, ops, params) == {}
    op, ops, params = _op(["tensor.collapse_shape", "arith.constant", "linalg.broadcast"], [-1, -1, 0],
                          remainder=(2, 736, 48))
    assert init_registers(op, ops, params) == {}
    op, ops, params = _op(["tensor.collapse_shape", "arith.constant", "linalg.broadcast"], [-1, -1, 0],
                          tile=(1, 24, 32, 8, 1))
    assert init_registers(op, ops, params) == {}
