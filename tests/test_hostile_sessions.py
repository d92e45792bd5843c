"""Hostile session files: every one is refused in one line (no traceback, no hang, nothing applied).

Each case failed differently before its fix: nesting 5000 deep was a RecursionError traceback, a
payload or transform file naming /dev/zero read forever, a directory was "no such file", a file of
NUL bytes loaded as an empty module, `target: [cpu]` was a TypeError traceback, 10**30 for a tile
size failed inside the transform parser, unknown and mistyped `Workbench:` keys were ignored."""
from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import pytest

from conftest import MATMUL, do, ok, run_cli


def _write(tmp_path: Path, body: str, name: str = "s.yaml") -> Path:
    shutil.copy(MATMUL, tmp_path / "m.mlir")
    p = tmp_path / name
    p.write_text(body.replace("PAYLOAD", str(tmp_path / "m.mlir")))
    return p


WB = "Workbench: {payload: {path: PAYLOAD}}\n"
CASES = {
    # name: (file text, what the one line must say)
    "deep_flow": ("Pipeline: " + "[" * 5000 + "]" * 5000 + "\n", "nested deeper than 64"),
    "deep_block": ("Pipeline:\n" + "".join("  " * i + "- \n" for i in range(200)), "nested deeper than 64"),
    "target_list": ("Pipeline: []\nWorkbench: {payload: {path: PAYLOAD}, target: [cpu]}\n",
                    "Workbench.target must be a target name"),
    "unknown_meta_key": ("Pipeline: []\nWorkbench: {payload: {path: PAYLOAD}, bogus: 3}\n",
                         "unknown key Workbench.bogus"),
    "unknown_payload_key": ("Pipeline: []\nWorkbench: {payload: {path: PAYLOAD, sha: x}}\n",
                            "unknown key Workbench.payload.sha"),
    "unknown_top_key": ("Pipeline: []\nFoo: 1\n" + WB, "unknown top-level key 'Foo'"),
    "steps_not_list": ("Pipeline: []\nWorkbench: {payload: {path: PAYLOAD}, steps: x}\n",
                       "Workbench.steps must be a list"),
    "ranges_not_map": ("Pipeline: []\nWorkbench: {payload: {path: PAYLOAD}, input_ranges: 5}\n",
                       "Workbench.input_ranges must be"),
    "threads_string": ("Pipeline: []\nWorkbench: {payload: {path: PAYLOAD}, cpu_threads: '4'}\n",
                       "Workbench.cpu_threads must be an integer"),
    "payload_dir": ("Pipeline: []\nWorkbench: {payload: {path: /tmp}}\n", "is a directory"),
    "payload_devzero": ("Pipeline: []\nWorkbench: {payload: {path: /dev/zero}}\n", "is a character device"),
    "transform_devzero": ("Pipeline:\n- transform: /dev/zero\n" + WB, "is a character device"),
    "transform_dir": ("Pipeline:\n- transform: /tmp\n" + WB, "is a directory"),
    "tile_10e30": ("Pipeline:\n- schedule: pipelines/lib/tile.py[gen=tile_matmul]\n  params: {tile_m: "
                   + str(10**30) + "}\n" + WB, "does not fit in 64 bits"),
    "bench_not_a_mapping": ("Pipeline:\n- bench: 5\n" + WB, "`bench:` expects a mapping"),
    "entry_unknown_key": ("Pipeline:\n- {pass: canonicalize, bogus: 1}\n" + WB, "unknown key 'bogus' in pipeline entry"),
    "selected_by_list": ("Pipeline:\n- schedule: pipelines/lib/tile.py[gen=tile_matmul]\n  selected_by: [1]\n" + WB,
                         "`selected_by:` must be a string"),
    "range_reversed": ("Pipeline: []\nWorkbench: {payload: {path: PAYLOAD}, input_ranges: {0: [5, 1]}}\n",
                       "(finite, lo < hi)"),
    "range_nan": ("Pipeline: []\nWorkbench: {payload: {path: PAYLOAD}, input_ranges: {0: [.nan, 1]}}\n",
                  "(finite, lo < hi)"),
    "sha_not_a_string": ("Pipeline: []\nWorkbench: {payload: {path: PAYLOAD, sha256: 5}}\n",
                         "Workbench.payload.sha256 must be a sha256 hex string"),
    "bench_10e20": ("Pipeline:\n- bench: {iterations: " + str(10**20) + "}\n" + WB, "iterations="),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_hostile_session_is_one_line_and_changes_nothing(ctx, tmp_path, name):
    text, expect = CASES[name]
    ok(ctx, f"load {MATMUL}")
    before = (ctx.session.payload_path, ctx.session.current_sha, ctx.session.cursor)
    t0 = time.perf_counter()
    res = do(ctx, f"replay {_write(tmp_path, text)}")
    assert time.perf_counter() - t0 < 5
    assert not res.ok and expect in res.error, res.error
    assert "\n" not in res.error and "Traceback" not in (res.detail or "")
    if name.startswith(("deep", "target", "unknown", "steps", "ranges", "range", "threads", "payload", "sha",
                        "entry", "selected", "bench_not")):
        # refused before the payload loads: the session is the one it was
        assert (ctx.session.payload_path, ctx.session.current_sha, ctx.session.cursor) == before


def test_binary_and_nul_payloads_are_not_mlir(ctx, tmp_path):
    big = tmp_path / "zeros.mlir"
    with open(big, "wb") as f:      # a sparse 200 MB file of NUL bytes: MLIR's parser read it as empty
        f.truncate(200 << 20)
    res = do(ctx, f"load {big}")
    assert not res.ok and "not MLIR text (a NUL byte at offset 0" in res.error, res.error
    blob = tmp_path / "blob.mlir"
    blob.write_bytes(b"func.func @f() {\n\x00\x01\x02")
    res = do(ctx, f"load {blob}")
    assert not res.ok and "offset 17" in res.error


def test_cli_replay_of_hostile_files_exits_1_fast_without_traceback(tmp_path):
    for name in ("deep_flow", "target_list", "transform_devzero"):
        p = _write(tmp_path, CASES[name][0], name + ".yaml")
        t0 = time.perf_counter()
        out = run_cli(["replay", p], cwd=tmp_path, timeout=30,
                      env_extra={"LH_WORKBENCH_STATE_DIR": str(tmp_path / "state")})
        assert out.returncode == 1 and "Traceback" not in out.stderr, out.stderr
        assert CASES[name][1] in out.stderr and time.perf_counter() - t0 < 10


def test_read_regular_file_refuses_what_is_not_a_file(tmp_path):
    from workbench.common.files import read_regular_file, read_regular_text

    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)               # opening a FIFO for reading would block without a writer
    for path, what in ((fifo, "is a pipe"), (tmp_path, "is a directory"), (Path("/dev/zero"), "character")):
        with pytest.raises(OSError, match=what):
            read_regular_file(path)
    f = tmp_path / "f"
    f.write_bytes(b"x" * (3 << 20))
    with pytest.raises(OSError, match="larger than 2 MiB"):
        read_regular_file(f, 2 << 20)
    assert len(read_regular_file(f, 3 << 20)) == 3 << 20
    f.write_bytes(b"ok \xff")
    with pytest.raises(OSError, match="not UTF-8 text \\(byte 3"):
        read_regular_text(f)


# -- hostile payloads -----------------------------------------------------------------------------

def test_payload_nested_past_the_parsers_stack_says_so(ctx, tmp_path):
    """MLIR's parser recurses per level: 20000 nested regions crash the compile worker (SIGSEGV); the
    session survives, and the one line says why."""
    deep = tmp_path / "deep.mlir"
    n = 20000
    deep.write_text("func.func @f() {\n" + "scf.execute_region {\n" * n + "}\n" * n + "return\n}\n")
    ok(ctx, f"load {MATMUL}")
    before = ctx.session.current_sha
    res = do(ctx, f"load {deep}")
    assert not res.ok and "nests 20001 levels deep" in res.error and "\n" not in res.error, res.error
    assert ctx.session.current_sha == before
    ok(ctx, "inspect")                     # a fresh worker serves the session as it was


def test_empty_payload_and_fifo_payload(ctx, tmp_path):
    empty = tmp_path / "empty.mlir"
    empty.write_text("// nothing here\n")
    ok(ctx, f"load {empty}")
    res = do(ctx, "run")
    assert not res.ok and "defines no function to run" in res.error
    fifo = tmp_path / "fifo.mlir"
    os.mkfifo(fifo)
    res = do(ctx, f"load {fifo}")
    assert not res.ok and "is a pipe, not a file" in res.error


def test_nesting_depth_estimate():
    from workbench.common.split_input import nesting_depth

    assert nesting_depth(b"func.func @f(%a: tensor<2xf32>) -> tensor<2xf32> { return %a }") == 2
    assert nesting_depth(b"[" * 50 + b"]" * 50) == 50


def test_script_edit_and_npy_files_that_are_devices(tmp_path):
    """`--script /dev/zero` read forever; `edit-apply /dev/zero` too; `run --npy 0=/dev/zero` blamed a pickle."""
    (tmp_path / "s.lhw").write_text("edit-apply /dev/zero\n")
    (tmp_path / "n.lhw").write_text("run --npy 0=/dev/zero\n")
    env = {"LH_WORKBENCH_STATE_DIR": str(tmp_path / "state")}
    out = run_cli([MATMUL, "--script", "/dev/zero"], cwd=tmp_path, timeout=30, env_extra=env)
    assert out.returncode == 2 and "is a character device, not a file" in out.stderr, out.stderr
    out = run_cli([MATMUL, "--script", tmp_path / "s.lhw"], cwd=tmp_path, timeout=30, env_extra=env)
    assert out.returncode == 1 and "cannot read /dev/zero: is a character device" in out.stderr, out.stderr
    out = run_cli([MATMUL, "--script", tmp_path / "n.lhw"], cwd=tmp_path, timeout=60, env_extra=env)
    assert out.returncode == 1 and "/dev/zero is not a regular file" in out.stderr, out.stderr


def test_a_huge_step_label_gives_short_lines_on_the_terminal_and_the_whole_text_in_json(tmp_path):
    """A step whose option string is 20 kB (echoed by MLIR's own message, and in `step N (label)`) made
    error lines of tens of kB; each printed line is cut to ERROR_LINE_LIMIT and says so, --json keeps all."""
    import json

    from workbench.result import ERROR_LINE_LIMIT

    p = _write(tmp_path, 'Pipeline:\n- pass: "canonicalize{' + "x" * 20000 + '}"\n', "long.yaml")
    out = run_cli(["replay", "--payload", MATMUL, p, "--json", tmp_path / "r.json"],
                  cwd=tmp_path, env_extra={"LH_WORKBENCH_STATE_DIR": str(tmp_path / "state")})
    assert out.returncode == 1 and "Traceback" not in out.stderr
    lines = (out.stdout + out.stderr).splitlines()
    assert lines and max(len(line) for line in lines) <= ERROR_LINE_LIMIT + 80, [len(x) for x in lines]
    assert "characters; --json has the whole message" in out.stdout + out.stderr
    assert "x" * 20000 in json.dumps(json.loads((tmp_path / "r.json").read_text()))


def test_a_bad_machine_in_a_session_names_the_file_and_key(tmp_path):
    """A hand-edited `Workbench.cpu` (a machine item it cannot read, an unknown name) or `Workbench.target` fails
    replay in one line that names the file and the key, with the item's own reason."""
    from workbench.session import Session, SessionError, read_session_file, replay_into

    session_file = tmp_path / "s.yaml"
    payload = Path(__file__).resolve().parents[1] / "examples" / "softmax.mlir"
    for key, value, reason in [("cpu", "avx2:cores=4,l2=1X", "l2='1X' is not a size"),
                               ("cpu", "nosuch", "unknown cpu 'nosuch'"),
                               ("target", "nosuch", "nosuch")]:
        session_file.write_text(f"Pipeline: []\nWorkbench:\n  payload:\n    path: {payload}\n  {key}: '{value}'\n")
        loaded = read_session_file(session_file)
        replayed = Session()
        try:
            replayed.load(loaded.payload)
            with pytest.raises(SessionError) as e:
                replay_into(replayed, loaded)
            message = str(e.value)
            assert message.startswith(f"{session_file}: Workbench.{key}: ") and reason in message, message
            assert "\n" not in message
        finally:
            replayed.close()
