"""Every step kind through the Session, and transactional application."""
import pytest

from conftest import LIGHTHOUSE, MLP, REPO, SCHED, step
from workbench.session import SessionError
from workbench.steps.kinds import Step


def test_pass_step(matmul_session):
    s = matmul_session
    a = s.apply(Step("pass", "func.func(linalg-generalize-named-ops)", base_dir=REPO))
    assert s.cursor == 1 and not a.noop
    assert "linalg.matmul" not in s.current_ir and "linalg.generic" in s.current_ir
    assert a.seconds > 0
    # a pass that changes nothing is recorded as a no-op step
    b = s.apply(Step("pass", "canonicalize", base_dir=REPO))
    assert b.noop and s.cursor == 2 and s.current_sha == s.sha_at(1)
    assert [h["noop"] for h in s.history()] == [False, False, True]


def test_transform_default_and_selected_sequence(matmul_session):
    s = matmul_session
    s.apply(step("pipelines/lib/tile.mlir"))
    full = s.current_ir
    assert full.count("scf.for") == 3
    s.undo()
    s.apply(step("pipelines/lib/tile.mlir[seq=tile_parallel]"))
    assert s.current_ir.count("scf.for") == 2
    assert s.steps[0].step.options == {"seq": "tile_parallel"}


def test_transform_unknown_sequence_lists_available(matmul_session):
    with pytest.raises(SessionError, match=r"no named sequence @nope \(has: @__transform_main, @tile_parallel\)"):
        matmul_session.apply(step("pipelines/lib/tile.mlir[seq=nope]"))


def test_schedule_generator_with_params_and_defaults(matmul_session):
    s = matmul_session
    a = s.apply(step("pipelines/lib/tile.py[gen=tile_matmul]{tile_m=64}"))
    # defaults are filled in so the recorded dict is concrete
    assert a.step.params == {"tile_m": 64, "tile_n": 32, "tile_k": 32, "loop": "for"}
    assert "tensor<64x32xf32>" in s.current_ir and "tensor<32x32xf32>" in s.current_ir


def test_schedule_generator_receives_payload(matmul_session, compile_client):
    s = matmul_session
    s.build_ctx.trusted.add(str(SCHED / "gens.py"))
    s.apply(step(f"{SCHED}/gens.py[gen=by_payload]{{fraction=8}}"))
    # m=256 -> tile 32 on every dim
    assert "tensor<32x32xf32>" in s.current_ir and s.current_ir.count("scf.for") == 3


def _gen_source(sizes: str) -> str:
    sched = (SCHED / "tile_local.mlir").read_text().split("transform.named_sequence @tile_m_only")[0]
    sched = sched.replace("[64, 64]", f"[{sizes}]").replace("%l:2", "%l").replace(
        "(!transform.any_op, !transform.any_op, !transform.any_op)", "(!transform.any_op, !transform.any_op)")
    return f"GENERATORS = ['g']\nTEXT = {sched + '}' !r}\n\ndef g(n: int = 1) -> str:\n    return TEXT\n"


def test_generator_edits_are_picked_up(matmul_session, tmp_path):
    import os

    s = matmul_session
    g = tmp_path / "g.py"
    g.write_text(_gen_source("64"))
    s.build_ctx.allow_python = True
    s.apply(step(f"{g}[gen=g]"))
    assert "tensor<64x512xf32>" in s.current_ir
    s.undo()
    g.write_text(_gen_source("0, 64"))
    st = os.stat(g)
    os.utime(g, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))  # a new mtime even on coarse clocks
    s.apply(step(f"{g}[gen=g]"))
    assert "tensor<256x64xf32>" in s.current_ir and "tensor<64x512xf32>" not in s.current_ir


def test_include_with_variables_and_relative_paths(matmul_session):
    s = matmul_session
    s.build_ctx.allow_python = True
    a = s.apply(step(f"{LIGHTHOUSE}/matmul-cpu.yaml {{tile=8}}"))
    assert a.step.kind == "include" and a.step.params == {"tile": 8}
    assert len(a.stage_seconds) == 2 + 15
    assert "llvm.func @matmul" in s.current_ir and "linalg" not in s.current_ir


def test_include_stops_at_failing_stage_and_names_it(matmul_session, tmp_path):
    (tmp_path / "p.yaml").write_text("Pipeline:\n  - pass: canonicalize\n  - pass: no-such-pass\n")
    with pytest.raises(SessionError, match=r"stage 2 of 2: pass no-such-pass"):
        matmul_session.apply(step(str(tmp_path / "p.yaml")))
    assert matmul_session.cursor == 0


def test_named_pipeline_cpu_lower(matmul_session):
    s = matmul_session
    a = s.apply(step("cpu-lower"))
    assert a.step.kind == "pipeline" and a.step.label() == "pipeline cpu-lower"
    assert "llvm.func @matmul" in s.current_ir
    assert "linalg." not in s.current_ir and "tensor<" not in s.current_ir


def test_unknown_named_pipeline(matmul_session):
    from workbench.steps.kinds import step_from_entry

    st = step_from_entry({"pipeline": "nope-lower"}, REPO)
    with pytest.raises(SessionError, match="unknown named pipeline 'nope-lower'.*cpu-lower"):
        matmul_session.apply(st)


def test_bench_step_wraps_entry_as_it_is_now(matmul_session):
    s = matmul_session
    a = s.apply(Step("bench", "bench", {"iterations": 3}, base_dir=REPO))
    assert a.step.params["iterations"] == 3 and a.step.params["warmup"] == 1
    assert "func.func @_lh_bench" in s.current_ir and "func.func @_lh_call" in s.current_ir
    assert "func.func @matmul" in s.current_ir
    with pytest.raises(SessionError, match="iterations=0: must be >= 1"):
        s.apply(Step("bench", "bench", {"iterations": 0}, base_dir=REPO))


def test_bench_times_the_entry_alone(matmul_session):
    """The clock brackets the entry's call: copying its results into the output arguments (a serial
    copy as large as every output) happens after the clock stops, so it is no part of the time."""
    s = matmul_session
    s.apply(Step("bench", "bench", {"iterations": 3}, base_dir=REPO))
    bench = s.current_ir[s.current_ir.index("func.func @_lh_bench"):]
    start = bench.index("call @rtclock")
    stop = bench.index("call @rtclock", start + 1)
    timed = bench[start:stop]
    assert "call @matmul(" in timed and "memref.copy" not in timed and "_lh_call" not in timed
    assert "memref.copy" in bench[stop:]


def test_every_step_is_applied_to_a_copy(matmul_session):
    """Re-applying the same step on the same input gives the same output: the worker's
    cached input module was not modified in place."""
    s = matmul_session
    payload_ir = s.current_ir
    s.apply(step("pipelines/lib/tile.mlir"))
    out1 = s.current_ir
    s.undo()
    s.apply(step("pipelines/lib/tile.mlir"))
    assert s.current_ir == out1
    assert s.ir_at(0) == payload_ir
    # and twice in a row tiles the tiled module (step 2's input is step 1's output)
    s.apply(step("pipelines/lib/tile.mlir"))
    assert s.current_ir.count("scf.for") == 6
    assert s.ir_at(1) == out1


def test_mlp_library_pipeline(session):
    session.load(MLP)
    a = session.apply(step("pipelines/lib/mlp-cpu.yaml {tile_m=16}"))
    assert a.step.params == {"tile_m": 16, "tile_n": 64, "tile_k": 16}
    ir = session.current_ir
    assert "llvm.func @mlp" in ir and "linalg." not in ir
