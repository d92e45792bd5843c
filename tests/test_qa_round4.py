"""Fourth QA round (fresh eyes): upstream MLIR files of dialects the earlier rounds did not try (Complex,
Async, Math, SparseTensor, Transform scripts), a demanding engineer's edit / undo / export workflows,
hand-edited session files and the TUI; each test failed before its fix."""
from __future__ import annotations

import pytest

from conftest import REPO, do, ok
from workbench.commands import CommandContext, default_registry


@pytest.fixture
def ctx(session, monkeypatch):
    monkeypatch.chdir(REPO)
    return CommandContext(session, default_registry())


def test_constants_of_complex_numbers_do_not_break_passes_that_read_constants(ctx, tmp_path):
    """Reading a complex `dense<...>` constant's value raised TypeError in the bindings; every pass of
    ours that reads constants (lh-outline-repeated-steps, the cpu preparation) failed on such a payload."""
    path = tmp_path / "c.mlir"
    path.write_text("func.func @f(%x: tensor<4xcomplex<f32>>) -> tensor<4xcomplex<f32>> {\n"
                    "  %c = arith.constant dense<(1.0, 2.0)> : tensor<4xcomplex<f32>>\n"
                    "  %0 = tensor.empty() : tensor<4xcomplex<f32>>\n"
                    "  %1 = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>,\n"
                    "      affine_map<(d0) -> (d0)>], iterator_types = [\"parallel\"]}\n"
                    "      ins(%x, %c : tensor<4xcomplex<f32>>, tensor<4xcomplex<f32>>) outs(%0 : tensor<4xcomplex<f32>>) {\n"
                    "  ^bb0(%a: complex<f32>, %b: complex<f32>, %o: complex<f32>):\n"
                    "    %m = complex.mul %a, %b : complex<f32>\n"
                    "    linalg.yield %m : complex<f32>\n"
                    "  } -> tensor<4xcomplex<f32>>\n"
                    "  return %1 : tensor<4xcomplex<f32>>\n}\n")
    ok(ctx, f"load {path}")
    ok(ctx, "pass lh-outline-repeated-steps")
    res = do(ctx, "select --apply")
    assert res.ok or ("Can't cast" not in res.error and "\n" not in res.error), res.error
