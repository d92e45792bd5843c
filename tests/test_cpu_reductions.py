"""Reductions on the CPU path: results nothing reads are dropped before selection (`lh-drop-dead-results`:
torch-mlir's amin / max(dim) / log-softmax row max carry an unread index), so what is left is a plain
reduction the vectorizer takes with its combiner."""
from __future__ import annotations

import re
from pathlib import Path

from conftest import fixture_io_flags, ok

FIXTURES = Path(__file__).parent / "fixtures" / "torch"


def _generics(ctx):
    return [o for o in ctx.session.inspect()["ops"] if o["op"] == "linalg.generic"]


def _select_run_check(ctx, fixture: Path) -> dict:
    res = ok(ctx, "select --apply")
    ok(ctx, "bench warmup=0 iterations=1")
    ok(ctx, "apply cpu-lower")
    run = ok(ctx, f"run --check {fixture_io_flags(fixture)}").data["run"]
    assert run["check"]["passed"]
    return res.data


def test_an_unread_index_is_dropped_and_the_min_is_a_plain_reduction(ctx):
    fixture = FIXTURES / "amin.mlir"
    ok(ctx, f"load {fixture}")
    assert "tensor<16xi64>" in ctx.session.current_ir          # the min's index, never returned
    ok(ctx, "pass lh-drop-dead-results")
    assert "xi64>" not in ctx.session.current_ir and "select" not in ctx.session.current_ir   # accumulator, init, select gone
    generics = _generics(ctx)
    assert len(generics) == 1 and generics[0]["loops"]["body"].count("arith.minimumf") == 1
    ok(ctx, "undo")
    data = _select_run_check(ctx, fixture)
    generic = [e for e in data["selections"] if "generic.py" in e["schedule"]]
    assert generic and generic[0]["params"].get("class") in (None, "reduction-outer") and \
        "fold_unit_dims" not in generic[0]["params"]           # not a reduction taken step by step
    assert "lh-drop-dead-results" in " ".join(str(s.step) for s in ctx.session.active_steps)


def test_a_read_index_stays(ctx):
    """argmin returns the index: its select reads the value's accumulator, which stays too."""
    fixture = FIXTURES / "argmin.mlir"
    ok(ctx, f"load {fixture}")
    before = ctx.session.current_ir
    ok(ctx, "pass lh-drop-dead-results")
    assert ctx.session.current_ir.count("arith.select") == before.count("arith.select") == 1
    assert "minimumf" in ctx.session.current_ir
    ok(ctx, "undo")
    _select_run_check(ctx, fixture)


def test_log_softmax_row_max_without_index_then_gather(ctx):
    fixture = FIXTURES / "nll_loss.mlir"
    ok(ctx, f"load {fixture}")
    ok(ctx, "pass lh-drop-dead-results")
    assert all(o["loops"]["body"].count("arith.select") == 0 for o in _generics(ctx)
               if "arith.maximumf" in o["loops"]["body"])
    ok(ctx, "undo")
    _select_run_check(ctx, fixture)


def test_the_log_softmax_is_computed_at_the_gathered_elements_only(ctx):
    """nll_loss picks one element per row of the log-softmax: those elements are computed in the gather
    (`lh-fuse-into-gathers`); no 2-D tensor is written, only the row max and the exp-sum are reduced."""
    fixture = FIXTURES / "nll_loss.mlir"
    ok(ctx, f"load {fixture}")
    rows_by_classes = re.search(r"%arg0: (tensor<[^>]*>)", ctx.session.current_ir).group(1)   # the logits
    assert ctx.session.current_ir.count(f"-> {rows_by_classes}") >= 2          # sub, exp, log-softmax ...
    ok(ctx, "pass lh-drop-dead-results")
    ok(ctx, "pass lh-fuse-into-gathers")
    ok(ctx, "pass lh-fuse-elementwise")
    assert f"-> {rows_by_classes}" not in ctx.session.current_ir
    gathers = [o for o in _generics(ctx) if "tensor.extract" in o["loops"]["body"]]
    assert len(gathers) == 1 and "arith.subf" in gathers[0]["loops"]["body"]
    ok(ctx, "undo")
    ok(ctx, "undo")
    ok(ctx, "undo")
    _select_run_check(ctx, fixture)
    assert "lh-fuse-into-gathers" in " ".join(str(s.step) for s in ctx.session.active_steps)


FULL_GATHER = """
#id = affine_map<(d0, d1) -> (d0, d1)>
module {
  func.func @main(%x: tensor<16x16xf32>) -> tensor<16x16xf32> {
    %c15 = arith.constant 15 : index
    %e = tensor.empty() : tensor<16x16xf32>
    %sq = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
        ins(%x : tensor<16x16xf32>) outs(%e : tensor<16x16xf32>) {
    ^bb0(%in: f32, %out: f32):
      %m = arith.mulf %in, %in : f32
      linalg.yield %m : f32
    } -> tensor<16x16xf32>
    %flip = linalg.generic {indexing_maps = [#id], iterator_types = ["parallel", "parallel"]} outs(%e : tensor<16x16xf32>) {
    ^bb0(%out: f32):
      %i = linalg.index 0 : index
      %j = linalg.index 1 : index
      %r = arith.subi %c15, %j : index
      %v = tensor.extract %sq[%i, %r] : tensor<16x16xf32>
      linalg.yield %v : f32
    } -> tensor<16x16xf32>
    return %flip : tensor<16x16xf32>
  }
}
"""


def test_a_gather_of_every_element_keeps_its_producer(ctx, tmp_path):
    """A flip reads every element of its producer once: recomputing them in the gather saves no pass."""
    path = tmp_path / "flip_of_square.mlir"
    path.write_text(FULL_GATHER)
    ok(ctx, f"load {path}")
    before = ctx.session.current_ir
    ok(ctx, "pass lh-fuse-into-gathers")
    assert ctx.session.current_ir.count("linalg.generic") == before.count("linalg.generic") == 2


ANY_ALL = """
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
module {
  func.func @main(%x: tensor<6x100xf32>) -> (tensor<6xi1>, tensor<6xi1>) {
    %zero = arith.constant 0.0 : f32
    %true = arith.constant true
    %false = arith.constant false
    %e = tensor.empty() : tensor<6xi1>
    %t = linalg.fill ins(%true : i1) outs(%e : tensor<6xi1>) -> tensor<6xi1>
    %f = linalg.fill ins(%false : i1) outs(%e : tensor<6xi1>) -> tensor<6xi1>
    %all = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
        ins(%x : tensor<6x100xf32>) outs(%t : tensor<6xi1>) {
    ^bb0(%in: f32, %out: i1):
      %c = arith.cmpf ogt, %in, %zero : f32
      %a = arith.andi %c, %out : i1
      linalg.yield %a : i1
    } -> tensor<6xi1>
    %any = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
        ins(%x : tensor<6x100xf32>) outs(%f : tensor<6xi1>) {
    ^bb0(%in: f32, %out: i1):
      %c = arith.cmpf ogt, %in, %zero : f32
      %a = arith.ori %c, %out : i1
      linalg.yield %a : i1
    } -> tensor<6xi1>
    return %all, %any : tensor<6xi1>, tensor<6xi1>
  }
}
"""


def test_bool_reductions_accumulate_in_bytes_and_vectorize(ctx, tmp_path):
    """all / any along rows (and attention's all -inf row check): i8 accumulators, vectorized, the same
    bools as the unscheduled payload (rows all positive, all negative and mixed)."""
    import numpy as np

    path = tmp_path / "any_all.mlir"
    path.write_text(ANY_ALL)
    x = np.random.default_rng(0).standard_normal((6, 100)).astype(np.float32)
    x[0] = np.abs(x[0]) + 0.5
    x[1] = -np.abs(x[1]) - 0.5
    x[2, :] = 1.0
    x[2, 99] = -1.0
    np.save(tmp_path / "x.npy", x)
    ok(ctx, f"load {path}")
    ok(ctx, "pass lh-widen-bool-reductions")
    reductions = [o for o in _generics(ctx) if "reduction" in o["loops"]["iterators"]]
    assert len(reductions) == 2 and all("xi8>" in o["operand_types"][-1] for o in reductions)
    ok(ctx, "undo")
    res = ok(ctx, "select --apply")
    generic = [e["params"] for e in res.data["selections"] if "generic.py" in e["schedule"]]
    assert generic and all(p["vector"] == 1 for p in generic)          # (i1 accumulators: scalar loops)
    ok(ctx, "bench warmup=0 iterations=1")
    ok(ctx, "apply cpu-lower")
    out_all, out_any = tmp_path / "all.npy", tmp_path / "any.npy"
    np.save(out_all, (x > 0).all(axis=1))
    np.save(out_any, (x > 0).any(axis=1))
    run = ok(ctx, f"run --check --npy {tmp_path / 'x.npy'} --expect {out_all},{out_any}").data["run"]
    assert run["check"]["passed"] and run["expected_check"]["passed"]


def test_attention_all_inf_check_is_vectorized(ctx):
    fixture = FIXTURES / "sdpa.mlir"
    ok(ctx, f"load {fixture}")
    data = _select_run_check(ctx, fixture)
    generic = [e["params"] for e in data["selections"] if "generic.py" in e["schedule"]]
    assert generic and all(p["vector"] == 1 for p in generic)


MASKED_ROW_MAX = """
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
module {
  func.func @main(%x: tensor<8x300xf32>, %m: tensor<8x300xi1>) -> tensor<8xf32> {
    %ninf = arith.constant 0xFF800000 : f32
    %e = tensor.empty() : tensor<8xf32>
    %init = linalg.fill ins(%ninf : f32) outs(%e : tensor<8xf32>) -> tensor<8xf32>
    %max = linalg.generic {indexing_maps = [#id, #id, #row], iterator_types = ["parallel", "reduction"]}
        ins(%m, %x : tensor<8x300xi1>, tensor<8x300xf32>) outs(%init : tensor<8xf32>) {
    ^bb0(%masked: i1, %in: f32, %out: f32):
      %v = arith.select %masked, %ninf, %in : f32
      %r = arith.maximumf %v, %out : f32
      linalg.yield %r : f32
    } -> tensor<8xf32>
    return %max : tensor<8xf32>
  }
}
"""


def test_a_masked_row_max_keeps_a_vector_of_partial_maxima(ctx, tmp_path):
    """top-k's rounds take the max of the elements not taken yet (an i1 mask input selecting -inf): a vector
    of partial maxima along the row, reduced once per row, as an unmasked max (1024x1024 top-3 on one
    core: 2.1 -> 1.2-1.4 ms); the check equals numpy's masked maxima."""
    import numpy as np

    path = tmp_path / "masked_max.mlir"
    path.write_text(MASKED_ROW_MAX)
    rng = np.random.default_rng(1)
    x = rng.standard_normal((8, 300)).astype(np.float32)
    m = rng.random((8, 300)) < 0.3
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "m.npy", m)
    np.save(tmp_path / "want.npy", np.where(m, -np.inf, x).max(axis=1).astype(np.float32))
    ok(ctx, f"load {path}")
    res = ok(ctx, "select --apply")
    generic = [e["params"] for e in res.data["selections"] if "generic.py" in e["schedule"]]
    assert len(generic) == 1 and generic[0].get("partial_reduction") == 1
    ok(ctx, "bench warmup=0 iterations=1")
    ok(ctx, "apply cpu-lower")
    run = ok(ctx, f"run --check --npy {tmp_path / 'x.npy'},{tmp_path / 'm.npy'} --expect {tmp_path / 'want.npy'}").data["run"]
    assert run["check"]["passed"] and run["expected_check"]["passed"]


def test_a_whole_tensor_sum_accumulates_whole_vectors(ctx):
    """A loss summed over every element (BCE with logits: mean of 8x16) is a reduction of both loops:
    rows are walked one at a time into a vector of partial sums (`partial_steps`), added lane-wise, and
    reduced once at the end. The row's unit dim is folded before the vector lowering (which would take
    the add apart lane by lane), and the final reduction outside any loop is lowered with it."""
    fixture = FIXTURES / "bce_with_logits.mlir"
    ok(ctx, f"load {fixture}")
    ok(ctx, "target cpu --threads 1")
    data = _select_run_check(ctx, fixture)
    generic = [e["params"] for e in data["selections"] if "generic.py" in e["schedule"]]
    assert generic and generic[0].get("partial_steps")
    selected = ctx.session.ir_at(ctx.session.cursor - 2)   # before the bench and the lowering
    assert "vector.from_elements" not in selected and "vector.multi_reduction" not in selected
    assert re.search(r"arith\.addf %\w+, %\w+ : vector<\d+xf32>", selected)


def test_a_matvec_reduces_several_rows_at_a_time_and_matches(ctx, tmp_path):
    """A matrix-vector product (torch.mv: the product fused into the row sum) reduces REDUCED_ROWS rows per tile
    (a divisor of the rows: 30 rows -> 3), each row's partials along 200 columns (6 vector pairs of 16 and a
    tail): several load streams at once; the result matches on rows and columns that are no tile multiples."""
    from workbench.targets import cpu_selector

    text = """#map = affine_map<(d0, d1) -> (d0, d1)>
#map1 = affine_map<(d0, d1) -> (d1)>
#map2 = affine_map<(d0, d1) -> (d0)>
func.func @main(%a: tensor<30x200xf32>, %x: tensor<200xf32>) -> tensor<30xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<30xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e : tensor<30xf32>) -> tensor<30xf32>
  %r = linalg.generic {indexing_maps = [#map, #map1, #map2], iterator_types = ["parallel", "reduction"]}
      ins(%a, %x : tensor<30x200xf32>, tensor<200xf32>) outs(%init : tensor<30xf32>) {
  ^bb0(%p: f32, %q: f32, %acc: f32):
    %m = arith.mulf %p, %q : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<30xf32>
  return %r : tensor<30xf32>
}
"""
    payload = tmp_path / "matvec.mlir"
    payload.write_text(text)
    ok(ctx, f"load {payload}")
    ok(ctx, "target cpu --threads 1")
    try:
        data = ok(ctx, "select --apply").data
        ok(ctx, "bench warmup=0 iterations=1")
        ok(ctx, "apply cpu-lower")
        assert ok(ctx, "run --check --iterations 1 --warmup 0").data["run"]["check"]["passed"]
    finally:
        ok(ctx, "target cpu --threads 0")
    generic = [e["params"] for e in data["selections"] if "generic.py" in e["schedule"]]
    assert generic and generic[0]["partial_reduction"] == 1, generic
    assert generic[0]["tile"][0] == 3 == min(cpu_selector.REDUCED_ROWS, 3), generic


ROW_SUM_OF_EXPS = """#map = affine_map<(d0, d1) -> (d0, d1)>
#map1 = affine_map<(d0, d1) -> (d0)>
func.func @main(%a: tensor<64xCOLSxf32>) -> tensor<64xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<64xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e : tensor<64xf32>) -> tensor<64xf32>
  %r = linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "reduction"]}
      ins(%a : tensor<64xCOLSxf32>) outs(%init : tensor<64xf32>) {
  ^bb0(%p: f32, %acc: f32):
    %x = math.exp %p : f32
    %s = arith.addf %acc, %x : f32
    linalg.yield %s : f32
  } -> tensor<64xf32>
  return %r : tensor<64xf32>
}
"""


def _row_tile(ctx, tmp_path, cols: int, cpu: str) -> list:
    payload = tmp_path / f"row_sum_{cols}.mlir"
    payload.write_text(ROW_SUM_OF_EXPS.replace("COLS", str(cols)))
    ok(ctx, f"load {payload}")
    ok(ctx, f"target cpu --threads 1 --cpu {cpu}")
    (params,) = [e["params"] for e in ok(ctx, "select --apply").data["selections"] if "generic.py" in e["schedule"]]
    assert params["partial_reduction"] == 1, params
    return params["tile"]


def test_a_row_no_vector_pair_divides_takes_a_vector_that_does(ctx, tmp_path):
    """An inner reduction's partial vector divides its row (cpu_selector._reduced_row_vector): a row of 1000
    (cross_entropy's 1000 classes) takes 8 lanes on AVX2 (16 leave 8 over), 1004 takes 4 on AVX2; 1024 keeps a
    vector pair, and 1001 (no divisor) keeps the pair (its last tile peeled). A tile that leaves a tail read every
    step of the row under a mask, its partials in memory (2.4x the time). AVX-512's masked loads are one
    instruction: a half vector is not worth it there (1000 keeps the pair, measured slower with 8), a whole one is."""
    try:
        assert _row_tile(ctx, tmp_path, 1000, "zen3")[1] == 8
        assert _row_tile(ctx, tmp_path, 1004, "zen3")[1] == 4
        assert _row_tile(ctx, tmp_path, 1024, "zen3")[1] == 16
        assert _row_tile(ctx, tmp_path, 1001, "zen3")[1] == 16
        assert _row_tile(ctx, tmp_path, 1000, "skylake-avx512")[1] == 32
        assert _row_tile(ctx, tmp_path, 1008, "skylake-avx512")[1] == 16
        assert _row_tile(ctx, tmp_path, 1024, "skylake-avx512")[1] == 32
    finally:
        ok(ctx, "target cpu --cpu host --threads 0")


def test_a_row_no_vector_divides_peels_its_last_tile_on_both_isas(ctx, tmp_path):
    """A row that no vector divides (1001 = 62 x 16 + 9 on AVX2, 31 x 32 + 9 on AVX-512) peels the reduction
    loop's last tile (partial_peel): whole vectors, the partials in registers, then one masked tile. Rows a
    vector divides (1000 on AVX2, 1008, 1024) peel nothing; AVX-512 peels 1000 (its pair, not a half vector). (4096 x 1001 row sums, 1 thread, thread CPU time: of exps
    7.7 -> 3.6 ms, of squares 5.3 -> 1.3 ms.)"""
    def params(cols, cpu):
        payload = tmp_path / f"row_sum_{cols}.mlir"
        payload.write_text(ROW_SUM_OF_EXPS.replace("COLS", str(cols)))
        ok(ctx, f"load {payload}")
        ok(ctx, f"target cpu --threads 1 --cpu {cpu}")
        (p,) = [e["params"] for e in ok(ctx, "select --apply").data["selections"] if "generic.py" in e["schedule"]]
        return p

    try:
        for cpu, width in (("zen3", 16), ("skylake-avx512", 32)):
            peeled = params(1001, cpu)
            assert peeled["tile"][1] == width and peeled.get("partial_peel") == 1, (cpu, peeled)
            # the main loop's tiles unmasked (only the peeled tile's constant mask is left), its partials a
            # vector the loop carries (registers), not a buffer stored and loaded every step
            assert "vector.create_mask" not in ctx.session.current_ir, cpu
            assert re.search(rf"scf\.for .* step %c{width} iter_args\(.*\) -> \(vector<4x{width}xf32>\)",
                             ctx.session.current_ir), cpu
            for cols in ((1000, 1024) if cpu == "zen3" else (1008, 1024)):
                assert not params(cols, cpu).get("partial_peel"), (cpu, cols)
        # AVX-512 keeps the vector pair for 1000 (mask registers: no half vector), its last tile peeled
        assert params(1000, "skylake-avx512").get("partial_peel") == 1
    finally:
        ok(ctx, "target cpu --cpu host --threads 0")


def test_a_row_no_vector_divides_matches_with_its_last_tile_peeled(ctx, tmp_path):
    """The host's ISA: a row of 1001 (and of 71: two vector pairs and a tail on AVX-512, four on AVX2) summed with
    the last tile peeled, unmasked in the main loop, and run --check passes."""
    try:
        for cols in (1001, 71):
            payload = tmp_path / f"row_sum_{cols}.mlir"
            payload.write_text(ROW_SUM_OF_EXPS.replace("COLS", str(cols)))
            ok(ctx, f"load {payload}")
            ok(ctx, "target cpu --threads 1")
            (p,) = [e["params"] for e in ok(ctx, "select --apply").data["selections"] if "generic.py" in e["schedule"]]
            assert p.get("partial_peel") == 1, p
            assert "vector.create_mask" not in ctx.session.current_ir
            ok(ctx, "bench warmup=0 iterations=1")
            ok(ctx, "apply cpu-lower")
            assert ok(ctx, "run --check --iterations 1 --warmup 0").data["run"]["check"]["passed"], cols
    finally:
        ok(ctx, "target cpu --cpu host --threads 0")


def test_a_row_of_1000_reduces_in_whole_vectors_and_matches(ctx, tmp_path):
    """The host's ISA: the row of 1000 in whole vectors (no mask in the selected code) and run --check."""
    try:
        tile = _row_tile(ctx, tmp_path, 1000, "host")
        assert 1000 % tile[1] == 0, tile
        assert "vector.create_mask" not in ctx.session.current_ir
        ok(ctx, "bench warmup=0 iterations=1")
        ok(ctx, "apply cpu-lower")
        assert ok(ctx, "run --check --iterations 1 --warmup 0").data["run"]["check"]["passed"]
    finally:
        ok(ctx, "target cpu --cpu host --threads 0")
