"""Every failure class: the step fails with diagnostics, the live module is untouched."""
import pytest

from conftest import REPO, SCHED, step
from workbench.session import SessionError
from workbench.steps.kinds import Step


def _snapshot(s):
    return (s.cursor, len(s.steps), s.current_sha, s.current_ir)


def _fails(s, st, *patterns):
    before = _snapshot(s)
    with pytest.raises(SessionError) as ei:
        s.apply(st)
    assert _snapshot(s) == before, "a failed step changed the session"
    msg = str(ei.value)
    assert "\n" not in msg, "the error must be one line"
    for p in patterns:
        assert p in msg or p in (ei.value.detail or ""), f"{p!r} not in {msg!r}"
    return ei.value


@pytest.fixture
def tiled(matmul_session):
    matmul_session.build_ctx.allow_python = True
    matmul_session.apply(step("pipelines/lib/tile.mlir[seq=tile_parallel]"))
    return matmul_session


def test_invalid_transform_handle_invalidation(tiled):
    e = _fails(tiled, step(f"{SCHED}/invalidated_handle.mlir"),
               "transform failed", "invalidated_handle.mlir:5:18", "uses a handle invalidated")
    assert "invalidated by this transform op" in e.detail  # the note pointing at the consumer


def test_definite_failure_tile_sizes(tiled):
    _fails(tiled, step(f"{SCHED}/too_many_tiles.mlir"),
           "too_many_tiles.mlir:4:", "too many tiles provided, expected at most 3 found 4")


def test_silenceable_failure_must_match(tiled):
    _fails(tiled, step(f"{SCHED}/must_match.mlir"), "must_match.mlir:", "expected parameter to be greater")


def test_empty_match_is_a_noop_not_a_failure(tiled):
    a = tiled.apply(step(f"{SCHED}/noop.mlir"))
    assert a.noop


def test_transform_module_that_does_not_verify(tiled, tmp_path):
    bad = tmp_path / "bad.mlir"
    # consumes a readonly argument: rejected by the transform dialect's verifier
    bad.write_text((REPO / "pipelines" / "lib" / "bufferize.mlir").read_text()
                   .replace("{transform.consumed}", "{transform.readonly}"))
    e = _fails(tiled, step(str(bad)), "transform module fails to verify", "bad.mlir:4:3",
               "consumed in the body but is not marked as such")
    # labelled by what failed (the verifier, not the parser); the error line is not repeated
    assert "parsed, but the verifier rejected it" in e.detail and "Unable to parse" not in e.detail
    assert "consumed in the body" not in e.detail and "transform.readonly" in e.detail  # the source line


def test_transform_module_that_does_not_parse(tiled, tmp_path):
    bad = tmp_path / "bad.mlir"
    bad.write_text((REPO / "pipelines" / "lib" / "bufferize.mlir").read_text().replace("transform.yield", "transform.yield("))
    e = _fails(tiled, step(str(bad)), "transform module does not parse", "bad.mlir:")
    assert "verifier" not in str(e) + e.detail


def test_pass_pipeline_that_fails_on_the_ir(tiled):
    # tensors are still there: the casts cannot be reconciled
    _fails(tiled, Step("pass", "convert-to-llvm,reconcile-unrealized-casts", base_dir=REPO),
           "pass pipeline failed")


def test_bad_pass_name(tiled):
    _fails(tiled, Step("pass", "no-such-pass", base_dir=REPO), "bad pass pipeline", "no-such-pass")


def test_bad_pass_option(tiled):
    _fails(tiled, Step("pass", "canonicalize{bogus-option=1}", base_dir=REPO), "bad pass pipeline", "bogus-option")


def test_verifier_failure_after_the_step(tiled):
    _fails(tiled, step(f"{SCHED}/breaks_verifier.mlir"), "verifier failed after the step", "function_type")


def test_python_exception_in_generator(tiled):
    e = _fails(tiled, step(f"{SCHED}/gens.py[gen=raises]{{x=7}}"),
               "gens.py:raises raised ValueError: generator refused x=7")
    assert "Traceback" in e.detail and "gens.py" in e.detail


def test_generator_returning_garbage(tiled):
    _fails(tiled, step(f"{SCHED}/gens.py[gen=not_text]"), "returned int")
    _fails(tiled, step(f"{SCHED}/gens.py[gen=bad_text]"), "transform module does not parse", "gens.py[gen=bad_text]:1:")


def test_missing_files(tiled):
    _fails(tiled, step(f"{SCHED}/nope.mlir"), "cannot read transform file")
    _fails(tiled, step(f"{SCHED}/nope.py[gen=f]"), "cannot read schedule file", "nope.py")
    _fails(tiled, step(f"{SCHED}/gens.py[gen=nope]"), "has no generator 'nope'")


def test_bad_params_rejected_before_running(tiled):
    _fails(tiled, step(f"{SCHED}/gens.py[gen=tile]{{tile=abc}}"), "tile='abc': expected int")
    _fails(tiled, step(f"{SCHED}/gens.py[gen=tile]{{tile=1000}}"), "must be <= 256")
    _fails(tiled, step(f"{SCHED}/gens.py[gen=tile]{{mode=sideways}}"), "expected one of ['for', 'forall']")
    _fails(tiled, step(f"{SCHED}/gens.py[gen=tile]{{zap=1}}"), "unknown parameter 'zap'")


@pytest.mark.parametrize("how", ["mlir-assertion", "os-abort"])
def test_worker_abort_is_a_failed_step_and_the_worker_restarts(tiled, compile_client, how):
    st = step(f"{SCHED}/negative_tile_aborts.mlir") if how == "mlir-assertion" else step(f"{SCHED}/gens.py[gen=aborts]")
    restarts = compile_client.restarts
    e = _fails(tiled, st, "compile worker process killed by signal SIGABRT")
    if how == "mlir-assertion":
        assert "Assertion" in str(e) or "Assertion" in e.detail  # stderr tail of the dead worker
    assert not compile_client.alive()
    # the session continues: the next step restarts the worker, from the session's own IR
    a = tiled.apply(step("pipelines/lib/tile.mlir"))
    assert compile_client.restarts == restarts + 1 and compile_client.alive()
    assert tiled.cursor == 2 and not a.noop
    assert tiled.current_ir.count("scf.for") == 2 + 3


def test_worker_timeout_kills_and_recovers(matmul_session, compile_client, tmp_path):
    slow = tmp_path / "slow.py"
    slow.write_text("import time\nGENERATORS = ['g']\n\ndef g() -> str:\n    time.sleep(30)\n    return ''\n")
    s = matmul_session
    s.build_ctx.allow_python = True
    stages = step(f"{slow}[gen=g]").stages(s.build_ctx)
    ans = compile_client.request({"op": "apply", "text": s.current_ir, "sha": s.current_sha, "stages": stages},
                                 timeout=1.0)
    assert not ans["ok"] and "timed out after 1 s" in ans["error"]
    assert compile_client.request({"op": "ping"})["ok"]


def test_failures_leave_nothing_behind_in_history(tiled):
    for st in (Step("pass", "no-such-pass", base_dir=REPO), step(f"{SCHED}/too_many_tiles.mlir")):
        with pytest.raises(SessionError):
            tiled.apply(st)
    assert [h["kind"] for h in tiled.history()] == ["payload", "transform"]


def test_worker_crash_loses_no_unprinted_step(matmul_session, compile_client):
    """`apply` does not print its result: the worker keeps the module and sends its bytecode after the
    answer; the session keeps the bytecode, and until it is there, the input and stages that made it. A
    worker crash before anyone asked for the text loses nothing, and the text is byte-identical to
    printing at once."""
    from workbench.session import Session

    s = matmul_session
    steps = [step("pipelines/lib/tile.mlir[seq=tile_parallel]"), step("pipelines/lib/tile.mlir")]
    first = s.apply(steps[0])
    assert s.irs.known_sha(first.output_key) is None                    # not printed
    assert first.output_key not in s.irs.bytecode and first.output_key in s.irs.recipes  # bytecode not read yet
    restarts = compile_client.restarts
    compile_client.kill()           # the worker, the module and its bytecode in the pipe are gone
    second = s.apply(steps[1])      # its input is made again from the recipe (printed), then step 2 runs
    assert s.irs.known_sha(first.output_key) is not None
    compile_client.settle()         # step 2's bytecode arrives
    assert second.output_key in s.irs.bytecode and second.output_key not in s.irs.recipes
    compile_client.kill()
    ir_text = s.current_ir          # printed by a fresh worker from the bytecode
    assert compile_client.restarts == restarts + 2
    eager = Session(client=compile_client)      # the same steps, each result printed at once
    eager.load(s.payload_path)
    shas = []
    for st in steps:
        eager.apply(st, printed=True)
        shas.append(eager.current_sha)
    assert [first.output_sha, second.output_sha] == shas
    assert ir_text == eager.current_ir and ir_text.count("scf.for") == 2 + 3


def test_unprinted_ir_the_worker_lost_prints_as_it_was(session, compile_client):
    """An unprinted result the worker no longer holds (evicted from its cache) is printed from its
    bytecode with the text it had: `dense_resource` blob names are not renamed because the payload
    in the worker's context has taken them already."""
    from conftest import FIXTURES

    s = session
    s.load(FIXTURES / "torch" / "batch_norm1d.mlir")
    applied = s.apply(Step("pass", "canonicalize", base_dir=REPO))
    compile_client.settle()
    bytecode = s.irs.bytecode[applied.output_key]
    lost = compile_client.request({"op": "print", "key": "evicted-" + applied.output_key, "bytecode": bytecode})
    assert lost["ok"] and "dense_resource<torch_tensor_16_torch.float32_3>" in lost["ir"]
    assert lost["ir"] == s.current_ir and lost["sha"] == applied.output_sha
