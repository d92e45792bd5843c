"""Over-long input refused early and long work that reports progress (docs/qa-round11.md and qa-round12.md,
"Left open"); each test failed before its fix."""
from __future__ import annotations

import re
import time
from pathlib import Path

import pytest

from conftest import MATMUL, REPO, do, ok

TILE = REPO / "pipelines" / "lib" / "tile.py"


def _session(tmp_path: Path, pipeline: str, name: str = "s.yaml") -> Path:
    p = tmp_path / name
    p.write_text(f"Pipeline:\n{pipeline}Workbench: {{payload: {{path: {MATMUL}}}}}\n")
    return p


# -- 1. a parameter value longer than any real one ------------------------------------------------------------

def test_a_saved_session_with_a_huge_list_parameter_is_refused_while_it_is_read(ctx, tmp_path):
    """A 100,000-entry list parameter took 38-47 s (the generator, then the transform parser of a 200 kB
    script) before a clipped error. It is refused as the session is read: one line naming the entry, the
    step, the key and the limit, and the session is the one it was."""
    ok(ctx, f"load {MATMUL}")
    before = (ctx.session.payload_path, ctx.session.current_sha, ctx.session.cursor)
    sizes = "[" + ", ".join(["8"] * 20_000) + "]"
    for pipeline in (f"- schedule: {TILE}[gen=tile_op]\n  params: {{tile_sizes: {sizes}}}\n",   # `params:`
                     f"- schedule: {TILE}[gen=tile_op]{{tile_sizes={sizes}}}\n"):              # the reference's {}
        t0 = time.perf_counter()
        res = do(ctx, f"replay {_session(tmp_path, pipeline)}")
        assert time.perf_counter() - t0 < 15
        assert not res.ok and "\n" not in res.error, res.error
        assert "entry 1 (tile.py): parameter tile_sizes: 20000 list items, more than the 4096 allowed" in res.error, \
            res.error
        assert (ctx.session.payload_path, ctx.session.current_sha, ctx.session.cursor) == before
    long_name = "x" * (70 << 10)
    res = do(ctx, f"replay {_session(tmp_path, f'- bench: {{entry: {long_name}}}' + chr(10))}")
    assert not res.ok and "entry 1 (bench): parameter entry: a string of 71680 characters, more than the 65536 " \
        "allowed" in res.error, res.error


def test_apply_and_params_refuse_a_huge_list_parameter_naming_the_step(ctx):
    ok(ctx, f"load {MATMUL}")
    sizes = "[" + ",".join(["8"] * 5000) + "]"
    res = do(ctx, f"apply {TILE}[gen=tile_op]{{tile_sizes={sizes}}}")
    assert not res.ok and res.error.endswith("(tile.py): parameter tile_sizes: 5000 list items, more than the "
                                             "4096 allowed"), res.error
    ok(ctx, f"apply {TILE}[gen=tile_op]{{tile_sizes=[8,8,8]}}")
    sha = ctx.session.current_sha
    res = do(ctx, f"params 1 tile_sizes={sizes}")
    assert not res.ok and "params (step 1: " in res.error and "parameter tile_sizes: 5000 list items" in res.error, \
        res.error
    nested = "[" + ",".join(["[8,8]"] * 1500) + "]"   # nested lists' items count too
    res = do(ctx, f"params 1 tile_sizes={nested}")
    assert not res.ok and "more than the 4096 allowed" in res.error, res.error
    assert ctx.session.current_sha == sha and ctx.session.cursor == 1


def test_the_limits_allow_what_a_real_parameter_holds():
    from workbench.steps import spec as S

    assert S.parse_params("t=[" + ",".join(["123456789"] * 4096) + "]")["t"] == [123456789] * 4096
    assert S.parse_params("n=" + "y" * (64 << 10))["n"] == "y" * (64 << 10)
    with pytest.raises(S.SpecError, match="parameter n: a string of 65537 characters"):
        S.parse_params("n=" + "y" * ((64 << 10) + 1))


# -- 2. a session file far larger than any real one -----------------------------------------------------------

def test_a_session_file_of_200000_step_records_is_refused_before_it_is_parsed(ctx, tmp_path):
    """200,000 step records (3 MB, no alias) took 20 s under load to reach the node limit in PyYAML's
    pure-Python scanner; the file's size is checked first. Every shipped session and pipeline still loads."""
    from workbench.common import safe_yaml
    from workbench.session import read_session_file

    record = "  - {index: 1, ir_sha256: " + "a" * 64 + ", seconds: 0.001, noop: false}\n"
    p = tmp_path / "big.yaml"
    p.write_text(f"Pipeline: []\nWorkbench:\n  payload: {{path: {MATMUL}}}\n  steps:\n" + record * 40_000)
    t0 = time.perf_counter()
    res = do(ctx, f"replay {p}")
    assert time.perf_counter() - t0 < 2
    assert not res.ok and "larger than 1 MiB (a session or pipeline file has a few KiB)" in res.error, res.error
    with pytest.raises(safe_yaml.YAMLTooLarge, match="larger than 1 MiB"):
        safe_yaml.load(p.read_text())
    for f in sorted((REPO / "sessions").glob("*.yaml")):
        assert read_session_file(f).steps, f
    for f in [*REPO.glob("pipelines/**/*.yaml"), *REPO.glob("tests/**/*.yaml"), *REPO.glob("examples/**/*.yaml")]:
        assert f.stat().st_size < safe_yaml.MAX_BYTES // 16, f
    # 20,000 `cse` steps (240 kB) are under the size and node limits: read (once: it was parsed twice)
    p = tmp_path / "long.yaml"
    p.write_text("Pipeline: [" + "{pass: cse}, " * 20_000 + f"]\nWorkbench: {{payload: {{path: {MATMUL}}}}}\n")
    assert len(read_session_file(p).steps) == 20_000


def test_save_warns_of_a_file_that_replay_would_refuse(ctx, tmp_path, monkeypatch):
    """`save` of thousands of steps (~140 bytes each) writes a file over the limit: it says so as it saves."""
    from workbench.common import safe_yaml

    ok(ctx, f"load {MATMUL}")
    ok(ctx, "apply pass cse")
    monkeypatch.setattr(safe_yaml, "MAX_BYTES", 300)
    res = ok(ctx, f"save {tmp_path / 'big.yaml'}")
    assert res.data["warnings"] == [f"{tmp_path / 'big.yaml'} is 0 KiB, more than the 0 MiB that replay reads (save "
                                    "fewer steps: `history` and `undo`, or split the session)"], res.data
    assert not do(ctx, f"replay {tmp_path / 'big.yaml'}").ok
    monkeypatch.undo()
    assert "warnings" not in ok(ctx, f"save {tmp_path / 'small.yaml'}").data


# -- 3. files written for another MLIR version: errors at an op whose syntax or verifier changed ----------------

OLD_TILE = """\
module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%arg1: !transform.any_op {transform.readonly}) {
    %0 = transform.structured.match ops{["linalg.matmul"]} in %arg1 : (!transform.any_op) -> !transform.any_op
    %1, %loops:3 = transform.structured.tile_using_for %0 [8, [16], 1]
      : (!transform.any_op) -> (!transform.any_op, !transform.any_op, !transform.any_op, !transform.any_op)
    transform.yield
  }
}
"""
NEWER_SUBVIEW = """\
func.func @main(%m: memref<4x8xf32>) -> memref<8xf32, strided<[1]>> {
  %0 = memref.subview %m[1, 0][1, 8][1, 1] : memref<4x8xf32> to memref<8xf32, strided<[1]>>
  return %0 : memref<8xf32, strided<[1]>>
}
"""


def test_old_transform_syntax_and_a_newer_verifier_get_the_other_mlir_version_hint(ctx, tmp_path):
    """`tile_using_for %op [8, [16], 1]` (before `tile_sizes`) and a rank-reducing subview's `strided<[1]>`
    result (a newer tree's verifier accepts it) failed with MLIR's message alone: only unknown ops and dialects
    got the hint. An error at an op whose syntax or verifier changed between versions, while a file is read
    (a payload, a transform script), gets it, in the one line at file:line:col."""
    from workbench.common.mlir_libs import mlir_version

    script = tmp_path / "old.mlir"
    script.write_text(OLD_TILE)
    ok(ctx, f"load {MATMUL}")
    res = do(ctx, f"apply {script}")
    assert not res.ok and "\n" not in res.error, res.error
    assert (f"{script}:4:59: custom op 'transform.structured.tile_using_for' expected 'tile_sizes' "
            "(transform.structured.tile_using_for changed between MLIR versions: tile sizes follow `tile_sizes` "
            f"since LLVM 19, `%op [8, 16]` before; this is MLIR {mlir_version()}, a file written for another MLIR "
            "version?)") in res.error, res.error
    payload = tmp_path / "payload.mlir"       # the script inside the payload, as upstream test files have it
    payload.write_text("func.func @f() {\n  return\n}\n" + OLD_TILE)
    res = do(ctx, f"load {payload}")
    assert not res.ok and f"{payload}:7:59:" in res.error and "another MLIR version?" in res.error, res.error
    newer = tmp_path / "subview.mlir"
    newer.write_text(NEWER_SUBVIEW)
    res = do(ctx, f"load {newer}")
    assert not res.ok and res.error.startswith(f"{newer}:2:8: expected result type to be"), res.error
    assert res.error.endswith("(memref.subview changed between MLIR versions: which result layouts a "
                              "rank-reducing subview may have, `strided<[1]>` without `offset: ?`; this is MLIR "
                              f"{mlir_version()}, a file written for another MLIR version?)"), res.error
    # an op that did not change (`arith.addf` of mismatched types) gets MLIR's message alone
    bad = tmp_path / "bad.mlir"
    bad.write_text("func.func @f(%a: f32, %b: f64) -> f32 {\n  %r = arith.addf %a, %b : f32\n  return %r : f32\n}\n")
    res = do(ctx, f"load {bad}")
    assert not res.ok and "another MLIR version" not in res.error, res.error


# -- 4. a long replay: progress (steps done / total, rate) and cancellable --------------------------------------

def _long_session(tmp_path: Path, steps: int) -> Path:
    p = tmp_path / f"long{steps}.yaml"
    p.write_text("Pipeline: [" + "{pass: cse}, " * steps + f"]\nWorkbench: {{payload: {{path: {MATMUL}}}}}\n")
    return p


def test_a_long_replay_reports_steps_done_of_total_and_a_rate_not_a_line_per_step(ctx, tmp_path, monkeypatch):
    """20,000 steps replayed at ~145 steps/s printed a line per step for 2.3 minutes, nothing said how far it
    was. A replay of more than LONG_REPLAY_STEPS says `replay: step K/N (P%), R steps/s, about T left` every
    PROGRESS_INTERVAL_S and its total at the end; a short one still says each step."""
    from conftest import with_progress
    from workbench.commands import file_commands

    monkeypatch.setattr(file_commands, "PROGRESS_INTERVAL_S", 0.05)
    res, heard = with_progress(ctx, f"replay {_long_session(tmp_path, 400)}")
    assert res.ok, res.error
    assert not [m for m in heard if m.startswith("step ")], heard[:5]
    lines = [m for m in heard if m.startswith("replay: step ")]
    assert lines and len(lines) < 400, heard
    for m in lines:
        assert re.fullmatch(r"replay: step \d+/400 \(\d+%\), \d+ steps/s, about \d+(\.\d)? (s|min|h) left", m), m
    assert re.fullmatch(r"replay: 400/400 steps in \d+\.\d s \(\d+ steps/s\)", heard[-1]), heard[-1]
    res, heard = with_progress(ctx, f"replay {_long_session(tmp_path, 3)}")
    assert res.ok and [m.split(":")[0] for m in heard if m.startswith("step ")] == ["step 1/3 ok", "step 2/3 ok",
                                                                                   "step 3/3 ok"], heard


def test_a_long_replay_is_cancelled_where_it_is_and_the_session_is_unchanged(ctx, tmp_path):
    """Esc in the TUI (worker_client.cancel_command) stops the replay before its next step, in one line saying
    where; the session is the one it was."""
    import threading

    from workbench.commands import CommandContext
    from workbench.execution import worker_client

    ok(ctx, f"load {MATMUL}")
    before = (ctx.session.payload_path, ctx.session.current_sha, ctx.session.cursor)
    heard: list[str] = []
    started = threading.Event()

    def progress(message: str) -> None:
        heard.append(message)
        started.set()

    here = CommandContext(ctx.session, ctx.registry, progress=progress)
    result = {}
    line = f"replay {_long_session(tmp_path, 5000)}"
    thread = threading.Thread(target=lambda: result.setdefault("res", do(here, line)))
    thread.start()
    assert started.wait(120), heard
    worker_client.cancel_command()
    thread.join(60)
    assert not thread.is_alive()
    res = result["res"]
    assert not res.ok and "\n" not in res.error, res.error
    assert re.search(r"replay cancelled (before|at) step \d+ of 5000", res.error), res.error
    assert (ctx.session.payload_path, ctx.session.current_sha, ctx.session.cursor) == before


def test_ctrl_c_stops_a_headless_replay_in_one_line_with_a_clean_json_document(tmp_path):
    """`lh-workbench replay --json -` of 20,000 steps: Ctrl-C was a KeyboardInterrupt traceback and no document."""
    import json
    import os
    import signal
    import subprocess
    import sys

    p = subprocess.Popen([sys.executable, "-m", "workbench.cli", "replay", str(_long_session(tmp_path, 20_000)),
                          "--json", "-"], cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         env={**os.environ, "PYTHONPATH": str(REPO), "LH_WORKBENCH_STATE_DIR": str(tmp_path / "st")},
                         # Ctrl-C as a terminal delivers it: a test run started in the background (`cmd &` in a
                         # script) ignores SIGINT, and a Python started with it ignored keeps ignoring it
                         preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        first = p.stderr.readline()
        assert re.match(r"  \.\. replay: step \d+/20000 \(\d+%\), \d+ steps/s", first), first
        p.send_signal(signal.SIGINT)
        out, err = p.communicate(timeout=60)
    finally:
        p.kill()
    assert p.returncode == 1 and "Traceback" not in err, err
    doc = json.loads(out)
    assert doc["ok"] is False and re.fullmatch(r"replay cancelled at step \d+ of 20000 \(Ctrl-C\)", doc["error"]), doc
