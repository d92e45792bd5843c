"""The Lighthouse stage grammar and parameter schemas (no worker needed)."""
from pathlib import Path

import pytest

from conftest import LIGHTHOUSE, REPO, SCHED
from workbench.steps import spec as S
from workbench.steps.kinds import BuildContext, StepError, TrustError, load_pipeline_yaml, step_from_command, step_from_entry
from workbench.steps.params import ParamError, generator_schema


def test_split_ref_with_options_and_params():
    path, opts, params = S.split_ref("a/b.py[gen=f, seq=main]{x=1 y=[1, 2]}")
    assert (path, opts, params) == ("a/b.py", {"gen": "f", "seq": "main"}, "x=1 y=[1, 2]")


def test_split_ref_rejects_garbage():
    with pytest.raises(S.SpecError):
        S.split_ref("a.py[gen]")


def test_parse_params_values_and_vars():
    p = S.parse_params('a=1 b=[1,2] c=True d=name e="x y" flag f=$v', {"v": 64})
    assert p == {"a": 1, "b": [1, 2], "c": True, "d": "name", "e": "x y", "flag": True, "f": 64}


def test_undefined_variable_is_named():
    with pytest.raises(S.SpecError, match=r"undefined variable \$nope in here"):
        S.parse_params("a=$nope", {}, where="here")


def test_unbalanced_brackets():
    with pytest.raises(S.SpecError, match="unbalanced"):
        S.tokenize("a=[1,2")


@pytest.mark.parametrize("params", [{"a": 1, "b": [1, 2], "c": True, "d": "x y", "e": 2.5, "f": "w"}, {}])
def test_format_parse_roundtrip(params):
    assert S.parse_params(S.format_params(params)[1:-1] if params else "") == params


def test_generator_schema_read_without_running(tmp_path):
    f = tmp_path / "g.py"
    f.write_text("import sys; sys.exit('must not run')\n"
                 "GENERATORS = ['g']\n"
                 "PARAMS = {'t': {'min': 1, 'max': 64, 'help': 'tile'}, 'm': {'choices': ['a', 'b']}}\n"
                 "def g(payload, t: int = 8, m='a', sizes: list[int] = [1, 2], x: float = 0.5, on: bool = False):\n"
                 "    return ''\n")
    schema, wants_payload = generator_schema(f, "g")
    assert wants_payload
    assert list(schema.params) == ["t", "m", "sizes", "x", "on"]
    assert schema.defaults() == {"t": 8, "m": "a", "sizes": [1, 2], "x": 0.5, "on": False}
    assert schema.params["t"].type == "int" and schema.params["m"].type == "str"
    assert schema.params["sizes"].type == "list[int]"
    assert schema.validate({"t": "16", "sizes": "[4,8]", "on": "true"}) == {"t": 16, "sizes": [4, 8], "on": True}
    with pytest.raises(ParamError, match=r"t='x': expected int"):
        schema.validate({"t": "x"})
    with pytest.raises(ParamError, match=r"must be <= 64"):
        schema.validate({"t": 128})
    with pytest.raises(ParamError, match=r"expected one of \['a', 'b'\]"):
        schema.validate({"m": "c"})
    with pytest.raises(ParamError, match=r"unknown parameter 'zz' \(known: t, m, sizes, x, on\)"):
        schema.validate({"zz": 1})
    with pytest.raises(ParamError, match=r"sizes\[1\]='q': expected int"):
        schema.validate({"sizes": [1, "q"]})
    with pytest.raises(ParamError, match="expected bool"):
        schema.validate({"on": "maybe"})


def test_generator_schema_errors(tmp_path):
    with pytest.raises(ParamError, match="has no generator 'nope'.*declared generators: tile, by_payload"):
        generator_schema(SCHED / "gens.py", "nope")
    bad = tmp_path / "bad.py"
    bad.write_text("def f(:\n")
    with pytest.raises(ParamError, match=r"bad.py:1:\d+: syntax error"):
        generator_schema(bad, "f")


def test_step_from_command_guesses_kinds():
    assert step_from_command("pipelines/lib/tile.mlir[seq=tile_parallel]", REPO).kind == "transform"
    s = step_from_command("pipelines/lib/tile.py[gen=tile_matmul]{tile_m=64}", REPO)
    assert (s.kind, s.options, s.params) == ("schedule", {"gen": "tile_matmul"}, {"tile_m": 64})
    assert step_from_command("pipelines/lib/bufferization.yaml", REPO).kind == "include"
    assert step_from_command("cpu-lower", REPO).kind == "pipeline"
    assert step_from_command("pass canonicalize,cse", REPO).kind == "pass"
    assert step_from_command("bench {iterations=3}", REPO).params == {"iterations": 3}
    with pytest.raises(StepError, match="needs \\[gen=function\\]"):
        step_from_command("pipelines/lib/tile.py{tile_m=1}", REPO)
    with pytest.raises(StepError, match="don't know how to apply"):
        step_from_command("no-such-thing", REPO)


def test_pipeline_entries_params_mapping_and_vars():
    st = step_from_entry({"transform": "x.py[gen=f]{a=$v}", "params": {"b": "$w", "c": 3}}, REPO, {"v": 1, "w": 2})
    assert st.kind == "schedule" and st.params == {"a": 1, "b": 2, "c": 3}
    with pytest.raises(StepError, match="exactly one of"):
        step_from_entry({"pass": "a", "transform": "b.mlir"}, REPO)
    with pytest.raises(StepError, match="must be a mapping"):
        step_from_entry("pass: x", REPO)


def test_include_stages_resolve_relative_to_including_file_and_substitute_vars():
    inc = step_from_command(f"{LIGHTHOUSE / 'matmul-cpu.yaml'} {{tile=8}}", REPO)
    stages = inc.stages(BuildContext(allow_python=True))
    paths = [st.get("path") for st in stages]
    assert paths[0] == str((SCHED / "tile_local.mlir").resolve())
    assert stages[1]["kind"] == "schedule" and stages[1]["params"] == {"size": 8}
    assert stages[1]["path"] == str((LIGHTHOUSE / "sub" / "tile_k.py").resolve())
    assert [st["kind"] for st in stages[2:]] == ["pass"] * (1 + 4 + 10)
    # the declared default applies when the includer gives no value
    inc2 = step_from_command(str(LIGHTHOUSE / "matmul-cpu.yaml"), REPO)
    assert inc2.stages(BuildContext(allow_python=True))[1]["params"] == {"size": 16}
    assert inc2.schema().defaults() == {"tile": 16}


def test_include_of_untrusted_python_is_refused_naming_the_file():
    inc = step_from_command(str(LIGHTHOUSE / "matmul-cpu.yaml"), REPO)
    with pytest.raises(TrustError) as ei:
        inc.stages(BuildContext())
    assert str((LIGHTHOUSE / "sub" / "tile_k.py").resolve()) in str(ei.value)
    assert "--allow-python" in str(ei.value)


def test_library_python_is_trusted_by_default():
    st = step_from_command(str(LIGHTHOUSE / "library-only.yaml"), REPO)
    stages = st.stages(BuildContext())
    assert stages[0]["kind"] == "schedule"
    assert stages[0]["params"] == {"tile_m": 32, "tile_n": 32, "tile_k": 64}
    assert Path(stages[0]["path"]) == (REPO / "pipelines" / "lib" / "tile.py").resolve()


@pytest.mark.parametrize("name,msg", [
    ("broken.yaml", r"broken.yaml:\d+:\d+: invalid YAML"),
    ("not-a-pipeline.yaml", "not a pipeline: expected a top-level 'Pipeline:' list"),
])
def test_malformed_pipeline_files(name, msg):
    with pytest.raises(StepError, match=msg):
        load_pipeline_yaml(LIGHTHOUSE / name)


def test_undefined_variable_in_pipeline_file():
    st = step_from_command(str(LIGHTHOUSE / "undefined-var.yaml"), REPO)
    with pytest.raises(S.SpecError, match=r"undefined variable \$nope"):
        st.stages(BuildContext())


def test_include_cycle_is_bounded(tmp_path):
    (tmp_path / "a.yaml").write_text("Pipeline:\n  - include: b.yaml\n")
    (tmp_path / "b.yaml").write_text("Pipeline:\n  - include: a.yaml\n")
    st = step_from_command(str(tmp_path / "a.yaml"), tmp_path)
    with pytest.raises(StepError, match="a cycle"):
        st.stages(BuildContext())
