"""Twelfth QA round: torch models not tried before, upstream MLIR test files not probed before, a new user's
REPL / script lines, hostile saved sessions; each test failed before its fix (docs/qa-round12.md)."""
from __future__ import annotations

import json

import pytest

from conftest import MATMUL, do, failed, ok, run_cli


# -- torch models: a transposed convolution without bias -----------------------------------------------------

#: `ConvTranspose1d(8, 1, 4, stride=2, bias=False)` after a strided Conv1d, as `lh-workbench import` wrote it
#: (Conv-TasNet's encoder and decoder ends, 2x1x32xf32)
CONVT_NO_BIAS = """#map = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
module {
  func.func @main(%arg0: tensor<2x1x32xf32>) -> tensor<2x1x32xf32> {
    %cst = arith.constant 0.000000e+00 : f32
    %cst_0 = arith.constant dense_resource<torch_tensor_8_1_4_torch.float32_1> : tensor<8x1x4xf32>
    %cst_1 = arith.constant dense_resource<torch_tensor_8_1_4_torch.float32> : tensor<8x1x4xf32>
    %c0 = arith.constant 0 : index
    %c3 = arith.constant 3 : index
    %0 = tensor.empty() : tensor<2x8x15xf32>
    %1 = linalg.fill ins(%cst : f32) outs(%0 : tensor<2x8x15xf32>) -> tensor<2x8x15xf32>
    %2 = linalg.conv_1d_ncw_fcw {dilations = dense<1> : vector<1xi64>, strides = dense<2> : vector<1xi64>} ins(%arg0, %cst_1 : tensor<2x1x32xf32>, tensor<8x1x4xf32>) outs(%1 : tensor<2x8x15xf32>) -> tensor<2x8x15xf32>
    %3 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%2 : tensor<2x8x15xf32>) outs(%0 : tensor<2x8x15xf32>) {
    ^bb0(%in: f32, %out: f32):
      %12 = arith.cmpf ugt, %in, %cst : f32
      %13 = arith.select %12, %in, %cst : f32
      linalg.yield %13 : f32
    } -> tensor<2x8x15xf32>
    %4 = tensor.empty() : tensor<1x8x4xf32>
    %5 = linalg.fill ins(%cst : f32) outs(%4 : tensor<1x8x4xf32>) -> tensor<1x8x4xf32>
    %6 = linalg.generic {indexing_maps = [#map], iterator_types = ["parallel", "parallel", "parallel"]} outs(%5 : tensor<1x8x4xf32>) {
    ^bb0(%out: f32):
      %12 = linalg.index 1 : index
      %13 = linalg.index 2 : index
      %14 = arith.subi %c3, %13 : index
      %extracted = tensor.extract %cst_0[%12, %c0, %14] : tensor<8x1x4xf32>
      linalg.yield %extracted : f32
    } -> tensor<1x8x4xf32>
    %7 = tensor.empty() : tensor<2x8x35xf32>
    %8 = linalg.fill ins(%cst : f32) outs(%7 : tensor<2x8x35xf32>) -> tensor<2x8x35xf32>
    %inserted_slice = tensor.insert_slice %3 into %8[0, 0, 3] [2, 8, 15] [1, 1, 2] : tensor<2x8x15xf32> into tensor<2x8x35xf32>
    %9 = tensor.empty() : tensor<2x1x32xf32>
    %10 = linalg.fill ins(%cst : f32) outs(%9 : tensor<2x1x32xf32>) -> tensor<2x1x32xf32>
    %11 = linalg.conv_1d_ncw_fcw {dilations = dense<1> : vector<1xi64>, strides = dense<1> : vector<1xi64>} ins(%inserted_slice, %6 : tensor<2x8x35xf32>, tensor<1x8x4xf32>) outs(%10 : tensor<2x1x32xf32>) -> tensor<2x1x32xf32>
    return %11 : tensor<2x1x32xf32>
  }
}

{-#
  dialect_resources: {
    builtin: {
      torch_tensor_8_1_4_torch.float32_1: "0x040000001AEFA5BEC0B06BBE1ADAB2BE76C2EFBE047095BE9E0EDC3EBC76643E0027783E406AD73C3A3F83BEC03EAD3D9E06EFBE1AFAB8BEC6F983BE2685A13E2619963EC81163BE20CB93BC40BAA33E827FFE3E24344B3EC8558A3DFEA4AB3EC0BB96BEF8D0BE3D6C7AC6BE186EB1BED23E84BE8CAA673EF8E74D3E6AA497BEC8AD1A3E",
      torch_tensor_8_1_4_torch.float32: "0x04000000005475BB5E54893E16B3D2BE8066BCBEF43245BEEC4B093E404F22BCCEFACA3E70BF35BD4C7B073EACBB1ABE7048C9BDB891F4BE528BA9BEE80E53BE00BB973C60694A3E189B993E8C8DADBEFCF45EBE98F7393E4E94D43E48BDD2BD5C91BF3E400DA5BD10B5583D4ACDE73ECE7BEDBE6629A1BEE09E01BEDC9347BE282FDD3E"
    }
  }
#-}
"""


def test_a_transposed_convolution_without_bias_selects_lowers_and_checks(ctx, tmp_path):
    """lh-dilated-input-convs accumulated each phase of a transposed convolution without bias into a dense copy
    of its phase of the zero fill: an identity generic, which the function-wide canonicalization of an earlier
    step erased, so `select --apply` failed at the group that named it (`op generic_2 must exist`; Conv-TasNet's
    decoder). Such a phase starts from a fill of its own now."""
    payload = tmp_path / "convt.mlir"
    payload.write_text(CONVT_NO_BIAS)
    ok(ctx, f"load {payload}")
    ok(ctx, "select --apply")
    ok(ctx, "bench")
    ok(ctx, "apply cpu-lower")
    res = ok(ctx, "run --check --iterations 2")
    assert res.data["run"]["check"]["passed"], res.data["run"]["check"]


needs_torch = pytest.mark.skipif(not __import__("test_torch_import")._torch_available(),
                                 reason="torch + torch-mlir not here")

TASNET_ENDS = """
import torch


class Ends(torch.nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.enc = torch.nn.Conv1d(1, 16, 8, stride=4, bias=False)
        self.mask = torch.nn.Conv1d(16, 32, 1)
        self.dec = torch.nn.ConvTranspose1d(16, 1, 8, stride=4, bias=False)

    def forward(self, wav):
        w = torch.relu(self.enc(wav))
        m = torch.sigmoid(self.mask(w)).view(wav.shape[0], 2, 16, -1)
        s = (w.unsqueeze(1) * m).view(wav.shape[0] * 2, 16, -1)
        return self.dec(s).view(wav.shape[0], 2, -1)
"""


@needs_torch
def test_conv_tasnet_ends_select_lower_and_check_against_torch(tmp_path):
    """Conv-TasNet's encoder, masks for two speakers and ConvTranspose1d decoder without bias, imported from
    torch: `select --apply` failed (`op generic_... must exist`) before lh-dilated-input-convs gave each phase a
    fill of its own; it checks against the payload and torch now."""
    from test_torch_import import TORCH_PYTHON

    (tmp_path / "tasnet.py").write_text(TASNET_ENDS)
    env = {"LH_WORKBENCH_TORCH_PYTHON": TORCH_PYTHON}
    out = run_cli(["import", "tasnet.py:Ends", "--inputs", "2x1x64xf32", "--out", "out"], cwd=tmp_path,
                  env_extra=env, timeout=600)
    assert out.returncode == 0, out.stderr
    (tmp_path / "s.lhw").write_text("select --apply\nbench\napply cpu-lower\nrun --check --iterations 2\n")
    out = run_cli([tmp_path / "out" / "ends.mlir", "--script", "s.lhw", "--json", "r.json"], cwd=tmp_path,
                  env_extra=env, timeout=600)
    assert out.returncode == 0, out.stderr
    run = json.loads((tmp_path / "r.json").read_text())["run"]
    assert run["check"]["passed"] and run["expected_check"]["passed"], (run["check"], run["expected_check"])


# -- upstream MLIR files: a pass option MLIR removed ---------------------------------------------------------

COLLAPSE = """// RUN: mlir-opt %s -linalg-bufferize \\\\
// RUN: -arith-bufferize -tensor-bufferize -func-bufferize \\\\
// RUN: -finalizing-bufferize -buffer-deallocation-pipeline=allow-cloning=true -convert-bufferization-to-memref \\\\
// RUN: -convert-scf-to-cf -expand-strided-metadata -lower-affine -convert-cf-to-llvm -convert-arith-to-llvm \\\\
// RUN: -finalize-memref-to-llvm -convert-func-to-llvm -reconcile-unrealized-casts | \\\\
// RUN: mlir-cpu-runner -e main -entry-point-result=void \\\\
// RUN:   -shared-libs=%mlir_runner_utils \\\\
// RUN: | FileCheck %s

func.func @main() {
  %const = arith.constant dense<[[[[1.0, 2.0], [3.0, 4.0]]]]> : tensor<1x1x2x2xf32>
  %dynamic = tensor.cast %const : tensor<1x1x2x2xf32> to tensor<1x?x?x?xf32>
  %collapsed = call @collapse(%dynamic) : (tensor<1x?x?x?xf32>) -> (tensor<1x?x?xf32>)
  %unranked = tensor.cast %collapsed : tensor<1x?x?xf32> to tensor<*xf32>
  call @printMemrefF32(%unranked) : (tensor<*xf32>) -> ()
  // CHECK: rank = 3 offset = 0 sizes = [1, 2, 2] strides = [4, 2, 1] data =
  // CHECK-NEXT{LITERAL}: [[[1,    2],
  return
}

func.func private @printMemrefF32(%ptr : tensor<*xf32>)

func.func @collapse(%arg0 : tensor<1x?x?x?xf32>) -> tensor<1x?x?xf32> {
  %0 = tensor.collapse_shape %arg0 [[0], [1, 2], [3]] : tensor<1x?x?x?xf32> into tensor<1x?x?xf32>
  return %0 : tensor<1x?x?xf32>
}
"""


def test_a_run_line_passing_buffer_deallocation_pipeline_allow_cloning_runs(ctx, tmp_path):
    """Linalg/CPU/test-collapse-tensor.mlir of late 2023 passes `-buffer-deallocation-pipeline=allow-cloning=true`,
    an option the pipeline no longer has: `run-line` failed (`buffer-deallocation-pipeline: no such option
    allow-cloning`). The option is dropped as one-shot-bufferize's removed ones are; the program's output
    passes the file's CHECK lines."""
    path = tmp_path / "test-collapse-tensor.mlir"
    path.write_text(COLLAPSE)
    ok(ctx, f"load {path}")
    ok(ctx, "run-line")
    res = ok(ctx, "run --filecheck")
    assert res.data["run"]["filecheck"]["passed"], res.data["run"]["filecheck"]


# -- a new user: commands with a step number --------------------------------------------------------------

def test_diff_of_a_step_past_the_last_names_that_step(ctx):
    """`diff 5` in a session of one step said `no step 4` (the step before it, which it would have compared
    with): the step the user named is the one that is missing."""
    ok(ctx, f"load {MATMUL}")
    ok(ctx, "pass canonicalize")
    assert failed(ctx, "diff 5").startswith("no step 5 "), failed(ctx, "diff 5")
    assert failed(ctx, "diff -1").startswith("no step -1 "), failed(ctx, "diff -1")
    assert ok(ctx, "diff 1").data["to"] == 1


def test_a_value_of_the_wrong_type_names_its_command_as_a_value_out_of_range_does(ctx):
    """`run --iterations 0` said `run: --iterations must be >= 1`, `run --iterations 1e3` only `--iterations must
    be an integer` (and `show abc` `step must be ...`): in a script of many commands the command is named."""
    ok(ctx, f"load {MATMUL}")
    assert failed(ctx, "run --iterations 0").startswith("run: --iterations must be >= 1")
    assert failed(ctx, "run --iterations 1e3") == "run: --iterations must be an integer, got '1e3'"
    assert failed(ctx, "run --timeout nan").startswith("run: --timeout must be a finite number")
    assert failed(ctx, "show abc") == "show: step must be an integer, got 'abc'"


# -- hostile / stale saved sessions: an op id the payload does not have ----------------------------------------

def test_a_failed_check_of_a_generated_schedule_says_what_it_checks(ctx, tmp_path):
    """A saved session whose schedule names an op id the payload lacks (a payload edited since, no `rewrite
    tag-ops` step, Conv-TasNet's erased copy) failed with `transform failed: generic.py[gen=tile_vectorize]:7:5:
    expected parameter to be equal to 1, got 0`: the generated script's comment above that line says which op
    must exist; the message quotes it. A transform file's own comment is quoted the same way."""
    ok(ctx, f"load {MATMUL}")
    err = failed(ctx, "apply pipelines/cpu/generic.py[gen=tile_vectorize]{op=nope_0 tile=[8,8,8]}")
    assert "expected parameter to be equal to 1, got 0 (the script says there: op nope_0 must exist" in err, err
    script = tmp_path / "t.mlir"
    script.write_text('module attributes {transform.with_named_sequence} {\n'
                      '  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {\n'
                      '    %m = transform.structured.match ops{["linalg.matmul"]} in %root : (!transform.any_op) -> !transform.any_op\n'
                      '    %n = transform.num_associations %m : (!transform.any_op) -> !transform.param<i64>\n'
                      '    %two = transform.param.constant 2 : i64 -> !transform.param<i64>\n'
                      '    // two matmuls, the second one\n    // added by the MLP\n'
                      '    transform.match.param.cmpi eq %n, %two : !transform.param<i64>\n'
                      '    transform.yield\n  }\n}\n')
    err = failed(ctx, f"apply {script}")
    assert err.endswith("got 1 (the script says there: two matmuls, the second one added by the MLP)"), err
    assert "(the script says there:" not in failed(ctx, "apply pipelines/cpu/generic.py[gen=tile_vectorize]{op=matmul tile=[-1]}")


# -- a new user: bench's outputs ----------------------------------------------------------------------------

def test_bench_outputs_that_are_not_argument_indices_fail_in_one_line(ctx, tmp_path):
    """`bench outputs=abc` (or a saved session's `outputs: "0 } x"`) on a function without results failed with
    the compile worker's `ValueError: invalid literal for int()` and its traceback."""
    payload = tmp_path / "mm.mlir"
    payload.write_text("func.func @mm(%A: memref<16x16xf32>, %B: memref<16x16xf32>, %C: memref<16x16xf32>) {\n"
                       "  linalg.matmul ins(%A, %B : memref<16x16xf32>, memref<16x16xf32>) outs(%C : memref<16x16xf32>)\n"
                       "  return\n}\n")
    ok(ctx, f"load {payload}")
    for value in ("abc", '"0 } x"', "-1", "1.5"):
        res = do(ctx, f"bench outputs={value}")
        assert not res.ok and "expected the indices of the entry's output arguments" in res.error, res.error
        assert "Traceback" not in (res.detail or "") and ctx.session.cursor == 0, res.detail
    ok(ctx, "bench outputs=2")
    assert ctx.session.cursor == 1


# -- hostile saved sessions: look-alike and invisible characters in a pass name ---------------------------------

@pytest.mark.parametrize("pipeline, char", [("c\u0455e", "U+0455 CYRILLIC SMALL LETTER DZE"),
                                            ("cse\u200b", "U+200B ZERO WIDTH SPACE")])
def test_a_non_ascii_character_in_a_pass_name_is_named(ctx, pipeline, char):
    """A session whose `pass:` holds `cѕe` (a Cyrillic dze) or `cse` and a zero-width space failed with
    `'cѕe' does not refer to a registered pass` / `'cse​' ... (did you mean cse?)`: the name looks right."""
    ok(ctx, f"load {MATMUL}")
    err = failed(ctx, f"pass {pipeline}")
    assert f"({char}) at column" in err, err
    assert ctx.session.cursor == 0


# -- upstream MLIR files: the Arm integration tests' runner -------------------------------------------------

NEON = """// RUN: mlir-opt %s \\\\
// RUN:   -one-shot-bufferize="bufferize-function-boundaries" -buffer-deallocation-pipeline -cse -canonicalize -convert-vector-to-scf \\\\
// RUN:   -convert-vector-to-llvm="enable-arm-neon" -test-lower-to-llvm -o %t

// RUN: %mcr_aarch64_cmd %t -e entry -entry-point-result=void --march=aarch64 --mattr="+neon" \\\\
// RUN:    -shared-libs=%native_mlir_runner_utils,%native_mlir_c_runner_utils | \\\\
// RUN: FileCheck %s

func.func @entry() {
  %pi = arith.constant 3.14 : f32
  %zero = arith.constant 0.0 : f32
  %A0 = tensor.empty() : tensor<2x3xf32>
  %B0 = tensor.empty() : tensor<3x4xf32>
  %C0 = tensor.empty() : tensor<2x4xf32>
  %A = linalg.fill ins(%pi : f32) outs(%A0 : tensor<2x3xf32>) -> tensor<2x3xf32>
  %B = linalg.fill ins(%pi : f32) outs(%B0 : tensor<3x4xf32>) -> tensor<3x4xf32>
  %C = linalg.fill ins(%zero : f32) outs(%C0 : tensor<2x4xf32>) -> tensor<2x4xf32>
  %D = linalg.matmul ins(%A, %B : tensor<2x3xf32>, tensor<3x4xf32>) outs(%C : tensor<2x4xf32>) -> tensor<2x4xf32>
  // CHECK-LABEL: NEON: START OF TEST OUTPUT
  vector.print str "NEON: START OF TEST OUTPUT\\n"
  // CHECK-NEXT: Unranked Memref {{.*}} rank = 2 offset = 0 sizes = [2, 4] strides = [4, 1] data =
  // CHECK-COUNT-2: [29.5788, 29.5788, 29.5788, 29.5788]
  %xf = tensor.cast %D : tensor<2x4xf32> to tensor<*xf32>
  call @printMemrefF32(%xf) : (tensor<*xf32>) -> ()
  return
}

func.func private @printMemrefF32(%ptr : tensor<*xf32>)
"""


def test_the_arm_tests_runner_and_native_libraries_are_read_as_mlir_runners(ctx, tmp_path):
    """Linalg/CPU/ArmNeon/matmul-f32.mlir (and the ArmSVE / ArmSME tests) run the program with lit's
    `%mcr_aarch64_cmd ... -shared-libs=%native_mlir_runner_utils`: `run --filecheck` said `RUN line 2 pipes
    mlir-opt into FileCheck: its CHECK lines are about the IR` (no runner found), and with the runner read, that
    `%native_mlir_runner_utils` is not one of MLIR's runtime libraries. Both are mlir-runner's; the program's
    output passes its CHECK lines (nothing of it is NEON-specific)."""
    path = tmp_path / "matmul-f32.mlir"
    path.write_text(NEON)
    ok(ctx, f"load {path}")
    ok(ctx, "run-line")
    res = ok(ctx, "run --filecheck")
    assert res.data["run"]["filecheck"]["passed"] and res.data["run"]["filecheck"]["total"] == 3, res.data["run"]["filecheck"]


SVE = """// RUN: mlir-opt %s -transform-interpreter -test-transform-dialect-erase-schedule \\\\
// RUN:    -one-shot-bufferize="bufferize-function-boundaries" -buffer-deallocation-pipeline -cse -canonicalize \\\\
// RUN:    -convert-vector-to-scf -arm-sve-legalize-vector-storage -convert-vector-to-llvm="enable-arm-sve" \\\\
// RUN:    -test-lower-to-llvm -o %t
// RUN: %mcr_aarch64_cmd %t -e entry -entry-point-result=void --march=aarch64 --mattr="+sve" \\\\
// RUN:    -shared-libs=%native_mlir_runner_utils,%native_mlir_c_runner_utils | FileCheck %s

func.func @entry() {
  %pi = arith.constant 3.1416 : f32
  %zero = arith.constant 0.0 : f32
  %A0 = tensor.empty() : tensor<1000xf32>
  %C0 = tensor.empty() : tensor<f32>
  %A = linalg.fill ins(%pi : f32) outs(%A0 : tensor<1000xf32>) -> tensor<1000xf32>
  %C = linalg.fill ins(%zero : f32) outs(%C0 : tensor<f32>) -> tensor<f32>
  %R = linalg.reduce ins(%A : tensor<1000xf32>) outs(%C : tensor<f32>) dimensions = [0]
    (%in: f32, %init: f32) {
      %0 = arith.addf %in, %init : f32
      linalg.yield %0 : f32
    }
  // CHECK: [3141.6]
  %xf = tensor.cast %R : tensor<f32> to tensor<*xf32>
  call @printMemrefF32(%xf) : (tensor<*xf32>) -> ()
  return
}

module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%module: !transform.any_op {transform.readonly}) {
    %reduce = transform.structured.match ops{["linalg.reduce"]} in %module : (!transform.any_op) -> !transform.any_op
    %tiled, %loop = transform.structured.tile_using_for %reduce tile_sizes [[4]] : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
    transform.structured.vectorize %tiled vector_sizes [[4]] : !transform.any_op
    %func = transform.structured.match ops{["func.func"]} in %module : (!transform.any_op) -> !transform.any_op
    transform.apply_patterns to %func {
      transform.apply_patterns.vector.lower_masked_transfers
      transform.apply_patterns.vector.lower_multi_reduction lowering_strategy = "innerreduction"
    } : !transform.any_op
    transform.yield
  }
}

func.func private @printMemrefF32(%ptr : tensor<*xf32>)
"""


def test_arm_sve_intrinsics_left_after_a_run_lines_lowering_say_they_are_aarch64_ops(ctx, tmp_path):
    """An ArmSVE test's RUN line lowers its scalable vectors to `arm_sve.intr.*` ops, which stay outside the LLVM
    dialect here: `run` said only that they remain. They are AArch64 intrinsics this host cannot run, as the
    message says now."""
    path = tmp_path / "reduce_1d.mlir"
    path.write_text(SVE)
    ok(ctx, f"load {path}")
    ok(ctx, "run-line")
    err = failed(ctx, "run --filecheck")
    assert "ops remain outside the LLVM dialect: arm_sve." in err and "arm_sve ops are AArch64 intrinsics" in err, err


# -- a new user at the terminal -----------------------------------------------------------------------------

@pytest.mark.parametrize("argv", [["run", "matmul.mlir"], ["select", "--apply"], ["bench"]])
def test_a_workbench_command_typed_as_a_subcommand_says_where_it_goes(argv, tmp_path):
    """`lh-workbench run matmul.mlir` answered `unrecognized arguments: matmul.mlir` (the word `run` taken for
    the payload), `lh-workbench bench` `bench: no such file`: these are commands inside the workbench."""
    (tmp_path / "matmul.mlir").write_text(MATMUL.read_text())
    out = run_cli(argv, cwd=tmp_path)
    assert out.returncode == 2, out
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and f"`{argv[0]}` is a command inside the workbench: `lh-workbench FILE.mlir` opens" \
        in lines[0], lines


# -- upstream MLIR files: private kernels -------------------------------------------------------------------

def test_bench_without_a_public_entry_names_the_private_functions(ctx, tmp_path):
    """Dialect/Linalg/fuse_fill_op_with_reduce_op.mlir's kernels are `func.func private`: `bench` said `no public
    function that is not called by another; name it`, without a name to give. It lists the private ones, and
    `bench entry=NAME` runs one."""
    path = tmp_path / "k.mlir"
    path.write_text("func.func private @reduce_kernel(%arg0: tensor<1024xi8>) -> tensor<i8> {\n"
                    "  %e = tensor.empty() : tensor<i8>\n  %c0 = arith.constant 0 : i8\n"
                    "  %f = linalg.fill ins(%c0 : i8) outs(%e : tensor<i8>) -> tensor<i8>\n"
                    "  %r = linalg.reduce ins(%arg0 : tensor<1024xi8>) outs(%f : tensor<i8>) dimensions = [0]\n"
                    "    (%in: i8, %init: i8) {\n      %s = arith.addi %in, %init : i8\n      linalg.yield %s : i8\n    }\n"
                    "  return %r : tensor<i8>\n}\n")
    ok(ctx, f"load {path}")
    err = failed(ctx, "bench")
    assert "no public function that is not called by another (private ones: @reduce_kernel)" in err, err
    ok(ctx, "bench entry=reduce_kernel")
    ok(ctx, "apply cpu-lower")
    assert ok(ctx, "run --check").data["run"]["check"]["passed"]
