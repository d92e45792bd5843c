"""Eleventh QA round: torch models not tried before, upstream MLIR test files not probed before, hostile saved
sessions and scripts; each test failed before its fix (docs/qa-round11.md)."""
from __future__ import annotations

import json

import pytest

from conftest import MATMUL, do, ok, run_cli


# -- hostile saved sessions: a generator of the library refusing a parameter --------------------------------

def test_a_library_generator_refusing_a_parameter_is_one_line_without_a_traceback(ctx, tmp_path):
    """A saved session edited to `block_m: -1` (or `params block_m=-1`) failed in one line, then ten lines of
    traceback through pipelines/cpu/matmul.py's helpers: the ValueError's message is the whole story. A
    generator of the user's own keeps its traceback (its bug is in its code)."""
    ok(ctx, f"load {MATMUL}")
    res = do(ctx, "apply pipelines/cpu/matmul_parallel.py[gen=matmul_parallel]{block_m=-1}")
    assert not res.ok and "raised ValueError: block_m must be a positive int, got -1" in res.error, res.error
    assert "Traceback" not in (res.detail or ""), res.detail
    mine = tmp_path / "mine.py"
    mine.write_text("GENERATORS = ['gen']\n\ndef gen(n: int = 1):\n    return int('x')\n")
    ok(ctx, f"trust {mine}")
    res = do(ctx, f"apply {mine}[gen=gen]")
    assert not res.ok and "raised ValueError" in res.error
    assert "Traceback" in (res.detail or "") and "mine.py" in res.detail, res.detail


# -- torch models ----------------------------------------------------------------------------------------

needs_torch = pytest.mark.skipif(not __import__("test_torch_import")._torch_available(),
                                 reason="torch + torch-mlir not here")

NETS = '''
import torch
import torch.nn.functional as F

class FoldCrop(torch.nn.Module):
    def forward(self, x):
        y = F.fold(F.unfold(x, 3, padding=1), (6, 6), 3, padding=1)
        return F.pad(y, (-1, 2, -2, -1), value=3.0)
'''


def _import(tmp_path, spec: str, inputs: str):
    from test_torch_import import TORCH_PYTHON

    (tmp_path / "net.py").write_text(NETS)
    return run_cli(["import", spec, "--inputs", inputs, "--out", "out", "--json", "i.json"], cwd=tmp_path,
                   env_extra={"LH_WORKBENCH_TORCH_PYTHON": TORCH_PYTHON}, timeout=600)


def _script(tmp_path, name: str, lines: str) -> dict:
    """Run SCRIPT on the imported out/NAME.mlir; the JSON record, after asserting the command succeeded."""
    from test_torch_import import TORCH_PYTHON

    (tmp_path / "s.lhw").write_text(lines)
    out = run_cli([tmp_path / "out" / f"{name}.mlir", "--script", "s.lhw", "--json", "r.json"], cwd=tmp_path,
                  env_extra={"LH_WORKBENCH_TORCH_PYTHON": TORCH_PYTHON}, timeout=600)
    assert out.returncode == 0, out.stderr
    return json.loads((tmp_path / "r.json").read_text())


@needs_torch
def test_a_negative_pad_of_a_fold_with_padding_lowers_and_checks_against_torch(tmp_path):
    """F.fold with padding (torch's col2im decomposition crops with a negative F.pad) and F.pad with negative
    amounts became a `tensor.pad` with negative low/high: every lowering failed in one-shot-bufferize with
    `expected offsets to be non-negative, but got -1` (a subview at offset -1). The crop is slices now."""
    out = _import(tmp_path, "net.py:FoldCrop", "1x2x6x6xf32")
    assert out.returncode == 0, out.stderr
    text = (tmp_path / "out" / "fold_crop.mlir").read_text()
    assert not __import__("re").search(r"tensor\.pad [^\n]*low\[[^\]]*-\d", text)
    run = _script(tmp_path, "fold_crop", "select --apply\nbench\napply cpu-lower\nrun --check --iterations 2\n")["run"]
    assert run["check"]["passed"] and run["expected_check"]["passed"], (run["check"], run["expected_check"])


# -- hostile saved sessions: paths -----------------------------------------------------------------------

def test_a_session_whose_payload_is_a_symlink_loop_is_one_line(ctx, tmp_path):
    """`payload: {path: loop.mlir}` where loop.mlir links to itself: `replay: internal error: RuntimeError:
    Symlink loop from ...` (Python 3.11's Path.resolve); `trust` of such a file the same."""
    (tmp_path / "loop.mlir").symlink_to("loop.mlir")
    (tmp_path / "s.yaml").write_text("Pipeline: []\nWorkbench: {payload: {path: loop.mlir}}\n")
    res = do(ctx, f"replay {tmp_path / 's.yaml'}")
    assert not res.ok and "symbolic link loop" in res.error and "internal error" not in res.error, res.error
    res = do(ctx, f"trust {tmp_path / 'loop.mlir'}")
    assert not res.ok and "internal error" not in res.error, res.error


def test_a_session_of_too_many_nodes_without_aliases_is_refused_as_it_composes(monkeypatch):
    """200,000 step records (no alias, 3 MB) were refused as `document expands to more than 200000 nodes
    through aliases (an alias bomb?)` after PyYAML had composed all of them (70-100 s here). The count is kept
    while composing: it stops at the limit (a syntax error further on is never reached) and says what it is;
    an alias bomb is still named as one."""
    from workbench.common import safe_yaml

    monkeypatch.setattr(safe_yaml, "MAX_EXPANDED_NODES", 1000)
    many = "Workbench:\n  steps:\n" + "".join(f"  - {{index: {i}}}\n" for i in range(1, 2000)) + "  - [unclosed\n"
    with pytest.raises(safe_yaml.YAMLTooLarge) as e:
        safe_yaml.load(many)
    assert "more than 1000 nodes" in str(e.value) and "alias" not in str(e.value), str(e.value)
    bomb = "a: &a [1, 1, 1, 1, 1, 1, 1, 1, 1, 1]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]\nc: [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]\n"
    with pytest.raises(safe_yaml.YAMLTooLarge) as e:
        safe_yaml.load(bomb)
    assert "through aliases" in str(e.value)


# -- a bf16 squeeze-excite block on an AMX machine --------------------------------------------------------

SE_CONV = """func.func @main(%i: tensor<1x64x1x1xbf16>, %w: tensor<16x64x1x1xbf16>) -> tensor<1x16x1x1xf32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x16x1x1xf32>
  %o = linalg.fill ins(%z : f32) outs(%e : tensor<1x16x1x1xf32>) -> tensor<1x16x1x1xf32>
  %r = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>}
       ins(%i, %w : tensor<1x64x1x1xbf16>, tensor<16x64x1x1xbf16>) outs(%o : tensor<1x16x1x1xf32>) -> tensor<1x16x1x1xf32>
  return %r : tensor<1x16x1x1xf32>
}
"""


def test_a_one_by_one_convolution_of_a_pooled_image_is_no_amx_convolution(ctx, tmp_path):
    """A MobileNetV3 block in bf16 (`import --dtype bf16`): its squeeze-excite 1x1 convolution of the pooled
    1x1 image (16 output channels: whole AMX tiles) was laid out for AMX with rows of one output; conv_amx's
    tile lost its `ow` loop to the unit-extent folding and `select --apply` failed at the schedule's line 22:
    `too many tiles provided, expected at most 3 found 4`. Rows of one position keep the VNNI layout."""
    from mlir import ir

    from workbench.worker.cpu.vnni_convs import vnni_convs

    with ir.Context(), ir.Location.unknown():
        module = ir.Module.parse(SE_CONV)
        assert vnni_convs(module, amx=True) == 1
        assert "lh.amx_conv" not in str(module) and "lh.vnni_conv" in str(module)
    payload = tmp_path / "se.mlir"
    payload.write_text(SE_CONV)
    ok(ctx, f"load {payload}")
    try:
        ok(ctx, "target cpu --cpu sapphirerapids --threads 1")
        ok(ctx, "select --apply")
        labels = " ".join(a.step.label() for a in ctx.session.active_steps)
        assert "conv_amx.py" not in labels, labels
    finally:
        ok(ctx, "target cpu --cpu host")


# -- hostile scripts ---------------------------------------------------------------------------------------

def test_a_nul_in_a_pass_pipeline_is_named_not_cut_off(tmp_path):
    """A script line `pass canonicalize<NUL>` failed with `bad pass pipeline: 'canonicalize` and nothing after
    it: MLIR's parser reads a C string, so the NUL ended the text and the diagnostic quoting it. A control
    character in a pipeline is named with its column."""
    (tmp_path / "s.lhw").write_bytes(b"pass canonicalize\x00\n")
    out = run_cli([MATMUL, "--script", tmp_path / "s.lhw"], cwd=tmp_path, timeout=120,
                  env_extra={"LH_WORKBENCH_STATE_DIR": str(tmp_path / "state")})
    assert out.returncode == 1 and "Traceback" not in out.stderr
    assert "a control character '\\x00' at column 13" in out.stderr, out.stderr


def test_an_export_failure_shows_no_traceback_torch_logged(tmp_path):
    """HF Nystromformer's export failed in one line at the model's line, then the detail: the last 4000
    characters of the exporter's stderr, 30 lines of the traceback torch's fake-tensor logging writes
    (`E1127 20:25:55.519000 17628 torch/_subclasses/fake_tensor.py:3090]   File ...`), the first cut in the
    middle. The detail keeps what else the exporter wrote (a warning, the model's prints), in whole lines."""
    from workbench.execution.torch_import import TorchImportError, import_torch_model

    fake = tmp_path / "fake_python"
    log = "".join(f"E1127 20:25:55.519000 17628 torch/_subclasses/fake_tensor.py:3090]   File \\\"x.py\\\", line {i}\\n"
                  for i in range(300))
    fake.write_text("#!/bin/sh\n"
                    f"printf '{log}' >&2\n"
                    "echo 'UserWarning: the model printed this' >&2\n"
                    "echo '{\"ok\": false, \"error\": \"net.py:3: torch-mlir export failed: RuntimeError: broadcast\"}'\n")
    fake.chmod(0o755)
    with pytest.raises(TorchImportError) as e:
        import_torch_model("net.py:Net", python=str(fake), out=tmp_path / "out")
    assert str(e.value).startswith("net.py:3: torch-mlir export failed")
    assert "File" not in e.value.detail and "fake_tensor" not in e.value.detail, e.value.detail[:300]
    assert e.value.detail == "UserWarning: the model printed this", e.value.detail[:300]
