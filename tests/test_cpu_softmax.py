"""The shipped CPU softmax schedule (pipelines/cpu/softmax.py + cpu-softmax-lower), checked against the
naive lowering (`run --check`) and numpy."""
from __future__ import annotations

import numpy as np
import pytest

from conftest import EXAMPLES, do, load_npys, ok, runs_parallel_loops_on_threads


def _numpy_softmax(x: np.ndarray) -> np.ndarray:
    x = x.astype(np.float64)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def _dps_payload(path, m: int, n: int):
    """Softmax into an output argument (destination-passing style)."""
    t = f"tensor<{m}x{n}xf32>"
    path.write_text(f"func.func @sm(%x: {t}, %o: {t}) -> {t} {{\n"
                    f"  %0 = linalg.softmax dimension(1) ins(%x : {t}) outs(%o : {t}) -> {t}\n"
                    f"  return %0 : {t}\n}}\n")
    return path


def test_selector_picks_the_softmax_schedule_and_it_runs_checked(ctx, tmp_path):
    from workbench.targets import get_target

    ok(ctx, f"load {EXAMPLES / 'softmax.mlir'}")            # 64 x 1024, outs = tensor.empty
    (spec, params), = get_target("cpu").select_params(ctx.session.inspect())
    assert spec == "pipelines/cpu/softmax.py[gen=softmax_rows]"
    assert 1024 % params["vector"] == 0 and 64 % params["rows"] == 0
    ok(ctx, "bench warmup=1 iterations=3")
    ok(ctx, f"apply {spec}{{" + " ".join(f"{k}={v}" for k, v in params.items()) + "}")
    ir = ctx.session.current_ir
    assert "linalg.softmax" not in ir and "math.exp" in ir and "vector<1x64xf32>" in ir
    ok(ctx, "apply cpu-softmax-lower")
    lowered = ctx.session.current_ir
    assert "llvm.intr.exp" not in lowered and "expf" not in lowered and "math." not in lowered
    assert "llvm.intr.fma" in lowered
    if params["parallel"]:
        assert runs_parallel_loops_on_threads(lowered)
    res = ok(ctx, f"run --check --save-outputs {tmp_path}")
    run = res.data["run"]
    assert run["check"]["passed"] and run["check"]["max_rel_err"] < 1e-5, run["check"]
    (x,) = load_npys(tmp_path, "input")
    np.testing.assert_allclose(load_npys(tmp_path, "output")[0], _numpy_softmax(x), rtol=2e-6, atol=1e-9)


@pytest.mark.parametrize("params", ["rows=2 vector=32 parallel=0", "rows=4 vector=16 parallel=1"])
def test_softmax_schedule_variants_checked(ctx, tmp_path, params):
    ok(ctx, f"load {_dps_payload(tmp_path / 'sm.mlir', 32, 256)}")
    ok(ctx, "bench warmup=0 iterations=2")
    ok(ctx, f"apply pipelines/cpu/softmax.py[gen=softmax_rows]{{{params}}}")
    ir = ctx.session.current_ir
    if "parallel=0" in params:
        assert "scf.forall" not in ir
    else:
        assert "scf.forall" in ir
    ok(ctx, "apply cpu-softmax-lower")
    assert "llvm.intr.exp" not in ctx.session.current_ir
    # inputs spread over a wide range: large negatives underflow to 0 after subtracting the max
    x = np.random.default_rng(3).uniform(-60, 60, (32, 256)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    res = ok(ctx, f"run --check --npy 0={tmp_path / 'x.npy'} --save-outputs {tmp_path / 'o'}")
    assert res.data["run"]["check"]["passed"], res.data["run"]["check"]
    out = load_npys(tmp_path / "o", "output")[0]
    np.testing.assert_allclose(out, _numpy_softmax(x), rtol=2e-6, atol=1e-12)
    np.testing.assert_allclose(out.sum(axis=1), 1.0, rtol=1e-5)


def test_bad_parameters_are_refused(ctx):
    ok(ctx, f"load {EXAMPLES / 'softmax.mlir'}")
    res = do(ctx, "apply pipelines/cpu/softmax.py[gen=softmax_rows]{rows=0}")
    assert not res.ok and "rows" in (res.error + (res.detail or ""))
    res = do(ctx, "apply pipelines/cpu/softmax.py[gen=softmax_rows]{parallel=3}")
    assert not res.ok
    assert ctx.session.cursor == 0  # nothing was applied
