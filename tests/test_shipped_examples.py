"""The shipped command scripts and sessions run headless and reproduce (CI replays them)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import run_cli

ROOT = Path(__file__).resolve().parents[1]


def test_matmul_cpu_script_runs_checked(tmp_path):
    out = tmp_path / "out.json"
    p = run_cli(["examples/matmul.mlir", "--script", "commands/matmul-cpu.lhw", "--json", str(out)], timeout=600)
    assert p.returncode == 0, p.stderr
    doc = json.loads(out.read_text())
    assert doc["ok"] and [s["kind"] for s in doc["steps"]] == ["transform", "bench", "pipeline"]
    assert doc["run"]["check"]["passed"] and doc["run"]["median_s"] > 0


@pytest.mark.parametrize("session", sorted(p.name for p in (ROOT / "sessions").glob("*.yaml")))
def test_shipped_session_replays_byte_identical(session, tmp_path):
    out = tmp_path / "out.json"
    emit = tmp_path / "out.mlir"
    p = run_cli(["replay", f"sessions/{session}", "--json", str(out), "--emit", str(emit)], timeout=600)
    assert p.returncode == 0, p.stderr
    doc = json.loads(out.read_text())
    assert doc["ok"] and doc["reproduced"] is True
    import hashlib

    assert hashlib.sha256(emit.read_bytes()).hexdigest() == doc["ir_sha256"] == doc["expected_ir_sha256"]


def test_matmul_cpu_session_replays_and_runs(tmp_path):
    out = tmp_path / "out.json"
    p = run_cli(["replay", "sessions/matmul-cpu.yaml", "--target", "cpu", "--check", "--json", str(out)], timeout=600)
    assert p.returncode == 0, p.stderr
    run = json.loads(out.read_text())["run"]
    assert run["target"] == "cpu" and run["check"]["passed"] and run["iterations"] == 5


def test_matmul_fast_script_selects_and_runs_checked(tmp_path):
    out = tmp_path / "out.json"
    p = run_cli(["examples/matmul.mlir", "--script", "commands/matmul-fast.lhw", "--json", str(out)], timeout=600)
    assert p.returncode == 0, p.stderr
    doc = json.loads(out.read_text())
    # the single-core schedule, or on a host of several cores its M x N forall (matmul_parallel.py)
    assert doc["steps"][0]["spec"].startswith(("pipelines/cpu/matmul.py[gen=matmul_tiling]",
                                               "pipelines/cpu/matmul_parallel.py[gen=matmul_parallel]"))
    assert doc["run"]["check"]["passed"] and doc["run"]["gflops"] > 0


def test_matmul_f16_cuda_script_runs_checked_on_a_gpu(tmp_path):
    """commands/matmul-f16-cuda.lhw end to end (the run needs an NVIDIA Hopper GPU: skipped without)."""
    from cuda_helpers import GPU_MISSING

    if GPU_MISSING:
        pytest.skip(f"no usable NVIDIA GPU: {GPU_MISSING}")
    out = tmp_path / "out.json"
    p = run_cli(["examples/matmul_f16.mlir", "--script", "commands/matmul-f16-cuda.lhw", "--json", str(out)],
                timeout=600)
    assert p.returncode == 0, p.stderr
    doc = json.loads(out.read_text())
    assert [s["kind"] for s in doc["steps"]] == ["schedule", "transform", "bench", "rewrite", "pipeline"]
    assert doc["steps"][0]["spec"].startswith("pipelines/cuda/matmul.py[gen=matmul_wgmma]")
    assert doc["run"]["target"] == "cuda" and doc["run"]["check"]["passed"] and doc["run"]["median_s"] > 0
