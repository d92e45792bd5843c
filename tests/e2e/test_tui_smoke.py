"""Runs tests/e2e/tui_smoke.sh (the real app in tmux); skipped where tmux is missing."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).with_name("tui_smoke.sh")


@pytest.mark.timeout(300)
@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")
def test_tui_smoke_in_tmux():
    env = dict(os.environ, PYTHON=sys.executable)
    proc = subprocess.run(["bash", str(SCRIPT)], capture_output=True, text=True, timeout=280, env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "tui smoke: ok" in proc.stdout
