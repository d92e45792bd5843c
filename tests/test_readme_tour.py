"""The README's tours, copied as a new user copies them: every `wb>` line of "A short tour" and of
"Parameters, selectors, tuning, microkernels" works as written on examples/matmul.mlir (the tour's
`params 1 tile_m=128` named a step without parameters, `params 1 impl=ukernel` one that has no
`impl` on a multi-core host)."""
from __future__ import annotations

import re

import pytest

from conftest import MATMUL, REPO
from workbench.commands import CommandContext, default_registry

pytestmark = pytest.mark.timeout(600)


def readme_block(heading: str) -> list[str]:
    """The `wb>` commands of the first code block after `heading`, comments dropped, `a | b` split."""
    text = (REPO / "README.md").read_text()
    start = text.index(heading)
    lines = []
    for line in text[start:].splitlines()[1:]:
        if line.startswith("#"):
            break
        m = re.match(r"\s+wb> (.*)", line)
        if m:
            command = re.split(r"\s{2,}#", m.group(1))[0].strip()
            lines += [part.strip() for part in command.split(" | ")] if " | " in command else [command]
        elif lines and line.strip() and not line.startswith(" "):
            break
    return lines


def run_block(ctx, lines: list[str]) -> None:
    for line in lines:
        res = ctx.registry.dispatch(line, ctx)
        assert res.ok, f"README: `{line}`: {res.error}"


@pytest.fixture
def ctx(session, tmp_path, monkeypatch, state_dir):
    monkeypatch.chdir(REPO)
    session.load(MATMUL)
    return CommandContext(session, default_registry())


def test_the_short_tour_works_as_written(ctx, tmp_path):
    lines = readme_block("## A short tour")
    assert lines[0] == "inspect" and any(l.startswith("params ") for l in lines) and "run --check" in lines
    # `save sessions/mine.yaml` would write into the repository
    lines = [f"save {tmp_path / 'mine.yaml'}" if l.startswith("save ") else l for l in lines]
    run_block(ctx, lines)
    assert (tmp_path / "mine.yaml").exists()


def test_the_parameters_tour_works_as_written(ctx, tmp_path, monkeypatch):
    lines = readme_block("### Parameters, selectors, tuning, microkernels")
    assert "select --apply" in lines and any("impl=ukernel" in l for l in lines)
    monkeypatch.chdir(tmp_path)   # params.json, trials.csv and the study land here
    lines = [re.sub(r"--trials \d+", "--trials 2", l) for l in lines]
    run_block(ctx, lines)
    assert ctx.session.last_run["check"]["passed"]
