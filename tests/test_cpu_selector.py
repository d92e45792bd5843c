"""The CPU selector on torch-like payloads (tests/payloads/torchlike/: linalg.generic chains as torch-mlir
emits them, named convs and pooling): it configures a step for every op, classified by loop structure,
and `select --apply`, `bench`, `apply cpu-lower`, `run --check` matches the unscheduled payload's
reference, on one thread and split over threads."""
from __future__ import annotations

from pathlib import Path

import pytest

from conftest import do, fixture_io_flags, ok, runs_parallel_loops_on_threads

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
    # (REDUCED_ROWS rows at a time: independent load streams and accumulator chains)
    assert p["tile"] == [4, 16] and p["partial_reduction"] == 1
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
    ops_before = ctx.session.inspect()["ops"]
    generics_before = sum(1 for o in ops_before if o["op"] == "linalg.generic")
    fuses = generics_before >= 2 or any("math.fpowi" in o["loops"]["body"] for o in ops_before)
    res = ok(ctx, "select --apply")
    selections = res.data["selections"]
    # the preparation (elementwise fusion, integer powers expanded) comes first when there are generics to
    # chain or powers to expand; the selection is for the IR it leaves
    prepared = res.data["prepared"]
    # (a strided 2-D convolution's phases, each over its flattened plane: conv_pool's stride-2 conv; a strided
    # depthwise one's phases)
    conv_steps = (f"pass lh-strided-conv-planes{{lanes={machine.f32_lanes}}}",
                  f"pass lh-conv-planes{{lanes={machine.f32_lanes}}}")
    assert not set(conv_steps) & set(prepared) or any(
        o["op"] in ("linalg.conv_2d_nchw_fchw", "linalg.depthwise_conv_2d_nchw_chw") for o in ops_before)
    pad_copies = (f"pass lh-pad-copies{{lanes={machine.f32_lanes} threads={threads} "
                  f"min-work={cpu_selector.MIN_PARALLEL_WORK}}}")
    gather_steps = ("pass lh-gather-indices", pad_copies)
    # (a softmax's division by its row sums: one reciprocal per row, docs/attention-round14.md)
    reciprocals = ("pass lh-softmax-reciprocals",)
    assert not set(reciprocals) & set(prepared) or any("math.exp" in o["loops"]["body"] for o in ops_before)
    assert [p for p in prepared
            if p not in ("pass lh-drop-body-asserts",) + gather_steps + conv_steps + reciprocals] == (
        ["pass lh-fuse-elementwise"] if fuses else []) or (prepared == [] and fuses)
    # gathers (tensor.extract in a body) are prepared for contiguous loads (pads as row copies), nothing else is
    assert not set(gather_steps) & set(prepared) or any("tensor.extract" in o["loops"]["body"] for o in ops_before)
    info = ctx.session.inspect(len(prepared))
    # the whole-module tail: bufferize and lower the vectors, then (several cores) split what
    # bufferization added over them
    # (before it, where a transpose reads whole input rows: its reads flat, one step: pipelines/cpu/flatten-reads.yaml)
    flat_reads = [n for n, e in enumerate(selections) if e["schedule"] == "pipelines/cpu/flatten-reads.yaml"]
    assert not flat_reads or (len(flat_reads) == 1 and "finish.py" in selections[flat_reads[0] + 1]["schedule"]
                              and any(o["op"] == "linalg.transpose" for o in info["ops"]))
    selections = [e for n, e in enumerate(selections) if n not in flat_reads]
    tail = [e["schedule"] for e in selections if not e["params"].get("op")]
    assert tail == ["pipelines/cpu/finish.py[gen=bufferize_and_lower_vectors]"] + (
        ["pipelines/cpu/split-leftovers.yaml"] if threads > 1 else [])
    assert all(e["params"] == {"threads": threads} for e in selections if "split-leftovers" in e["schedule"])
    per_op = selections[:len(selections) - len(tail)]
    # one configured step per linalg op (fills go with their consumer), each naming its own op
    def ids(op):
        return op if isinstance(op, list) else [op]

    fills = {o["id"] for o in info["ops"] if o["op"] == "linalg.fill"}
    assert sorted(i for e in per_op for i in ids(e["params"]["op"]) if i not in fills) == sorted(
        o["id"] for o in info["ops"] if o["op"] != "linalg.fill")
    # (a row chain's step, pipelines/cpu/rows.py, names the fills of its reductions too)
    assert all(i not in fills for e in per_op if "rows.py" not in e["schedule"] for i in ids(e["params"]["op"]))
    generic = [e["params"] for e in selections if "generic.py" in e["schedule"]]
    if threads > 1:
        # (a row chain's forall of rows runs on the async runtime, its tasks on every core; so does a pad's
        # forall of row copies)
        assert (any(p["threads"] == 2 for p in generic) or any("rows.py" in e["schedule"] for e in selections)
                or pad_copies in prepared)
    for p, op in ((e["params"], next(o for o in info["ops"] if o["id"] in ids(e["params"]["op"])))
                  for e in per_op if "rows.py" not in e["schedule"]):
        if op["loops"]["projected"] and len(op["loops"]["operand_dims"]) - op["loops"]["num_inputs"] == 1:
            assert p["vector"] == 1, op["id"]   # every single-result op with projected maps is vectorized
    if any(p["vector"] for p in generic):
        assert "vector." in ctx.session.current_ir
    ok(ctx, "bench warmup=1 iterations=2")
    parallel_loops = "scf.forall" in ctx.session.current_ir
    ok(ctx, "apply cpu-lower")
    # the forall chunks of the selected schedules go to a thread runtime (none: every op planned on one)
    assert runs_parallel_loops_on_threads(ctx.session.current_ir) == parallel_loops
    run = ok(ctx, "run --check").data["run"]
    assert run["check"]["passed"]


def test_an_integer_power_in_a_lone_op_is_expanded_and_vectorized(ctx, tmp_path):
    """torch's gelu (tanh form) is ONE generic with x ** 3 (`math.fpowi`), which keeps an op scalar: the
    preparation expands it into multiplications (no fusion needed) and the op is vectorized."""
    p = tmp_path / "cube.mlir"
    p.write_text("""#map = affine_map<(d0, d1) -> (d0, d1)>
func.func @cube(%x: tensor<256x512xf32>) -> tensor<256x512xf32> {
  %c3 = arith.constant 3 : i64
  %e = tensor.empty() : tensor<256x512xf32>
  %y = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<256x512xf32>) outs(%e : tensor<256x512xf32>) {
  ^bb0(%in: f32, %out: f32):
    %p = math.fpowi %in, %c3 : f32, i64
    %t = math.tanh %p : f32
    linalg.yield %t : f32
  } -> tensor<256x512xf32>
  return %y : tensor<256x512xf32>
}""")
    ok(ctx, f"load {p}")
    res = ok(ctx, "select --apply")
    assert "pass lh-fuse-elementwise" in res.data["prepared"]
    generic = next(e["params"] for e in res.data["selections"] if "generic.py" in e["schedule"])
    assert generic["vector"] == 1, generic
    assert "math.fpowi" not in ctx.session.current_ir and "vector." in ctx.session.current_ir
    ok(ctx, "bench warmup=1 iterations=2")
    ok(ctx, "apply cpu-lower")
    assert ok(ctx, "run --check").data["run"]["check"]["passed"]


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
    """Generic ops that take the same parameters are one step naming them all (a handful of steps, not
    one per op): in an unrolled LSTM (torch export, 5 time steps) the cell's ops outlined into one
    function (lh-outline-repeated-steps) and those of the step left inline, and the path still
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
    assert grouped and max(len(ops) for ops in grouped) >= 2           # the cell's op and the inline step's
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


def test_thread_split_gives_every_core_a_chunk():
    """The loop split over threads: the outermost parallel loop with a chunk per core (not a batch dim of
    2 on 16 cores), else a reduction loop split into partial results (a whole-tensor sum has no parallel
    loop), else the outermost parallel loop with more than one iteration; a contraction never splits its
    reduction."""
    from workbench.targets.cpu_selector import generic_params, thread_split

    def loops(iterators, operand_dims, body, domain):
        return {"iterators": iterators, "operand_dims": operand_dims, "body": body, "projected": True,
                "num_inputs": len(operand_dims) - 1, "domain": domain}

    small_batch = loops(["parallel", "parallel"], [[0, 1], [0, 1]], ["arith.addf"], [2, 4096])
    assert thread_split(small_batch, "elementwise", 16) == (16, 1, 0)
    assert thread_split(small_batch, "elementwise", 2) == (2, 0, 0)
    total = loops(["reduction", "reduction"], [[0, 1], []], ["arith.addf"], [300, 520])
    assert thread_split(total, "reduction-inner", 4) == (4, 0, 1)
    assert thread_split(total, "reduction-inner", 1) == (1, 0, 0)
    p = generic_params({"id": "generic_0", "loops": total}, 512, 4)
    assert p["split_reduction"] == 1 and p["threads"] == 4 and p["partial_reduction"] == 1
    # two results (a min with its index): no combiner to merge partial results: no reduction split
    argmin = loops(["reduction"], [[0], [], []], ["arith.cmpf", "arith.select"], [100000])
    assert thread_split(argmin, "reduction-by-steps", 4) == (1, 0, 0)
    # a matmul-like contraction with tiny M, N: folded tiles, the reduction stays whole
    skinny = loops(["parallel", "parallel", "reduction"], [[0, 2], [2, 1], [0, 1]], ["arith.mulf", "arith.addf"],
                   [1, 16, 8192])
    assert "split_reduction" not in generic_params({"id": "generic_0", "loops": skinny}, 512, 4)


def test_gathers_transposes_and_long_outer_reductions_are_tiled_for_them():
    """A gather with index arithmetic is vectorized (vectorize_nd_extract), a plain one (a flip) stays
    scalar loops; a transposing copy takes lanes x lanes blocks inside cache blocks; a step-by-step
    reduction over many long rows walks cache blocks."""
    from workbench.targets.cpu_selector import classify, generic_params

    def loops(iterators, operand_dims, body, domain, n_in=None):
        return {"iterators": iterators, "operand_dims": operand_dims, "body": body, "projected": True,
                "num_inputs": len(operand_dims) - 1 if n_in is None else n_in, "domain": domain}

    pad = loops(["parallel", "parallel"], [[0, 1]], ["linalg.index", "linalg.index", "arith.index_cast", "arith.subi",
                "math.absi", "arith.cmpi", "arith.subi", "arith.select", "arith.index_cast", "tensor.extract",
                "linalg.yield"], [64, 102], n_in=0)
    assert classify(pad) == "gather"
    p = generic_params({"id": "generic_0", "loops": pad}, 512, 1)
    assert p["gather"] == 1 and p["vector"] == 1 and p["tile"] == [1, 32]
    flip = loops(["parallel", "parallel"], [[0, 1]], ["linalg.index", "linalg.index", "arith.subi", "tensor.extract",
                 "linalg.yield"], [4096, 4096], n_in=0)
    assert classify(flip) == "scalar" and generic_params({"id": "generic_0", "loops": flip}, 512, 1)["vector"] == 0
    transpose = loops(["parallel", "parallel"], [[1, 0], [0, 1]], ["linalg.yield"], [4096, 1024])
    p = generic_params({"id": "transpose_0", "loops": transpose}, 512, 1)
    assert p["tile"] == [16, 16] and p["cache_tile"] == [128, 128]
    # 1000 = 125 x 8: half-width tiles along it rather than a masked tail
    transpose["domain"] = [4096, 1000]
    assert generic_params({"id": "transpose_0", "loops": transpose}, 512, 1)["tile"] == [16, 8]
    copy = loops(["parallel", "parallel"], [[0, 1], [0, 1]], ["linalg.yield"], [4096, 1000])
    p = generic_params({"id": "generic_0", "loops": copy}, 512, 1)
    assert p["tile"] == [1, 32] and "cache_tile" not in p
    # a row vector broadcast over the rows (a batch norm's scale): blocks of rows share its loads
    scale = loops(["parallel", "parallel"], [[0, 1], [1], [0, 1]], ["arith.mulf"], [1024, 4096])
    assert generic_params({"id": "generic_0", "loops": scale}, 512, 1)["tile"] == [4, 32]
    amin = loops(["reduction", "parallel"], [[0, 1], [1], [1]], ["linalg.index", "arith.cmpf", "arith.minimumf",
                 "arith.select"], [4096, 4096], n_in=1)
    p = generic_params({"id": "generic_0", "loops": amin}, 512, 2)
    assert p["split"] == 1 and p["cache_tile"] == [128, 512] and p["interchange"] == [1, 0]
    short = loops(["reduction", "parallel"], [[0, 1], [1], [1]], ["linalg.index", "arith.cmpf", "arith.minimumf",
                  "arith.select"], [100, 4096], n_in=1)
    assert "cache_tile" not in generic_params({"id": "generic_0", "loops": short}, 512, 1)
    # a sum over H x W with short rows: one partial vector across both loops (H one step at a time)
    hw = loops(["parallel", "reduction", "reduction"], [[0, 1, 2], [0]], ["arith.addf"], [1024, 56, 56])
    p = generic_params({"id": "generic_0", "loops": hw}, 512, 1)
    assert p["tile"] == [1, 1, 56] and p["partial_reduction"] == 2 and p["partial_steps"] == [1]
    # too many elements per output for one running vector (f32 rounding): rows summed one by one
    long_hw = loops(["parallel", "reduction", "reduction"], [[0, 1, 2], [0]], ["arith.addf"], [16, 8, 3136])
    p = generic_params({"id": "generic_0", "loops": long_hw}, 512, 1)
    assert p["partial_reduction"] == 2 and "partial_steps" not in p


@pytest.mark.parametrize("name, params, marker", [
    ("sum_all.mlir", {"split_reduction": 1, "threads": 2}, "memref<2xf32>"),      # partial sums, one per thread
    ("amin_rows.mlir", {"cache_tile": [128, 512], "threads": 2}, "scf.forall"),
    ("transpose_2d.mlir", {"cache_tile": [128, 128]}, "x{lanes}xf32>"),   # lanes x lanes blocks
    ("reflect_pad.mlir", {"gather": 1, "vector": 1}, "vector.gather"),
    ("mean_hw.mlir", {"partial_reduction": 3, "partial_steps": [2]}, "vector<24xf32>"),   # rows of 24: one vector
])
def test_data_movement_schedules_apply_lower_and_match(ctx, monkeypatch, name, params, marker):
    """Each new mechanism through the whole path on 2 threads: selected with its parameters, visible in
    the scheduled IR, lowered, run and checked against the unscheduled reference."""
    import dataclasses

    import workbench.targets.cpu as cpu
    from workbench.targets import cpu_selector

    machine = dataclasses.replace(cpu.host_machine(), usable_cpus=2)
    monkeypatch.setattr(cpu, "host_machine", lambda: machine)
    monkeypatch.setattr(cpu_selector, "MIN_PARALLEL_WORK", 0)
    # (the reflect pad's gathers as such: lh-pad-copies, which takes the pad whole, off)
    monkeypatch.setattr(cpu.CpuTarget, "pad_copies", False)
    lanes = max(machine.vector_bits // 32, 4)
    ok(ctx, f"load {TORCHLIKE / name}")
    selections = ok(ctx, "select --apply").data["selections"]
    generic = [e["params"] for e in selections if "generic.py" in e["schedule"]]
    assert any(all(g.get(k) == v for k, v in params.items()) for g in generic), generic
    assert marker.format(lanes=lanes) in ctx.session.current_ir
    ok(ctx, "bench warmup=1 iterations=2")
    ok(ctx, "apply cpu-lower")
    for threads in (1, 2):
        assert ok(ctx, f"run --check --threads {threads}").data["run"]["check"]["passed"]


def test_new_generic_parameters_are_checked_in_one_line(ctx):
    """split_reduction without threads, partial_steps without partial_reduction (or naming it), a
    cache_tile of the wrong rank, gather on scalar loops: one-line errors, the session as it was."""
    ok(ctx, f"load {TORCHLIKE / 'sum_all.mlir'}")
    ok(ctx, "apply rewrite:tag-ops")
    before = (ctx.session.cursor, ctx.session.current_sha)
    spec = "pipelines/cpu/generic.py[gen=tile_vectorize]{op=generic_0 "
    for params, words in (("split_reduction=1 tile=[1,32]", "threads"),
                          ("tile=[1,32] partial_steps=[0]", "partial_reduction"),
                          ("tile=[1,32] partial_reduction=1 partial_steps=[1]", "partial_steps"),
                          ("tile=[1,32] cache_tile=[128]", "cache_tile"),
                          ("tile=[] vector=0 gather=1", "gather")):
        res = do(ctx, f"apply {spec}{params}}}")
        assert not res.ok and "\n" not in res.error and words in res.error, (params, res.error)
        assert (ctx.session.cursor, ctx.session.current_sha) == before
    # the same op with valid ones applies
    ok(ctx, f"apply {spec}tile=[1,32] threads=2 split=0 split_reduction=1 partial_reduction=1 cache_tile=[100,0]}}")


def test_a_slice_of_a_concatenation_reads_the_operand_it_lies_in(ctx):
    """`select` prepares with lh-fold-slices-of-concat: a slice within one operand reads that operand
    (offset shifted), one across operands keeps the concatenation; both match the reference."""
    ok(ctx, f"load {TORCHLIKE.parent / 'concat_slice.mlir'}")
    res = ok(ctx, "select --apply")
    assert "pass lh-fold-slices-of-concat" in res.data["prepared"]
    ir_text = ctx.session.ir_at(1)
    assert "tensor.extract_slice %arg1[0, 5] [8, 10] [1, 1]" in ir_text
    assert ir_text.count("tensor.concat") == 1 and ir_text.count("tensor.extract_slice") == 2
    ok(ctx, "bench warmup=1 iterations=2")
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


def test_a_one_row_matmul_reads_the_matrix_in_place(ctx, tmp_path):
    """x @ W with x one row (torch's vecmat): no packed schedule (it would copy all of W into panels in
    every call for one multiply-add per element); the generic contraction walks W's rows in place with
    vectors along N, and matches."""
    p = tmp_path / "vecmat.mlir"
    p.write_text("""func.func @vecmat(%x: tensor<1x256xf32>, %w: tensor<256x512xf32>) -> tensor<1x512xf32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x512xf32>
  %c = linalg.fill ins(%z : f32) outs(%e : tensor<1x512xf32>) -> tensor<1x512xf32>
  %r = linalg.matmul ins(%x, %w : tensor<1x256xf32>, tensor<256x512xf32>) outs(%c : tensor<1x512xf32>) -> tensor<1x512xf32>
  return %r : tensor<1x512xf32>
}""")
    ok(ctx, f"load {p}")
    res = ok(ctx, "select --apply")
    specs = [e["schedule"] for e in res.data["selections"]]
    assert any("generic.py" in s for s in specs) and not any("matmul" in s.split("/")[-1] for s in specs), specs
    assert "vector." in ctx.session.current_ir
    ok(ctx, "bench warmup=1 iterations=2")
    ok(ctx, "apply cpu-lower")
    assert ok(ctx, "run --check").data["run"]["check"]["passed"]


CONV3D_16 = """func.func @conv(%x: tensor<1x4x18x10x34xf32>, %w: tensor<16x4x3x3x3xf32>) -> tensor<1x16x16x8x32xf32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x16x16x8x32xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<1x16x16x8x32xf32>) -> tensor<1x16x16x8x32xf32>
  %r = linalg.conv_3d_ncdhw_fcdhw {dilations = dense<1> : vector<3xi64>, strides = dense<1> : vector<3xi64>}
      ins(%x, %w : tensor<1x4x18x10x34xf32>, tensor<16x4x3x3x3xf32>) outs(%f : tensor<1x16x16x8x32xf32>) -> tensor<1x16x16x8x32xf32>
  return %r : tensor<1x16x16x8x32xf32>
}
"""


def test_a_conv_split_over_many_cores_keeps_its_channel_tile(ctx, tmp_path):
    """Planned for 16 cores, a conv with 16 output channels would give each chunk one channel, too few
    for the register tile (the outer-product contraction): the split moves to the output depth (16
    chunks), the channel tile stays 8 (4 with two vectors along w where there are 16 vector registers);
    the result matches the reference."""
    p = tmp_path / "conv3d.mlir"
    p.write_text(CONV3D_16)
    ok(ctx, f"load {p}")
    ok(ctx, "target cpu --threads 16")
    channel_tile = 8 if ctx.session.target.machine.vector_registers >= 32 else 4
    sel = ok(ctx, "select --apply").data["selections"]
    (conv,) = [e["params"] for e in sel if e["params"].get("op", "").startswith("conv_3d")]
    assert (conv["contraction"] == 1 and conv["split"] == 2 and conv["threads"] == 16
            and conv["tile"][1] == channel_tile), conv
    res = ok(ctx, "run --check --threads 2")
    assert res.data["run"]["check"]["passed"]
    ok(ctx, "target cpu --threads 0")


ROW_SCALE = """#id = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#ch = affine_map<(d0, d1, d2) -> (d1)>
func.func @main(%x: tensor<4x8x{w}xf32>, %s: tensor<8xf32>) -> tensor<4x8x{w}xf32> {{
  %e = tensor.empty() : tensor<4x8x{w}xf32>
  %r = linalg.generic {{indexing_maps = [#id, #ch, #id], iterator_types = ["parallel", "parallel", "parallel"]}}
       ins(%x, %s : tensor<4x8x{w}xf32>, tensor<8xf32>) outs(%e : tensor<4x8x{w}xf32>) {{
  ^bb0(%a: f32, %b: f32, %o: f32):
    %m = arith.mulf %a, %b : f32
    linalg.yield %m : f32
  }} -> tensor<4x8x{w}xf32>
  return %r : tensor<4x8x{w}xf32>
}}
"""


#: the vector tile of a row of w elements, by the host's f32 lanes (AVX-512: 16, AVX2: 8)
UNMASKED_ROW_TILE = {16: {56: 56, 112: 16, 64: 32}, 8: {56: 8, 112: 16, 64: 16}}


@pytest.mark.parametrize("w", [56, 112, 64])
def test_elementwise_rows_no_vector_pair_divides_take_unmasked_vectors(ctx, tmp_path, w):
    """A 56-wide image row (a norm's scale over N x C x H x W) on AVX-512 took a pair of vectors and a masked
    24-element tail per row: now the row as one vector of whole and half registers (56), or one vector where
    whole vectors divide it (112); a row of whole pairs keeps the pair (on AVX2, 8 lanes: 56 is 7 whole
    vectors, 112 and 64 whole pairs). The result matches."""
    payload = tmp_path / f"rows{w}.mlir"
    payload.write_text(ROW_SCALE.format(w=w))
    ok(ctx, f"load {payload}")
    ok(ctx, "target cpu --threads 1 --cpu host")
    lanes = ctx.session.target.machine.vector_bits // 32
    selections = ok(ctx, "select --apply").data["selections"]
    tile = next(e["params"]["tile"] for e in selections if "tile" in e["params"])
    assert tile[-1] == UNMASKED_ROW_TILE[lanes][w], (tile, lanes)
    ok(ctx, "bench warmup=0 iterations=1")
    ok(ctx, "apply cpu-lower")
    assert ok(ctx, "run --check").data["run"]["check"]["passed"]
