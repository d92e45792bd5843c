"""Fixtures of the front-end tests: a loaded session + context per test, private state dir,
the repository root as working directory (commands use repo-relative paths)."""
from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
MATMUL = REPO / "examples" / "matmul.mlir"


@pytest.fixture
def wb_state(tmp_path, monkeypatch):
    d = tmp_path / "wbstate"
    monkeypatch.setenv("LH_WORKBENCH_STATE_DIR", str(d))
    monkeypatch.chdir(REPO)
    return d


@pytest.fixture
def wb_ctx(wb_state):
    from workbench.commands import CommandContext, default_registry
    from workbench.session import Session

    session = Session()
    ctx = CommandContext(session, default_registry(), interactive=True)
    res = ctx.registry.dispatch("load examples/matmul.mlir", ctx)
    assert res.ok, res.error
    yield ctx
    session.close()


@pytest.fixture
def wb_empty_ctx(wb_state):
    from workbench.commands import CommandContext, default_registry
    from workbench.session import Session

    session = Session()
    ctx = CommandContext(session, default_registry(), interactive=True)
    yield ctx
    session.close()
