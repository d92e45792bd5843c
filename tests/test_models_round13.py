"""Round 13 (real models at realistic sizes, docs/models-round13-real.md): the speed cliffs they found, each
fixed by a general rule, with small payloads in torch-mlir's form.

- Grouped convolutions (`linalg.conv_2d_ngchw_gfchw`: RegNet's and ResNeXt's 3x3 with 8-64 channels a group)
  strided along h and w are taken by lh-strided-conv-planes (the zero-bordered phase buffer, one grouped plane
  generic per phase), and unit-stride ones whose rows are no whole vectors by lh-conv-planes (a grouped plane
  generic): the window schedule had run the strided ones along strided rows with vectors of the group's few
  output channels (2 GFLOP/s: RegNetY-400MF's first grouped conv 10 ms of the model's 27).
"""
from __future__ import annotations

import pytest

from conftest import ok


def _grouped(n, C, H, W, G, F, k=3, s=1, p=1) -> str:
    """torch-mlir's grouped Conv2d: the 4-D input padded, then expanded to n x g x c; the init a zero fill of
    an expanded empty; the result collapsed back."""
    c, f = C // G, F // G
    hp, wp = H + 2 * p, W + 2 * p
    oh, ow = (hp - k) // s + 1, (wp - k) // s + 1
    x, xp, xe = (f"tensor<{n}x{C}x{H}x{W}xf32>", f"tensor<{n}x{C}x{hp}x{wp}xf32>",
                 f"tensor<{n}x{G}x{c}x{hp}x{wp}xf32>")
    w, we = f"tensor<{F}x{c}x{k}x{k}xf32>", f"tensor<{G}x{f}x{c}x{k}x{k}xf32>"
    o, oe = f"tensor<{n}x{F}x{oh}x{ow}xf32>", f"tensor<{n}x{G}x{f}x{oh}x{ow}xf32>"
    return f"""func.func @main(%x: {x}, %w: {w}) -> {o} {{
  %zero = arith.constant 0.0 : f32
  %p = tensor.pad %x low[0, 0, {p}, {p}] high[0, 0, {p}, {p}] {{
  ^bb0(%a: index, %b: index, %c: index, %d: index):
    tensor.yield %zero : f32
  }} : {x} to {xp}
  %xe = tensor.expand_shape %p [[0], [1, 2], [3], [4]] output_shape [{n}, {G}, {c}, {hp}, {wp}] : {xp} into {xe}
  %we = tensor.expand_shape %w [[0, 1], [2], [3], [4]] output_shape [{G}, {f}, {c}, {k}, {k}] : {w} into {we}
  %e = tensor.empty() : {o}
  %ee = tensor.expand_shape %e [[0], [1, 2], [3], [4]] output_shape [{n}, {G}, {f}, {oh}, {ow}] : {o} into {oe}
  %init = linalg.fill ins(%zero : f32) outs(%ee : {oe}) -> {oe}
  %r = linalg.conv_2d_ngchw_gfchw {{dilations = dense<1> : vector<2xi64>, strides = dense<{s}> : vector<2xi64>}}
       ins(%xe, %we : {xe}, {we}) outs(%init : {oe}) -> {oe}
  %o = tensor.collapse_shape %r [[0], [1, 2], [3], [4]] : {oe} into {o}
  return %o : {o}
}}
"""


#: RegNet's stride-2 grouped conv at test size (odd H and W, 3 groups of 8 -> 4), a unit-stride one without
#: padding (rows of 11)
GROUPED_STRIDED = _grouped(3, 24, 15, 17, 3, 12, 3, 2, 1)
GROUPED_VALID = _grouped(3, 24, 11, 13, 4, 20, 3, 1, 0)


def _rewrite(text: str, strided: bool = True, lanes: int = 16) -> tuple[int, int, str]:
    from mlir import ir

    from workbench.worker.cpu.conv_planes import conv_planes
    from workbench.worker.cpu.strided_conv_planes import strided_conv_planes

    with ir.Context(), ir.Location.unknown():
        module = ir.Module.parse(text)
        s = strided_conv_planes(module, lanes) if strided else 0
        assert module.operation.verify()
        p = conv_planes(module, lanes)
        assert module.operation.verify()
        return s, p, str(module)


def test_a_strided_grouped_conv_becomes_grouped_plane_generics_over_one_phase_buffer():
    s, p, text = _rewrite(GROUPED_STRIDED)
    assert (s, p) == (1, 0)
    assert "linalg.conv_2d_ngchw_gfchw" not in text
    assert text.count("linalg.generic") == 4                  # one per phase, each accumulating into the last
    assert text.count("linalg.transpose") == 1                # the input's phases: one pass
    # each phase's plane read as n x g x c x positions, the group loop in the filter's and the output's maps
    assert "output_shape [3, 3, 8, 91] : tensor<3x24x91xf32> into tensor<3x3x8x91xf32>" in text
    assert "(d0, d1, d2, d3, d4, d5, d6) -> (d0, d1, d4, d3 + d5 * 10 + d6)" in text
    assert "(d0, d1, d2, d3, d4, d5, d6) -> (d1, d2, d4, d5, d6)" in text
    # the extra columns sliced off the grouped result, which is collapsed back as before
    assert "tensor<3x3x4x8x10xf32> to tensor<3x3x4x8x9xf32>" in text
    assert "tensor<3x3x4x8x9xf32> into tensor<3x12x8x9xf32>" in text


def test_a_unit_stride_grouped_conv_runs_over_its_plane_and_whole_rows_are_left():
    s, p, text = _rewrite(GROUPED_VALID)
    assert (s, p) == (0, 1)
    assert "linalg.conv_2d_ngchw_gfchw" not in text and text.count("linalg.generic") == 1
    assert "(d0, d1, d2, d3, d4, d5, d6) -> (d0, d1, d4, d3 + d5 * 13 + d6)" in text
    assert "tensor<3x24x12x13xf32> into tensor<3x24x156xf32>" in text   # one more row for the last taps
    padded = _grouped(2, 32, 14, 14, 4, 32)
    s, p, text = _rewrite(padded)
    assert (s, p) == (0, 1)
    assert text.count("tensor.pad") == 1 and "high[0, 0, 2, 1]" in text   # torch-mlir's pad widened, not padded again
    # rows of whole vectors (a stride-2 conv to 32 x 32): neither rewrite
    whole = _grouped(1, 16, 64, 64, 2, 16, 3, 2, 1)
    s, p, text = _rewrite(whole)
    assert (s, p) == (0, 0) and "linalg.conv_2d_ngchw_gfchw" in text


@pytest.mark.parametrize("cpu", ["host", "avx2"])
@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("name", ["strided", "valid", "padded_even"])
def test_grouped_convs_run_and_match(ctx, tmp_path, cpu, threads, name):
    text = {"strided": GROUPED_STRIDED, "valid": GROUPED_VALID,
            "padded_even": _grouped(2, 32, 14, 14, 2, 16, 3, 2, 1)}[name]
    payload = tmp_path / f"{name}.mlir"
    payload.write_text(text)
    ok(ctx, f"load {payload}")
    try:
        ok(ctx, f"target cpu --cpu {cpu} --threads {threads}")
        ok(ctx, "select --apply")
        labels = " ".join(a.step.label() for a in ctx.session.active_steps)
        assert ("lh-strided-conv-planes" if name != "valid" else "lh-conv-planes") in labels
        ok(ctx, "bench warmup=1 iterations=2")
        ok(ctx, "apply cpu-lower")
        assert ok(ctx, f"run --check --iterations 1 --warmup 0 --threads {threads}").data["run"]["check"]["passed"]
    finally:
        ok(ctx, "target cpu --cpu host --threads 0")
