"""Eleventh QA round: torch models not tried before, upstream MLIR test files not probed before, hostile saved
sessions and scripts; each test failed before its fix (docs/qa-round11.md)."""
from __future__ import annotations

import json

import pytest

from conftest import MATMUL, do, ok, run_cli


# -- hostile saved sessions: a generator of the library refusing a parameter --------------------------------

def test_a_library_generator_refusing_a_parameter_is_one_line_without_a_traceback(ctx, tmp_path):
    """A saved session edited to `block_m: -1` (or `params block_m=-1`) failed in one line, then ten lines of
    traceback through pipelines/cpu/matmul.py's helpers: the ValueError's message is the whole story. A
    generator of the user's own keeps its traceback (its bug is in its code)."""
    ok(ctx, f"load {MATMUL}")
    res = do(ctx, "apply pipelines/cpu/matmul_parallel.py[gen=matmul_parallel]{block_m=-1}")
    assert not res.ok and "raised ValueError: block_m must be a positive int, got -1" in res.error, res.error
    assert "Traceback" not in (res.detail or ""), res.detail
    mine = tmp_path / "mine.py"
    mine.write_text("GENERATORS = ['gen']\n\ndef gen(n: int = 1):\n    return int('x')\n")
    ok(ctx, f"trust {mine}")
    res = do(ctx, f"apply {mine}[gen=gen]")
    assert not res.ok and "raised ValueError" in res.error
    assert "Traceback" in (res.detail or "") and "mine.py" in res.detail, res.detail
