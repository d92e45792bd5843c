"""Loading payloads and inspecting them."""
import pytest

from conftest import EXAMPLES, MATMUL, MLP, PAYLOADS
from workbench.session import SessionError


def test_load_parses_and_verifies(session):
    sha = session.load(MATMUL)
    assert session.loaded and session.cursor == 0 and session.steps == []
    assert "linalg.matmul" in session.current_ir
    assert session.current_sha == sha == session.sha_at(0)


@pytest.mark.parametrize("name,where,msg", [
    ("parse_error.mlir", "parse_error.mlir:3:24", "expected non-function type"),
    ("verify_error.mlir", "verify_error.mlir:2:3", "type of return operand 0"),
])
def test_bad_payload_error_is_file_line_col_and_keeps_old_state(session, name, where, msg):
    session.load(MATMUL)
    before = (session.payload_path, session.current_sha, session.current_ir)
    with pytest.raises(SessionError) as ei:
        session.load(PAYLOADS / name)
    first = str(ei.value)
    assert "\n" not in first
    assert where in first.split(": ")[0] and msg in first
    assert first.split(":")[0].endswith(name)
    assert ei.value.detail  # full diagnostics on demand
    assert (session.payload_path, session.current_sha, session.current_ir) == before


def test_missing_payload_file(session):
    with pytest.raises(SessionError, match="no such file"):
        session.load(PAYLOADS / "nope.mlir")
    assert not session.loaded


def test_load_resets_steps(session):
    from conftest import step

    session.load(MATMUL)
    session.apply(step("pipelines/lib/tile.mlir"))
    session.load(MLP)
    assert session.steps == [] and session.cursor == 0 and "@mlp" in session.current_ir


def _ops(info, name):
    return [o for o in info["ops"] if o["op"] == name]


def test_inspect_kinds_and_exact_flops(session):
    session.load(PAYLOADS / "kinds.mlir")
    info = session.inspect()
    (f,) = info["funcs"]
    assert f["name"] == "kinds"
    assert f["args"][:3] == ["tensor<64x32xf32>", "tensor<32x16xf32>", "tensor<64x16xf32>"]
    assert f["results"] == ["tensor<64x16xf32>", "tensor<4x8x32xf32>", "tensor<10x20xf32>",
                            "tensor<10xf32>", "tensor<10xf32>"]
    (mm,) = _ops(info, "linalg.matmul")
    assert mm["kind"] == "contraction" and mm["dims"] == {"m": 64, "n": 16, "k": 32}
    assert mm["flops"] == 2 * 64 * 16 * 32
    (bm,) = _ops(info, "linalg.batch_matmul")
    assert bm["dims"] == {"b": 4, "m": 8, "n": 32, "k": 16}
    assert bm["flops"] == 2 * 4 * 8 * 32 * 16
    ew, red = _ops(info, "linalg.generic")
    assert ew["kind"] == "elementwise" and ew["domain"] == [10, 20] and ew["iterators"] == ["parallel", "parallel"]
    assert ew["flops"] == 10 * 20 * 2            # mul + add per element
    assert red["kind"] == "reduction" and red["iterators"] == ["parallel", "reduction"]
    assert red["flops"] == 10 * 20
    (r2,) = _ops(info, "linalg.reduce")
    assert r2["kind"] == "reduction" and r2["flops"] == 10 * 20
    assert info["total_flops"] == 65536 + 32768 + 400 + 200 + 200
    assert all(o["func"] == "kinds" for o in info["ops"])


def test_inspect_mlp_and_softmax(session):
    session.load(MLP)
    info = session.inspect()
    mms = _ops(info, "linalg.matmul")
    assert [m["dims"] for m in mms] == [{"m": 128, "n": 512, "k": 256}, {"m": 128, "n": 512, "k": 512},
                                        {"m": 128, "n": 128, "k": 512}]
    gens = _ops(info, "linalg.generic")
    assert len(gens) == 6 and all(g["kind"] == "elementwise" for g in gens)
    assert info["total_flops"] == 2 * 128 * (256 * 512 + 512 * 512 + 512 * 128) + 2 * (2 * 128 * 512) + 2 * 128 * 128
    session.load(EXAMPLES / "softmax.mlir")
    (sm,) = session.inspect()["ops"]
    assert sm["op"] == "linalg.softmax" and sm["shape"] == [64, 1024] and sm["flops"] == 5 * 64 * 1024


def test_inspect_a_previous_step(matmul_session):
    from conftest import step

    s = matmul_session
    s.apply(step("pipelines/lib/tile.mlir"))
    assert _ops(s.inspect(), "linalg.matmul")[0]["dims"] == {"m": 32, "n": 32, "k": 32}
    assert _ops(s.inspect(0), "linalg.matmul")[0]["dims"] == {"m": 256, "n": 128, "k": 512}


def test_inspect_command_table(matmul_session):
    from workbench.commands import CommandContext, default_registry

    reg = default_registry()
    res = reg.dispatch("inspect", CommandContext(matmul_session, reg))
    assert res.ok and "33.6 MFLOP" in res.summary
    rows = res.data["table"]["rows"]
    assert rows[0][:2] == ["func", "@matmul"]
    assert rows[1][2] == "m=256 n=128 k=512 f32"
