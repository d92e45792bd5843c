"""cuda target, the preparation's elementwise fusion (issue 14): the named matmuls and batch matmuls of a
transformer block keep their names through it, so the selector gives each its matmul schedule (wgmma
for f16 / bf16 operands, matmul_simt for f32 2-D matmuls). Upstream's fusion by expansion used to turn
the ones between reshapes (multi-head attention's batch matmuls, a linear layer on collapsed rows) into
linalg.generics: no matmul schedule, a naive kernel each. Compile side only (no GPU needed)."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from conftest import ok
from cuda_helpers import needs_gpu, selected_fixture_matches_torch

ROOT = Path(__file__).resolve().parents[1]
TORCH = ROOT / "tests" / "fixtures" / "torch"

# an f16 block as torch-mlir writes it: a linear layer on a 3-D input (rows collapsed, operands extended
# to f32, an f32 matmul, the bias add and the rounding back to f16, rows expanded) and attention scores
# (heads collapsed into the batch of a batch matmul, expanded again, scaled and rounded)
F16_BLOCK = """#id2 = affine_map<(d0, d1) -> (d0, d1)>
#bias = affine_map<(d0, d1) -> (d1)>
#id4 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
func.func @main(%x: tensor<2x64x128xf16>, %w: tensor<128x128xf16>, %b: tensor<128xf16>,
                %q: tensor<2x2x64x64xf16>, %k: tensor<2x2x64x64xf16>) -> (tensor<2x64x128xf16>, tensor<2x2x64x64xf16>) {
  %zero = arith.constant 0.0 : f32
  %scale = arith.constant 0.125 : f32
  %xc = tensor.collapse_shape %x [[0, 1], [2]] : tensor<2x64x128xf16> into tensor<128x128xf16>
  %e16 = tensor.empty() : tensor<128x128xf16>
  %wt = linalg.transpose ins(%w : tensor<128x128xf16>) outs(%e16 : tensor<128x128xf16>) permutation = [1, 0]
  %e32 = tensor.empty() : tensor<128x128xf32>
  %xf = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%xc : tensor<128x128xf16>) outs(%e32 : tensor<128x128xf32>) {
  ^bb0(%in: f16, %out: f32):
    %v = arith.extf %in : f16 to f32
    linalg.yield %v : f32
  } -> tensor<128x128xf32>
  %wf = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%wt : tensor<128x128xf16>) outs(%e32 : tensor<128x128xf32>) {
  ^bb0(%in: f16, %out: f32):
    %v = arith.extf %in : f16 to f32
    linalg.yield %v : f32
  } -> tensor<128x128xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e32 : tensor<128x128xf32>) -> tensor<128x128xf32>
  %mm = linalg.matmul ins(%xf, %wf : tensor<128x128xf32>, tensor<128x128xf32>) outs(%z : tensor<128x128xf32>) -> tensor<128x128xf32>
  %y = linalg.generic {indexing_maps = [#id2, #bias, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%mm, %b : tensor<128x128xf32>, tensor<128xf16>) outs(%e16 : tensor<128x128xf16>) {
  ^bb0(%in: f32, %bi: f16, %out: f16):
    %be = arith.extf %bi : f16 to f32
    %s = arith.addf %in, %be : f32
    %t = arith.truncf %s : f32 to f16
    linalg.yield %t : f16
  } -> tensor<128x128xf16>
  %ye = tensor.expand_shape %y [[0, 1], [2]] output_shape [2, 64, 128] : tensor<128x128xf16> into tensor<2x64x128xf16>
  %qc = tensor.collapse_shape %q [[0, 1], [2], [3]] : tensor<2x2x64x64xf16> into tensor<4x64x64xf16>
  %kc = tensor.collapse_shape %k [[0, 1], [2], [3]] : tensor<2x2x64x64xf16> into tensor<4x64x64xf16>
  %eb = tensor.empty() : tensor<4x64x64xf32>
  %zb = linalg.fill ins(%zero : f32) outs(%eb : tensor<4x64x64xf32>) -> tensor<4x64x64xf32>
  %s = linalg.batch_matmul ins(%qc, %kc : tensor<4x64x64xf16>, tensor<4x64x64xf16>) outs(%zb : tensor<4x64x64xf32>) -> tensor<4x64x64xf32>
  %se = tensor.expand_shape %s [[0, 1], [2], [3]] output_shape [2, 2, 64, 64] : tensor<4x64x64xf32> into tensor<2x2x64x64xf32>
  %e4 = tensor.empty() : tensor<2x2x64x64xf16>
  %r = linalg.generic {indexing_maps = [#id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%se : tensor<2x2x64x64xf32>) outs(%e4 : tensor<2x2x64x64xf16>) {
  ^bb0(%in: f32, %out: f16):
    %v = arith.mulf %in, %scale : f32
    %t = arith.truncf %v : f32 to f16
    linalg.yield %t : f16
  } -> tensor<2x2x64x64xf16>
  return %ye, %r : tensor<2x64x128xf16>, tensor<2x2x64x64xf16>
}
"""


def _contraction_ids(ir: str) -> dict[str, int]:
    """How many linalg.matmul / linalg.batch_matmul ops a module's text has."""
    return {name: len(re.findall(rf"= linalg\.{name}\b", ir)) for name in ("matmul", "batch_matmul")}


def _matmul_selections(ctx, path: Path) -> tuple[dict[str, str], list[str]]:
    """The generator the cuda selector picks for each op id of `path` (matmul.py entries) and the specs
    of the steps applied (the preparation's passes too), after which the selected module must lower
    (cuda-lower for the H100's sm_90a, no GPU needed)."""
    ok(ctx, f"load {path}")
    ok(ctx, "target cuda")
    res = ok(ctx, "select --apply")
    ok(ctx, "apply cuda-lower{chip=sm_90a}")
    picked = {}
    for entry in res.data["selections"]:
        m = re.search(r"matmul\.py\[gen=(\w+)\]", entry["schedule"])
        if m:
            picked[entry["params"].get("op", "")] = m.group(1)
    return picked, [applied.step.spec for applied in ctx.session.active_steps]


def test_transformer_layer_matmuls_keep_their_schedule(ctx):
    """tests/fixtures/torch/transformer_layer (f32): its three linear layers' matmuls (on rows collapsed
    from [batch, seq]) and its three attention batch matmuls (heads collapsed into the batch) each get
    matmul_simt (the batch matmuls with the batch as the grid's z); before, the fusion turned them all
    into generics and the selector picked no matmul schedule at all."""
    picked, _ = _matmul_selections(ctx, TORCH / "transformer_layer.mlir")
    counts = _contraction_ids((TORCH / "transformer_layer.mlir").read_text())
    assert counts == {"matmul": 3, "batch_matmul": 3}
    assert picked == {**{f"matmul_{i}": "matmul_simt" for i in range(3)},
                      **{f"batch_matmul_{i}": "matmul_simt" for i in range(3)}}


def test_f16_block_contractions_take_wgmma(ctx, tmp_path):
    """An f16 linear layer on a 3-D input and a batch matmul between head reshapes: both take the wgmma
    kernel (the linear layer's f32 extensions read narrow, the batch matmul kept named), and the
    weight's transpose is folded into the matmul (K-major B: the wgmma kernel reads it as stored)."""
    path = tmp_path / "f16_block.mlir"
    path.write_text(F16_BLOCK)
    picked, steps = _matmul_selections(ctx, path)
    assert picked == {"matmul_0": "matmul_wgmma", "batch_matmul_0": "matmul_wgmma"}
    assert "lh-transposed-b-matmuls" in steps, steps
    # an f32 matmul of the same block (no extensions) keeps B as [k][n] for matmul_simt
    plain = tmp_path / "f32_block.mlir"
    plain.write_text(F16_BLOCK.replace("ins(%xf, %wf :", "ins(%xf, %z :"))
    picked, steps = _matmul_selections(ctx, plain)
    assert picked["matmul_0"] == "matmul_simt" and "lh-transposed-b-matmuls" not in steps, steps


def test_guarded_fusion_keeps_named_contractions_and_fuses_the_rest():
    """The pass itself: the named ops survive, the elementwise ops around them still fuse (the rounding
    of the scores with the scaling was one op already; the bias extension is fused into its add), and
    no guard call or declaration is left."""
    from mlir import ir

    from workbench.worker.cuda import fusion, narrow_contractions
    from workbench.worker.fusion_guards import GUARD

    with ir.Context(), ir.Location.unknown():
        module = ir.Module.parse(F16_BLOCK)
        assert narrow_contractions.narrow_contraction_inputs(module) == 1
        fusion.fuse_elementwise(module)
        module.operation.verify()
        text = str(module)
    assert _contraction_ids(text) == {"matmul": 1, "batch_matmul": 1}
    assert GUARD not in text
    matmul = next(line for line in text.splitlines() if "= linalg.matmul" in line)
    assert "tensor<128x128xf16>, tensor<128x128xf16>) outs(" in matmul and "-> tensor<128x128xf32>" in matmul
    assert "arith.extf %in : f16 to f32\n      linalg.yield" not in text   # (the extensions are gone)


def test_unguarded_fusion_expands_the_contractions():
    """What the guards prevent: upstream's pipeline alone turns both named ops into generics."""
    from mlir import ir
    from mlir.passmanager import PassManager

    from workbench.worker.cuda import fusion

    with ir.Context(), ir.Location.unknown():
        module = ir.Module.parse(F16_BLOCK)
        PassManager.parse(fusion.PIPELINE).run(module.operation)
        assert _contraction_ids(str(module)) == {"matmul": 0, "batch_matmul": 0}


def test_narrowing_needs_every_operand_extended():
    """A matmul with one extended f16 operand and one plain f32 operand stays on f32 operands (no kernel
    reads mixed operand types)."""
    from mlir import ir

    from workbench.worker.cuda import narrow_contractions

    mixed = F16_BLOCK.replace("ins(%xf, %wf : tensor<128x128xf32>", "ins(%xf, %xf : tensor<128x128xf32>") \
        .replace("%wf = linalg.generic", "%wf_unused = linalg.generic")
    assert mixed != F16_BLOCK
    with ir.Context(), ir.Location.unknown():
        module = ir.Module.parse(mixed.replace("ins(%xf, %xf", "ins(%xf, %z"))
        assert narrow_contractions.narrow_contraction_inputs(module) == 0
        module = ir.Module.parse(mixed)   # x @ x: one extension read twice, erased once
        assert narrow_contractions.narrow_contraction_inputs(module) == 1
        module.operation.verify()


BATCH_F32 = """func.func @bmm(%a: tensor<3x40x20xf32>, %b: tensor<3x20x24xf32>, %c: tensor<3x40x24xf32>) -> tensor<3x40x24xf32> {
  %r = linalg.batch_matmul ins(%a, %b : tensor<3x40x20xf32>, tensor<3x20x24xf32>) outs(%c : tensor<3x40x24xf32>) -> tensor<3x40x24xf32>
  return %r : tensor<3x40x24xf32>
}
"""


def test_f32_batch_matmul_takes_simt_with_the_batch_as_grid_z(ctx, tmp_path):
    """An f32 batch matmul (no wgmma) takes matmul_simt over one batch per block z: three-dimensional
    block ids in the kernel, which lowers for sm_90."""
    path = tmp_path / "bmm.mlir"
    path.write_text(BATCH_F32)
    ok(ctx, f"load {path}")
    ok(ctx, "target cuda")
    res = ok(ctx, "select --apply")
    (entry,) = [e for e in res.data["selections"] if "matmul.py" in e["schedule"]]
    assert entry["schedule"].endswith("[gen=matmul_simt]") and entry["params"]["batch"] is True, entry
    ok(ctx, "apply cuda-lower{chip=sm_90}")
    assert "gpu.launch_func" in ctx.session.current_ir


@needs_gpu
def test_gpu_f32_batch_matmul_matches_numpy(ctx, tmp_path):
    """The batch matmul_simt kernel on the GPU: C + A x B per batch, odd shapes (edge tiles)."""
    import numpy as np

    from conftest import load_npys

    path = tmp_path / "bmm.mlir"
    path.write_text(BATCH_F32)
    ok(ctx, f"load {path}")
    ok(ctx, "target cuda")
    ok(ctx, "select --apply")
    res = ok(ctx, f"run --target cuda --check --iterations 2 --save-outputs {tmp_path / 'o'}")
    assert res.data["run"]["check"]["passed"], res.data["run"]["check"]
    a, b, c = (x.astype(np.float64) for x in load_npys(tmp_path / "o", "input"))
    got = load_npys(tmp_path / "o", "output")[0].astype(np.float64)
    assert np.abs(got - (c + a @ b)).max() / np.abs(c + a @ b).max() < 1e-5


@needs_gpu
@pytest.mark.parametrize("name", ["transformer_layer", "multihead_attention", "sdpa", "linear_bf16", "gru"])
def test_gpu_fixtures_with_kept_contractions_match_torch(ctx, name):
    """The torch fixtures whose contractions this keeps named (and schedules) still match torch."""
    selected_fixture_matches_torch(ctx, TORCH / f"{name}.mlir")


@needs_gpu
def test_gpu_f16_block_matches_the_cpu_reference(ctx, tmp_path):
    """The f16 block with its wgmma matmul (narrowed operands, K-major B) and batch matmul."""
    path = tmp_path / "f16_block.mlir"
    path.write_text(F16_BLOCK)
    ok(ctx, f"load {path}")
    ok(ctx, "target cuda")
    ok(ctx, "select --apply")
    run = ok(ctx, "run --target cuda --check --iterations 2").data["run"]
    assert run["check"]["passed"], run["check"]


def _linalg_generics(text: str) -> int:
    return text.count("linalg.generic")


def test_select_fuses_a_model_with_no_op_to_schedule(ctx):
    """mish (exp, log1p, a compare, a select, tanh, a multiply: six torch ops, no contraction): nothing
    needs a schedule of its own, but `select --apply` still applies the preparation's fusion (one
    generic, so cuda-lower makes one kernel where it made six) and succeeds; without --apply it only
    reports it."""
    ok(ctx, f"load {TORCH / 'mish.mlir'}")
    ok(ctx, "target cuda")
    before = ctx.session.current_ir
    assert _linalg_generics(before) == 6
    looked = ok(ctx, "select")
    assert looked.data["selections"] == [] and any("lh-fuse-elementwise" in p for p in looked.data["prepared"])
    assert ctx.session.current_ir == before and ctx.session.cursor == 0
    res = ok(ctx, "select --apply")
    assert res.data["selections"] == [] and "cuda-lower maps" in res.summary
    assert ctx.session.cursor == 1 and "lh-fuse-elementwise" in ctx.session.active_steps[0].step.spec
    assert _linalg_generics(ctx.session.current_ir) == 1


def test_select_with_nothing_to_do_is_not_an_error_on_cuda(ctx, tmp_path):
    """One elementwise op: no preparation, no schedule; cuda-lower maps it, so `select --apply` succeeds
    without a step (a script running the selector path does not stop there). The cpu target, whose
    selector has a schedule for every op, is not concerned."""
    path = tmp_path / "relu.mlir"
    path.write_text("""#id = affine_map<(d0) -> (d0)>
func.func @main(%x: tensor<64xf32>) -> tensor<64xf32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<64xf32>
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]} ins(%x : tensor<64xf32>) outs(%e : tensor<64xf32>) {
  ^bb0(%in: f32, %out: f32):
    %m = arith.maximumf %in, %z : f32
    linalg.yield %m : f32
  } -> tensor<64xf32>
  return %r : tensor<64xf32>
}
""")
    ok(ctx, f"load {path}")
    ok(ctx, "target cuda")
    res = ok(ctx, "select --apply")
    assert res.data["selections"] == [] and "no op" in res.summary
    assert ctx.session.cursor == 0


@needs_gpu
@pytest.mark.parametrize("name", ["mish", "interpolate_bilinear", "pad_reflect", "argsort", "batch_norm2d"])
def test_gpu_models_fused_by_the_preparation_alone_match_torch(ctx, name):
    """Models with nothing to schedule, fused by select's preparation (a kernel per fused chain)."""
    selected_fixture_matches_torch(ctx, TORCH / f"{name}.mlir")
