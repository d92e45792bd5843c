"""Shared fixtures: one compile worker per test session, a fresh Session per test,
a private state directory per test (journals never touch the user's home)."""
from __future__ import annotations

import json

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
    # the repository first; keep what is there (e.g. an unpacked MLIR runtime bundle on a GPU machine)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO)] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    if env_extra:
        env.update(env_extra)
    return subprocess.run(CLI + [str(a) for a in args], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=timeout, stdin=subprocess.DEVNULL)


# -- a workbench context shared by a test module (its own compile worker), and command helpers ----

@pytest.fixture(scope="module")
def ctx(tmp_path_factory):
    """A CommandContext over a fresh Session, shared by the tests of one module."""
    from workbench.commands import CommandContext, default_registry
    from workbench.session import Session

    os.environ["LH_WORKBENCH_STATE_DIR"] = str(tmp_path_factory.mktemp("state"))
    s = Session()
    yield CommandContext(s, default_registry())
    s.close()


def do(ctx, line: str):
    """Dispatch one command line; the Result (failed or not)."""
    return ctx.registry.dispatch(line, ctx)


def ok(ctx, line: str):
    """Dispatch one command line that must succeed."""
    res = do(ctx, line)
    assert res.ok, f"{line}: {res.error}\n{res.detail}"
    return res


def with_progress(ctx, line: str):
    """Dispatch one command line, collecting the progress messages it sends; (Result, messages)."""
    heard: list[str] = []
    before, ctx.progress = ctx.progress, heard.append
    try:
        return do(ctx, line), heard
    finally:
        ctx.progress = before


def rank_processes(workdir: Path) -> list[str]:
    """Live processes whose command line names a directory under `workdir` (an MPI run's mpiexec and
    ranks), zombies aside."""
    mine = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            cmd = (d / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            stat = (d / "stat").read_text()
        except OSError:
            continue
        if str(workdir) in cmd and stat.rsplit(")", 1)[1].split()[0] not in ("Z", "X"):
            mine.append(cmd)
    return mine


def failed(ctx, line: str) -> str:
    """Dispatch one command line that must fail with a one-line error; that error."""
    res = do(ctx, line)
    assert not res.ok, line
    assert "\n" not in res.error, res.error
    return res.error


def matmul_payload(path: Path, m: int, n: int, k: int, name: str = "matmul", dtype: str = "f32") -> Path:
    """Write a tensor matmul payload (C + A x B) of the given shape and element type."""
    a, b, c = f"tensor<{m}x{k}x{dtype}>", f"tensor<{k}x{n}x{dtype}>", f"tensor<{m}x{n}x{dtype}>"
    path.write_text(f"func.func @{name}(%A: {a}, %B: {b}, %C: {c}) -> {c} {{\n"
                    f"  %0 = linalg.matmul ins(%A, %B : {a}, {b}) outs(%C : {c}) -> {c}\n  return %0 : {c}\n}}\n")
    return path


@pytest.fixture
def tune_ctx(compile_client):
    """A CommandContext over a fresh Session (Python schedules allowed, no journal) whose progress
    events (e.g. tune's per-trial lines) are recorded in `ctx.events`."""
    from workbench.commands import CommandContext, default_registry
    from workbench.session import Session

    s = Session(client=compile_client, allow_python=True)
    s.journal_enabled = False
    events: list = []
    c = CommandContext(s, default_registry(), progress=events.append)
    c.events = events
    return c


def load_npys(d: Path, prefix: str) -> list:
    """prefix0.npy, prefix1.npy, ... as written by `run --save-outputs`."""
    import numpy as np

    return [np.load(f) for f in sorted(d.glob(f"{prefix}*.npy"), key=lambda f: int(f.stem[len(prefix):]))]


def fixture_io_flags(fixture: Path) -> str:
    """`--npy ... --expect ...` for an exported fixture (FIXTURE.mlir + FIXTURE.expected.json: its input
    and expected-output .npy files, torch's), for `run --check`."""
    side = json.loads(fixture.with_suffix(".expected.json").read_text())
    files = lambda names: ",".join(str(fixture.parent / n) for n in names)  # noqa: E731
    return f"--npy {files(side['inputs'])} --expect {files(side['expected'])}"


def lower_and_check_fixture(ctx, fixture: Path, threads: int | None = None, save: Path | None = None) -> dict:
    """The session's schedule benched (one call), lowered (cpu-lower) and run once with `run --check` on an
    exported fixture's inputs against the payload and torch's outputs (fixture_io_flags), on `threads`, the
    outputs saved to `save`: the run's data, both checks asserted to pass."""
    ok(ctx, "bench warmup=0 iterations=1")
    ok(ctx, "apply cpu-lower")
    flags = (f" --threads {threads}" if threads else "") + (f" --save-outputs {save}" if save else "")
    run = ok(ctx, f"run --check --iterations 1 --warmup 0{flags} {fixture_io_flags(fixture)}").data["run"]
    assert run["check"]["passed"] and run["expected_check"]["passed"], run
    return run


def import_and_check_net(tmp_path: Path, source: str, inputs: str) -> dict:
    """net.py (SOURCE, class Net) imported on INPUTS by `lh-workbench import`, lowered by cpu-lower and run --check
    (vs the unscheduled payload and vs torch's outputs); the run's --json answer. Needs torch (test_torch_import's
    TORCH_PYTHON)."""
    from test_torch_import import TORCH_PYTHON

    (tmp_path / "net.py").write_text(source)
    out = run_cli(["import", "net.py:Net", "--inputs", inputs, "--out", "o", "--json", "-"], cwd=tmp_path,
                  env_extra={"LH_WORKBENCH_TORCH_PYTHON": TORCH_PYTHON}, timeout=600)
    assert out.returncode == 0, json.loads(out.stdout)["error"]
    script = tmp_path / "s.lhw"
    script.write_text("apply cpu-lower\nrun --check\n")
    p = run_cli([tmp_path / "o" / "net.mlir", "--script", script, "--json", tmp_path / "r.json"], cwd=tmp_path,
                timeout=600)
    answer = json.loads((tmp_path / "r.json").read_text())
    assert p.returncode == 0, p.stderr
    return answer["run"]


@pytest.fixture(scope="module")
def fake_h100_driver(tmp_path_factory):
    """tests/fake_libcuda.c built into a shared library (skips without a C compiler)."""
    import shutil
    import subprocess

    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler for the stand-in CUDA driver")
    lib = tmp_path_factory.mktemp("fake_driver") / "libcuda_fake.so"
    subprocess.run([cc, "-shared", "-fPIC", "-o", str(lib), str(Path(__file__).parent / "fake_libcuda.c")], check=True)
    return lib


def runs_parallel_loops_on_threads(llvm_ir: str) -> bool:
    """Whether lowered code hands its parallel loops to a thread runtime: libgomp's team (where the
    machine has libgomp) or MLIR's async runtime (workbench/common/parallel_runtime.py)."""
    return "llvm.call @GOMP_parallel(" in llvm_ir or "llvm.call @mlirAsyncRuntimeExecute(" in llvm_ir


def top_level_ops_with_nested_names(text: str) -> list[tuple[str, set[str]]]:
    """(name, names of the ops nested in it, its own included) of each top-level op of the module's first
    function: which nests of a schedule hold what (vector.fma, fills, stores)."""
    from mlir import ir

    out = []
    with ir.Context() as context:
        context.allow_unregistered_dialects = True
        module = ir.Module.parse(text)
        func = next(op for op in module.body.operations if op.operation.name == "func.func")
        for op in func.regions[0].blocks[0].operations:
            names: set[str] = set()

            def walk(o):
                names.add(o.name)
                for region in o.regions:
                    for block in region.blocks:
                        for inner in block.operations:
                            walk(inner.operation)

            walk(op.operation)
            out.append((op.operation.name, names))
    return out


def selector_path_runs_and_matches(ctx, payload: Path, threads: int, cpu: str = "host") -> str:
    """`select --apply`, `bench`, `apply cpu-lower`, `run --check` on `payload` at `threads` (the target restored
    after); the selected schedules' specs, space-separated."""
    ok(ctx, f"load {payload}")
    try:
        ok(ctx, f"target cpu --cpu {cpu} --threads {threads}")
        data = ok(ctx, "select --apply").data
        schedules = " ".join(str(sel["schedule"]) for sel in data["selections"])
        ok(ctx, "bench warmup=1 iterations=2")
        ok(ctx, "apply cpu-lower")
        assert ok(ctx, f"run --check --iterations 1 --warmup 0 --threads {threads}").data["run"]["check"]["passed"]
        return schedules
    finally:
        ok(ctx, "target cpu --cpu host --threads 0")


def load_text(ctx, tmp_path: Path, text: str, name: str = "payload.mlir") -> Path:
    """Write the payload `text` under tmp_path and load it into the session."""
    path = tmp_path / name
    path.write_text(text)
    ok(ctx, f"load {path}")
    return path


def lowered_run_passes(ctx, pipeline: str = "cpu-lower") -> dict:
    """`bench`, `apply PIPELINE`, then `run --check` of the session's steps: the check passes (its run data)."""
    ok(ctx, "bench warmup=1 iterations=2")
    ok(ctx, f"apply {pipeline}")
    run = ok(ctx, "run --check --iterations 1 --warmup 0").data["run"]
    assert run["check"]["passed"], run["check"]
    return run


def selected_step_labels(ctx, tmp_path: Path, text: str, threads: int, cpu: str = "host") -> list[str]:
    """The labels of the session's steps after `select --apply` on the payload `text` at `threads`."""
    payload = tmp_path / "selected.mlir"
    payload.write_text(text)
    ok(ctx, f"load {payload}")
    ok(ctx, f"target cpu --threads {threads} --cpu {cpu}")
    ok(ctx, "select --apply")
    return [a.step.label() for a in ctx.session.active_steps]
