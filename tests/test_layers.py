"""The package's layering, checked statically (ast) and by importing the session side.

Layers, top to bottom; a module imports only modules of its own layer or below:
  front ends (cli, repl, tui, completion) -> commands -> session (session, run_session,
  tune) -> steps -> targets -> execution -> common (+ paths, result, highlight: leaves).
Worker processes (`workbench/worker/`) are the only code that imports `mlir`; they import only
`workbench.worker.*` and `workbench.common.*`, and the session side never imports them.
Framework importers (`workbench/importers/`, e.g. torch) run as processes of their own, by file path,
under the framework's Python: they import no `workbench` module and no `mlir` (torch and the MLIR
wheels never share a process), and nothing in the package imports them.
"""
from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "workbench"

# (layer index, module-name prefixes); lower index = higher layer
LAYERS = [
    ("front ends", ("workbench.launch", "workbench.cli", "workbench.repl", "workbench.tui", "workbench.completion",
                    "workbench.__main__")),
    ("commands", ("workbench.commands",)),
    ("session", ("workbench.session", "workbench.run_session", "workbench.tune")),
    ("steps", ("workbench.steps",)),
    ("targets", ("workbench.targets",)),
    ("execution", ("workbench.execution",)),
    ("common", ("workbench.common", "workbench.paths", "workbench.result", "workbench.highlight")),
]
WORKER = "workbench.worker"
IMPORTERS = "workbench.importers"


def module_name(path: Path) -> str:
    rel = path.relative_to(ROOT).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def all_modules() -> dict[str, Path]:
    return {module_name(p): p for p in PACKAGE.rglob("*.py")}


def imports_of(path: Path, pkg: str | None = None) -> set[str]:
    """Absolute module names imported anywhere in the file (function-level imports included);
    `pkg` is the package relative imports start from (default: the file's own)."""
    tree = ast.parse(path.read_text(), str(path))
    if pkg is None:
        pkg = module_name(path) if path.name == "__init__.py" else module_name(path).rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = pkg.split(".")
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join(anchor + ([base] if base else []))
            found.add(base)
            found.update(f"{base}.{a.name}" for a in node.names)
    return found


def layer_of(name: str) -> int | None:
    for i, (_, prefixes) in enumerate(LAYERS):
        if any(name == p or name.startswith(p + ".") for p in prefixes):
            return i
    return None


def is_worker(name: str) -> bool:
    return name == WORKER or name.startswith(WORKER + ".")


def is_importer(name: str) -> bool:
    return name == IMPORTERS or name.startswith(IMPORTERS + ".")


def test_every_module_has_a_layer():
    unplaced = [m for m in all_modules()
                if m != "workbench" and not is_worker(m) and not is_importer(m) and layer_of(m) is None]
    assert not unplaced, f"modules in no layer (add them to LAYERS): {unplaced}"


def test_only_worker_code_imports_mlir():
    offenders = []
    for name, path in all_modules().items():
        if is_worker(name):
            continue
        bad = sorted(i for i in imports_of(path) if i == "mlir" or i.startswith("mlir.") or is_worker(i))
        if bad:
            offenders.append(f"{name}: {bad}")
    assert not offenders, "session-side modules importing mlir or workbench.worker:\n" + "\n".join(offenders)


def test_importers_are_self_contained_and_never_imported():
    """An importer runs under a framework's Python that may not have the workbench (nor mlir)."""
    offenders = []
    for name, path in all_modules().items():
        for imp in imports_of(path):
            if is_importer(name) and (imp.startswith("workbench") or imp == "mlir" or imp.startswith("mlir.")):
                offenders.append(f"{name} imports {imp}")
            if not is_importer(name) and is_importer(imp):
                offenders.append(f"{name} imports {imp} (run importers by path, in their own process)")
    assert not offenders, "\n".join(sorted(offenders))


def test_worker_code_imports_only_worker_and_common():
    offenders = []
    for name, path in all_modules().items():
        if not is_worker(name):
            continue
        for imp in imports_of(path):
            if imp.startswith("workbench") and imp != "workbench" and not is_worker(imp) \
                    and not imp.startswith("workbench.common"):
                offenders.append(f"{name} imports {imp}")
    assert not offenders, "\n".join(sorted(offenders))


def test_no_upward_imports():
    modules = all_modules()
    offenders = []
    for name, path in modules.items():
        mine = layer_of(name)
        if mine is None:
            continue
        for imp in imports_of(path):
            theirs = layer_of(imp)
            if theirs is not None and theirs < mine:
                offenders.append(f"{name} ({LAYERS[mine][0]}) imports {imp} ({LAYERS[theirs][0]})")
    assert not offenders, "upward imports:\n" + "\n".join(sorted(set(offenders)))


def test_no_import_cycles_between_modules():
    modules = all_modules()
    # an import of a submodule always imports its parent packages first: not a design cycle
    graph = {name: {i for i in imports_of(path) if i in modules and i != name and not name.startswith(i + ".")}
             for name, path in modules.items()}
    # package __init__ re-exports are edges too; find a cycle with a DFS
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(n: str) -> list[str] | None:
        state[n] = 1
        stack.append(n)
        for m in sorted(graph[n]):
            if state.get(m) == 1:
                return stack[stack.index(m):] + [m]
            if m not in state:
                cycle = visit(m)
                if cycle:
                    return cycle
        stack.pop()
        state[n] = 2
        return None

    for n in sorted(graph):
        if n not in state:
            cycle = visit(n)
            assert cycle is None, "import cycle: " + " -> ".join(cycle)


def test_the_scan_sees_lazy_and_relative_imports(tmp_path):
    """The static check must not be blind to imports inside functions or relative ones."""
    f = tmp_path / "m.py"
    f.write_text("def f():\n    from mlir import ir\n    from ..worker import compile_worker\n")
    found = imports_of(f, pkg="workbench.session_side")
    assert "mlir" in found and "workbench.worker.compile_worker" in found


@pytest.mark.parametrize("entry", ["workbench.cli", "workbench.tui.app", "workbench.repl", "workbench.tune"])
def test_session_side_import_loads_no_mlir(entry):
    """Importing a front end (and so everything below it) must not load the MLIR bindings."""
    code = (f"import sys, importlib; importlib.import_module({entry!r}); "
            "import workbench.commands, workbench.session, workbench.targets, workbench.steps.kinds; "
            "loaded = sorted(m for m in sys.modules if m == 'mlir' or m.startswith('mlir.') "
            "or m.startswith('workbench.worker')); print(loaded); sys.exit(1 if loaded else 0)")
    p = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, f"{entry} loaded {p.stdout.strip()} {p.stderr[-500:]}"


def test_compile_worker_starts_without_what_it_imports_later():
    """The worker's start is on the path to the first screen: linalg's Python DSL (~0.17 s) and the SYCL
    artifact code are imported when first needed (inspection warms up after the first answer); both
    still resolve."""
    code = ("import importlib, sys\n"
            "import workbench.worker.compile_worker as c\n"
            "assert 'mlir.dialects.linalg' not in sys.modules and 'workbench.worker.sycl.spirv_kernels' not in sys.modules\n"
            "for artifact, (module, function) in c.ARTIFACT_PREPARERS.items():\n"
            "    mod = importlib.import_module(module)\n"
            "    assert callable(getattr(mod, function)) and mod.ARTIFACT == artifact\n"
            "from workbench.worker import payload_inspect\n"
            "payload_inspect.warm_up()\n"
            "assert 'mlir.dialects.linalg' in sys.modules\n")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
