"""Sessions on disk: save, journal/resume, replay byte-identical, descriptors, corrupt inputs."""
import os
import hashlib

import pytest
import yaml

from conftest import LIGHTHOUSE, MATMUL, PAYLOADS, SCHED, step
from workbench.commands import CommandContext, default_registry
from workbench.common.mlir_libs import mlir_version
from workbench.session import Session, SessionError, read_session_file, replay_into
from workbench.steps.kinds import Step


def _build(s):
    s.apply(step("pipelines/lib/tile.py[gen=tile_matmul]{tile_m=64 tile_k=16}"))
    s.apply(step("pipelines/lib/tile.mlir[seq=tile_parallel]"))
    s.apply(Step("pass", "canonicalize,cse"))
    s.apply(step(f"{LIGHTHOUSE}/library-only.yaml {{tm=16}}"))
    return s


def test_save_writes_lighthouse_yaml_with_workbench_keys(matmul_session, tmp_path):
    s = _build(matmul_session)
    path = s.save(tmp_path / "sub" / "s.yaml")
    text = path.read_text()
    assert text.startswith("# lh-workbench session")
    doc = yaml.safe_load(text)
    pipe = doc["Pipeline"]
    assert pipe[0]["schedule"].endswith("tile.py[gen=tile_matmul]{tile_m=64 tile_n=32 tile_k=16 loop=for}")
    assert pipe[0]["params"] == {"tile_m": 64, "tile_n": 32, "tile_k": 16, "loop": "for"}
    # library files are named library-relative, so the session works from any folder or checkout
    assert pipe[1] == {"transform": "pipelines/lib/tile.mlir[seq=tile_parallel]"}
    assert pipe[2] == {"pass": "canonicalize,cse"}
    assert pipe[3]["include"].endswith("library-only.yaml {tm=16}") and pipe[3]["params"] == {"tm": 16}
    wb = doc["Workbench"]
    assert wb["payload"]["sha256"] == hashlib.sha256(MATMUL.read_bytes()).hexdigest()
    assert (tmp_path / "sub" / wb["payload"]["path"]).resolve() == MATMUL.resolve()
    assert wb["version"] and wb["mlir_version"] == mlir_version()
    assert wb["ir_sha256"] == s.current_sha == hashlib.sha256(s.current_ir.encode()).hexdigest()
    assert [x["ir_sha256"] for x in wb["steps"]] == [a.output_sha for a in s.steps]
    # only active steps are saved
    s.undo()
    assert len(yaml.safe_load(s.to_yaml(None))["Pipeline"]) == 3


def test_save_is_atomic(matmul_session, tmp_path, monkeypatch):
    s = _build(matmul_session)
    target = tmp_path / "s.yaml"
    target.write_text("OLD CONTENT")
    import workbench.session as ws

    def broken_replace(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(ws.os, "replace", broken_replace)
    with pytest.raises(OSError):
        s.save(target)
    assert target.read_text() == "OLD CONTENT"
    assert [p.name for p in tmp_path.iterdir()] == ["s.yaml"]  # no temp file left behind
    monkeypatch.undo()
    s.save(target)
    assert yaml.safe_load(target.read_text())["Workbench"]["ir_sha256"] == s.current_sha


def test_replay_is_byte_identical(matmul_session, tmp_path, compile_client):
    s = _build(matmul_session)
    path = s.save(tmp_path / "s.yaml")
    fresh = Session(client=compile_client)
    loaded = read_session_file(path)
    assert loaded.payload == MATMUL.resolve()
    fresh.load(loaded.payload)
    reports = replay_into(fresh, loaded)
    assert all(r.ok for r in reports) and len(reports) == 4
    assert fresh.current_ir == s.current_ir
    assert [r.ir_sha256 for r in reports] == [a.output_sha for a in s.steps]


def test_replay_in_a_fresh_worker_is_byte_identical(matmul_session, tmp_path):
    """No cached modules: the replay re-parses everything in a new process."""
    s = _build(matmul_session)
    path = s.save(tmp_path / "s.yaml")
    fresh = Session()
    try:
        loaded = read_session_file(path)
        fresh.load(loaded.payload)
        assert all(r.ok for r in replay_into(fresh, loaded))
        assert fresh.current_ir == s.current_ir
    finally:
        fresh.close()


def test_replay_command_reports_reproduction_and_changed_payload(matmul_session, tmp_path, compile_client):
    s = _build(matmul_session)
    path = s.save(tmp_path / "s.yaml")
    reg = default_registry()
    ctx = CommandContext(Session(client=compile_client), reg)
    r = reg.dispatch(f"replay {path}", ctx)
    assert r.ok and r.data["reproduced"] is True and r.data["ir_sha256"] == s.current_sha
    # a payload that differs from the recorded one: replayed, with a warning
    other = tmp_path / "m.mlir"
    other.write_text(MATMUL.read_text() + "\n// changed\n")
    r = reg.dispatch(f"replay {path} --payload {other}", ctx)
    assert r.ok and any("changed since the session was saved" in w for w in r.data["warnings"])


def test_pipeline_yaml_without_payload_is_a_session(tmp_path, compile_client):
    reg = default_registry()
    ctx = CommandContext(Session(client=compile_client), reg)
    r = reg.dispatch(f"replay {LIGHTHOUSE / 'library-only.yaml'}", ctx)
    assert not r.ok and "names no payload: pass --payload" in r.error
    r = reg.dispatch(f"replay {LIGHTHOUSE / 'library-only.yaml'} --payload {MATMUL}", ctx)
    assert r.ok and "llvm.func @matmul" in ctx.session.current_ir


def test_lighthouse_descriptor_loads_as_pipeline(session):
    session.load(MATMUL)
    session.build_ctx.allow_python = True
    loaded = read_session_file(LIGHTHOUSE / "matmul-cpu.yaml")
    assert [s.kind for s in loaded.steps] == ["include", "pass", "include", "include"]
    assert loaded.steps[0].params == {"tile": 16}     # $tile from Variables
    reports = replay_into(session, loaded)
    assert all(r.ok for r in reports), [r.error for r in reports]
    assert "llvm.func @matmul" in session.current_ir


def test_journal_and_resume(matmul_session, state_dir, compile_client):
    s = matmul_session
    reg = default_registry()
    ctx = CommandContext(s, reg)

    assert reg.dispatch("apply pipelines/lib/tile.mlir", ctx).ok
    s.autosave()
    assert reg.dispatch("pass canonicalize", ctx).ok
    s.autosave()
    journal = s.journal_path
    assert journal.is_file() and str(journal).startswith(str(state_dir))
    final = s.current_ir
    # while its session lives, a journal is nobody else's to resume
    s2 = Session(client=compile_client)
    ctx2 = CommandContext(s2, reg)
    r = reg.dispatch(f"load {MATMUL}", ctx2)
    assert r.ok and "journal" not in r.data and s2.journal_for(MATMUL) is None
    # the first process is killed (its lock goes with it): load reports the journal, resume restores it
    os.close(s._journal_lock)
    s._journal_lock = None
    r = reg.dispatch(f"load {MATMUL}", ctx2)
    assert r.ok and r.data["journal"] == str(journal) and "resume" in r.summary
    r = reg.dispatch("resume", ctx2)
    assert r.ok and s2.cursor == 2 and s2.current_ir == final
    # the resumed session's own journal took over from the orphan
    assert not journal.exists() and s2.journal_path.is_file()
    # undoing everything and autosaving clears the journal
    s2.undo(); s2.undo(); s2.autosave()
    assert not s2.journal_path.exists()
    s2.close()


def test_resume_without_journal(matmul_session):
    reg = default_registry()
    r = reg.dispatch("resume", CommandContext(matmul_session, reg))
    assert not r.ok and "no autosaved session" in r.error


@pytest.mark.parametrize("content,msg", [
    ("Pipeline: [unclosed\n", r"s.yaml:\d+:\d+: invalid YAML"),
    ("- just\n- a list\n", "not a pipeline"),
    ("Pipeline:\n  - frobnicate: x\n", "must have exactly one of"),
    ("Pipeline:\n  - pass: canonicalize\nWorkbench: [1, 2]\n", "'Workbench' must be a mapping"),
    ("Pipeline:\n  - transform: x.py{a=1}\n", r"needs \[gen=function\]"),
    ("", "not a pipeline"),
])
def test_corrupt_session_files_give_one_line_errors_and_lose_nothing(matmul_session, tmp_path, content, msg):
    s = _build(matmul_session)
    before = (s.cursor, s.current_sha)
    bad = tmp_path / "s.yaml"
    bad.write_text(content)
    reg = default_registry()
    r = reg.dispatch(f"replay {bad}", CommandContext(s, reg))
    assert not r.ok and "\n" not in r.error
    import re

    assert re.search(msg, r.error), r.error
    assert (s.cursor, s.current_sha) == before
    assert bad.read_text() == content


def test_corrupt_payload_in_replay_loses_nothing(matmul_session, tmp_path):
    s = _build(matmul_session)
    before = (s.cursor, s.current_sha)
    path = s.save(tmp_path / "s.yaml")
    reg = default_registry()
    r = reg.dispatch(f"replay {path} --payload {PAYLOADS / 'parse_error.mlir'}", CommandContext(s, reg))
    assert not r.ok and "parse_error.mlir:3:24" in r.error
    assert (s.cursor, s.current_sha) == before


def test_trust_replay_refuses_python_outside_library(matmul_session, tmp_path, compile_client):
    s = matmul_session
    s.build_ctx.allow_python = True
    s.apply(step(f"{SCHED}/gens.py[gen=tile]{{tile=16}}"))
    path = s.save(tmp_path / "s.yaml")
    reg = default_registry()
    strict = CommandContext(Session(client=compile_client), reg)
    r = reg.dispatch(f"replay {path}", strict)
    assert not r.ok
    assert str((SCHED / "gens.py").resolve()) in r.error and "--allow-python" in r.error
    assert strict.session.cursor == 0
    # consent for that one file
    assert reg.dispatch(f"trust {SCHED / 'gens.py'}", strict).ok
    assert reg.dispatch(f"replay {path}", strict).ok and strict.session.current_sha == s.current_sha
    # or for everything
    allowed = CommandContext(Session(client=compile_client, allow_python=True), reg)
    r = reg.dispatch(f"replay {path}", allowed)
    assert r.ok and allowed.session.current_sha == s.current_sha


def test_trust_include_referencing_outside_python(session):
    session.load(MATMUL)
    with pytest.raises(SessionError) as ei:
        session.apply(step(str(LIGHTHOUSE / "matmul-cpu.yaml")))
    assert str((LIGHTHOUSE / "sub" / "tile_k.py").resolve()) in str(ei.value)
    assert session.cursor == 0


def test_interactive_apply_is_consent_but_scripts_are_not(session, tmp_path):
    from workbench.commands.script import run_script

    session.load(MATMUL)
    reg = default_registry()
    script = tmp_path / "s.lhw"
    script.write_text(f"apply {SCHED}/gens.py[gen=tile]{{tile=16}}\n")
    out = run_script(script, CommandContext(session, reg, interactive=False))
    assert not out.ok and "refusing to run Python schedule" in out.error
    r = reg.dispatch(f"apply {SCHED}/gens.py[gen=tile]{{tile=16}}", CommandContext(session, reg, interactive=True))
    assert r.ok
