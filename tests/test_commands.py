"""The command layer: registry dispatch, help, completion hints, script files."""
import pytest

from conftest import MATMUL
from workbench.commands import CommandContext, default_registry
from workbench.commands.registry import UsageError, parse_args
from workbench.commands.script import run_script, script_lines


@pytest.fixture
def reg():
    return default_registry()


@pytest.fixture
def ctx(session, reg):
    return CommandContext(session, reg)


def test_dispatch_unknown_command_suggests(ctx, reg):
    r = reg.dispatch("undp", ctx)
    assert not r.ok and "unknown command 'undp'" in r.error and "undo" in r.error


def test_dispatch_usage_errors_are_results(ctx, reg):
    r = reg.dispatch("show notanumber", ctx)
    assert not r.ok and "step must be an integer" in r.error
    r = reg.dispatch("load", ctx)
    assert not r.ok and "missing FILE" in r.error and "usage: load [--allow-unregistered] [--chunk K] FILE" in r.error
    r = reg.dispatch("replay --bogus x.yaml", ctx)
    assert not r.ok and "unknown option --bogus" in r.error


def test_aliases(ctx, reg, session):
    session.load(MATMUL)
    assert reg.get("steps") is reg.get("history") and reg.get("exit") is reg.get("quit")
    assert reg.dispatch("steps", ctx).data["command"] == "history"


def test_commands_without_payload_fail_clearly(ctx, reg):
    for line in ("inspect", "apply pipelines/lib/tile.mlir", "undo", "history", "diff", "save x.yaml"):
        r = reg.dispatch(line, ctx)
        assert not r.ok and "no payload loaded" in r.error, line


def test_parse_args_flags_and_rest():
    reg = default_registry()
    cmd = reg.get("replay")
    assert parse_args(cmd, "s.yaml --payload p.mlir") == {"payload": "p.mlir", "file": "s.yaml"}
    assert parse_args(cmd, "--payload=p.mlir s.yaml")["payload"] == "p.mlir"
    with pytest.raises(UsageError, match="needs a value"):
        parse_args(cmd, "s.yaml --payload")
    assert parse_args(reg.get("apply"), "x.py[gen=f]{a=1 b=[1, 2]}") == {"spec": "x.py[gen=f]{a=1 b=[1, 2]}"}
    assert parse_args(reg.get("params"), "2 a=1 b=[1, 2]") == {"step": 2, "values": ["a=1", "b=[1, 2]"],
                                                                 "export": None, "import": None}


def test_flag_values_may_be_quoted():
    """A quoted flag value keeps its spaces and | and loses its quotes (`asm --grep "ld.global|st.global"`
    searched for the quote characters too); `--flag=value` and `--flag="a b"` likewise."""
    cmd = default_registry().get("asm")
    assert parse_args(cmd, '--grep "vfmadd|vmovups" mm')["grep"] == "vfmadd|vmovups"
    got = parse_args(cmd, "--grep 'fma.rn f32' --out o.txt")
    assert (got["grep"], got["out"]) == ("fma.rn f32", "o.txt")
    assert parse_args(cmd, '--grep="a b" k')["grep"] == "a b" and parse_args(cmd, '--grep="a b" k')["function"] == "k"
    assert parse_args(cmd, "--grep=ld.global")["grep"] == "ld.global"
    with pytest.raises(UsageError, match="unbalanced quote"):
        parse_args(cmd, '--grep "ld.global')
    with pytest.raises(UsageError, match="needs a value"):
        parse_args(cmd, "--grep= mm")


def test_help_for_every_command(ctx, reg):
    r = reg.dispatch("help", ctx)
    assert r.ok
    listed = {row[0].split()[0] for row in r.data["table"]["rows"]}
    assert listed == set(reg.names())
    assert "schedule" in r.body and "include" in r.body  # step kinds explained
    for name in reg.names():
        cmd = reg.get(name)
        assert cmd.summary.strip(), name
        h = reg.dispatch(f"help {name}", ctx)
        assert h.ok and h.body.startswith(f"usage: {cmd.usage}") and cmd.summary in h.body, name
        for a in cmd.args:
            assert a.name.upper() in h.body and a.help, (name, a.name)
    assert not reg.dispatch("help nope", ctx).ok


FREE_TEXT_FLAGS = {"--entry", "--study", "--params", "--ranges", ("asm", "--grep"),
                   ("import", "--inputs"), ("import", "--name"),
                   ("run", "--check-prefixes")}  # shape specs, a file stem, FileCheck prefixes


def test_completion_hints_present_for_every_argument():
    reg = default_registry()
    known = ("path", "step", "command", "spec", "param", "target", "pass", "choice", "function", "run_line")
    for name in reg.names():
        cmd = reg.get(name)
        for a in cmd.args:
            assert a.complete and a.complete.split(":")[0] in known, (name, a.name, a.complete)
        for f in cmd.flags:
            # numbers and free text (a function name, a study name, a parameter list) have nothing to complete
            if f.takes_value and f.type not in ("int", "float") and f.name not in FREE_TEXT_FLAGS \
                    and (name, f.name) not in FREE_TEXT_FLAGS:
                assert f.complete, (name, f.name)


def test_script_lines_skip_comments_and_blank_lines():
    text = "# header\n\ninspect\n   # indented comment\napply x.mlir\n"
    assert script_lines(text) == [(3, "inspect"), (5, "apply x.mlir")]


def _script(tmp_path, text):
    p = tmp_path / "s.lhw"
    p.write_text(text)
    return p


def test_script_stops_at_first_failure_with_line_number(tmp_path, ctx, session):
    session.load(MATMUL)
    p = _script(tmp_path, "# tile\napply pipelines/lib/tile.mlir\n\npass no-such-pass\npass canonicalize\n")
    out = run_script(p, ctx)
    assert not out.ok and out.failed_line == 4
    assert [n for n, _, _ in out.results] == [2, 4]
    assert out.error.startswith("line 4: pass no-such-pass: ")
    assert session.cursor == 1


def test_script_keep_going(tmp_path, ctx, session):
    session.load(MATMUL)
    p = _script(tmp_path, "apply pipelines/lib/tile.mlir\npass no-such-pass\nbogus\npass canonicalize\n")
    out = run_script(p, ctx, keep_going=True)
    assert not out.ok and out.failed_line == 2
    assert [(n, r.ok) for n, _, r in out.results] == [(1, True), (2, False), (3, False), (4, True)]
    assert session.cursor == 2


def test_script_autosaves_after_every_command(tmp_path, ctx, session, state_dir):
    session.load(MATMUL)
    p = _script(tmp_path, "apply pipelines/lib/tile.mlir\n")
    run_script(p, ctx)
    journal = session.journal_path
    assert journal is not None and journal.is_file() and state_dir in journal.parents
    assert "tile.mlir" in journal.read_text()


def test_quit_stops_a_script(tmp_path, ctx, session):
    session.load(MATMUL)
    out = run_script(_script(tmp_path, "quit\napply pipelines/lib/tile.mlir\n"), ctx)
    assert out.ok and len(out.results) == 1 and session.cursor == 0
