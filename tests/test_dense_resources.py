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
