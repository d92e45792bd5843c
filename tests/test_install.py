"""The installed wheel (not the checkout) runs a scripted session end to end from another directory.

Builds the wheel, installs it into a temporary target directory (no dependencies: they come from
the test environment) and runs `python -m workbench.cli` with that directory first on the path
and the current directory outside the checkout, so that nothing can come from the repository.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    wheels = tmp_path_factory.mktemp("wheel")
    build = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(wheels), str(REPO)],
                           capture_output=True, text=True, timeout=600)
    if build.returncode != 0:
        pytest.fail(f"building the wheel failed: {build.stderr[-2000:]}")
    (wheel,) = wheels.glob("lh_workbench-*.whl")
    target = tmp_path_factory.mktemp("site")
    inst = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-compile", "--target",
                           str(target), str(wheel)], capture_output=True, text=True, timeout=300)
    assert inst.returncode == 0, inst.stderr[-2000:]
    return target


def _env(site: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = str(site)
    return env


def test_wheel_carries_the_pipeline_library(installed):
    lib = installed / "workbench" / "pipelines"
    shipped = {p.relative_to(REPO / "pipelines") for p in (REPO / "pipelines").rglob("*")
               if p.is_file() and p.suffix in (".py", ".yaml", ".mlir") and "__pycache__" not in p.parts}
    missing = sorted(str(p) for p in shipped if not (lib / p).is_file())
    assert shipped and not missing, f"not in the wheel: {missing}"


def test_installed_wheel_runs_a_scripted_session_outside_the_checkout(installed, tmp_path):
    work = tmp_path / "elsewhere"
    work.mkdir()
    shutil.copy(REPO / "examples" / "matmul.mlir", work / "matmul.mlir")
    (work / "cmds.lhw").write_text("select --apply\nbench warmup=1 iterations=3\napply cpu-matmul-lower\n"
                                   "run --check --threads 1\nsave mine.yaml\n")
    env = _env(installed)
    where = subprocess.run([sys.executable, "-c", "import workbench, workbench.paths as p; "
                            "print(workbench.__file__); print(p.LIBRARY_DIR)"],
                           cwd=work, env=env, capture_output=True, text=True, timeout=60)
    module_file, library = where.stdout.split()
    assert Path(module_file).is_relative_to(installed), module_file
    assert Path(library) == installed / "workbench" / "pipelines"

    # through the console script's entry point (workbench.launch: the compile worker starts first)
    p = subprocess.run([sys.executable, "-m", "workbench.launch", "matmul.mlir", "--script", "cmds.lhw",
                        "--json", "out.json"], cwd=work, env=env, capture_output=True, text=True, timeout=600,
                       stdin=subprocess.DEVNULL)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    out = json.loads((work / "out.json").read_text())
    assert out["ok"] and out["run"]["check"]["passed"], out
    # the matmul schedule (on a host of several cores its M x N forall: matmul_parallel.py)
    assert any("pipelines/cpu/matmul" in s["spec"] for s in out["steps"]), out["steps"]

    # the saved session names library files as `pipelines/...` and replays from the wheel, too
    saved = (work / "mine.yaml").read_text()
    assert "schedule: pipelines/cpu/matmul" in saved and str(installed) not in saved
    r = subprocess.run([sys.executable, "-m", "workbench.cli", "replay", "mine.yaml", "--json", "replay.json"],
                       cwd=work, env=env, capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    assert json.loads((work / "replay.json").read_text())["ir_sha256"] == out["ir_sha256"]
