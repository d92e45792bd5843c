"""Attention's softmax on long sequences (docs/attention-round14.md): torch's scaled_dot_product_attention in
torch-mlir's form reads its scores as few times as the answer allows.

- lh-fold-all-neg-inf-checks: `_safe_softmax`'s "row all -inf" guard (an and-reduction of `scores oeq -inf`)
  is `max oeq -inf` of the softmax's own row max: no pass over the scores; rows that are all -inf (fully
  masked) still give 0.

The fixture tests/fixtures/sdpa/sdpa_masked.* is torch's sdpa with an additive causal mask whose row 1 is
all -inf (tests/fixtures/sdpa/sdpa_modules.py:SdpaMasked, `lh-workbench import ... --inputs 1x2x16x8xf32 x3`),
with torch's inputs and outputs.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from conftest import load_npys, lower_and_check_fixture, ok

SDPA = Path(__file__).parent / "fixtures" / "sdpa"
MASKED = SDPA / "sdpa_masked.mlir"


def _and_reductions(text: str) -> int:
    return text.count("arith.andi")


def _folded(text: str) -> tuple[int, str]:
    from mlir import ir

    from workbench.worker.cpu.dead_results import drop_dead_results
    from workbench.worker.cpu.softmax_guards import fold_all_neg_inf_checks

    with ir.Context(), ir.Location.unknown():
        module = ir.Module.parse(text)
        drop_dead_results(module)
        n = fold_all_neg_inf_checks(module)
        assert module.operation.verify()
        return n, str(module)


def test_the_all_neg_inf_guard_is_read_off_the_row_max():
    text = MASKED.read_text()
    # (the fixture's mask itself has one andi, elementwise: the tril mask)
    assert "oeq" in text and "tensor<1x2x16x16xi1>" in text and _and_reductions(text) == 2
    n, folded = _folded(text)
    assert n == 1
    assert "tensor<1x2x16x16xi1>" not in folded           # no i1 tensor of the scores
    assert _and_reductions(folded) == 1                    # the mask's andi only
    # the guard: an elementwise compare of the row max (1x2x16) into the 1x2x16x1 bools
    assert "ins(%" in folded and "tensor<1x2x16xf32>) outs(" in folded and "-> tensor<1x2x16x1xi1>" in folded


def test_the_guard_stays_without_a_max_of_the_same_scores():
    text = MASKED.read_text()
    # a max that ignores NaN (maxnumf: a row of -inf and NaN has max -inf, yet is not all -inf) is no witness
    n, folded = _folded(text.replace("arith.maximumf", "arith.maxnumf"))
    assert n == 0 and "tensor<1x2x16x16xi1>" in folded and _and_reductions(folded) == 2
    # nor is a max from 0 (a row all -inf has max 0)
    lines = text.splitlines()
    fills = [i for i, line in enumerate(lines) if "linalg.fill ins(%cst_0 : f32)" in line and "1x2x16xf32" in line]
    assert len(fills) == 1
    lines[fills[0]] = lines[fills[0]].replace("%cst_0", "%cst")
    n, folded = _folded("\n".join(lines))
    assert n == 0 and "tensor<1x2x16x16xi1>" in folded


@pytest.mark.parametrize("threads", [1, 2])
def test_a_fully_masked_row_gives_zeros_on_the_selector_path(ctx, tmp_path, threads):
    ok(ctx, f"load {MASKED}")
    try:
        ok(ctx, f"target cpu --threads {threads}")
        ok(ctx, "select --apply")
        labels = [a.step.label() for a in ctx.session.active_steps]
        assert any("lh-fold-all-neg-inf-checks" in label for label in labels), labels
        lower_and_check_fixture(ctx, MASKED, threads=threads, save=tmp_path)
    finally:
        ok(ctx, "target cpu --cpu host --threads 0")
    out = load_npys(tmp_path, "output")[0]
    assert np.all(out[0, :, 1, :] == 0.0)                    # the fully masked row
    assert np.all(np.isfinite(out)) and np.abs(out[0, :, 0, :]).max() > 0.1


def test_the_softmax_division_runs_on_the_attention_output(ctx, tmp_path):
    """lh-scale-after-contractions (opt-in: in the selector's preparation it splits the rows chain of the
    softmax, docs/attention-round14.md): P @ V with P = select(all -inf, 0, E / sum) becomes (E @ V) / sum
    (select after), the division over 2x16x8, not 2x16x16; torch's outputs, a fully masked row included."""
    ok(ctx, f"load {MASKED}")
    for p in ("lh-drop-dead-results", "lh-fold-all-neg-inf-checks", "lh-fuse-elementwise"):
        ok(ctx, f"pass {p}")
    before = ctx.session.current_ir
    ok(ctx, "pass lh-scale-after-contractions")
    after = ctx.session.current_ir

    def division_header(text: str) -> str:
        (chunk,) = [c for c in text.split("linalg.generic")[1:] if "arith.divf" in c.split("linalg.yield")[0]]
        return chunk.splitlines()[0]

    assert "outs(%" in division_header(before) and division_header(before).endswith("tensor<2x16x16xf32>) {")
    assert division_header(after).endswith("tensor<2x16x8xf32>) {")        # over P @ V's result
    lower_and_check_fixture(ctx, MASKED, save=tmp_path)
    assert np.all(load_npys(tmp_path, "output")[0][0, :, 1, :] == 0.0)


def test_no_scaling_moves_where_it_varies_along_the_contraction():
    """A scale read along the contraction's reduction dim (x / s[k], not s[m]) does not commute: kept."""
    from mlir import ir

    from workbench.worker.cpu.scaled_contractions import scale_after_contractions

    text = """#id = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>
#row = affine_map<(d0, d1) -> (d0)>
#a = affine_map<(m, n, k) -> (m, k)>
#b = affine_map<(m, n, k) -> (k, n)>
#c = affine_map<(m, n, k) -> (m, n)>
func.func @f(%e: tensor<8x16xf32>, %s: tensor<SHAPExf32>, %v: tensor<16x4xf32>) -> tensor<8x4xf32> {
  %z = arith.constant 0.0 : f32
  %0 = tensor.empty() : tensor<8x16xf32>
  %p = linalg.generic {indexing_maps = [#id, #MAP, #id], iterator_types = ["parallel", "parallel"]}
      ins(%e, %s : tensor<8x16xf32>, tensor<SHAPExf32>) outs(%0 : tensor<8x16xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %d = arith.divf %x, %y : f32
    linalg.yield %d : f32
  } -> tensor<8x16xf32>
  %1 = tensor.empty() : tensor<8x4xf32>
  %f = linalg.fill ins(%z : f32) outs(%1 : tensor<8x4xf32>) -> tensor<8x4xf32>
  %r = linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%p, %v : tensor<8x16xf32>, tensor<16x4xf32>) outs(%f : tensor<8x4xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %m = arith.mulf %x, %y : f32
    %a = arith.addf %o, %m : f32
    linalg.yield %a : f32
  } -> tensor<8x4xf32>
  return %r : tensor<8x4xf32>
}
"""
    for shape, map_name, moved in (("8", "row", 1), ("16", "col", 0)):
        with ir.Context(), ir.Location.unknown():
            module = ir.Module.parse(text.replace("SHAPE", shape).replace("MAP", map_name))
            assert scale_after_contractions(module) == moved and module.operation.verify()


def _prepared(ctx, passes) -> str:
    ok(ctx, f"load {MASKED}")
    for p in passes:
        ok(ctx, f"pass {p}")
    return ctx.session.current_ir


def test_the_softmax_divides_by_the_row_sums_once_per_row(ctx):
    """lh-softmax-reciprocals: x / sum becomes x * (1 / sum), 1 / sum an op over the rows (2x16)."""
    passes = ["lh-drop-dead-results", "lh-fold-all-neg-inf-checks", "lh-fuse-elementwise"]
    before = _prepared(ctx, passes)
    ok(ctx, "pass lh-softmax-reciprocals")
    after = ctx.session.current_ir
    bodies = lambda text: [c.split("linalg.yield")[0] for c in text.split("linalg.generic")[1:]]  # noqa: E731
    assert [b for b in bodies(before) if "arith.divf" in b and "tensor<2x16x16xf32>) {" in b.splitlines()[0]]
    (reciprocal,) = [b for b in bodies(after) if "arith.divf" in b]
    assert reciprocal.splitlines()[0].endswith("tensor<2x16xf32>) outs(%" + reciprocal.splitlines()[0].split(
        "outs(%")[1]) and reciprocal.splitlines()[0].endswith(": tensor<2x16xf32>) {")      # over the rows
    assert "1.000000e+00" in reciprocal
    assert "arith.divf" not in "".join(b for b in bodies(after) if "tensor<2x16x16xf32>) {" in b.splitlines()[0])


def test_a_division_by_a_sum_of_no_exponentials_stays():
    """A mean's division (a plain sum) may be by 0 or a tiny value: not the softmax's sum >= 1, kept."""
    from mlir import ir

    from workbench.worker.cpu.softmax_reciprocals import softmax_reciprocals

    text = """#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
func.func @f(%x: tensor<8x16xf32>) -> tensor<8x16xf32> {
  %z = arith.constant 0.0 : f32
  %0 = tensor.empty() : tensor<8x16xf32>
  %e = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<8x16xf32>) outs(%0 : tensor<8x16xf32>) {
  ^bb0(%a: f32, %o: f32):
    %v = math.FN %a : f32
    linalg.yield %v : f32
  } -> tensor<8x16xf32>
  %1 = tensor.empty() : tensor<8xf32>
  %f = linalg.fill ins(%z : f32) outs(%1 : tensor<8xf32>) -> tensor<8xf32>
  %s = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%e : tensor<8x16xf32>) outs(%f : tensor<8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %v = arith.addf %a, %o : f32
    linalg.yield %v : f32
  } -> tensor<8xf32>
  %d = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%e, %s : tensor<8x16xf32>, tensor<8xf32>) outs(%0 : tensor<8x16xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %v = arith.divf %a, %b : f32
    linalg.yield %v : f32
  } -> tensor<8x16xf32>
  return %d : tensor<8x16xf32>
}
"""
    for fn, moved in (("exp", 1), ("absf", 0)):
        with ir.Context(), ir.Location.unknown():
            module = ir.Module.parse(text.replace("FN", fn))
            assert softmax_reciprocals(module) == moved and module.operation.verify()
            assert ("arith.mulf" in str(module)) == bool(moved)


@pytest.mark.parametrize("threads", [1, 2])
def test_the_reciprocals_join_the_softmax_rows_chain(ctx, tmp_path, threads):
    """On the selector path the reciprocals are a "rows" member of the softmax's row chain (one loop over
    the rows for the whole chain), and the result is torch's."""
    ok(ctx, f"load {SDPA / 'sdpa_masked.mlir'}")
    try:
        ok(ctx, f"target cpu --threads {threads}")
        data = ok(ctx, "select --apply").data
        labels = [a.step.label() for a in ctx.session.active_steps]
        assert any("lh-softmax-reciprocals" in label for label in labels), labels
        rows = [s for s in data["selections"] if "rows.py" in str(s["schedule"])]
        assert any(s["params"]["roles"].count("rows") >= 2 for s in rows), rows
        lower_and_check_fixture(ctx, MASKED, threads=threads)
    finally:
        ok(ctx, "target cpu --cpu host --threads 0")


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("name", ["sdpa_masked_240", "sdpa_200"])
def test_long_attention_runs_a_block_of_query_rows_at_a_time(ctx, monkeypatch, tmp_path, name, threads):
    """Scores past the threshold (the L2; lowered here for small payloads): the selector's first step is
    attention_blocks (P V tiled by batch and query rows, the softmax chain and Q K^T fused in), and the
    result is torch's: a causal mask with a fully masked row (240 tokens, 2 blocks of 120 rows per head),
    and 200 tokens whose Q K^T is padded to 208 columns (its block padded again, attention-pad.yaml)."""
    from workbench.targets import cpu
    from workbench.targets.cpu_host import host_machine

    monkeypatch.setattr(cpu, "ATTENTION_SCORE_BYTES", 1 << 16)
    fixture = SDPA / f"{name}.mlir"
    tokens = int(name.rsplit("_", 1)[1])
    ok(ctx, f"load {fixture}")
    try:
        ok(ctx, f"target cpu --threads {threads}")
        data = ok(ctx, "select --apply").data
        specs = [str(s["schedule"]) for s in data["selections"]]
        assert "attention_blocks" in specs[0], specs
        params = data["selections"][0]["params"]
        assert params["parallel"] == int(threads > 1) and tokens % params["rows"] == 0 and params["rows"] < tokens
        # 200 columns are no whole zmm vectors (padded to 208); on an AVX2 host they are whole ymm ones
        assert ("attention-pad.yaml" in " ".join(specs)) == (tokens % host_machine().f32_lanes != 0)
        ir = ctx.session.current_ir
        assert f"x{tokens}x{tokens}xf32>" not in ir and "x200x208xf32>" not in ir    # no whole scores tensor
        lower_and_check_fixture(ctx, fixture, threads=threads, save=tmp_path)
    finally:
        ok(ctx, "target cpu --cpu host --threads 0")
    if name == "sdpa_masked_240":
        out = load_npys(tmp_path, "output")[0]
        assert np.all(out[0, :, 1, :] == 0.0) and np.all(np.isfinite(out))


def test_short_attention_keeps_its_scores_whole(ctx):
    """At the default threshold (the L2) the small masked fixture's 2x16x16 scores are no block's."""
    ok(ctx, f"load {MASKED}")
    try:
        ok(ctx, "target cpu --threads 1")
        data = ok(ctx, "select --apply").data
        assert not [s for s in data["selections"] if "attention" in str(s["schedule"])]
    finally:
        ok(ctx, "target cpu --cpu host --threads 0")
