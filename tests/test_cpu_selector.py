"""The CPU selector on torch-like payloads (tests/payloads/torchlike/: linalg.generic chains as torch-mlir
emits them, named convs and pooling): it configures a step for every op, classified by loop structure,
and `select --apply`, `bench`, `apply cpu-lower`, `run --check` matches the unscheduled payload's
reference, on one thread and split over threads."""
from __future__ import annotations

from pathlib import Path

import pytest

from conftest import fixture_io_flags, ok

TORCHLIKE = Path(__file__).parent / "payloads" / "torchlike"
PAYLOADS = sorted(p.name for p in TORCHLIKE.glob("*.mlir"))


def test_classification_by_structure():
    from workbench.targets.cpu_selector import classify, generic_params

    def loops(iterators, operand_dims, body, projected=True, n_in=1, domain=None):
        return {"iterators": iterators, "operand_dims": operand_dims, "body": body, "projected": projected,
                "num_inputs": n_in, "domain": domain or [70, 130][:len(iterators)]}

    assert classify(loops(["parallel", "parallel"], [[0, 1], [1], [0, 1]], ["arith.addf"], n_in=2)) == "elementwise"
    assert classify(loops(["parallel", "reduction"], [[0, 1], [0]], ["arith.maximumf"])) == "reduction-inner"
    assert classify(loops(["reduction", "parallel"], [[0, 1], [1]], ["arith.addf"])) == "reduction-outer"
    # argmax: two results (value, index): the reduction loop taken step by step (tiled by 1, folded), the
    # vectors along the outputs' innermost loop, the reduction innermost
    argmax = loops(["parallel", "reduction"], [[0, 1], [0], [0]], ["arith.cmpf", "arith.select"])
    assert classify(argmax) == "reduction-by-steps"
    p = generic_params({"id": "generic_0", "loops": argmax}, 256, 1)
    assert p["tile"] == [8, 1] and p["interchange"] == [0, 1] and p["fold_unit_dims"] == 1
    assert p["remainder"] == [0, 64, 6]   # 70 = 8 x 8 + 6
    # a contraction of any element type (a bf16 matmul: no matmul schedule): its output's innermost loop
    # is contiguous in B (B[k, n]), so the reduction goes step by step with a 4 x 8 output tile
    mm = loops(["parallel", "parallel", "reduction"], [[0, 2], [2, 1], [0, 1]], ["arith.extf", "arith.mulf", "arith.addf"],
               n_in=2, domain=[64, 96, 32])
    assert classify(mm) == "reduction-inner"
    p = generic_params({"id": "generic_0", "loops": mm}, 256, 1)
    assert p["tile"] == [4, 8, 1] and p["fold_unit_dims"] == 1 and p["interchange"] == [0, 1, 2]
    # a row sum reads x[r, k]: r is not contiguous there, the row stays the vector loop (partial sums)
    rowsum = loops(["parallel", "reduction"], [[0, 1], [0]], ["arith.addf"], domain=[64, 4096])
    p = generic_params({"id": "generic_0", "loops": rowsum}, 256, 1)
    assert p["tile"] == [1, 16] and p["partial_reduction"] == 1
    # a reduction over bools stays scalar loops (vector.multi_reduction on i1 is not lowered); an elementwise
    # op on bools is vectorized (bool buffers are bytes: lh-widen-i1-memrefs)
    all_true = {"id": "generic_0", "operand_types": ["tensor<64x4096xf32>", "tensor<64xi1>"],
                "loops": loops(["parallel", "reduction"], [[0, 1], [0]], ["arith.cmpf", "arith.andi"], domain=[64, 4096])}
    assert generic_params(all_true, 256, 1)["vector"] == 0
    mask = {"id": "generic_1", "operand_types": ["tensor<64x4096xi1>", "tensor<64x4096xf32>"],
            "loops": loops(["parallel", "parallel"], [[0, 1], [0, 1]], ["arith.select"], domain=[64, 4096])}
    assert generic_params(mask, 256, 1)["vector"] == 1
    # a masked scan block (out[r, k, i] = sum_j select(j <= i, x[r, k, j], 0)): an i1 mask input, an f32
    # accumulator: vectorized along i (only a reduction *into* bools stays scalar)
    scan = {"id": "generic_2", "operand_types": ["tensor<16x16xi1>", "tensor<64x256x16xf32>", "tensor<64x256x16xf32>"],
            "loops": loops(["parallel", "parallel", "reduction", "parallel"], [[2, 3], [0, 1, 2], [0, 1, 3]],
                           ["arith.select", "arith.addf"], n_in=2, domain=[64, 256, 16, 16])}
    p = generic_params(scan, 256, 1)
    assert p["vector"] == 1 and p["tile"] == [1, 1, 1, 16]
    # outputs with different maps: no single vector loop
    assert classify(loops(["parallel", "reduction"], [[0, 1], [0], [1]], ["arith.select"])) == "scalar"
    assert classify(loops(["parallel"] * 4 + ["reduction"] * 3, [[0, 4, 2, 3], [1, 4, 5, 6], [0, 1, 2, 3]],
                          ["arith.mulf", "arith.addf"], projected=False)) == "scalar"
    # the vector loop is the output's innermost dim (outer reduction), the remainder is masked
    p = generic_params({"id": "generic_0", "loops": loops(["reduction", "parallel"], [[0, 1], [1]], ["arith.addf"])},
                       512, 1)
    assert p["tile"] == [1, 32] and p["vector"] == 1 and p["threads"] == 1
    p = generic_params({"id": "generic_0", "loops": loops(["parallel", "parallel"], [[0, 1], [0, 1]], ["arith.addf"],
                                                           domain=[10000, 5])}, 256, 4)
    assert p["tile"] == [1, 5] and p["threads"] == 4


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("name", PAYLOADS)
def test_selector_path_runs_checked(ctx, monkeypatch, name, threads):
    import workbench.targets.cpu as cpu
    from workbench.targets import cpu_selector

    import dataclasses

    machine = dataclasses.replace(cpu.host_machine(), usable_cpus=threads)
    monkeypatch.setattr(cpu, "host_machine", lambda: machine)
    monkeypatch.setattr(cpu_selector, "MIN_PARALLEL_WORK", 0)   # small payloads: split them anyway
    ok(ctx, f"load {TORCHLIKE / name}")
    generics_before = sum(1 for o in ctx.session.inspect()["ops"] if o["op"] == "linalg.generic")
    res = ok(ctx, "select --apply")
    selections = res.data["selections"]
    # the preparation (elementwise fusion) comes first when there are generics to chain; the selection is
    # for the IR it leaves
    prepared = res.data["prepared"]
    assert [p for p in prepared if p != "pass lh-drop-body-asserts"] == (["pass lh-fuse-elementwise"]
                        if generics_before >= 2 else []) or (prepared == [] and generics_before >= 2)
    info = ctx.session.inspect(len(prepared))
    assert selections[-1]["schedule"].startswith("pipelines/cpu/finish.py")
    # one configured step per linalg op (fills go with their consumer), each naming its own op
    def ids(op):
        return op if isinstance(op, list) else [op]

    assert sorted(i for e in selections[:-1] for i in ids(e["params"]["op"])) == sorted(
        o["id"] for o in info["ops"] if o["op"] != "linalg.fill")
    generic = [e["params"] for e in selections if "generic.py" in e["schedule"]]
    if threads > 1:
        assert any(p["threads"] == 2 for p in generic)
    for p, op in ((e["params"], next(o for o in info["ops"] if o["id"] in ids(e["params"]["op"])))
                  for e in selections[:-1]):
        if op["loops"]["projected"] and len(op["loops"]["operand_dims"]) - op["loops"]["num_inputs"] == 1:
            assert p["vector"] == 1, op["id"]   # every single-result op with projected maps is vectorized
    if any(p["vector"] for p in generic):
        assert "vector." in ctx.session.current_ir
    ok(ctx, "bench warmup=1 iterations=2")
    ok(ctx, "apply cpu-lower")
    if threads > 1:
        assert "mlirAsyncRuntime" in ctx.session.current_ir
    run = ok(ctx, "run --check").data["run"]
    assert run["check"]["passed"]


def test_select_without_apply_shows_the_preparation_and_changes_nothing(ctx):
    """`select` lists the preparation step (elementwise fusion) and the selection for the IR it leaves,
    and takes the preparation back: the session is as it was."""
    ok(ctx, f"load {TORCHLIKE / 'gelu_bias.mlir'}")
    before = (ctx.session.cursor, len(ctx.session.steps), ctx.session.current_sha)
    unfused = [o["id"] for o in ctx.session.inspect()["ops"] if o["op"] == "linalg.generic"]
    res = ok(ctx, "select")
    assert res.data["prepared"] and res.data["prepared"][-1] == "pass lh-fuse-elementwise"
    assert res.data["table"]["rows"][0][1] == "(applied first)"
    selected = [e["params"]["op"] for e in res.data["selections"] if e["params"].get("op")]
    assert len(selected) < len(unfused)   # fewer ops once fused
    assert (ctx.session.cursor, len(ctx.session.steps), ctx.session.current_sha) == before


def test_a_large_matmul_is_split_over_the_cores(ctx, monkeypatch, tmp_path):
    """On a machine model with several cores, a plain f32 matmul of 2^24 multiply-adds or more gets the
    parallel schedule (an M x N forall of the single-core schedule); it runs and matches."""
    import dataclasses

    import workbench.targets.cpu as cpu
    from conftest import matmul_payload

    machine = dataclasses.replace(cpu.host_machine(), usable_cpus=2)
    monkeypatch.setattr(cpu, "host_machine", lambda: machine)
    ok(ctx, f"load {matmul_payload(tmp_path / 'mm.mlir', 256, 256, 256)}")
    (spec, params), = ctx.session.target.select_params(ctx.session.inspect())
    assert spec.endswith("matmul_parallel.py[gen=matmul_parallel]")
    assert params["threads"] * params["threads_m"] == 2
    ok(ctx, "select --apply")
    assert "scf.forall" in ctx.session.current_ir or "async" in ctx.session.current_ir
    ok(ctx, "bench warmup=1 iterations=2")
    ok(ctx, "apply cpu-lower")
    assert ok(ctx, "run --check").data["run"]["check"]["passed"]
    # a small one stays on one core
    ok(ctx, f"load {matmul_payload(tmp_path / 'small.mlir', 64, 64, 64)}")
    (spec, _), = ctx.session.target.select_params(ctx.session.inspect())
    assert spec.endswith("matmul.py[gen=matmul_tiling]")


@pytest.mark.parametrize("shape", [(1024, 4096), (4 * 1024 * 1024,)])
def test_a_long_f32_sum_is_summed_in_two_levels(ctx, tmp_path, shape):
    """A whole-tensor f32 sum (an MSE loss: 4M squared differences) goes chunk by chunk into fresh partial
    vectors: within 1e-5 of the exact sum, where one running accumulator drifts by 1e-3 and more (torch
    sums pairwise; its losses were 2-3% off at 16M elements), and so does the check's reference."""
    import numpy as np

    rank = len(shape)
    dims = ", ".join(f"d{i}" for i in range(rank))
    t = f"tensor<{'x'.join(map(str, shape))}xf32>"
    payload = tmp_path / "sq.mlir"
    payload.write_text(f"""#id = affine_map<({dims}) -> ({dims})>
#all = affine_map<({dims}) -> ()>
func.func @main(%a: {t}, %b: {t}) -> tensor<f32> {{
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<f32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<f32>) -> tensor<f32>
  %s = linalg.generic {{indexing_maps = [#id, #id, #all], iterator_types = [{", ".join(['"reduction"'] * rank)}]}}
      ins(%a, %b : {t}, {t}) outs(%f : tensor<f32>) {{
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %d = arith.subf %x, %y : f32
    %sq = arith.mulf %d, %d : f32
    %r = arith.addf %sq, %acc : f32
    linalg.yield %r : f32
  }} -> tensor<f32>
  return %s : tensor<f32>
}}
""")
    rng = np.random.default_rng(0)
    a, b = (rng.random(shape, dtype=np.float32) for _ in range(2))
    np.save(tmp_path / "a.npy", a)
    np.save(tmp_path / "b.npy", b)
    ok(ctx, f"load {payload}")
    res = ok(ctx, "select --apply")
    params = next(e["params"] for e in res.data["selections"] if "generic.py" in e["schedule"])
    assert params["partial_reduction"] == rank - 1
    if rank == 1:   # one long loop: cut into chunks (2-D: each row is a chunk, the outer loop the second level)
        assert params["partial_chunk"] >= 2 * params["tile"][-1]
    ok(ctx, "bench warmup=0 iterations=1")
    ok(ctx, "apply cpu-lower")
    run = ok(ctx, f"run --check --npy {tmp_path / 'a.npy'},{tmp_path / 'b.npy'} --save-outputs {tmp_path / 'out'}")
    assert run.data["run"]["check"]["passed"]
    got = float(np.load(tmp_path / "out" / "output0.npy"))
    exact = float(((a.astype(np.float64) - b) ** 2).sum())
    assert abs(got - exact) / exact < 1e-5, (got, exact)
    # the check's reference (the unscheduled payload as loops) sums in two levels too (lh-split-long-reductions)
    reference = float(np.load(tmp_path / "out" / "reference0.npy"))
    assert abs(reference - exact) / exact < 1e-5, (reference, exact)


def test_ops_with_the_same_parameters_share_one_step(ctx):
    """An unrolled LSTM (torch export, 5 time steps): the generic ops of each time step that take the same
    parameters are one step naming them all (a handful of steps, not one per op), and the path still
    matches torch."""
    from workbench.targets.cpu_selector import group_same_params

    g = "pipelines/cpu/generic.py[gen=tile_vectorize]"
    m = "pipelines/cpu/matmul.py[gen=matmul_tiling]"
    entries = [(g, {"op": "a", "tile": [1, 8]}), (m, {"op": "mm"}), (g, {"op": "b", "tile": [1, 8]}),
               (g, {"op": "c", "tile": [1, 16]}), (m, {"op": "mm2"})]
    assert group_same_params(entries) == [(g, {"op": ["a", "b"], "tile": [1, 8]}), (m, {"op": "mm"}),
                                          (g, {"op": "c", "tile": [1, 16]}), (m, {"op": "mm2"})]
    fixture = Path(__file__).parent / "fixtures" / "torch" / "lstm"
    ok(ctx, f"load {fixture}.mlir")
    generics = sum(1 for o in ctx.session.inspect()["ops"] if o["op"] == "linalg.generic")
    selections = ok(ctx, "select --apply").data["selections"]
    grouped = [e["params"]["op"] for e in selections if isinstance(e["params"].get("op"), list)]
    assert grouped and max(len(ops) for ops in grouped) >= 5           # one op per time step at least
    assert len(selections) < generics / 2
    ok(ctx, "bench warmup=0 iterations=1")
    ok(ctx, "apply cpu-lower")
    run = ok(ctx, f"run --check {fixture_io_flags(Path(f'{fixture}.mlir'))}").data["run"]
    assert run["check"]["passed"]


def test_runtime_checks_in_bodies_do_not_keep_a_model_scalar(ctx):
    """torch-mlir's batch norm carries a per-element `cf.assert` (a reciprocal's zero check) that fusion
    spreads into the whole normalisation: the preparation drops it first, so every op is vectorized,
    and the result still matches torch."""
    fixture = Path(__file__).parent / "fixtures" / "torch" / "batch_norm2d"
    ok(ctx, f"load {fixture}.mlir")
    assert "cf.assert" in ctx.session.current_ir
    res = ok(ctx, "select --apply")
    assert res.data["prepared"][0] == "pass lh-drop-body-asserts"
    generic = [e["params"] for e in res.data["selections"] if "generic.py" in e["schedule"]]
    assert generic and all(p["vector"] == 1 for p in generic)
    assert "cf.assert" not in ctx.session.current_ir
    ok(ctx, "bench warmup=0 iterations=1")
    ok(ctx, "apply cpu-lower")
    run = ok(ctx, f"run --check {fixture_io_flags(Path(f'{fixture}.mlir'))}").data["run"]
    assert run["check"]["passed"]


def test_the_run_keeps_freed_memory_with_the_allocator(monkeypatch):
    """Timed calls reuse their freed temporaries warm (glibc keeps them: no trimming, no mmap per
    block) unless the user set the variables."""
    from workbench.targets.cpu import CpuTarget

    for name in ("MALLOC_TRIM_THRESHOLD_", "MALLOC_MMAP_THRESHOLD_"):
        monkeypatch.delenv(name, raising=False)
    env = CpuTarget().run_env(1)
    assert int(env["MALLOC_TRIM_THRESHOLD_"]) >= 1 << 30 and int(env["MALLOC_MMAP_THRESHOLD_"]) >= 1 << 30
    monkeypatch.setenv("MALLOC_MMAP_THRESHOLD_", "131072")
    assert "MALLOC_MMAP_THRESHOLD_" not in CpuTarget().run_env(1)


def test_a_long_count_of_bools_lowers_and_runs(ctx, tmp_path):
    """nll_loss counts its valid targets (i1 -> i64 sum over 4096): that reduction is vectorized but takes
    no vector of partial results (its multi_reduction over widened bools was left unlowered)."""
    payload = tmp_path / "count.mlir"
    payload.write_text("""#id = affine_map<(d0) -> (d0)>
#all = affine_map<(d0) -> ()>
func.func @main(%m: tensor<8192xi1>) -> tensor<i64> {
  %c0 = arith.constant 0 : i64
  %z = tensor.empty() : tensor<i64>
  %f = linalg.fill ins(%c0 : i64) outs(%z : tensor<i64>) -> tensor<i64>
  %n = linalg.generic {indexing_maps = [#id, #all], iterator_types = ["reduction"]} ins(%m : tensor<8192xi1>) outs(%f : tensor<i64>) {
  ^bb0(%b: i1, %acc: i64):
    %w = arith.extui %b : i1 to i64
    %s = arith.addi %w, %acc : i64
    linalg.yield %s : i64
  } -> tensor<i64>
  return %n : tensor<i64>
}
""")
    ok(ctx, f"load {payload}")
    res = ok(ctx, "select --apply")
    assert not any(e["params"].get("partial_reduction", -1) >= 0 for e in res.data["selections"]
                   if "generic.py" in e["schedule"])
    ok(ctx, "bench warmup=0 iterations=1")
    ok(ctx, "apply cpu-lower")
    assert ok(ctx, "run --check").data["run"]["check"]["passed"]


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("name", ["sort", "sort_descending_values", "argsort", "topk"])
def test_sorts_take_vector_passes_and_match_torch(ctx, monkeypatch, name, threads):
    """The importer's sorts (a bitonic network: slices, comparisons and selects of one shape per stage)
    and top-k (rounds of masked reductions) have no gathers and no concatenation per stage: every op the
    selector configures is vectorized, and the selector path matches torch's values and indices."""
    import dataclasses

    import workbench.targets.cpu as cpu
    from workbench.targets import cpu_selector

    machine = dataclasses.replace(cpu.host_machine(), usable_cpus=threads)
    monkeypatch.setattr(cpu, "host_machine", lambda: machine)
    monkeypatch.setattr(cpu_selector, "MIN_PARALLEL_WORK", 0)
    fixture = Path(__file__).parent / "fixtures" / "torch" / f"{name}.mlir"
    ok(ctx, f"load {fixture}")
    text = ctx.session.current_ir
    # (concatenations: the padding to a power of two, top-k's rounds into one result; none per stage)
    assert "tensor.extract " not in text and text.count("tensor.concat") <= 2
    selections = ok(ctx, "select --apply").data["selections"]
    generic = [e["params"] for e in selections if "generic.py" in e["schedule"]]
    assert generic and all(p["vector"] == 1 for p in generic), generic
    ok(ctx, "bench warmup=1 iterations=2")
    ok(ctx, "apply cpu-lower")
    run = ok(ctx, f"run --check {fixture_io_flags(fixture)}").data["run"]
    assert run["check"]["passed"] and run["expected_check"]["passed"], run
