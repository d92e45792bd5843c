"""Shared fixtures: one compile worker per test session, a fresh Session per test,
a private state directory per test (journals never touch the user's home)."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
FIXTURES = REPO / "tests" / "fixtures"
SCHED = FIXTURES / "schedules"
LIGHTHOUSE = FIXTURES / "lighthouse"
PAYLOADS = FIXTURES / "payloads"
EXAMPLES = REPO / "examples"
MATMUL = EXAMPLES / "matmul.mlir"
MLP = EXAMPLES / "mlp.mlir"
CLI = [sys.executable, "-m", "workbench.cli"]


@pytest.fixture(autouse=True)
def state_dir(tmp_path, monkeypatch):
    d = tmp_path / "state"
    monkeypatch.setenv("LH_WORKBENCH_STATE_DIR", str(d))
    return d


@pytest.fixture(scope="session")
def compile_client():
    from workbench.execution.worker_client import CompileClient

    client = CompileClient()
    yield client
    client.close()


@pytest.fixture
def session(compile_client):
    from workbench.session import Session

    s = Session(client=compile_client)
    yield s  # the shared worker stays up; nothing to close


@pytest.fixture
def matmul_session(session):
    session.load(MATMUL)
    return session


def step(kind_or_text: str, base_dir: Path = REPO):
    """`apply`-style text -> Step, resolved relative to base_dir."""
    from workbench.steps.kinds import step_from_command

    return step_from_command(kind_or_text, base_dir)


def run_cli(args, cwd=REPO, env_extra=None, timeout=120):
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO)
    if env_extra:
        env.update(env_extra)
    return subprocess.run(CLI + [str(a) for a in args], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=timeout, stdin=subprocess.DEVNULL)
