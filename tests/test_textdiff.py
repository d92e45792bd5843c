"""workbench.common.textdiff: the same unified diff as difflib (C matcher or not), and the session's diff cache."""
from __future__ import annotations

import difflib
import random

import pytest

from workbench.common import textdiff


def _lines(rng: random.Random, n: int) -> list[str]:
    return [f"%{rng.randint(0, 40)} = arith.addf %a, %b : f32\n" for _ in range(n)]


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("context", [0, 3])
def test_same_text_as_difflib(seed, context):
    rng = random.Random(seed)
    a = _lines(rng, rng.randint(0, 300))
    b = list(a)
    for _ in range(rng.randint(0, 40)):   # edits: replace, insert, delete
        op = rng.choice("rid")
        i = rng.randint(0, max(len(b) - 1, 0))
        if op == "r" and b:
            b[i] = f"%x{i} = arith.mulf %a, %b : f32\n"
        elif op == "i":
            b.insert(i, "func.call @f() : () -> ()\n")
        elif op == "d" and b:
            del b[i]
    want = "".join(difflib.unified_diff(a, b, "step 1", "step 2", n=context))
    assert textdiff.unified_diff("".join(a), "".join(b), "step 1", "step 2", context) == want


def test_identical_texts_have_an_empty_diff():
    assert textdiff.unified_diff("a\nb\n", "a\nb\n") == ""


def test_session_diff_is_cached_by_ir_and_steps(session):
    from pathlib import Path

    from workbench.steps.kinds import Step

    repo = Path(__file__).resolve().parents[1]
    session.load(repo / "examples" / "matmul.mlir")
    session.apply(Step("pass", "canonicalize", base_dir=repo))
    session.apply(Step("pass", "linalg-generalize-named-ops", base_dir=repo))
    d = session.diff(1, 2)
    assert d.startswith("--- step 1\n+++ step 2\n")
    assert any(ln.startswith("+") and "linalg.generic" in ln for ln in d.splitlines())
    assert session.diff(1, 2) is d            # from the cache
    assert session.diff(0, 2) != d            # other steps, another entry
    session.undo()
    assert session.diff(0, 1) == session.diff(0, 1)
