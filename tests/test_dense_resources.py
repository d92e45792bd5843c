"""`dense_resource` blobs (torch-mlir's weights) keep their names through everything the compile worker
does: a second load of the same payload, IR sent again to a worker that lost it, inspection, hand edits.
An MLIR context keeps every blob it parsed, and a second parse into it renames the blobs (`w` -> `w_1`),
so the worker parses each module in a context of its own."""
from __future__ import annotations

import re

from conftest import FIXTURES, failed, ok

PAYLOAD = FIXTURES / "torch" / "batch_norm1d.mlir"


def _resource_names(text: str) -> list[str]:
    return sorted(set(re.findall(r"dense_resource<([^>]+)>", text)))


def test_loading_the_same_payload_twice_prints_the_same_text(session):
    session.load(PAYLOAD)
    first_ir, first_sha = session.current_ir, session.current_sha
    assert _resource_names(first_ir), "the fixture has dense_resource weights"
    session.load(PAYLOAD)
    assert session.current_sha == first_sha and session.current_ir == first_ir


def test_ir_sent_again_applies_to_the_same_result(session, compile_client):
    """A step on IR the worker no longer holds (a restart, an eviction) gives the result a replay gives."""
    session.load(PAYLOAD)
    names = _resource_names(session.current_ir)
    canon = {"kind": "pass", "pipeline": "canonicalize"}
    held = compile_client.request({"op": "apply", "key": session.current_sha, "text": session.current_ir,
                                   "stages": [canon]})
    resent = compile_client.request({"op": "apply", "key": "evicted-" + session.current_sha,
                                     "text": session.current_ir, "stages": [canon]})
    assert held["ok"] and resent["ok"]
    assert resent["sha"] == held["sha"] and _resource_names(resent["ir"]) == names


def test_inspect_leaves_the_resource_names_alone(session, compile_client):
    session.load(PAYLOAD)
    before = session.current_ir
    for _ in range(2):
        info = compile_client.request({"op": "inspect", "key": session.current_sha, "text": before})
        assert info["ok"] and info["info"]
    again = compile_client.request({"op": "print", "key": session.current_sha, "text": before})
    assert again["ir"] == before
    # a module parsed after the inspections still has the names of the file
    fresh = compile_client.request({"op": "parse", "text": before})
    assert fresh["ok"] and fresh["ir"] == before


def test_hand_edit_of_a_payload_with_resources_keeps_their_names(ctx, tmp_path):
    ok(ctx, f"load {PAYLOAD}")
    original = ctx.session.current_ir
    names = _resource_names(original)
    edited = tmp_path / "edited.mlir"
    edited.write_text(original.replace("func.func @", "func.func @edited_", 1))
    ok(ctx, f"edit-apply {edited}")
    assert _resource_names(ctx.session.current_ir) == names
    assert "@edited_" in ctx.session.current_ir
    ok(ctx, "pass canonicalize")
    assert _resource_names(ctx.session.current_ir) == names


def _sent_run_requests(monkeypatch) -> list[dict]:
    """The requests the run workers get from here on (RunClient.run wrapped)."""
    from workbench.execution.runner import RunClient

    sent: list[dict] = []
    real = RunClient.run

    def run(self, req, *args, **kwargs):
        sent.append(req)
        return real(self, req, *args, **kwargs)

    monkeypatch.setattr(RunClient, "run", run)
    return sent


def test_the_cpu_run_worker_gets_the_weights_as_bytecode_and_the_text_without_them(ctx, monkeypatch):
    """Printing a model's weights as hex and parsing them back cost ~20 s a GB each way (GPT-2 small: 1.3 GB of
    LLVM-dialect text); bytecode carries the same module in half the bytes, written and parsed in ~3 s. The
    run and its check (the reference run too) give the results they gave from the text."""
    ok(ctx, f"load {PAYLOAD}")
    blob = re.search(r'"0x([0-9A-F]{64,})"', ctx.session.current_ir).group(1)
    sent = _sent_run_requests(monkeypatch)
    res = ok(ctx, "run --check")
    assert res.data["run"]["check"]["passed"]
    assert len(sent) == 2                       # the payload's run and the reference's
    for req in sent:
        assert isinstance(req["llvm_bytecode"], bytes) and len(req["llvm_bytecode"]) > len(blob) // 2
        assert blob not in req["llvm"] and "dense_resource<" in req["llvm"]
        assert "llvm.mlir.global" in req["llvm"]   # the ops' text stays (library symbols are read from it)


def test_a_jit_failure_on_bytecode_quotes_the_text_lines_as_before(ctx, monkeypatch, tmp_path):
    """Where the JIT refuses the module, the worker tries its whole text: the error names the op's line."""
    text = PAYLOAD.read_text()
    # a blob one element short: the translation to LLVM IR refuses its size
    broken = re.sub(r'("0x[0-9A-F]{8})([0-9A-F]{8})', r"\1", text, count=1)
    path = tmp_path / "short.mlir"
    path.write_text(broken)
    ok(ctx, f"load {path}")
    sent = _sent_run_requests(monkeypatch)
    error = failed(ctx, "run")
    assert sent and sent[0].get("llvm_bytecode")
    assert "dense_resource<" in error, error
    assert "does not match" in error and "llvm.mlir.global" in error, error


# -- weights bound to the JIT as data ------------------------------------------------------------------------------

def _weights_payload(path, layers: int = 3, dim: int = 64, rows: int = 4) -> list:
    """x @ W0 @ W1 ... with each W a `dense_resource` blob of dim x dim f32 (16 KB at 64); the weights."""
    import numpy as np

    rng = np.random.default_rng(7)
    act, w = f"tensor<{rows}x{dim}xf32>", f"tensor<{dim}x{dim}xf32>"
    weights = [rng.uniform(-1, 1, (dim, dim)).astype(np.float32) for _ in range(layers)]
    body, h = [], "%x"
    for i in range(layers):
        body.append(f"  %w{i} = arith.constant dense_resource<weight_{i}> : {w}\n"
                    f"  %h{i} = linalg.matmul ins({h}, %w{i} : {act}, {w}) outs(%z : {act}) -> {act}\n")
        h = f"%h{i}"
    blobs = ",\n".join(f'      weight_{i}: "0x04000000{a.tobytes().hex().upper()}"' for i, a in enumerate(weights))
    path.write_text(f"func.func @main(%x: {act}) -> {act} {{\n  %zero = arith.constant 0.0 : f32\n"
                    f"  %e = tensor.empty() : {act}\n  %z = linalg.fill ins(%zero : f32) outs(%e : {act}) -> {act}\n"
                    + "".join(body) + f"  return {h} : {act}\n}}\n"
                    f"{{-#\n  dialect_resources: {{\n    builtin: {{\n{blobs}\n    }}\n  }}\n#-}}\n")
    return weights


def _run_answers(monkeypatch) -> list[dict]:
    """The answers of the run workers from here on."""
    from workbench.execution.runner import RunClient

    answers: list[dict] = []
    real = RunClient.run

    def run(self, req, *args, **kwargs):
        answers.append(real(self, req, *args, **kwargs))
        return answers[-1]

    monkeypatch.setattr(RunClient, "run", run)
    return answers


def test_big_weights_are_bound_to_the_jit_as_data_with_the_same_results(ctx, tmp_path, monkeypatch):
    """GPT-2 small's `run` spent ~16 s translating its 500 MB of weights to LLVM constants and emitting them into
    the object code; the run worker now declares such globals external and binds them to the blobs' bytes. The
    outputs are the model's (numpy), the reference's, and bit for bit those of the weights compiled in."""
    import numpy as np

    from conftest import load_npys

    weights = _weights_payload(tmp_path / "w.mlir")
    ok(ctx, f"load {tmp_path / 'w.mlir'}")
    answers = _run_answers(monkeypatch)
    run = ok(ctx, f"run --check --iterations 1 --warmup 0 --save-outputs {tmp_path / 'data'}").data["run"]
    assert run["check"]["passed"]
    assert len(answers) == 2 and all(a.get("external_weights") == {"globals": 3, "bytes": 3 * 64 * 64 * 4}
                                     for a in answers), [a.get("external_weights") for a in answers]
    (x,), (got,) = load_npys(tmp_path / "data", "input"), load_npys(tmp_path / "data", "output")
    want = x.astype(np.float64)
    for w in weights:
        want = want @ w.astype(np.float64)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)

    monkeypatch.setenv("LH_WORKBENCH_WEIGHTS_AS_CODE", "1")   # as before: the weights are constants of the code
    ok(ctx, f"run --iterations 1 --warmup 0 --save-outputs {tmp_path / 'code'}")
    assert "external_weights" not in answers[-1]
    assert np.array_equal(load_npys(tmp_path / "code", "output")[0].view(np.uint32), got.view(np.uint32))


def test_a_big_blob_of_the_wrong_size_is_not_bound_and_its_error_is_the_translations(ctx, tmp_path):
    """A blob one element short is left to the translation to LLVM IR, which names it (not bound to too few bytes)."""
    _weights_payload(tmp_path / "w.mlir")
    text = (tmp_path / "w.mlir").read_text()
    path = tmp_path / "short.mlir"
    path.write_text(re.sub(r'(weight_1: "0x04000000)([0-9A-F]{8})', r"\1", text, count=1))
    ok(ctx, f"load {path}")
    error = failed(ctx, "run --iterations 1 --warmup 0")
    assert "dense_resource<weight_1>" in error and "does not match" in error, error


def test_the_blobs_of_a_bytecode_file_are_read_in_place():
    import io

    from mlir import ir

    from workbench.worker.bytecode_resources import builtin_blobs

    text = PAYLOAD.read_text()
    hexes = dict(re.findall(r'(\S+): "0x([0-9A-Fa-f]+)"', text))
    with ir.Context():
        buffer = io.BytesIO()
        ir.Module.parse(text).operation.write_bytecode(buffer)
    data = buffer.getvalue()
    blobs = builtin_blobs(data)
    assert set(blobs) == set(hexes) and len(blobs) == 4
    for name, blob in blobs.items():
        assert bytes(blob) == bytes.fromhex(hexes[name][8:]), name   # (the text's first 4 bytes: the alignment)
    assert builtin_blobs(data[:len(data) // 2]) == {} and builtin_blobs(b"not bytecode") == {}
