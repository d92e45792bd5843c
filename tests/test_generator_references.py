"""Every `pipelines/....py[gen=NAME]` that the repository names (pipelines, scripts, sessions, the
selectors' code, benches, tests, docs) is a declared generator of that file (GENERATORS), so no
shipped reference is refused by the consent rule that only declared generators run."""
from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
REFERENCE = re.compile(r"(pipelines/[\w/.-]+\.py)\[gen=(\w+)")
NEGATIVE_TESTS = {"tests/test_security.py"}
WHERE = ["pipelines", "commands", "sessions", "workbench", "bench", "tests", "docs", "README.md"]


def declared(path: Path) -> set[str]:
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "GENERATORS" for t in node.targets):
            return set(ast.literal_eval(node.value))
    return set()


def references() -> list[tuple[str, str, str]]:
    found = []
    for where in WHERE:
        base = ROOT / where
        files = [base] if base.is_file() else [p for p in base.rglob("*") if p.is_file()
                                                 and p.suffix in (".py", ".yaml", ".lhw", ".md", ".mlir")]
        for f in files:
            for m in REFERENCE.finditer(f.read_text(errors="replace")):
                found.append((str(f.relative_to(ROOT)), m.group(1), m.group(2)))
    return found


def test_references_were_found():
    assert len(references()) > 20


@pytest.mark.parametrize("where,path,gen", sorted(set(references())))
def test_referenced_generator_is_declared(where, path, gen):
    if where in NEGATIVE_TESTS:
        pytest.skip("names undeclared functions on purpose (they must be refused)")
    file = ROOT / path
    if not file.is_file():
        pytest.skip(f"{path} is not a file of this repository (an example of the syntax)")
    assert gen in declared(file), f"{where} names {path}[gen={gen}], which GENERATORS does not declare"
