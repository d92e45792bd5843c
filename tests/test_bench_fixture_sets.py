"""The benchmark scripts' fixture selection (bench/_common.py: fixture_names): the committed device set
(bench/device_corpus.txt) names only fixtures the corpus exports, `@FILE` lists and shards select what
they say, and an unknown name stops the run with its name instead of measuring fewer fixtures."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

from _common import fixture_names  # noqa: E402


@pytest.fixture
def exported(tmp_path):
    for name in ("addmm", "conv3d", "gelu", "matmul", "softmax"):
        (tmp_path / f"{name}.expected.json").write_text("{}")
    return tmp_path


def test_lists_files_and_shards_select_what_they_name(exported, tmp_path):
    listed = tmp_path / "set.txt"
    listed.write_text("# a comment line\nmatmul gelu  # two on a line\nsoftmax,conv3d\n")
    assert fixture_names(exported, f"@{listed}") == ["conv3d", "gelu", "matmul", "softmax"]
    assert fixture_names(exported, "softmax,addmm") == ["addmm", "softmax"]
    parts = [fixture_names(exported, f"@{listed}", f"{k}/2") for k in range(2)]
    assert parts == [["conv3d", "matmul"], ["gelu", "softmax"]]
    assert fixture_names(exported) == ["addmm", "conv3d", "gelu", "matmul", "softmax"]


@pytest.mark.parametrize("only,shard,word", [("matmul,nope", "", "nope"), ("", "2/2", "--shard"),
                                             ("", "x", "--shard")])
def test_unknown_names_and_bad_shards_stop_with_their_name(exported, only, shard, word):
    with pytest.raises(SystemExit) as stop:
        fixture_names(exported, only, shard)
    assert word in str(stop.value)


def test_the_committed_device_set_names_corpus_entries():
    """Every name in bench/device_corpus.txt is an entry of the torch corpus (examples/torch/corpus.py), which
    scripts/export_corpus.py --shapes bench exports under that name."""
    corpus = (ROOT / "examples" / "torch" / "corpus.py").read_text()
    names = [n for line in (ROOT / "bench" / "device_corpus.txt").read_text().splitlines()
             for n in line.split("#")[0].replace(",", " ").split()]
    assert len(names) == len(set(names)) >= 30
    missing = [n for n in names if f'"{n}"' not in corpus and f"'{n}'" not in corpus and f"def {n}(" not in corpus]
    assert not missing, missing


def test_shrinking_an_export_keeps_its_index_tables():
    """scripts/sweep_constant_weights.splat_float_weights: float weights become splats (random_weights.py puts
    random ones back), integer tables stay blobs: splatting a group norm's channel-to-group maps to 0 had
    every channel normalized with group 0's statistics, and the device measured that program."""
    sys.path.insert(0, str(ROOT / "scripts"))
    from sweep_constant_weights import splat_float_weights

    text = """func.func @main() -> (tensor<2xf32>, tensor<2xi64>) {
  %w = arith.constant dense_resource<w_f32> : tensor<2xf32>
  %i = arith.constant dense_resource<idx_i64> : tensor<2xi64>
  return %w, %i : tensor<2xf32>, tensor<2xi64>
}
{-#
  dialect_resources: {
    builtin: {
      w_f32: "0x040000000000803F00000040",
      idx_i64: "0x0800000000000000000000000100000000000000"
    }
  }
#-}
"""
    shrunk = splat_float_weights(text, "1.0e-02")
    assert "dense<1.0e-02> : tensor<2xf32>" in shrunk and "dense_resource<idx_i64> : tensor<2xi64>" in shrunk
    assert "idx_i64: \"0x0800000000000000000000000100000000000000\"" in shrunk and "w_f32:" not in shrunk
    from random_weights import random_weights
    weighted, made = random_weights(shrunk, "1.0e-02")
    assert made == 1 and "dense_resource<lh_random_weight_0> : tensor<2xf32>" in weighted
    from mlir import ir
    with ir.Context():
        for module in (shrunk, weighted):   # the kept blob section parses, and with the random weights in it
            ir.Module.parse(module)
    assert splat_float_weights(text.replace("w_f32> : tensor<2xf32>", "w_f32> : tensor<2xi32>"), "0.0") is None


def test_random_weights_look_like_a_models():
    """scripts/random_weights.py's default values: matrices and filters bounded by sqrt(3 / fan_in), vectors
    (norm variances, scales, biases) positive: +-0.05 everywhere made batch norms' variances negative (NaN) and
    deep products subnormal, which the device timed as a 6x slower EfficientNet."""
    sys.path.insert(0, str(ROOT / "scripts"))
    from random_weights import random_weights

    text = ("%w = arith.constant dense<1.000000e-02> : tensor<64x16x3x3xf32>\n"
            "%v = arith.constant dense<1.000000e-02> : tensor<64xf32>\n")
    out, made = random_weights(text)
    assert made == 2
    blobs = dict(line.strip().rstrip(",").split(": ") for line in out.splitlines() if "lh_random_weight_" in line
                 and '"0x' in line)
    import numpy as np
    values = {name: np.frombuffer(bytes.fromhex(blob.strip('"')[2:])[4:], np.float32) for name, blob in blobs.items()}
    w, v = values["lh_random_weight_0"], values["lh_random_weight_1"]
    bound = (3 / (16 * 9)) ** 0.5
    assert w.size == 64 * 16 * 9 and np.abs(w).max() <= bound and np.abs(w).max() > 0.9 * bound
    assert v.size == 64 and v.min() >= 0.5 and v.max() <= 1.5


@pytest.mark.parametrize("host_bits,cpu,held", [(512, "avx2", True), (512, "avx512", False), (512, "", False),
                                                (256, "avx2", False)])
def test_an_avx2_build_on_a_wider_host_holds_the_torch_baseline_to_avx2(monkeypatch, host_bits, cpu, held):
    """`cpu_models.py --cpu avx2` on an AVX-512 host compiles AVX2 code; its torch baseline is held to AVX2 code
    too (ATen's capability, oneDNN's ISA, MKL's instructions, OpenBLAS's core), as on an AVX2 machine. On an
    AVX2 host, or for the host's own model, torch keeps its dispatch."""
    import dataclasses

    import workbench.targets.cpu_host as cpu_host
    from _common import AVX2_BASELINE_ENV, baseline_isa_env

    host = cpu_host.machine_for("avx512" if host_bits == 512 else "avx2")
    monkeypatch.setattr(cpu_host, "host_machine", lambda: dataclasses.replace(host, is_host=True))
    env = baseline_isa_env(cpu)
    assert env == (AVX2_BASELINE_ENV if held else {})
    if held:
        assert env["ATEN_CPU_CAPABILITY"] == "avx2" and env["ONEDNN_MAX_CPU_ISA"] == "AVX2"


def test_the_torch_worker_runs_with_the_baseline_environment():
    """run_torch_worker passes its `env` to the worker process (on top of this one's environment)."""
    from _common import run_torch_worker

    script = ("import json, os, sys\n"
              "print(json.dumps({'name': 'env', 'isa': os.environ.get('ATEN_CPU_CAPABILITY'), 'path': bool(os.environ.get('PATH'))}))\n")
    out = run_torch_worker(sys.executable, script, [], timeout=60, env={"ATEN_CPU_CAPABILITY": "avx2"})
    assert out["env"]["isa"] == "avx2" and out["env"]["path"]
    assert run_torch_worker(sys.executable, script, [], timeout=60)["env"]["isa"] in (None, "")


@pytest.mark.parametrize("flag,rows", [([], None), (["--reduced-rows", "1"], 1)])
def test_cpu_models_reduced_rows_sets_the_selectors_row_interleave(monkeypatch, exported, capsys, flag, rows):
    """`cpu_models.py --reduced-rows N` selects with the selector's REDUCED_ROWS = N (an inner reduction's rows
    per tile: sum_dim's A/B on another machine); without it the selector keeps its own."""
    import cpu_models

    from workbench.targets import cpu_selector

    default = cpu_selector.REDUCED_ROWS
    monkeypatch.setattr(cpu_selector, "REDUCED_ROWS", default)   # (restored after the test)
    seen = []

    def fake_ours(name, *args, **kwargs):
        seen.append(cpu_selector.REDUCED_ROWS)
        return {"name": name, "ok": True, "t1": 1e-3, "tall": 1e-3}

    monkeypatch.setattr(cpu_models, "ours", fake_ours)
    monkeypatch.setattr(cpu_models, "torch_python", lambda _: None)
    monkeypatch.setattr(sys, "argv", ["cpu_models.py", "--fixtures", str(exported), "--only", "gelu", "--no-matmul",
                                      "--threads", "1"] + flag)
    cpu_models.main()
    assert seen == [rows or default]
    assert "RESULT coverage=1/1" in capsys.readouterr().out


def test_the_torch_worker_answers_one_name_at_a_time():
    """TorchWorker keeps the torch script running: each record(name) is answered before the next name is sent
    (cpu_models times torch for a fixture right before its own run), and a worker that dies or stays silent
    past the timeout gives {} instead of hanging the bench."""
    from _common import TorchWorker

    script = ("import json, sys\n"
              "assert sys.argv[2] == '-' and sys.argv[3] == 'x'\n"
              "for n, name in enumerate(line.strip() for line in sys.stdin):\n"
              "    if name == 'hang':\n"
              "        import time; time.sleep(60)\n"
              "    print('noise'); print(json.dumps({'name': name, 'n': n}), flush=True)\n")
    with TorchWorker(sys.executable, script, ["x"]) as worker:
        assert worker.record("a") == {"name": "a", "n": 0}
        assert worker.record("b") == {"name": "b", "n": 1}   # the same process: its count went on
        assert worker.record("hang", timeout=1) == {}
        assert worker.record("c") == {}   # stopped after the silence
    crashing = TorchWorker(sys.executable, "import sys; sys.exit(3)", [])
    assert crashing.record("a") == {}
    crashing.close()


def test_cpu_models_times_torch_right_before_each_fixture(monkeypatch, exported, capsys):
    """cpu_models asks the torch worker for a fixture just before running it (torch, ours, torch, ours, ...),
    and its ratios use that record's times."""
    import cpu_models

    events = []

    class FakeWorker:
        def record(self, name, timeout=3600):
            events.append(("torch", name))
            return {"name": name, "times": {"1": 2e-3, "2": 4e-3}, "ranges": ""}

        def close(self):
            events.append(("close", None))

    def fake_ours(name, *args, **kwargs):
        events.append(("ours", name))
        return {"name": name, "ok": True, "t1": 1e-3, "tall": 1e-3}

    monkeypatch.setattr(cpu_models, "ours", fake_ours)
    monkeypatch.setattr(cpu_models, "torch_python", lambda _: sys.executable)
    monkeypatch.setattr(cpu_models, "torch_worker", lambda *a, **k: FakeWorker())
    names = sorted(p.name[:-len(".expected.json")] for p in exported.glob("*.expected.json"))[:2]
    monkeypatch.setattr(sys, "argv", ["cpu_models.py", "--fixtures", str(exported), "--only", ",".join(names),
                                      "--no-matmul", "--threads", "2"])
    cpu_models.main()
    assert events == [e for name in names for e in (("torch", name), ("ours", name))] + [("close", None)]
    out = capsys.readouterr().out
    assert f"RESULT coverage={len(names)}/{len(names)} geomean_vs_torch_1t_ratio=2.000 geomean_vs_torch_all_ratio=4.000" in out
