"""Tenth QA round: models not tried before, upstream MLIR test files, a session replayed for another machine,
the TUI as a new user; each test failed before its fix (docs/qa-round10.md)."""
from __future__ import annotations

import json

import pytest

from conftest import MATMUL, REPO, do, ok, run_cli


# -- a huge option string -----------------------------------------------------------------------------------

def test_a_word_longer_than_any_name_has_no_edits_to_try_on_the_parser(monkeypatch):
    """A 20 kB option string (`canonicalize{xxx...}`) had its did-you-mean try every word one edit from it on the
    MLIR parser: 1.5 million 20 kB strings, minutes of the compile worker (tests/test_hostile_sessions.py's
    huge-label test ran 50-147 s, 10 min here under load). A short typo still finds its option."""
    from mlir import ir

    from workbench.worker import compile_worker as cw

    assert cw._one_edit_away("x" * 20000, "abc-") == set()
    assert cw._one_edit_away("x" * 65, "abc-") == set()
    assert "max-iterations" in cw._one_edit_away("max-iteration", "abcdefghijklmnopqrstuvwxyz-")
    asked = []
    real = cw.has_option
    monkeypatch.setattr(cw, "has_option", lambda name, option: asked.append(option) or real(name, option))
    with ir.Context():
        assert cw.close_options("canonicalize", "x" * 20000) == []
        assert len(asked) <= 16, len(asked)    # the word itself and the few names close_matches gives
        assert "max-iterations" in cw.close_options("canonicalize", "max-iteratoins")
