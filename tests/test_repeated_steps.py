"""lh-outline-repeated-steps: a run of ops that repeats (an unrolled RNN's time steps) becomes one
function called per step, so that what the selector path schedules and compiles stays bounded as the
recurrence grows, and the results stay those of the unrolled model."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from conftest import fixture_io_flags, ok

BATCH, HIDDEN = 4, 16


def rnn_payload(path: Path, steps: int) -> Path:
    """h_t = tanh(h_{t-1} @ W + x_t), unrolled over `steps` time steps as torch-mlir exports it (every
    step's slice of x, a fresh fill for each matmul); returns h after the last step."""
    lines = [
        "#id = affine_map<(d0, d1) -> (d0, d1)>",
        f"func.func @main(%x: tensor<{steps}x{BATCH}x{HIDDEN}xf32>, %w: tensor<{HIDDEN}x{HIDDEN}xf32>)"
        f" -> tensor<{BATCH}x{HIDDEN}xf32> {{",
        "  %zero = arith.constant 0.0 : f32",
        f"  %h0 = arith.constant dense<0.0> : tensor<{BATCH}x{HIDDEN}xf32>",
    ]
    h = "%h0"
    t = f"tensor<{BATCH}x{HIDDEN}xf32>"
    for k in range(steps):
        lines += [
            f"  %x{k} = tensor.extract_slice %x[{k}, 0, 0] [1, {BATCH}, {HIDDEN}] [1, 1, 1]"
            f" : tensor<{steps}x{BATCH}x{HIDDEN}xf32> to {t}",
            f"  %e{k} = tensor.empty() : {t}",
            f"  %f{k} = linalg.fill ins(%zero : f32) outs(%e{k} : {t}) -> {t}",
            f"  %m{k} = linalg.matmul ins({h}, %w : {t}, tensor<{HIDDEN}x{HIDDEN}xf32>) outs(%f{k} : {t}) -> {t}",
            f"  %h{k + 1} = linalg.generic {{indexing_maps = [#id, #id, #id], iterator_types = [\"parallel\", \"parallel\"]}}"
            f" ins(%m{k}, %x{k} : {t}, {t}) outs(%e{k} : {t}) {{",
            "  ^bb0(%a: f32, %b: f32, %o: f32):",
            "    %s = arith.addf %a, %b : f32",
            "    %r = math.tanh %s : f32",
            "    linalg.yield %r : f32",
            f"  }} -> {t}",
        ]
        h = f"%h{k + 1}"
    lines += [f"  return {h} : {t}", "}"]
    path.write_text("\n".join(lines) + "\n")
    return path


def outlined(steps: int, tmp_path: Path) -> tuple[str, list]:
    from mlir import ir

    from workbench.worker.repeated_steps import outline_repeated_steps

    with ir.Context():
        module = ir.Module.parse(rnn_payload(tmp_path / f"rnn{steps}.mlir", steps).read_text())
        done = outline_repeated_steps(module)
        assert module.operation.verify()
        return str(module), done


def test_the_ops_left_do_not_grow_with_the_recurrence(tmp_path):
    """40 and 96 time steps leave the same linalg ops (one cell in a function, the steps that do not
    fit the run inline), the rest calls; 3 steps (fewer than the minimum) stay as they are."""
    counts = {}
    for steps in (40, 96):
        text, done = outlined(steps, tmp_path)
        assert len(done) == 1 and done[0][2] >= steps - 1, done
        counts[steps] = text.count("linalg.matmul"), text.count("linalg.generic")
        assert text.count("call @main_step0") == done[0][2]
    assert counts[40] == counts[96] and counts[96][0] <= 2, counts
    text, done = outlined(3, tmp_path)
    assert done == [] and text.count("linalg.matmul") == 3


def test_an_outlined_rnn_takes_the_selector_path_and_matches_numpy(ctx, tmp_path):
    """The selector path of a 48-step recurrence schedules one cell (as many steps as a 40-step one),
    and its outputs match the recurrence computed by numpy (and the check's reference)."""
    rng = np.random.default_rng(0)
    selections = {}
    for steps in (40, 48):
        payload = rnn_payload(tmp_path / f"rnn{steps}.mlir", steps)
        ok(ctx, f"load {payload}")
        res = ok(ctx, "select --apply")
        assert res.data["prepared"][0] == "pass lh-outline-repeated-steps"
        selections[steps] = len(res.data["selections"])
    assert selections[40] == selections[48]
    x = rng.uniform(-1, 1, (48, BATCH, HIDDEN)).astype(np.float32)
    w = rng.uniform(-0.5, 0.5, (HIDDEN, HIDDEN)).astype(np.float32)
    h = np.zeros((BATCH, HIDDEN), np.float32)
    for k in range(48):
        h = np.tanh(h @ w + x[k])
    for name, a in (("x", x), ("w", w), ("h", h)):
        np.save(tmp_path / f"{name}.npy", a)
    ok(ctx, "bench warmup=0 iterations=1")
    ok(ctx, "apply cpu-lower")
    run = ok(ctx, f"run --check --npy {tmp_path / 'x.npy'},{tmp_path / 'w.npy'} --expect {tmp_path / 'h.npy'}").data["run"]
    assert run["check"]["passed"] and run["expected_check"]["passed"], run


def test_the_lstm_fixture_is_one_cell_and_matches_torch(ctx):
    """torch.nn.LSTM (5 time steps): the cell is one function that the selector schedules once, and
    the path matches torch's outputs."""
    fixture = Path(__file__).parent / "fixtures" / "torch" / "lstm"
    ok(ctx, f"load {fixture}.mlir")
    res = ok(ctx, "select --apply")
    # (first, after the weights' transposes are folded: W_ih.T and W_hh.T come pre-transposed)
    assert res.data["prepared"][:2] == ["pass lh-fold-constant-weights", "pass lh-outline-repeated-steps"]
    ir_text = ctx.session.current_ir
    assert "func.func private @main_step0" in ir_text and ir_text.count("call @main_step0") >= 4
    ok(ctx, "bench warmup=0 iterations=1")
    ok(ctx, "apply cpu-lower")
    run = ok(ctx, f"run --check {fixture_io_flags(Path(f'{fixture}.mlir'))}").data["run"]
    assert run["check"]["passed"] and run["expected_check"]["passed"]
