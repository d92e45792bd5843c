"""Parameter schemas (issue 5): constraints, validation errors, knobs of .mlir schedules,
selector output recorded on the step and replayed, parameter dicts exported/imported."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from workbench.commands import CommandContext, default_registry
from workbench.session import Session, read_session_file, replay_into
from workbench.steps.kinds import Step
from workbench.steps.params import ParamError, ParamSpec, Schema, candidate_values, generator_schema
from conftest import ok

REPO = Path(__file__).resolve().parents[1]
FIX = REPO / "tests" / "fixtures" / "params"
MATMUL_PY = REPO / "pipelines" / "cpu" / "matmul.py"


def mm_payload(path: Path, m: int, n: int, k: int) -> Path:
    a, b, c = f"tensor<{m}x{k}xf32>", f"tensor<{k}x{n}xf32>", f"tensor<{m}x{n}xf32>"
    path.write_text(f"func.func @matmul(%A: {a}, %B: {b}, %C: {c}) -> {c} {{\n"
                    f"  %0 = linalg.matmul ins(%A, %B : {a}, {b}) outs(%C : {c}) -> {c}\n  return %0 : {c}\n}}\n")
    return path


@pytest.fixture
def ctx(compile_client):
    s = Session(client=compile_client)
    s.journal_enabled = False
    return CommandContext(s, default_registry())


def fail(ctx, line):
    res = ctx.registry.dispatch(line, ctx)
    assert not res.ok, f"{line} should fail"
    return res


def test_paramspec_is_backward_compatible_and_describes_constraints():
    p = ParamSpec("tile", "int", 32, "a tile", [16, 32], 1, 64)  # the old positional form
    assert p.coerce("16") == 16 and p.divides is None and not p.power_of_two
    q = ParamSpec("t", "int", 8, power_of_two=True, divides="M", multiple_of=4, min=4)
    assert "power of 2" in q.describe() and "divides M" in q.describe() and "multiple of 4" in q.describe()
    with pytest.raises(ParamError, match="power of two"):
        q.coerce(12)
    with pytest.raises(ParamError, match="multiple of 4"):
        ParamSpec("t", "int", multiple_of=4).coerce(6)
    with pytest.raises(ParamError, match=r"must be >= 4"):
        q.coerce(2)
    with pytest.raises(ParamError, match="expected int"):
        q.coerce("x")


def test_relations_and_payload_dims_name_the_violated_constraint():
    schema = Schema(params={"block_m": ParamSpec("block_m", "int", 64, divides="M"),
                            "reg_m": ParamSpec("reg_m", "int", 8, divides="block_m")},
                    constraints=["reg_m <= block_m", "block_m * 4 <= 1024"])
    schema.check({"block_m": 64, "reg_m": 8}, {"M": 256})
    with pytest.raises(ParamError, match=r"`block_m divides M` \(M=256\)"):
        schema.check({"block_m": 48, "reg_m": 8}, {"M": 256})
    with pytest.raises(ParamError, match=r"`reg_m divides block_m`"):
        schema.check({"block_m": 64, "reg_m": 24}, {"M": 256})
    with pytest.raises(ParamError, match=r"`block_m \* 4 <= 1024` \(block_m=512\)"):
        schema.check({"block_m": 512, "reg_m": 8}, {"M": 1024})
    # without payload dims, only what can be evaluated is checked
    schema.check({"block_m": 48, "reg_m": 8})
    assert schema.needs_payload
    # constraints are expressions over names only: no calls / attributes
    bad = Schema(constraints=["__import__('os').system('true')"])
    with pytest.raises(ParamError, match="not allowed|only min/max/abs"):
        bad.check({})


def test_matmul_schedule_schema_read_without_running_it():
    schema, _ = generator_schema(MATMUL_PY, "matmul_tiling")
    assert schema.payload_op == "linalg.matmul"
    assert schema.params["block_m"].divides == "M" and schema.params["reg_m"].divides == "block_m"
    assert schema.params["impl"].choices == ["codegen", "ukernel"]
    assert any("reg_m <= block_m" in c for c in schema.constraints)
    # the tuner's candidates for block_m: divisors of M within [min, max]
    assert candidate_values(schema.params["block_m"], {"M": 96}) == [1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 96]


def test_session_rejects_a_dict_violating_payload_constraints(ctx, tmp_path):
    ok(ctx, f"load {mm_payload(tmp_path / 'mm.mlir', 128, 64, 32)}")
    res = fail(ctx, "apply pipelines/cpu/matmul.py[gen=matmul_tiling]{block_m=64 block_k=32 reg_k=4 "
                    "pack_tile_a=32 pack_tile_b=8 block_n=48}")
    assert "violates constraint `block_n divides N` (N=64)" in res.error
    assert ctx.session.cursor == 0
    ok(ctx, "apply pipelines/cpu/matmul.py[gen=matmul_tiling]{block_m=64 block_n=64 block_k=32 pack_tile_a=32}")
    before = ctx.session.current_sha
    res = fail(ctx, "params 1 reg_m=16 block_m=8")
    assert "reg_m divides block_m" in res.error
    res = fail(ctx, "params 1 reg_m=16 reg_n=64")  # 1024 accumulators: a relation between parameters
    assert "violates constraint `impl != 'codegen' or reg_m * reg_n <= 512` (impl=codegen, reg_m=16, reg_n=64)" \
        in res.error
    res = fail(ctx, "params 1 impl=gpu")
    assert "expected one of ['codegen', 'ukernel']" in res.error
    assert ctx.session.current_sha == before  # nothing applied
    # ukernel: the tiling constraints do not apply (`when`), so the defaults are fine for this shape
    ok(ctx, "params 1 impl=ukernel block_n=512")
    assert 'lh.ukernel = "sgemm"' in ctx.session.current_ir
    # the schema with current values
    res = ok(ctx, "params 1")
    names = [r[0] for r in res.data["table"]["rows"]]
    assert "block_m" in names and "(constraint)" in names
    assert res.data["schema"]["params"]["block_m"]["divides"] == "M"


def test_knobs_of_a_transform_file_are_parameters(ctx, tmp_path):
    ok(ctx, f"load {REPO / 'examples' / 'matmul.mlir'}")
    step = Step("transform", str(FIX / "tile_knobs.mlir"), {}, {}, REPO)
    schema = step.schema(ctx.session.build_ctx)
    assert schema.params["tile_m"].choices == [16, 32, 64] and schema.params["tile_m"].default == 32
    assert schema.params["tile_n"].choices == [8, 16, 32] and schema.params["tile_n"].default is None
    assert schema.params["tile_m"].type == "int"
    # an unresolved knob fails in the interpreter, with its name
    res = fail(ctx, f"apply {FIX / 'tile_knobs.mlir'}")
    assert "tile_n" in res.error
    ok(ctx, f"apply {FIX / 'tile_knobs.mlir'}{{tile_n=16}}")
    ir = ctx.session.current_ir
    assert "step %c32" in ir and "step %c16" in ir
    ok(ctx, "params 1 tile_m=64 tile_n=8")
    ir = ctx.session.current_ir
    assert "step %c64" in ir and "step %c8 " in ir
    res = fail(ctx, "params 1 tile_n=12")
    assert "expected one of [8, 16, 32]" in res.error
    # saved with the chosen knob values; replays to the same IR
    ok(ctx, f"save {tmp_path / 's.yaml'}")
    doc = yaml.safe_load((tmp_path / "s.yaml").read_text())
    assert doc["Pipeline"][0]["params"] == {"tile_m": 64, "tile_n": 8}
    sha = ctx.session.current_sha
    ok(ctx, f"replay {tmp_path / 's.yaml'}")
    assert ctx.session.current_sha == sha


def test_knobs_are_read_by_the_sessions_own_worker(tmp_path):
    """Each session reads knobs through its own compile worker: no process-global reader (the last
    session created used to win) and no second, private worker."""
    from workbench.steps import params as params_module

    text = (FIX / "tile_knobs.mlir").read_text().replace("[16, 32, 64]", "[16, 32, 128]")  # uncached text
    knob_file = tmp_path / "knobs.mlir"
    knob_file.write_text(text)
    asked: list[str] = []
    first, second = Session(), Session()
    try:
        for name, s in (("first", first), ("second", second)):
            inner = s.build_ctx.knob_reader
            s.build_ctx.knob_reader = lambda t, p, inner=inner, name=name: asked.append(name) or inner(t, p)
        schema = Step("transform", str(knob_file), {}, {}, tmp_path).schema(first.build_ctx)
        assert schema.params["tile_m"].choices == [16, 32, 128]
        assert asked == ["first"] and params_module._private_client is None
    finally:
        first.close()
        second.close()


def test_knob_values_written_back_as_selected(compile_client):
    text = (FIX / "tile_knobs.mlir").read_text()
    ans = compile_client.request({"op": "knobs", "text": text, "path": "k.mlir"})
    assert ans["ok"]
    by_name = {k["name"]: k for k in ans["knobs"]}
    assert by_name["tile_m"]["selected"] == 32 and by_name["tile_n"]["selected"] is None
    assert by_name["tile_n"]["options"] == [8, 16, 32]


def test_selector_recorded_and_replayed_without_asking_it_again(ctx, tmp_path, monkeypatch):
    payload = mm_payload(tmp_path / "mm.mlir", 128, 256, 64)
    ok(ctx, f"load {payload}")
    ok(ctx, "target cpu --threads 1")   # (the one-core schedule: 2M multiply-adds go to 2 cores on a team)
    res = ok(ctx, "select")
    (spec, chosen), = ((e["schedule"], e["params"]) for e in res.data["selections"])
    assert res.data["selected_by"] == "cpu-selector" and spec.endswith("cpu/matmul.py[gen=matmul_tiling]")
    assert 256 % chosen["block_n"] == 0 and chosen["reg_n"] % 16 == 0  # AVX-512 host: 2 vectors of f32
    ok(ctx, "select --apply")
    step = ctx.session.steps[0].step
    assert step.selected_by == "cpu-selector" and {k: step.params[k] for k in chosen} == chosen
    # a manual edit makes the dict the user's; `select 1 --apply` restores the selector's
    ok(ctx, "params 1 reg_k=1")
    assert ctx.session.steps[0].step.selected_by is None
    res = ok(ctx, "select 1")
    assert res.data["changes"] == {"reg_k": chosen["reg_k"]}
    ok(ctx, "select 1 --apply")
    assert ctx.session.steps[0].step.selected_by == "cpu-selector"
    ok(ctx, "bench iterations=2")
    sess = tmp_path / "sel.yaml"
    ok(ctx, f"save {sess}")
    entry = yaml.safe_load(sess.read_text())["Pipeline"][0]
    assert entry["selected_by"] == "cpu-selector" and entry["params"]["block_n"] == chosen["block_n"]
    sha = ctx.session.current_sha
    # the selector changes its mind later: replay still uses the recorded dict
    from workbench.targets.cpu import CpuTarget

    monkeypatch.setattr(CpuTarget, "select_params", lambda self, info: [(spec, dict(chosen, block_n=32))])
    loaded = read_session_file(sess)
    s2 = Session(client=ctx.session.client)
    s2.journal_enabled = False
    s2.load(payload)
    reports = replay_into(s2, loaded)
    assert all(r.ok for r in reports) and s2.current_sha == sha
    assert s2.steps[0].step.selected_by == "cpu-selector" and s2.steps[0].step.params["block_n"] == chosen["block_n"]


def test_params_export_import_json_and_yaml(ctx, tmp_path):
    ok(ctx, f"load {mm_payload(tmp_path / 'mm.mlir', 64, 64, 64)}")
    ok(ctx, "select --apply")
    params = dict(ctx.session.steps[0].step.params)
    ok(ctx, f"params 1 --export {tmp_path / 'p.json'}")
    assert json.loads((tmp_path / "p.json").read_text()) == params
    ok(ctx, f"params 1 --export {tmp_path / 'p.yaml'}")
    assert yaml.safe_load((tmp_path / "p.yaml").read_text()) == params
    # a cost model's output: {"params": {...}} or a plain mapping
    (tmp_path / "cm.json").write_text(json.dumps({"params": {"reg_k": 2, "block_k": 32}}))
    ok(ctx, f"params 1 --import {tmp_path / 'cm.json'}")
    step = ctx.session.steps[0].step
    assert step.params["reg_k"] == 2 and step.params["block_k"] == 32 and step.selected_by == "file:cm.json"
    ok(ctx, f"params 1 --import {tmp_path / 'p.yaml'}")
    assert ctx.session.steps[0].step.params == params
    (tmp_path / "bad.yaml").write_text("reg_k: 3\n")  # 3 does not divide block_k
    res = fail(ctx, f"params 1 --import {tmp_path / 'bad.yaml'}")
    assert "reg_k divides block_k" in res.error
    (tmp_path / "junk.yaml").write_text("- 1\n- 2\n")
    assert "expected a mapping" in fail(ctx, f"params 1 --import {tmp_path / 'junk.yaml'}").error
