"""Hostile inputs, second round (scripts and payloads not in test_security.py / test_hostile_sessions.py).

Before: a truncated payload (`%0 = linalg.ma` at the end of the file) was labelled "parsed, but the
verifier rejected it" (the parse probe appends a line, which changed what the parser read where the
text stopped); a script line holding `ESC [2J` and BEL was echoed raw to the terminal (it cleared the
screen); a 1 MB script argument came back as a 1 MB stderr line."""
from __future__ import annotations

from pathlib import Path

from conftest import MATMUL, do, ok, run_cli


def test_a_truncated_payload_is_a_parse_error_at_its_end_not_a_verifier_one(ctx, tmp_path):
    text = MATMUL.read_text()
    cut = text.index("linalg.matmul") + len("linalg.ma")
    ok(ctx, f"load {MATMUL}")
    before = (ctx.session.current_sha, ctx.session.cursor)
    for name, body in (("cut_in_op.mlir", text[:cut]), ("cut_before_braces.mlir", text.rstrip()[:-3])):
        path = tmp_path / name
        path.write_text(body)
        res = do(ctx, f"load {path}")
        assert not res.ok and "\n" not in res.error and f"{name}:" in res.error, res.error
        assert "verif" not in (res.error + (res.detail or "")), (res.error, res.detail)
        assert (ctx.session.current_sha, ctx.session.cursor) == before
    # a real verifier failure in a file that is complete is still labelled as one
    bad = tmp_path / "verify.mlir"
    bad.write_text(text.replace("tensor<512x128xf32>", "tensor<511x128xf32>"))   # K differs: the matmul's verifier
    res = do(ctx, f"load {bad}")
    assert not res.ok and "parsed, but the verifier rejected it" in (res.detail or ""), (res.error, res.detail)


def test_probe_is_inconclusive_where_the_text_fails_at_its_last_line():
    from workbench.common import diagnostics

    text = "a\nb\nc"
    assert diagnostics.probe_parsed_whole_text("<in>:4:2: x", text, "f:3:8: custom op 'linalg.ma' is unknown") is None
    assert diagnostics.probe_parsed_whole_text("<in>:4:2: x", text, "f:2:1: 'x' op bad") is True


def test_control_characters_and_huge_lines_of_a_script_reach_the_terminal_escaped_and_clipped(tmp_path):
    from workbench.result import ERROR_LINE_LIMIT, printable

    env = {"LH_WORKBENCH_STATE_DIR": str(tmp_path / "state")}
    (tmp_path / "ctrl.lhw").write_text("inspect\x1b[2J\x07\x1b]52;c;aGk=\x07\n")
    out = run_cli([MATMUL, "--script", tmp_path / "ctrl.lhw"], cwd=tmp_path, timeout=60, env_extra=env)
    text = out.stdout + out.stderr
    assert out.returncode == 1 and "Traceback" not in text, text
    assert "\x1b" not in text and "\x07" not in text, repr(text)
    assert "ctrl.lhw:1: unknown command 'inspect\\x1b[2J\\x07" in out.stderr, out.stderr
    (tmp_path / "long.lhw").write_text("inspect\nshow " + "9" * 20 + "x" * 500_000 + "\n")
    out = run_cli([MATMUL, "--script", tmp_path / "long.lhw"], cwd=tmp_path, timeout=60, env_extra=env)
    lines = (out.stdout + out.stderr).splitlines()
    assert out.returncode in (1, 2) and "long.lhw:2:" in out.stderr, out.stderr[:300]
    assert max(len(line) for line in lines) <= ERROR_LINE_LIMIT + 80, [len(x) for x in lines]
    assert printable("a\tb\nc\x00\x9b") == "a\tb\nc\\x00\\x9b"


def _saved_session(ctx, tmp_path):
    import yaml

    ok(ctx, f"load {MATMUL}")
    ok(ctx, "apply pipelines/lib/tile.py[gen=tile_matmul]{tile_m=64 tile_n=64}")
    ok(ctx, "pass canonicalize")
    path = tmp_path / "saved.yaml"
    ok(ctx, f"save {path}")
    return path, yaml.safe_load(path.read_text())


def test_step_records_of_a_session_are_checked_and_a_differing_replay_names_the_first_step(ctx, tmp_path):
    """`Workbench.steps` entries were not looked at: `noop: [1, 2]`, `seconds: x`, unknown keys replayed
    silently; a replay whose IR differed said only "final IR differs" (now: after which step)."""
    import yaml

    path, doc = _saved_session(ctx, tmp_path)
    before = (ctx.session.current_sha, ctx.session.cursor)
    for field, value in (("noop", [1, 2]), ("seconds", "x"), ("index", 0), ("ir_sha256", 5), ("bogus", 1)):
        bad = yaml.safe_load(path.read_text())
        bad["Workbench"]["steps"][0][field] = value
        hostile = tmp_path / f"bad_{field}.yaml"
        hostile.write_text(yaml.safe_dump(bad))
        res = do(ctx, f"replay {hostile}")
        assert not res.ok and "Workbench.steps must be a list of step records" in res.error, (field, res.error)
        assert (ctx.session.current_sha, ctx.session.cursor) == before
    doc["Workbench"]["steps"][1]["ir_sha256"] = "0" * 64     # as if step 2 had given other IR when saved
    doc["Workbench"]["ir_sha256"] = "0" * 64
    changed = tmp_path / "changed.yaml"
    changed.write_text(yaml.safe_dump(doc))
    res = ok(ctx, f"replay {changed}")
    assert "final IR differs" in res.summary and "first after step 2: canonicalize" in res.summary, res.summary
    assert res.data["reproduced"] is False


def test_a_bad_value_passed_down_an_include_chain_says_which_step_and_file(ctx, tmp_path):
    """`include: a.yaml {t=abc}` -> b.yaml {u=$t} -> a tile schedule {tile_m=$u}: the replay failed with
    "tile_m='abc': expected int" alone; a `Variables`-less chain said "undefined variable" twice over."""
    from conftest import REPO

    (tmp_path / "m.mlir").write_text(MATMUL.read_text())
    (tmp_path / "a.yaml").write_text("Pipeline:\n  - include: b.yaml {u=$t}\n")
    (tmp_path / "b.yaml").write_text(f"Pipeline:\n  - schedule: {REPO}/pipelines/lib/tile.py[gen=tile_matmul]"
                                     "{tile_m=$u tile_n=64}\n")
    ok(ctx, f"load {MATMUL}")
    before = (ctx.session.payload_path, ctx.session.current_sha, ctx.session.cursor)
    for value, expect in (("abc", "step 1 (a.yaml{t=abc}): tile_m='abc': expected int"),
                          ("$nope", "undefined variable $nope in")):
        session = tmp_path / "s.yaml"
        session.write_text(f"Pipeline:\n  - include: a.yaml {{t={value}}}\nWorkbench: {{payload: {{path: m.mlir}}}}\n")
        res = do(ctx, f"replay {session}")
        assert not res.ok and expect in res.error and "\n" not in res.error, res.error
        assert res.error.count("entry 1") <= 1, res.error
    session.write_text("Pipeline:\n  - include: a.yaml {t=32}\nWorkbench: {payload: {path: m.mlir}}\n")
    ok(ctx, f"replay {session}")
    assert "scf.for" in ctx.session.current_ir and before[1] != ctx.session.current_sha


def test_commands_on_stdin_are_read_within_a_limit_and_script_dash_reads_them(tmp_path):
    """`lh-workbench m.mlir < /dev/zero` read stdin forever (growing); `--script -` was "no such script file"."""
    import os
    import subprocess
    import sys

    from conftest import CLI, REPO

    env = dict(os.environ, PYTHONPATH=str(REPO), LH_WORKBENCH_STATE_DIR=str(tmp_path / "state"))
    with open("/dev/zero", "rb") as zero:
        out = subprocess.run(CLI + [str(MATMUL)], stdin=zero, capture_output=True, text=True, timeout=60,
                             cwd=tmp_path, env=env)
    assert out.returncode == 2 and "<stdin>:" in out.stderr and "not a command script" in out.stderr, out.stderr
    out = subprocess.run(CLI + [str(MATMUL), "--script", "-"], input="inspect\n", capture_output=True, text=True,
                         timeout=60, cwd=tmp_path, env=env)
    assert out.returncode == 0 and "linalg.matmul in @matmul" in out.stdout, out.stderr
    out = subprocess.run(CLI + [str(MATMUL), "--script", "-"], input=b"insp\xffect\n", capture_output=True,
                         timeout=60, cwd=tmp_path, env=env)
    assert out.returncode == 2 and b"not UTF-8 text (byte 4)" in out.stderr, out.stderr


def test_a_replay_that_fails_half_way_leaves_the_session_as_it_was(ctx, tmp_path):
    """A session whose step 2 fails (a pass that does not exist, a target that does not) left the session
    on its payload with step 1 applied: the session before the replay was gone."""
    import yaml

    path, doc = _saved_session(ctx, tmp_path)
    ok(ctx, f"load {Path(__file__).parent.parent / 'examples' / 'mlp.mlir'}")
    ok(ctx, "pass canonicalize")
    before = (ctx.session.payload_path, ctx.session.current_sha, ctx.session.cursor, len(ctx.session.steps),
              ctx.session.target_name)
    doc["Pipeline"][1] = {"pass": "no-such-pass"}
    broken = tmp_path / "broken.yaml"
    broken.write_text(yaml.safe_dump(doc))
    doc["Pipeline"][1] = {"pass": "canonicalize"}
    doc["Workbench"]["target"] = "nosuchtarget"
    bad_target = tmp_path / "bad_target.yaml"
    bad_target.write_text(yaml.safe_dump(doc))
    for session_file, expect in ((broken, "step 2 (no-such-pass) failed"), (bad_target, "unknown target")):
        res = do(ctx, f"replay {session_file}")
        assert not res.ok and expect in res.error and "(the session is unchanged)" in res.error, res.error
        assert (ctx.session.payload_path, ctx.session.current_sha, ctx.session.cursor, len(ctx.session.steps),
                ctx.session.target_name) == before
    assert "linalg.matmul" in ok(ctx, "show").body and ok(ctx, "undo").ok     # and it goes on working
