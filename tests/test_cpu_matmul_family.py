"""The f32 matmul family on CPU (pipelines/cpu/matmul_family.py, issue 13 item 3): the selector
picks each op's schedule and parameters from the machine model; each applies, lowers, runs and
matches the reference."""
from __future__ import annotations

from pathlib import Path

import pytest

from conftest import lowered_run_passes, ok, runs_parallel_loops_on_threads

ROOT = Path(__file__).resolve().parents[1]

BMM = """func.func @bmm(%A: tensor<3x64x128xf32>, %B: tensor<3x128x96xf32>, %C: tensor<3x64x96xf32>) -> tensor<3x64x96xf32> {
  %0 = linalg.batch_matmul ins(%A, %B : tensor<3x64x128xf32>, tensor<3x128x96xf32>) outs(%C : tensor<3x64x96xf32>) -> tensor<3x64x96xf32>
  return %0 : tensor<3x64x96xf32>
}
"""
_MAPS = """#a = affine_map<(m, n, k) -> (m, k)>
#b = affine_map<(m, n, k) -> (n, k)>
#c = affine_map<(m, n, k) -> (m, n)>
"""
LINEAR_NAMED = _MAPS + """func.func @linear(%X: tensor<64x256xf32>, %W: tensor<128x256xf32>, %C: tensor<64x128xf32>) -> tensor<64x128xf32> {
  %0 = linalg.matmul indexing_maps = [#a, #b, #c] ins(%X, %W : tensor<64x256xf32>, tensor<128x256xf32>) outs(%C : tensor<64x128xf32>) -> tensor<64x128xf32>
  return %0 : tensor<64x128xf32>
}
"""
# torch-mlir's form of x @ w.T; lh.op is what `rewrite tag-ops` sets (the per-op mechanism)
LINEAR_GENERIC = _MAPS + """func.func @linear(%X: tensor<64x256xf32>, %W: tensor<128x256xf32>, %C: tensor<64x128xf32>) -> tensor<64x128xf32> {
  %0 = linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"], lh.op = "generic_0"}
      ins(%X, %W : tensor<64x256xf32>, tensor<128x256xf32>) outs(%C : tensor<64x128xf32>) {
  ^bb0(%x: f32, %w: f32, %acc: f32):
    %p = arith.mulf %x, %w : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<64x128xf32>
  return %0 : tensor<64x128xf32>
}
"""


def _avx512_model(threads: int):
    """The host's model with `threads` usable CPUs where it has AVX-512, else skylake-avx512's (selected and
    compiled for here; `_skip_run_unless_runnable` then skips its run): the register tiles these tests check
    are AVX-512's (32 registers, rows of 8 dividing M); AVX2's 6-row tiles split M into a main part and a tail,
    which matmul_epilogue's in_registers does not take."""
    import dataclasses

    from workbench.targets.cpu_host import host_machine, machine_for

    host = host_machine()
    machine = host if "avx512f" in host.features else machine_for("skylake-avx512")
    return dataclasses.replace(machine, usable_cpus=threads)


def _skip_run_unless_runnable(ctx) -> None:
    missing = ctx.session.target.machine.missing_here()
    if missing:
        pytest.skip(f"code for {ctx.session.target.machine.name} needs {', '.join(missing)}, which this host "
                    "lacks: selected and checked, not run")


def _checked_run(ctx) -> dict:
    return lowered_run_passes(ctx, "cpu-matmul-lower")


def _selected(ctx) -> tuple[str, dict]:
    (spec, params), = ctx.session.target.select_params(ctx.session.inspect())
    return spec, params


@pytest.mark.parametrize("text,generator", [(BMM, "batch_matmul_tiling"), (LINEAR_NAMED, "matmul_transpose_b_tiling")])
def test_selector_picks_the_family_schedule_and_it_runs(ctx, tmp_path, text, generator):
    payload = tmp_path / "p.mlir"
    payload.write_text(text)
    ok(ctx, f"load {payload}")
    spec, params = _selected(ctx)
    assert spec == f"pipelines/cpu/matmul_family.py[gen={generator}]"
    machine = ctx.session.target.machine
    lanes = machine.vector_bits // 32
    vectors = params["reg_n"] // lanes
    assert params["reg_n"] % lanes == 0 and params["reg_m"] * vectors + vectors + 1 <= machine.vector_registers
    ok(ctx, "select --apply")
    ir = ctx.session.current_ir
    assert "vector.fma" in ir or "vector.outerproduct" in ir or "llvm.intr.fmuladd" in ir or "math.fma" in ir
    _checked_run(ctx)


def test_generic_transposed_matmul_runs(ctx, tmp_path):
    payload = tmp_path / "p.mlir"
    payload.write_text(LINEAR_GENERIC)
    ok(ctx, f"load {payload}")
    info = ctx.session.inspect()
    (op,) = info["ops"]
    assert (op["kind"], op["layout"], op["dims"]) == ("contraction", "transpose_b", {"m": 64, "n": 128, "k": 256})
    ok(ctx, "apply pipelines/cpu/matmul_family.py[gen=matmul_transpose_b_tiling]{block_m=32 block_n=64 block_k=128 "
            "reg_m=4 reg_n=16 reg_k=8 pack_tile_a=32 pack_tile_b=8 generic=true op=generic_0}")
    assert "linalg.generic" not in ctx.session.current_ir
    _checked_run(ctx)


def test_a_missing_op_id_fails_clearly(ctx, tmp_path):
    payload = tmp_path / "p.mlir"
    payload.write_text(LINEAR_GENERIC)
    ok(ctx, f"load {payload}")
    res = ctx.registry.dispatch("apply pipelines/cpu/matmul_family.py[gen=matmul_transpose_b_tiling]{block_n=64 generic=true}", ctx)
    assert not res.ok and "generic=true needs op=" in res.error


def test_avx512_parameters_compile_for_an_avx512_machine(ctx, tmp_path):
    """The AVX-512 path (8x32 tiles) cannot be timed on an AVX2 host, but it must select and compile."""
    payload = tmp_path / "p.mlir"
    payload.write_text(BMM.replace("96", "128"))
    ok(ctx, f"load {payload}")
    ok(ctx, "target cpu --cpu skylake-avx512")
    try:
        _, params = _selected(ctx)
        assert (params["reg_m"], params["reg_n"]) == (8, 32)
        ok(ctx, "select --apply")
        ok(ctx, "bench warmup=0 iterations=2")
        ok(ctx, "apply cpu-matmul-lower")
    finally:
        ok(ctx, "target cpu --cpu host")


def test_matmul_with_bias_relu_epilogue(ctx):
    ok(ctx, f"load {ROOT / 'tests' / 'payloads' / 'linear_bias_relu.mlir'}")
    ops = ctx.session.inspect()["ops"]
    assert [o["op"] for o in ops] == ["linalg.fill", "linalg.matmul", "linalg.generic", "linalg.generic"]
    assert ops[1]["consumers"] == [2] and ops[2]["consumers"] == [3]
    spec, params = _selected(ctx)
    assert spec == "pipelines/cpu/matmul_family.py[gen=matmul_epilogue]" and params["epilogue"] == 2
    ok(ctx, "select --apply")
    ir = ctx.session.current_ir
    # bias add and relu fused into one vectorized pass, no scalar generic left
    assert "linalg.generic" not in ir and "arith.maximumf" in ir and "vector<" in ir
    _checked_run(ctx)


def test_math_epilogue_is_not_fused(ctx, tmp_path):
    """A tanh (gelu-like) consumer is no epilogue of the matmul schedule (no math lowering there)."""
    text = (ROOT / "tests" / "payloads" / "linear_bias_relu.mlir").read_text()
    text = text.replace("%s = arith.maximumf %v, %zero : f32", "%s = math.tanh %v : f32")
    payload = tmp_path / "p.mlir"
    payload.write_text(text)
    ok(ctx, f"load {payload}")
    entries = ctx.session.target.select_params(ctx.session.inspect())
    epilogue = [p for s, p in entries if s.endswith("[gen=matmul_epilogue]")]
    assert len(epilogue) == 1 and epilogue[0]["epilogue"] == 1  # the bias add only
    # the tanh gets a schedule of its own (the generic tile + vectorize one), then the finishing step
    # (and, on several cores, the split of what bufferization adds)
    tail = [s for s, p in entries if "op" not in p]
    assert any("generic.py" in s for s, _ in entries) and tail[0].endswith("finish.py[gen=bufferize_and_lower_vectors]")
    assert tail[1:] in ([], ["pipelines/cpu/split-leftovers.yaml"])
    ok(ctx, "select --apply")
    ok(ctx, "bench warmup=1 iterations=2")
    ok(ctx, "apply cpu-lower")
    assert ok(ctx, "run --check").data["run"]["check"]["passed"]


def test_matvec(ctx, tmp_path):
    payload = tmp_path / "p.mlir"
    payload.write_text("""func.func @mv(%A: tensor<256x512xf32>, %x: tensor<512xf32>, %y: tensor<256xf32>) -> tensor<256xf32> {
  %0 = linalg.matvec ins(%A, %x : tensor<256x512xf32>, tensor<512xf32>) outs(%y : tensor<256xf32>) -> tensor<256xf32>
  return %0 : tensor<256xf32>
}
""")
    ok(ctx, f"load {payload}")
    # (one core: the 512 KiB matrix is past a 512 KiB L2, as on a Zen 3, where the rows split over the cores)
    ok(ctx, "target cpu --threads 1")
    try:
        spec, params = _selected(ctx)
        lanes = ctx.session.target.machine.vector_bits // 32
        assert spec == "pipelines/cpu/matmul_family.py[gen=matvec_tiling]" and params == {"rows": 8, "vec_k": 4 * lanes}
        ok(ctx, "select --apply")
        assert "linalg.matvec" not in ctx.session.current_ir and f"vector<8x{4 * lanes}xf32>" in ctx.session.current_ir
        _checked_run(ctx)
    finally:
        ok(ctx, "target cpu --threads 0")


def test_selector_handles_the_generic_transposed_matmul(ctx, tmp_path):
    """torch-mlir's generic `x @ w.T`, untagged: select's preparation makes it a transpose of w and a
    plain matmul (lh-plain-matmul-layout), each scheduled by its id (the plain matmul's packed schedule)."""
    payload = tmp_path / "p.mlir"
    payload.write_text(LINEAR_GENERIC.replace(', lh.op = "generic_0"', ""))
    ok(ctx, f"load {payload}")
    ok(ctx, "select --apply")
    labels = [a.step.label() for a in ctx.session.active_steps]
    assert "lh-plain-matmul-layout" in labels[0] and any("tag-ops" in label for label in labels)
    assert any("op=transpose_0" in label for label in labels)
    assert any("cpu/matmul" in label and "op=matmul_0" in label for label in labels), labels
    _checked_run(ctx)


SHORT_K_BMM = BMM.replace("3x64x128xf32", "3x64x4xf32").replace("3x128x96xf32", "3x4x96xf32")
SHORT_K_MM = """func.func @mm(%A: tensor<64x8xf32>, %B: tensor<8x96xf32>, %C: tensor<64x96xf32>) -> tensor<64x96xf32> {
  %0 = linalg.matmul ins(%A, %B : tensor<64x8xf32>, tensor<8x96xf32>) outs(%C : tensor<64x96xf32>) -> tensor<64x96xf32>
  return %0 : tensor<64x96xf32>
}
"""


@pytest.mark.parametrize("text,k", [(SHORT_K_BMM, 4), (SHORT_K_MM, 8)], ids=["batch_matmul_k4", "matmul_k8"])
def test_a_k_of_one_register_step_has_no_k_loop(ctx, tmp_path, text, k):
    """reg_k = block_k = K (a GRU's K of 4): the micro-kernel has one K step, no loop to hoist the
    C tile out of (canonicalization folds a one-trip loop under the handle the hoisting needs)."""
    payload = tmp_path / "p.mlir"
    payload.write_text(text)
    ok(ctx, f"load {payload}")
    spec, params = _selected(ctx)
    extra = " ".join(f"{key}={value}" for key, value in params.items()
                     if key not in ("block_m", "block_n", "block_k", "reg_m", "reg_n", "reg_k", "pack_tile_a", "pack_tile_b",
                                    # the selection's split of M for its own row tile (AVX2's 6 rows), none of 2
                                    "main_m", "tail_m", "tail_reg_m"))
    ok(ctx, f"apply {spec}{{block_m=16 block_n=32 block_k={k} reg_m=2 reg_n=16 reg_k={k} "
            f"pack_tile_a={k} pack_tile_b={k} {extra}}}")
    _checked_run(ctx)


@pytest.mark.parametrize("payload,generator,chunk_keys", [
    ("bmm", "batch_matmul_tiling", {"threads_b"}),
    ("linear", "matmul_transpose_b_tiling", {"threads", "threads_m"}),
    ("epilogue", "matmul_epilogue", {"threads", "threads_m"}),
])
def test_a_large_family_op_is_split_over_the_cores(ctx, tmp_path, monkeypatch, payload, generator, chunk_keys):
    """On a machine model with 2 cores, a family op of 2^24 multiply-adds or more is split into 2 chunks
    (over the batch where it divides, else M x N; an epilogue chain in the same chunks), each a share of
    the thread team; it runs through cpu-lower and matches. Small ones stay on one core."""
    import dataclasses

    import workbench.targets.cpu as cpu

    machine = dataclasses.replace(cpu.host_machine(), usable_cpus=2)
    monkeypatch.setattr(cpu, "host_machine", lambda: machine)
    text = {"bmm": BMM.replace("3x", "4x").replace("64x128", "128x256").replace("128x96", "256x128")
                      .replace("64x96", "128x128"),
            "linear": LINEAR_NAMED.replace("64x", "256x"),
            "epilogue": (ROOT / "tests" / "payloads" / "linear_bias_relu.mlir").read_text()}[payload]
    path = tmp_path / "p.mlir"
    path.write_text(text)
    ok(ctx, f"load {path}")
    if payload == "epilogue":
        dims = next(o["dims"] for o in ctx.session.inspect()["ops"] if o["op"] == "linalg.matmul")
        monkeypatch.setattr(cpu, "MIN_PARALLEL_MATMUL", dims["m"] * dims["n"] * dims["k"])
    else:
        monkeypatch.setattr(cpu, "MIN_PARALLEL_MATMUL", 1 << 22)
    spec, params = _selected(ctx)
    assert spec == f"pipelines/cpu/matmul_family.py[gen={generator}]"
    chunks = {k: v for k, v in params.items() if k.startswith("threads")}
    assert set(chunks) & chunk_keys and all(v > 1 for v in chunks.values())
    product = 1
    for v in chunks.values():
        product *= v
    assert product == 2
    ok(ctx, "select --apply")
    assert "scf.forall" in ctx.session.current_ir
    ok(ctx, "bench warmup=0 iterations=2")
    ok(ctx, "apply cpu-lower")
    assert runs_parallel_loops_on_threads(ctx.session.current_ir)
    assert ok(ctx, "run --check").data["run"]["check"]["passed"]
    monkeypatch.setattr(cpu, "MIN_PARALLEL_MATMUL", 1 << 40)
    monkeypatch.setattr(cpu, "MIN_TASK_MACS", 1 << 40)   # (nor a mid-size split over fewer cores)
    ok(ctx, f"load {path}")
    assert not any(k.startswith("threads") for k in _selected(ctx)[1])


def test_an_epilogue_step_inside_an_earlier_steps_loop(ctx):
    """A matmul and its epilogue inside one loop of an earlier step (an MLP-Mixer's token-mixing linear layer in
    the rows schedule's batch forall): the matmul's empty-tensor elimination (its region: the loops that hold
    it, the forall included) consumed handles that invalidated the epilogue's, and `select --apply` failed with
    "op uses a handle invalidated by a previously executed transform op". The chain is scheduled before it."""
    ok(ctx, f"load {ROOT / 'tests' / 'payloads' / 'batched_linear_bias_relu.mlir'}")
    ok(ctx, "target cpu --threads 1")
    try:
        (spec, params), = ctx.session.target.select_params(ctx.session.inspect())
        assert spec.endswith("[gen=matmul_epilogue]") and params["epilogue"] == 1
        # the per-op step a model's select makes (one op of several: on tensors, the finishing step after)
        params.update(op="matmul_0", bufferize=False)
        ok(ctx, "apply rewrite tag-ops")
        ok(ctx, f"apply {spec}{{{' '.join(f'{k}={v}' for k, v in params.items())}}}")
        assert "linalg.generic" not in ctx.session.current_ir and "scf.forall" in ctx.session.current_ir
        ok(ctx, "apply pipelines/cpu/finish.py[gen=bufferize_and_lower_vectors]")
        ok(ctx, "bench warmup=0 iterations=2")
        ok(ctx, "apply cpu-lower")
        assert ok(ctx, "run --check").data["run"]["check"]["passed"]
    finally:
        ok(ctx, "target cpu --threads 0")


_FILLED = """func.func @mm(%A: tensor<256x96xf32>, %B: tensor<96x160xf32>) -> tensor<256x160xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<256x160xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<256x160xf32>) -> tensor<256x160xf32>
  %0 = linalg.matmul ins(%A, %B : tensor<256x96xf32>, tensor<96x160xf32>) outs(%f : tensor<256x160xf32>) -> tensor<256x160xf32>
  return %0 : tensor<256x160xf32>
}
"""
_FILLED_TRANSPOSED_B = _MAPS + _FILLED.replace("%B: tensor<96x160xf32>", "%B: tensor<160x96xf32>").replace(
    "linalg.matmul ins(%A, %B : tensor<256x96xf32>, tensor<96x160xf32>)",
    "linalg.matmul indexing_maps = [#a, #b, #c] ins(%A, %B : tensor<256x96xf32>, tensor<160x96xf32>)")


@pytest.mark.parametrize("payload,generator,fused", [
    ("filled", "matmul_parallel.py[gen=matmul_parallel]", True),
    ("filled_transposed_b", "matmul_family.py[gen=matmul_transpose_b_tiling]", True),
    ("epilogue", "matmul_family.py[gen=matmul_epilogue]", True),
    ("init_argument", "matmul_family.py[gen=matmul_transpose_b_tiling]", False),
])
def test_a_split_matmuls_fill_is_zeroed_in_its_chunks(ctx, tmp_path, monkeypatch, payload, generator, fused):
    """A matmul split over the cores whose init is a linalg.fill gets fill_init: the fill is fused into the
    chunks' scf.forall (each task zeroes its own chunk in cache, not one core the whole output first: addmm
    1024^2 on 16 cores 2.47 -> 2.25 ms); an init that is an argument has no producer to fuse. It runs
    through cpu-lower and matches."""
    import dataclasses

    import workbench.targets.cpu as cpu

    machine = dataclasses.replace(cpu.host_machine(), usable_cpus=2)
    monkeypatch.setattr(cpu, "host_machine", lambda: machine)
    monkeypatch.setattr(cpu, "MIN_PARALLEL_MATMUL", 1 << 16)
    # (the epilogue pass after the matmul, which a K of several cache blocks takes: this K of one block has its
    # fill fused down to the register tiles instead, test_epilogue_on_the_register_tiles)
    monkeypatch.setattr(cpu.CpuTarget, "epilogue_in_registers", False)
    text = {"filled": _FILLED, "filled_transposed_b": _FILLED_TRANSPOSED_B,
            "epilogue": (ROOT / "tests" / "payloads" / "linear_bias_relu.mlir").read_text(),
            "init_argument": LINEAR_NAMED.replace("64x", "256x")}[payload]
    path = tmp_path / "p.mlir"
    path.write_text(text)
    ok(ctx, f"load {path}")
    spec, params = next(entry for entry in ctx.session.target.select_params(ctx.session.inspect())
                        if "matmul" in entry[0])
    assert spec == f"pipelines/cpu/{generator}"
    assert params.get("threads", 1) * params.get("threads_m", 1) == 2
    assert bool(params.get("fill_init")) == fused
    ok(ctx, "select --apply")
    ir = ctx.session.current_ir
    if fused:
        # no fill of the whole output before the forall: the one fill is in the chunks' body
        assert ir.count("linalg.fill") == 1 and ir.index("scf.forall") < ir.index("linalg.fill"), ir
    ok(ctx, "bench warmup=0 iterations=2")
    ok(ctx, "apply cpu-lower")
    assert runs_parallel_loops_on_threads(ctx.session.current_ir)
    assert ok(ctx, "run --check").data["run"]["check"]["passed"]


def _bias_relu(m: int, k: int, n: int) -> str:
    """tests/payloads/linear_bias_relu.mlir (relu(x @ w + b), 128 x 256 @ 256 x 512) at M x K @ K x N."""
    text = (ROOT / "tests" / "payloads" / "linear_bias_relu.mlir").read_text()
    return (text.replace("128x256", f"{m}x{k}").replace("256x512", f"{k}x{n}").replace("128x512", f"{m}x{n}")
            .replace("<512xf32>", f"<{n}xf32>"))


@pytest.mark.parametrize("payload", ["bias_relu", "odd_shapes", "one_block"])
@pytest.mark.parametrize("threads", [1, 2])
def test_epilogue_on_the_register_tiles(ctx, tmp_path, monkeypatch, payload, threads):
    """A matmul whose K is one cache block (a transformer's d_model = 256 projections) with an epilogue chain
    and a zero fill as init: matmul_epilogue's in_registers (the chain's last op tiled down to register tiles
    with the links, the matmul and the fill fused in): the accumulators start at zero (no fill pass, no read
    of C) and the bias and relu run on them before the one store (no pass over the result). FFN1-sized
    1024x1024x256 + bias + relu, 1 thread on the AVX-512 host (CPU time): 3.76 -> 3.16 ms. It runs, split over
    the cores too, at shapes lh-pad-contraction-dims pads, and matches."""
    import dataclasses

    import workbench.targets.cpu as cpu

    # (M = 128: AVX-512's rows of 8 divide it; an AVX2 machine's 6 split it into main and tail rows)
    machine = (_avx512_model(threads) if payload == "bias_relu"
               else dataclasses.replace(cpu.host_machine(), usable_cpus=threads))
    monkeypatch.setattr(cpu, "host_machine", lambda: machine)
    monkeypatch.setattr(cpu, "MIN_PARALLEL_MATMUL", 1 << 12)
    # (40 x 48, K = 40: no multiple of the 8 x 32 register tile or of a block, 8 x 16 tiles; 8 rows: the M block
    # and row tile the whole of M, one-trip loops, which no cleanup may fold before the packing hoists out of
    # them: an LSTM cell's 2-row projections failed "hoist_pad failed to apply")
    text = {"bias_relu": _bias_relu(128, 256, 512), "odd_shapes": _bias_relu(40, 40, 48),
            "one_block": _bias_relu(8, 40, 64)}[payload]
    path = tmp_path / "p.mlir"
    path.write_text(text)
    ok(ctx, f"load {path}")
    ok(ctx, "select --apply")
    params = [a.step.params for a in ctx.session.active_steps if "matmul_epilogue" in a.step.label()]
    assert len(params) == 1, [a.step.label() for a in ctx.session.active_steps]
    assert params[0].get("in_registers") == 1 and params[0].get("fill_init") is True, params
    assert params[0].get("threads", 1) * params[0].get("threads_m", 1) == threads, params
    ir = ctx.session.current_ir
    # no fill and no pass over the result: one loop nest whose register tiles start from zero vectors, the bias
    # add and relu on them, and one store
    assert "linalg.fill" not in ir and "linalg.generic" not in ir and "arith.maximumf" in ir, ir
    assert "dense<0.000000e+00> : vector<" in ir, ir
    _skip_run_unless_runnable(ctx)
    ok(ctx, "bench warmup=0 iterations=2")
    ok(ctx, "apply cpu-lower")
    assert ok(ctx, f"run --check --threads {threads}").data["run"]["check"]["passed"]


@pytest.mark.parametrize("m", [128, 256])
@pytest.mark.parametrize("threads", [1, 2])
def test_avx2_epilogue_in_registers_takes_the_row_tile_that_divides_m(ctx, tmp_path, m, threads):
    """AVX2 (16 registers): 6-row tiles divide no M of 128 or 256, whose matmul then split into a main part and a
    tail of 4-row tiles, which in_registers does not take (a fill pass, the matmul, a pass of the epilogue over
    its result). Where K is one cache block the selector takes the 4-row tile that divides M with the epilogue
    and the fill on its accumulators instead (AVX2 code, 1 thread: 256 x 1024 x 256 + bias + relu 2.11 -> 1.50
    ms); the run matches."""
    path = tmp_path / "p.mlir"
    path.write_text(_bias_relu(m, 256, 512))
    ok(ctx, f"load {path}")
    ok(ctx, f"target cpu --cpu avx2 --threads {threads}")
    try:
        ok(ctx, "select --apply")
        params = [a.step.params for a in ctx.session.active_steps if "matmul_epilogue" in a.step.label()]
        assert len(params) == 1, [a.step.label() for a in ctx.session.active_steps]
        assert params[0].get("in_registers") == 1 and params[0].get("fill_init") is True, params
        assert params[0]["reg_m"] == 4 and not params[0].get("main_m"), params
        ir = ctx.session.current_ir
        assert "linalg.fill" not in ir and "linalg.generic" not in ir and "arith.maximumf" in ir, ir
        assert "vector<4x16xf32>" in ir and "vector<6x16xf32>" not in ir, ir
        _skip_run_unless_runnable(ctx)
        ok(ctx, "bench warmup=0 iterations=2")
        ok(ctx, "apply cpu-lower")
        assert ok(ctx, f"run --check --threads {threads}").data["run"]["check"]["passed"]
    finally:
        ok(ctx, "target cpu --cpu host --threads 0")   # (the module's other tests select for the host)


def _plain_matmuls(m: int, k: int, n: int, n2: int = 0) -> str:
    """x @ w (M x K @ K x N) into a zero fill; with `n2`, its result @ w2 (N x n2) into a fill of its own."""
    text = f"""func.func @mm(%x: tensor<{m}x{k}xf32>, %w: tensor<{k}x{n}xf32>{f", %w2: tensor<{n}x{n2}xf32>" if n2 else ""})
    -> tensor<{m}x{n2 or n}xf32> {{
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<{m}x{n}xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<{m}x{n}xf32>) -> tensor<{m}x{n}xf32>
  %y = linalg.matmul ins(%x, %w : tensor<{m}x{k}xf32>, tensor<{k}x{n}xf32>) outs(%f : tensor<{m}x{n}xf32>) -> tensor<{m}x{n}xf32>
"""
    if not n2:
        return text + f"  return %y : tensor<{m}x{n}xf32>\n}}\n"
    return text + f"""  %e2 = tensor.empty() : tensor<{m}x{n2}xf32>
  %f2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<{m}x{n2}xf32>) -> tensor<{m}x{n2}xf32>
  %z = linalg.matmul ins(%y, %w2 : tensor<{m}x{n}xf32>, tensor<{n}x{n2}xf32>) outs(%f2 : tensor<{m}x{n2}xf32>) -> tensor<{m}x{n2}xf32>
  return %z : tensor<{m}x{n2}xf32>
}}
"""


@pytest.mark.parametrize("payload", ["one_block", "two_n_blocks", "then_k_of_several_blocks"])
def test_a_plain_matmuls_fill_runs_on_its_register_tiles(ctx, tmp_path, monkeypatch, payload):
    """A plain matmul on one thread whose K is one cache block and whose init is a fill only it reads (Swin's MLP
    projections, 3136 x 96 @ 96 x 384): matmul_epilogue with no chain (epilogue=0) and the fill on the register
    tiles: the accumulators start at zero, no fill pass over the output before it (3136 x 384 x 96, 1 thread:
    2.74 -> 2.36 ms CPU time). The fill reaches the tiles through a serial forall of the N blocks (made an
    scf.for after bufferization: by the step itself alone, by finish.py next to other steps) and
    transform.structured.fuse below it. A matmul whose K takes several blocks keeps the packed schedule and its
    fill. The runs match."""
    import workbench.targets.cpu as cpu

    machine = _avx512_model(1)
    monkeypatch.setattr(cpu, "host_machine", lambda: machine)
    text = {"one_block": _plain_matmuls(256, 96, 384), "two_n_blocks": _plain_matmuls(128, 96, 1024),
            "then_k_of_several_blocks": _plain_matmuls(128, 96, 1024, 64)}[payload]
    path = tmp_path / "p.mlir"
    path.write_text(text)
    ok(ctx, f"load {path}")
    ok(ctx, "select --apply")
    steps = [a.step for a in ctx.session.active_steps if a.step.selected_by and "reg_m" in a.step.params]
    assert [s.options["gen"] for s in steps] == (["matmul_epilogue", "matmul_tiling"] if "then" in payload
                                                 else ["matmul_epilogue"]), [s.label() for s in steps]
    params = steps[0].params
    assert params["epilogue"] == 0 and params["in_registers"] == 1 and params["fill_init"] is True, params
    ir = ctx.session.current_ir
    assert "scf.forall" not in ir and "dense<0.000000e+00> : vector<8x32xf32>" in ir, ir
    assert ir.count("linalg.fill") == (1 if "then" in payload else 0), ir
    _skip_run_unless_runnable(ctx)
    ok(ctx, "bench warmup=0 iterations=2")
    ok(ctx, "apply cpu-lower")
    assert ok(ctx, "run --check --threads 1").data["run"]["check"]["passed"]


def _addmm(m: int, k: int, n: int) -> str:
    """torch.addmm(c, a, b, beta=0.5, alpha=2) as torch-mlir writes it (tests/fixtures' addmm at M x K @ K x N):
    a zero-filled matmul, then 2 * (a @ b) + 0.5 * c in three elementwise generics."""
    t = f"tensor<{m}x{n}xf32>"
    ew = "indexing_maps = [#map, #map], iterator_types = [\"parallel\", \"parallel\"]"
    return f"""#map = affine_map<(d0, d1) -> (d0, d1)>
func.func @addmm(%c: {t}, %a: tensor<{m}x{k}xf32>, %b: tensor<{k}x{n}xf32>) -> {t} {{
  %zero = arith.constant 0.0 : f32
  %two = arith.constant 2.0 : f32
  %half = arith.constant 0.5 : f32
  %e = tensor.empty() : {t}
  %f = linalg.fill ins(%zero : f32) outs(%e : {t}) -> {t}
  %mm = linalg.matmul ins(%a, %b : tensor<{m}x{k}xf32>, tensor<{k}x{n}xf32>) outs(%f : {t}) -> {t}
  %s = linalg.generic {{{ew}}} ins(%mm : {t}) outs(%e : {t}) {{
  ^bb0(%in: f32, %out: f32):
    %r = arith.mulf %in, %two : f32
    linalg.yield %r : f32
  }} -> {t}
  %h = linalg.generic {{{ew}}} ins(%c : {t}) outs(%e : {t}) {{
  ^bb0(%in: f32, %out: f32):
    %r = arith.mulf %in, %half : f32
    linalg.yield %r : f32
  }} -> {t}
  %sum = linalg.generic {{indexing_maps = [#map, #map, #map], iterator_types = ["parallel", "parallel"]}}
      ins(%s, %h : {t}, {t}) outs(%e : {t}) {{
  ^bb0(%x: f32, %y: f32, %out: f32):
    %r = arith.addf %x, %y : f32
    linalg.yield %r : f32
  }} -> {t}
  return %sum : {t}
}}
"""


@pytest.mark.parametrize("payload", ["addmm", "bias_relu", "addmm_in_l2"])
def test_an_epilogue_reading_a_whole_tensor_takes_all_of_k_in_registers(ctx, tmp_path, monkeypatch, payload):
    """A matmul whose K takes several cache blocks, on one thread: its epilogue chain ran as a pass over the result
    after it (and a fill pass before). Where the chain reads another tensor of the output's shape (addmm's C,
    2 * (a @ b) + 0.5 * c), that pass reads it besides C: K becomes one block (the B block over all of K within L2,
    the A panel within L1) and the chain runs on the accumulators (addmm 1024^3, 1 thread: 28.5 -> 25.1 ms CPU
    time), where the output is larger than L2 (the pass reads C and that tensor from memory: 1024 x 512 x 1024,
    4 MiB). A bias-only chain (even when measured) keeps its K blocks and the pass, and so does an addmm whose
    output stays in L2 (128 x 512 x 512). The runs match."""
    import dataclasses

    import workbench.targets.cpu as cpu

    # (an L2 of 2 MiB: the 4 MiB output past it, the 1 MiB one within it)
    machine = dataclasses.replace(_avx512_model(1), l2_bytes=2 << 20)
    monkeypatch.setattr(cpu, "host_machine", lambda: machine)
    text = {"addmm": _addmm(1024, 512, 1024), "bias_relu": _bias_relu(1024, 512, 1024),
            "addmm_in_l2": _addmm(128, 512, 512)}[payload]
    path = tmp_path / "p.mlir"
    path.write_text(text)
    ok(ctx, f"load {path}")
    ok(ctx, "select --apply")
    params = [a.step.params for a in ctx.session.active_steps if "matmul_epilogue" in a.step.label()]
    assert len(params) == 1, [a.step.label() for a in ctx.session.active_steps]
    ir = ctx.session.current_ir
    if payload == "addmm":
        assert params[0]["block_k"] == 512 and params[0].get("in_registers") == 1, params
        assert params[0].get("fill_init") is True and params[0]["block_n"] % params[0]["reg_n"] == 0, params
        assert "linalg.fill" not in ir and "linalg.generic" not in ir, ir
    else:
        assert params[0]["block_k"] < 512 and not params[0].get("in_registers"), params
    _skip_run_unless_runnable(ctx)
    ok(ctx, "bench warmup=0 iterations=2")
    ok(ctx, "apply cpu-lower")
    assert ok(ctx, "run --check --threads 1").data["run"]["check"]["passed"]


def test_a_linear_layers_collapsed_fill_is_fused_too(ctx, tmp_path, monkeypatch):
    """A linear layer on a 3-D input (one matmul over the collapsed rows after lh-shared-rhs-matmuls, its
    init a collapse_shape of the zeroed 3-D output, which no schedule can fuse): lh-collapse-expanded-
    elementwise gives the matmul a fill of its own shape, so its epilogue schedule takes the fill into the
    register tiles too (a transformer layer's FFN: a 4 MiB memset pass per call gone)."""
    import dataclasses

    import workbench.targets.cpu as cpu

    machine = _avx512_model(1)   # (M = 4 x 32 = 128 collapsed rows: see _avx512_model)
    monkeypatch.setattr(cpu, "host_machine", lambda: machine)
    path = tmp_path / "p.mlir"
    path.write_text((ROOT / "tests" / "payloads" / "linear_3d_bias.mlir").read_text())
    ok(ctx, f"load {path}")
    ok(ctx, "select --apply")
    params = [a.step.params for a in ctx.session.active_steps if "matmul_epilogue" in a.step.label()]
    assert len(params) == 1 and params[0].get("fill_init") is True, params
    assert "linalg.fill" not in ctx.session.current_ir
    _skip_run_unless_runnable(ctx)
    ok(ctx, "bench warmup=0 iterations=2")
    ok(ctx, "apply cpu-lower")
    assert ok(ctx, "run --check --threads 1").data["run"]["check"]["passed"]


def test_epilogues_on_the_register_tiles_of_matmuls_sharing_a_fill(ctx, monkeypatch):
    """Matmuls whose inits are one fill (BERT's Q, K and V projections): each runs its epilogue on its register
    tiles (fusing the shared fill into one of them aborted the compile worker in fuse_into_containing_op; the
    preparation's lh-unshare-fills now gives each its own fill, which each fuses: fill_init), and the results
    match."""
    import dataclasses

    import workbench.targets.cpu as cpu

    machine = _avx512_model(1)   # (see _avx512_model)
    monkeypatch.setattr(cpu, "host_machine", lambda: machine)
    ok(ctx, f"load {ROOT / 'tests' / 'payloads' / 'qkv_shared_fill.mlir'}")
    ok(ctx, "select --apply")
    params = [a.step.params for a in ctx.session.active_steps if "matmul_epilogue" in a.step.label()]
    assert len(params) == 3 and all(p.get("in_registers") == 1 and p.get("fill_init") for p in params), params
    _skip_run_unless_runnable(ctx)
    ok(ctx, "bench warmup=0 iterations=2")
    ok(ctx, "apply cpu-lower")
    assert ok(ctx, "run --check --threads 1").data["run"]["check"]["passed"]


@pytest.mark.parametrize("threads", [1, 2])
def test_an_epilogue_on_the_register_tiles_with_one_k_step(ctx, tmp_path, threads):
    """in_registers with reg_k = block_k = K (an LSTM step's 2 x 8 @ 8 x 32 projection, which the AVX2 machine
    model gives reg_k 8): one K step, no K loop (canonicalization folded the one-trip loop under the handle
    the hoisting and the step's region needed: "tracking listener failed to find replacement op"). It applies,
    lowers and matches, on one thread and split over two."""
    path = tmp_path / "p.mlir"
    path.write_text(_bias_relu(8, 8, 64))
    ok(ctx, f"load {path}")
    ok(ctx, f"target cpu --threads {threads}")
    ok(ctx, "select --apply")
    index = next(i for i, a in enumerate(ctx.session.active_steps, 1) if "matmul_epilogue" in a.step.label())
    params = ctx.session.active_steps[index - 1].step.params
    assert params.get("in_registers") == 1 and params["block_k"] == 8, params
    ok(ctx, f"params {index} reg_k=8 pack_tile_a=8 pack_tile_b=8")
    assert "scf.for" in ctx.session.current_ir
    ok(ctx, "bench warmup=0 iterations=2")
    ok(ctx, "apply cpu-lower")
    assert ok(ctx, f"run --check --threads {threads}").data["run"]["check"]["passed"]


def test_an_lstm_selected_for_avx2_runs(ctx):
    """tests/fixtures/torch/lstm.mlir selected for an AVX2 machine (its step projection's reg_k = K = 8): the
    selection applies, lowers and matches torch (it failed to apply before)."""
    from workbench.targets.cpu_host import host_machine

    if "avx2" not in host_machine().features:
        pytest.skip("the host has no AVX2")
    ok(ctx, f"load {ROOT / 'tests' / 'fixtures' / 'torch' / 'lstm.mlir'}")
    ok(ctx, "target cpu --cpu avx2 --threads 1")
    ok(ctx, "select --apply")
    ok(ctx, "bench warmup=0 iterations=2")
    ok(ctx, "apply cpu-lower")
    assert ok(ctx, "run --check").data["run"]["check"]["passed"]
