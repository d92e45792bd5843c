"""undo / redo / show / diff / history and `params N k=v` re-application."""
import pytest

from conftest import SCHED, step
from workbench.commands import CommandContext, default_registry
from workbench.session import SessionError
from workbench.steps.kinds import Step


@pytest.fixture
def three(matmul_session):
    s = matmul_session
    s.build_ctx.allow_python = True
    s.apply(step(f"{SCHED}/gens.py[gen=tile]{{tile=64 mode=forall}}"))
    s.apply(step(f"{SCHED}/needs_forall.mlir"))       # no-op, fails without a forall
    s.apply(Step("pass", "func.func(linalg-generalize-named-ops)"))
    return s


def test_undo_redo_cursor_and_ir(three):
    s = three
    irs = [s.ir_at(i) for i in range(4)]
    assert s.undo() == 2 and s.current_ir == irs[2]
    assert s.undo() == 1 and s.undo() == 0 and s.current_ir == irs[0]
    with pytest.raises(SessionError, match="nothing to undo"):
        s.undo()
    assert s.redo() == 1 and s.redo() == 2 and s.redo() == 3 and s.current_ir == irs[3]
    with pytest.raises(SessionError, match="nothing to redo"):
        s.redo()


def test_apply_after_undo_drops_the_redone_tail(three):
    s = three
    s.undo()
    s.undo()
    s.apply(Step("pass", "cse"))
    assert s.cursor == 2 and len(s.steps) == 2
    assert [a.step.spec for a in s.steps][1] == "cse"
    with pytest.raises(SessionError, match="nothing to redo"):
        s.redo()


def test_show_diff_history(three):
    s = three
    assert s.diff(1, 2) == ""                          # no-op step
    d = s.diff(0, 1)
    assert d.startswith("--- step 0\n+++ step 1\n") and "+" in d and "scf.forall" in d
    with pytest.raises(SessionError, match=r"no step 9 \(steps: 0..3; 0 is the payload\)"):
        s.ir_at(9)
    h = s.history()
    assert [r["index"] for r in h] == [0, 1, 2, 3]
    assert [r["noop"] for r in h] == [False, False, True, False]
    assert [r["current"] for r in h] == [False, False, False, True]
    s.undo()
    h = s.history()
    assert [r["active"] for r in h] == [True, True, True, False]


def test_history_diff_show_commands(three):
    reg = default_registry()
    ctx = CommandContext(three, reg)
    r = reg.dispatch("history", ctx)
    assert r.ok and [row[0] for row in r.data["table"]["rows"]] == [" 0", " 1", " 2", ">3"]
    assert r.data["table"]["rows"][2][3] == "no-op"
    r = reg.dispatch("diff 2", ctx)
    assert r.ok and r.data["noop"] and "identical IR (no-op)" in r.summary
    r = reg.dispatch("diff 0 1", ctx)
    assert r.ok and r.kind == "diff" and r.body.startswith("--- step 0")
    r = reg.dispatch("show 0", ctx)
    assert r.ok and r.body == three.ir_at(0) and r.data["ir_sha256"] == three.sha_at(0)
    assert not reg.dispatch("show 7", ctx).ok
    reg.dispatch("undo", ctx)
    r = reg.dispatch("history", ctx)
    assert [row[0] for row in r.data["table"]["rows"]] == [" 0", " 1", ">2", "~3"]


def test_params_reapplies_from_step(three):
    s = three
    old = [a.output_sha for a in s.steps]
    replaced = s.set_params(1, {"tile": "32"})       # strings are coerced by the schema
    assert [r.step.params["tile"] for r in replaced[:1]] == [32]
    assert len(replaced) == 3 and s.cursor == 3
    assert s.steps[0].step.params == {"tile": 32, "mode": "forall", "interchange": False}
    assert all(a.output_sha != o for a, o in zip(s.steps, old))
    assert "tensor<32x32xf32>" in s.current_ir
    # the later steps were re-applied on the new input
    assert s.steps[1].input_sha == s.steps[0].output_sha


def test_params_rejects_bad_key_and_type(three):
    s = three
    before = [a.output_sha for a in s.steps]
    with pytest.raises(SessionError, match=r"tile='big': expected int"):
        s.set_params(1, {"tile": "big"})
    with pytest.raises(SessionError, match=r"unknown parameter 'tilez' \(known: tile, mode, interchange\)"):
        s.set_params(1, {"tilez": 3})
    with pytest.raises(SessionError, match="unknown parameter"):
        s.set_params(3, {"x": 1})                    # a pass has no parameters
    with pytest.raises(SessionError, match=r"no active step 4"):
        s.set_params(4, {"tile": 3})
    assert [a.output_sha for a in s.steps] == before


def test_params_failure_during_reapply_changes_nothing(three):
    s = three
    snapshot = ([a.output_sha for a in s.steps], [dict(a.step.params) for a in s.steps], s.cursor)
    # step 1 with scf.for instead of scf.forall makes step 2 fail
    with pytest.raises(SessionError, match=r"step 2 .*needs_forall.mlir.*failed"):
        s.set_params(1, {"mode": "for"})
    assert ([a.output_sha for a in s.steps], [dict(a.step.params) for a in s.steps], s.cursor) == snapshot


def test_params_command(three):
    reg = default_registry()
    ctx = CommandContext(three, reg)
    r = reg.dispatch("params 1", ctx)
    assert r.ok and r.data["params"]["tile"] == 64
    assert r.data["table"]["rows"][0][:4] == ["tile", "int in [1, 256]", "64", "32"]
    r = reg.dispatch("params 1 tile=16", ctx)
    assert r.ok and "re-applied steps 1..3" in r.summary and len(r.data["reapplied"]) == 3
    r = reg.dispatch("params 1 tile=x", ctx)
    assert not r.ok and "expected int" in r.error
    r = reg.dispatch("params 1 mode=for", ctx)
    assert not r.ok and three.steps[0].step.params["mode"] == "forall"


def test_params_drops_redo_tail(three):
    s = three
    s.undo()
    s.set_params(1, {"tile": 16})
    assert s.cursor == 2 and len(s.steps) == 2


def test_undo_takes_back_a_params_edit_and_redo_brings_it_again(three):
    """QA round 10: undo after `params` undid the last step, and the edited step's old dict was gone. Now undo
    takes the edit back (the old dict and IRs of every re-applied step), and a linear history holds: undo past
    the edit moves the cursor, redo brings the steps and then the edit back; an apply after an undone edit
    drops it."""
    s = three
    before = ([a.output_sha for a in s.steps], [dict(a.step.params) for a in s.steps])
    s.set_params(1, {"tile": 16})
    edited = ([a.output_sha for a in s.steps], [dict(a.step.params) for a in s.steps])
    assert edited != before
    assert s.undo() == 3 and s.last_edit_moved is not None and s.last_edit_moved.index == 1
    assert ([a.output_sha for a in s.steps], [dict(a.step.params) for a in s.steps]) == before
    assert "tensor<64x64xf32>" in s.current_ir
    assert s.undo() == 2 and s.last_edit_moved is None        # then the steps, as before
    assert s.redo() == 3 and s.last_edit_moved is None
    assert s.redo() == 3 and s.last_edit_moved.index == 1      # and the edit again
    assert ([a.output_sha for a in s.steps], [dict(a.step.params) for a in s.steps]) == edited
    with pytest.raises(SessionError, match="nothing to redo"):
        s.redo()
    s.undo()
    s.apply(Step("pass", "cse"))                              # a new step: the undone edit can't come back
    with pytest.raises(SessionError, match="nothing to redo"):
        s.redo()
    assert s.steps[0].step.params["tile"] == 64


def test_undo_and_redo_commands_name_the_edit(three):
    reg = default_registry()
    ctx = CommandContext(three, reg)
    assert reg.dispatch("params 1 tile=16", ctx).ok
    r = reg.dispatch("undo", ctx)
    assert r.ok and r.summary == "undone: the parameter edit of step 1 (tile=64 (was 16)); now at step 3 of 3"
    assert r.data["params_edit"] == {"step": 1, "params": {"tile": 64, "mode": "forall", "interchange": False}}
    r = reg.dispatch("redo", ctx)
    assert r.ok and r.summary.startswith("redone: the parameter edit of step 1 (tile=16 (was 64))")
    r = reg.dispatch("undo", ctx)
    r = reg.dispatch("undo", ctx)
    assert r.ok and r.summary == "undone: now at step 2 of 3" and "params_edit" not in r.data
