"""The CPU selector on the ops of attention layers and bf16 matmuls (issue 13): transposes in square
blocks, bf16 contractions on widened f32 inputs, batch matmuls with several batch dims, and linear
layers on 3-D inputs as one matmul over the collapsed rows. Each schedule applies, lowers, runs and
matches the unscheduled reference."""
from __future__ import annotations

import re

import pytest

from conftest import load_text, lowered_run_passes, ok
from workbench.targets.cpu_host import machine_for

TRANSPOSE = """func.func @t(%x: tensor<48x80xf32>) -> tensor<80x48xf32> {
  %e = tensor.empty() : tensor<80x48xf32>
  %t = linalg.transpose ins(%x : tensor<48x80xf32>) outs(%e : tensor<80x48xf32>) permutation = [1, 0]
  return %t : tensor<80x48xf32>
}
"""

BF16_MATMUL = """func.func @mm(%a: tensor<64x96xbf16>, %b: tensor<96x128xbf16>) -> tensor<64x128xf32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<64x128xf32>
  %c = linalg.fill ins(%z : f32) outs(%e : tensor<64x128xf32>) -> tensor<64x128xf32>
  %r = linalg.matmul ins(%a, %b : tensor<64x96xbf16>, tensor<96x128xbf16>) outs(%c : tensor<64x128xf32>) -> tensor<64x128xf32>
  return %r : tensor<64x128xf32>
}
"""

# attention's per-head product: batch dims (2, 3), then m, n, k
TWO_BATCH_DIMS = """#a = affine_map<(b0, b1, m, n, k) -> (b0, b1, m, k)>
#b = affine_map<(b0, b1, m, n, k) -> (b0, b1, k, n)>
#c = affine_map<(b0, b1, m, n, k) -> (b0, b1, m, n)>
func.func @heads(%q: tensor<2x3x64x32xf32>, %k: tensor<2x3x32x48xf32>) -> tensor<2x3x64x48xf32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2x3x64x48xf32>
  %c = linalg.fill ins(%z : f32) outs(%e : tensor<2x3x64x48xf32>) -> tensor<2x3x64x48xf32>
  %r = linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%q, %k : tensor<2x3x64x32xf32>, tensor<2x3x32x48xf32>) outs(%c : tensor<2x3x64x48xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<2x3x64x48xf32>
  return %r : tensor<2x3x64x48xf32>
}
"""

# nn.MultiheadAttention's input projection as torch-mlir writes it: the weight broadcast over the batch
BROADCAST_BMM = """#w = affine_map<(b, k, n) -> (k, n)>
#id = affine_map<(b, k, n) -> (b, k, n)>
func.func @proj(%x: tensor<6x8x64xf32>, %w: tensor<64x32xf32>) -> tensor<6x8x32xf32> {
  %z = arith.constant 0.0 : f32
  %eb = tensor.empty() : tensor<6x64x32xf32>
  %wb = linalg.generic {indexing_maps = [#w, #id], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%w : tensor<64x32xf32>) outs(%eb : tensor<6x64x32xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  } -> tensor<6x64x32xf32>
  %e = tensor.empty() : tensor<6x8x32xf32>
  %c = linalg.fill ins(%z : f32) outs(%e : tensor<6x8x32xf32>) -> tensor<6x8x32xf32>
  %r = linalg.batch_matmul ins(%x, %wb : tensor<6x8x64xf32>, tensor<6x64x32xf32>) outs(%c : tensor<6x8x32xf32>) -> tensor<6x8x32xf32>
  return %r : tensor<6x8x32xf32>
}
"""

# its output projection: two row loops, the weight shared
ROWS_GENERIC = """#a = affine_map<(m0, m1, n, k) -> (m0, m1, k)>
#b = affine_map<(m0, m1, n, k) -> (k, n)>
#c = affine_map<(m0, m1, n, k) -> (m0, m1, n)>
func.func @proj(%x: tensor<6x8x64xf32>, %w: tensor<64x32xf32>) -> tensor<6x8x32xf32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<6x8x32xf32>
  %c = linalg.fill ins(%z : f32) outs(%e : tensor<6x8x32xf32>) -> tensor<6x8x32xf32>
  %r = linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%x, %w : tensor<6x8x64xf32>, tensor<64x32xf32>) outs(%c : tensor<6x8x32xf32>) {
  ^bb0(%p: f32, %q: f32, %acc: f32):
    %m = arith.mulf %p, %q : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<6x8x32xf32>
  return %r : tensor<6x8x32xf32>
}
"""


def _selection(ctx) -> tuple[list[str], list[tuple[str, dict]]]:
    data = ok(ctx, "select").data
    return data["prepared"], [(s["schedule"], s["params"]) for s in data["selections"]]


def test_a_transpose_is_tiled_in_square_blocks(ctx, tmp_path):
    """Both the output's and the input's innermost loops are tiled by the vector width (contiguous
    reads and writes, transposed in registers), not one strided element per lane."""
    load_text(ctx, tmp_path, TRANSPOSE)
    lanes = ctx.session.target.machine.vector_bits // 32
    _, selections = _selection(ctx)
    spec, params = selections[0]
    assert "generic.py" in spec and params["tile"] == [lanes, lanes], params
    ok(ctx, "select --apply")
    assert f"vector<{lanes}x{lanes}xf32>" in ctx.session.current_ir   # one block read at once
    lowered_run_passes(ctx)


def test_a_bf16_matmul_takes_the_f32_matmul_schedule_on_widened_inputs(ctx, tmp_path):
    # (a machine without the bf16 dot product, AVX-512 x86-64-v4: with it, test_cpu_vnni.py's path)
    load_text(ctx, tmp_path, BF16_MATMUL)
    try:
        ok(ctx, "target cpu --cpu avx512")
        prepared, selections = _selection(ctx)
        assert prepared == ["pass lh-widen-contraction-inputs"]
        assert any("cpu/matmul" in spec and "generic.py" not in spec for spec, _ in selections), selections
        ok(ctx, "select --apply")
        ir = ctx.session.current_ir
        assert "linalg.matmul" not in ir
        assert "vector.fma" in ir or "vector.outerproduct" in ir
        missing = machine_for("avx512").missing_here()
        if missing:   # selected and compiled for AVX-512 anywhere; run only where the host has it
            ok(ctx, "apply cpu-lower")
            pytest.skip(f"x86-64-v4 code needs {', '.join(missing)}, which this host lacks: not run")
        lowered_run_passes(ctx)
    finally:
        ok(ctx, "target cpu --cpu host")


def test_the_widening_pass_extends_each_narrow_input_once(ctx, tmp_path):
    load_text(ctx, tmp_path, BF16_MATMUL)
    ok(ctx, "apply pass lh-widen-contraction-inputs")
    ir = ctx.session.current_ir
    matmul = next(line for line in ir.splitlines() if "linalg.matmul" in line)
    assert "bf16" not in matmul, matmul
    assert ir.count("arith.extf") == 2
    lowered_run_passes(ctx)


def test_a_batch_matmul_with_two_batch_dims_takes_the_packed_schedule(ctx, tmp_path):
    load_text(ctx, tmp_path, TWO_BATCH_DIMS)
    op = next(o for o in ctx.session.inspect()["ops"] if o["op"] == "linalg.generic")
    assert (op["kind"], op["layout"], op["batch_dims"]) == ("contraction", "batch", [2, 3])
    assert op["dims"] == {"b": 6, "m": 64, "n": 48, "k": 32}
    _, selections = _selection(ctx)
    spec, params = selections[0]
    assert spec.endswith("[gen=batch_matmul_tiling]") and params["batch_dims"] == 2 and params["generic"] is True
    ok(ctx, "select --apply")
    ir = ctx.session.current_ir
    assert "vector.fma" in ir or "vector.outerproduct" in ir
    assert "vector.multi_reduction" not in ir and "vector.reduction" not in ir   # no dot products per element
    fill = next(line for line in ir.splitlines() if "linalg.fill" in line)
    assert "memref<1x1x64x48xf32" in fill, fill   # the init zeroed one batch at a time, in the batch loops
    lowered_run_passes(ctx)


def test_two_batch_dims_split_over_threads(ctx, tmp_path):
    load_text(ctx, tmp_path, TWO_BATCH_DIMS)
    ok(ctx, "apply rewrite tag-ops")
    ok(ctx, "apply pipelines/cpu/matmul_family.py[gen=batch_matmul_tiling]{block_m=32 block_n=48 block_k=32 "
            "reg_m=4 reg_n=16 reg_k=4 pack_tile_a=32 pack_tile_b=8 threads_b=2 generic=true batch_dims=2 "
            "fill_init=true op=generic_0}")
    ir = ctx.session.current_ir
    assert "scf.forall" in ir
    fill = next(line for line in ir.splitlines() if "linalg.fill" in line)
    assert "memref<1x1x64x48xf32" in fill, fill
    lowered_run_passes(ctx)


def test_batch_dims_need_the_generic_form(ctx, tmp_path):
    load_text(ctx, tmp_path, TWO_BATCH_DIMS)
    res = ctx.registry.dispatch("apply pipelines/cpu/matmul_family.py[gen=batch_matmul_tiling]{block_m=32 block_n=48 "
                                "block_k=32 reg_m=4 reg_n=16 reg_k=4 pack_tile_a=32 pack_tile_b=8 batch_dims=2}", ctx)
    assert not res.ok and "batch_dims > 1 needs generic=true" in res.error


@pytest.mark.parametrize("text", [BROADCAST_BMM, ROWS_GENERIC], ids=["broadcast_batch_matmul", "two_row_loops"])
def test_a_shared_weight_becomes_one_matmul_over_the_rows(ctx, tmp_path, text):
    load_text(ctx, tmp_path, text)
    ok(ctx, "apply pass lh-shared-rhs-matmuls")
    ir = ctx.session.current_ir
    assert "linalg.matmul ins(%collapsed" in ir and "tensor<48x64xf32>, tensor<64x32xf32>" in ir
    assert "linalg.batch_matmul" not in ir and "linalg.generic" not in ir   # (the broadcast is gone too)
    ok(ctx, f"load {tmp_path / 'payload.mlir'}")
    prepared, selections = _selection(ctx)
    assert "pass lh-shared-rhs-matmuls" in prepared
    assert any("cpu/matmul" in spec and "generic.py" not in spec for spec, _ in selections), selections
    ok(ctx, "select --apply")
    lowered_run_passes(ctx)


LINEAR_T = """#a = affine_map<(m, n, k) -> (m, k)>
#b = affine_map<(m, n, k) -> (n, k)>
#c = affine_map<(m, n, k) -> (m, n)>
func.func @linear(%x: tensor<64x96xf32>, %w: tensor<48x96xf32>, %c: tensor<64x48xf32>) -> tensor<64x48xf32> {
  %r = linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %w : tensor<64x96xf32>, tensor<48x96xf32>) outs(%c : tensor<64x48xf32>) {
  ^bb0(%p: f32, %q: f32, %acc: f32):
    %m = arith.mulf %p, %q : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<64x48xf32>
  return %r : tensor<64x48xf32>
}
"""
TRANSPOSED_BOTH = """#a = affine_map<(m, n, k) -> (k, m)>
#b = affine_map<(m, n, k) -> (n, k)>
#c = affine_map<(m, n, k) -> (m, n)>
func.func @tt(%x: tensor<96x64xf32>, %w: tensor<48x96xf32>, %c: tensor<64x48xf32>) -> tensor<64x48xf32> {
  %r = linalg.matmul indexing_maps = [#a, #b, #c] ins(%x, %w : tensor<96x64xf32>, tensor<48x96xf32>) outs(%c : tensor<64x48xf32>) -> tensor<64x48xf32>
  return %r : tensor<64x48xf32>
}
"""


@pytest.mark.parametrize("text,transposes", [(LINEAR_T, 1), (TRANSPOSED_BOTH, 2)], ids=["x_wT_generic", "aT_bT_named"])
def test_a_transposed_operand_is_transposed_once_for_a_plain_matmul(ctx, tmp_path, text, transposes):
    load_text(ctx, tmp_path, text)
    ok(ctx, "apply pass lh-plain-matmul-layout")
    ir = ctx.session.current_ir
    assert ir.count("linalg.transpose") == transposes and "indexing_maps" not in ir and "linalg.generic" not in ir
    ok(ctx, f"load {tmp_path / 'payload.mlir'}")
    prepared, selections = _selection(ctx)
    assert "pass lh-plain-matmul-layout" in prepared
    assert any("cpu/matmul" in spec and "generic.py" not in spec for spec, _ in selections), selections
    ok(ctx, "select --apply")
    lowered_run_passes(ctx)


def _two_batch_dims_on(ctx, tmp_path, monkeypatch, cores: int) -> dict:
    """TWO_BATCH_DIMS loaded on a machine of `cores` cores (small matmuls split too); the selection's
    parameters for its batch matmul."""
    import dataclasses

    import workbench.targets.cpu as cpu

    machine = dataclasses.replace(cpu.host_machine(), usable_cpus=cores)
    monkeypatch.setattr(cpu, "host_machine", lambda: machine)
    monkeypatch.setattr(cpu, "MIN_PARALLEL_MATMUL", 1 << 10)
    load_text(ctx, tmp_path, TWO_BATCH_DIMS)
    _, selections = _selection(ctx)
    return selections[0][1]


def test_the_selector_fuses_the_fill_into_the_batch_chunks(ctx, tmp_path, monkeypatch):
    """On 2 cores the first batch dim is split into 2 parallel chunks; the init's fill (inspect's
    producers) is fused into them and then into the batch loops."""
    params = _two_batch_dims_on(ctx, tmp_path, monkeypatch, cores=2)
    assert params["threads_b"] == 2 and params["fill_init"] is True, params
    ok(ctx, "select --apply")
    fill = next(line for line in ctx.session.current_ir.splitlines() if "linalg.fill" in line)
    assert "memref<1x1x64x48xf32" in fill, fill
    lowered_run_passes(ctx)


NAMED_BMM = """func.func @scores(%q: tensor<4x64x32xf32>, %k: tensor<4x32x64xf32>) -> tensor<4x64x64xf32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x64x64xf32>
  %c = linalg.fill ins(%z : f32) outs(%e : tensor<4x64x64xf32>) -> tensor<4x64x64xf32>
  %r = linalg.batch_matmul ins(%q, %k : tensor<4x64x32xf32>, tensor<4x32x64xf32>) outs(%c : tensor<4x64x64xf32>) -> tensor<4x64x64xf32>
  return %r : tensor<4x64x64xf32>
}
"""


def test_a_named_batch_matmul_zeroes_one_batch_at_a_time(ctx, tmp_path):
    load_text(ctx, tmp_path, NAMED_BMM)
    _, selections = _selection(ctx)
    assert selections[0][0].endswith("[gen=batch_matmul_tiling]")
    ok(ctx, "select --apply")
    ir = ctx.session.current_ir
    fill = next(line for line in ir.splitlines() if "linalg.fill" in line)
    assert "memref<1x64x64xf32" in fill, fill
    assert "vector.fma" in ir or "vector.outerproduct" in ir
    lowered_run_passes(ctx)


def _grouped_contraction(a: str, w: str, c: str, iterators: str, shapes: tuple[str, str, str]) -> str:
    sa, sw, sc = shapes
    return f"""#a = affine_map<{a}>
#b = affine_map<{w}>
#c = affine_map<{c}>
func.func @proj(%x: tensor<{sa}xf32>, %w: tensor<{sw}xf32>) -> tensor<{sc}xf32> {{
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<{sc}xf32>
  %c = linalg.fill ins(%z : f32) outs(%e : tensor<{sc}xf32>) -> tensor<{sc}xf32>
  %r = linalg.generic {{indexing_maps = [#a, #b, #c], iterator_types = [{iterators}]}}
      ins(%x, %w : tensor<{sa}xf32>, tensor<{sw}xf32>) outs(%c : tensor<{sc}xf32>) {{
  ^bb0(%p: f32, %q: f32, %acc: f32):
    %m = arith.mulf %p, %q : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  }} -> tensor<{sc}xf32>
  return %r : tensor<{sc}xf32>
}}
"""


# attention's output projection summed over (heads, head dim); a QKV projection whose columns are (3, d)
HEADS_REDUCED = _grouped_contraction("(r0, r1, n, h, d) -> (r0, r1, h, d)", "(r0, r1, n, h, d) -> (h, d, n)",
                                     "(r0, r1, n, h, d) -> (r0, r1, n)",
                                     '"parallel", "parallel", "parallel", "reduction", "reduction"',
                                     ("6x8x4x16", "4x16x32", "6x8x32"))
COLUMNS_SPLIT = _grouped_contraction("(r0, r1, g, n, k) -> (r0, r1, k)", "(r0, r1, g, n, k) -> (k, g, n)",
                                     "(r0, r1, g, n, k) -> (r0, r1, g, n)",
                                     '"parallel", "parallel", "parallel", "parallel", "reduction"',
                                     ("6x8x64", "64x2x16", "6x8x2x16"))
# a loop in both A and W is a batch loop: no weight shared by the rows
BATCHED = _grouped_contraction("(b, m, n, k) -> (b, m, k)", "(b, m, n, k) -> (b, k, n)", "(b, m, n, k) -> (b, m, n)",
                               '"parallel", "parallel", "parallel", "reduction"', ("6x8x64", "6x64x32", "6x8x32"))


@pytest.mark.parametrize("text,product", [(HEADS_REDUCED, "tensor<48x64xf32>, tensor<64x32xf32>"),
                                          (COLUMNS_SPLIT, "tensor<48x64xf32>, tensor<64x32xf32>")],
                         ids=["reduced_loops_grouped", "column_loops_grouped"])
def test_grouped_loops_of_a_shared_weight_become_one_matmul(ctx, tmp_path, text, product):
    load_text(ctx, tmp_path, text)
    ok(ctx, "apply pass lh-shared-rhs-matmuls")
    ir = ctx.session.current_ir
    assert "linalg.matmul" in ir and product in ir and "linalg.generic" not in ir, ir
    ok(ctx, f"load {tmp_path / 'payload.mlir'}")
    ok(ctx, "select --apply")
    lowered_run_passes(ctx)


def test_a_batch_loop_keeps_the_contraction(ctx, tmp_path):
    load_text(ctx, tmp_path, BATCHED)
    ok(ctx, "apply pass lh-shared-rhs-matmuls")
    assert "linalg.matmul" not in ctx.session.current_ir


# a linear layer as torch-mlir writes it on a 3-D input, its columns split after it (q, k, v)
BROADCAST_BMM_SPLIT = """#w = affine_map<(b, k, n) -> (k, n)>
#id = affine_map<(b, k, n) -> (b, k, n)>
#id4 = affine_map<(b, m, g, n) -> (b, m, g, n)>
func.func @qkv(%x: tensor<6x8x64xf32>, %w: tensor<64x32xf32>) -> tensor<6x8x2x16xf32> {
  %z = arith.constant 0.0 : f32
  %eb = tensor.empty() : tensor<6x64x32xf32>
  %wb = linalg.generic {indexing_maps = [#w, #id], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%w : tensor<64x32xf32>) outs(%eb : tensor<6x64x32xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  } -> tensor<6x64x32xf32>
  %e = tensor.empty() : tensor<6x8x32xf32>
  %c = linalg.fill ins(%z : f32) outs(%e : tensor<6x8x32xf32>) -> tensor<6x8x32xf32>
  %r = linalg.batch_matmul ins(%x, %wb : tensor<6x8x64xf32>, tensor<6x64x32xf32>) outs(%c : tensor<6x8x32xf32>) -> tensor<6x8x32xf32>
  %s = tensor.expand_shape %r [[0], [1], [2, 3]] output_shape [6, 8, 2, 16] : tensor<6x8x32xf32> into tensor<6x8x2x16xf32>
  %e4 = tensor.empty() : tensor<6x8x2x16xf32>
  %t = linalg.generic {indexing_maps = [#id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%s : tensor<6x8x2x16xf32>) outs(%e4 : tensor<6x8x2x16xf32>) {
  ^bb0(%in: f32, %out: f32):
    %h = arith.mulf %in, %in : f32
    linalg.yield %h : f32
  } -> tensor<6x8x2x16xf32>
  %u = linalg.generic {indexing_maps = [#id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%t : tensor<6x8x2x16xf32>) outs(%e4 : tensor<6x8x2x16xf32>) {
  ^bb0(%in: f32, %out: f32):
    %h = arith.addf %in, %in : f32
    linalg.yield %h : f32
  } -> tensor<6x8x2x16xf32>
  return %u : tensor<6x8x2x16xf32>
}
"""


def test_a_broadcast_weight_is_shared_before_the_fusion_folds_reshapes_into_it(ctx, tmp_path):
    """Else the fusion folds the expand_shape into the batch matmul: a generic over the broadcast copy."""
    load_text(ctx, tmp_path, BROADCAST_BMM_SPLIT)
    prepared, selections = _selection(ctx)
    assert prepared.index("pass lh-shared-rhs-matmuls") < prepared.index("pass lh-fuse-elementwise"), prepared
    assert any("cpu/matmul" in spec and "generic.py" not in spec for spec, _ in selections), selections
    ok(ctx, "select --apply")
    assert "linalg.batch_matmul" not in ctx.session.current_ir
    lowered_run_passes(ctx)


HEAD_SPLIT_READ = """func.func @heads(%x: tensor<2x64x48xf32>) -> tensor<16x12xf32> {
  %c0 = arith.constant 0 : index
  %pad = ub.poison : f32
  %e = tensor.expand_shape %x [[0], [1], [2, 3]] output_shape [2, 64, 4, 12] : tensor<2x64x48xf32> into tensor<2x64x4x12xf32>
  %s = tensor.extract_slice %e[1, 16, 2, 0] [1, 16, 1, 12] [1, 1, 1, 1] : tensor<2x64x4x12xf32> to tensor<1x16x1x12xf32>
  %v = vector.transfer_read %s[%c0, %c0, %c0, %c0], %pad {in_bounds = [true, true, true]} : tensor<1x16x1x12xf32>, vector<16x1x12xf32>
  %v2 = vector.shape_cast %v : vector<16x1x12xf32> to vector<16x12xf32>
  %o = tensor.empty() : tensor<16x12xf32>
  %w = vector.transfer_write %v2, %o[%c0, %c0] {in_bounds = [true, true]} : vector<16x12xf32>, tensor<16x12xf32>
  return %w : tensor<16x12xf32>
}
"""


def test_an_nd_read_of_a_head_split_view_reads_the_heads_elements(ctx, tmp_path):
    """A 16x1x12 vector read of one head (a strided view: tensor.expand_shape splits the features into
    heads) lowers to the elements of that head. LLVM 22's fold-memref-alias-ops folds the expand_shape into
    an n-D transfer_read keeping the vector's rank over the collapsed source (it read rows of the next
    batch): the lowering makes transfers 1-D before that fold."""
    import numpy as np

    from conftest import load_npys

    p = tmp_path / "heads.mlir"
    p.write_text(HEAD_SPLIT_READ)
    ok(ctx, f"load {p}")
    ok(ctx, f"run --save-outputs {tmp_path / 'out'}")
    x, = load_npys(tmp_path / "out", "input")
    out, = load_npys(tmp_path / "out", "output")
    np.testing.assert_array_equal(out, x.reshape(2, 64, 4, 12)[1, 16:32, 2, :])


def test_attention_on_heads_split_from_one_qkv_tensor_matches_torch(ctx, monkeypatch, tmp_path):
    """tests/fixtures/torch/attention_head_split: q, k and v are head-split, transposed views of one qkv
    tensor (as after a fused qkv projection), then causal SDPA. The selector tiles the transposes (16x1x12
    vector reads of the views) and both batch matmuls; the result matches torch (it was NaN)."""
    import dataclasses
    from pathlib import Path

    import workbench.targets.cpu as cpu

    machine = dataclasses.replace(cpu.host_machine(), usable_cpus=1)
    monkeypatch.setattr(cpu, "host_machine", lambda: machine)
    ok(ctx, f"load {Path(__file__).parent / 'fixtures' / 'torch' / 'attention_head_split.mlir'}")
    ok(ctx, "target cpu")
    specs = [e["schedule"] for e in ok(ctx, "select --apply").data["selections"]]
    assert sum("batch_matmul_tiling" in s for s in specs) == 2, specs
    run = ok(ctx, "run --check").data["run"]
    assert run["check"]["passed"] and run["expected_check"]["passed"], run
    # the saved session writes each parameter out (no YAML anchors where defaults share a list)
    ok(ctx, f"save {tmp_path / 's.yaml'}")
    text = (tmp_path / "s.yaml").read_text()
    assert "interchange: []" in text and "&id" not in text and "*id" not in text


def test_heads_take_the_cores_the_batch_leaves(ctx, tmp_path, monkeypatch):
    """2 x 3 heads on 6 cores: the first batch loop gives 2 chunks, the second (the heads) the other 3
    (threads_b2): 6 tasks of whole matmuls, not an M x N grid inside a serial loop over the heads (a
    GPT-2-size attention's batch matmuls ran on 4 of 16 cores that way)."""
    import workbench.targets.cpu as cpu

    family = cpu._load_library_module(cpu.CpuTarget.matmul_family_schedule)
    assert family.thread_chunks(4, 512, 512, 16, b2=8) == (4, 4, 1, 1)
    assert family.thread_chunks(2, 512, 512, 16) == (1, 1, 4, 4)   # too few batches: the M x N grid
    params = _two_batch_dims_on(ctx, tmp_path, monkeypatch, cores=6)
    assert (params["threads_b"], params["threads_b2"], params["fill_init"]) == (2, 3, True), params
    assert "threads_m" not in params and "threads" not in params
    ok(ctx, "select --apply")
    assert re.search(r"scf\.forall \(%\w+, %\w+\) in \(2, 3\)", ctx.session.current_ir)
    lowered_run_passes(ctx)
    with pytest.raises(ValueError, match="needs batch_dims >= 2"):
        family.batch_matmul_tiling(threads_b2=2)
