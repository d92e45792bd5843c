"""What `select --apply` costs in the compile worker (bench/select_time.py times it): each IR inspected once, the
steps' parameter checks without loop structures, and the printed step results exactly the printer's text."""
from __future__ import annotations

import hashlib

import pytest

from conftest import FIXTURES, ok

LAYER = FIXTURES / "torch" / "transformer_layer.mlir"   # a torch-mlir export: weights as dense_resource blobs


@pytest.fixture
def spied(compile_client):
    """A CommandContext over a fresh session, and the list of the requests it sent to the compile worker."""
    from workbench.commands import CommandContext, default_registry
    from workbench.session import Session

    s = Session(client=compile_client)
    sent: list[dict] = []
    send = s.client.request

    def request(req, *args, **kwargs):
        sent.append(dict(req))
        return send(req, *args, **kwargs)

    s.client.request = request
    return CommandContext(s, default_registry()), sent


def test_select_inspects_each_ir_once_and_checks_parameters_without_loops(spied):
    ctx, sent = spied
    ok(ctx, f"load {LAYER}")
    ok(ctx, "target cpu --threads 1")
    sent.clear()
    res = ok(ctx, "select --apply")
    s = ctx.session
    assert len(res.data["steps"]) == s.cursor > 10
    inspections = [(r["key"], r.get("loops", True), r.get("only")) for r in sent if r["op"] == "inspect"]
    # the front-end and preparation steps, and the selection, read the same IR: asked for once
    assert len(inspections) == len(set(inspections))
    # loop structures (a generalized copy of the whole module) only for the preparation and the selection;
    # the checks of each per-op step's parameters against its op's dims read that op alone
    with_loops = [key for key, loops, _ in inspections if loops]
    assert 1 <= len(with_loops) <= 2, with_loops
    checks = [only for _, loops, only in inspections if not loops]
    assert checks and all(checks)
    # a kept inspection is handed out as a copy: a caller's change does not reach the next one
    info = s.inspect()
    assert info["ops"]
    info["ops"].clear()
    assert s.inspect()["ops"]
    assert sum(r["op"] == "inspect" for r in sent) == len(inspections) + 1   # (the last IR: asked once)


def test_inspection_without_loops_has_the_same_ops():
    from mlir import ir

    from workbench.worker import payload_inspect

    with ir.Context():
        module = ir.Module.parse(LAYER.read_text())
        full = payload_inspect.inspect_module(module)
        light = payload_inspect.inspect_module(module, loops=False)
    assert any("loops" in op for op in full["ops"]) and not any("loops" in op for op in light["ops"])
    assert [{k: v for k, v in op.items() if k != "loops"} for op in full["ops"]] == light["ops"]
    assert {k: v for k, v in full.items() if k != "ops"} == {k: v for k, v in light.items() if k != "ops"}
    # one op by its id: the same description (the ids of untagged ops counted over the whole module)
    for op in light["ops"][::7]:
        with ir.Context():
            alone = payload_inspect.inspect_module(ir.Module.parse(LAYER.read_text()), loops=False, only=op["id"])
        assert len(alone["ops"]) == 1 and alone["ops"][0] == {k: op[k] for k in alone["ops"][0]}
        assert alone["ops"][0]["id"] == op["id"] and alone["ops"][0].get("dims") == op.get("dims")


def test_printed_weights_section_is_kept_and_the_text_is_the_printers():
    from mlir import ir, passmanager

    from workbench.common.compact_text import BlobSender, split_blobs
    from workbench.worker.resource_print import SectionCache

    def whole(module) -> bytes:
        return module.operation.get_asm(binary=True, assume_verified=True)

    text = LAYER.read_text()
    cache = SectionCache()
    with ir.Context() as context:
        module = ir.Module.parse(text)
        first = cache.print(module)
        assert first.text().encode() == whole(module) and first.sha == hashlib.sha256(whole(module)).hexdigest()
        assert cache.full_prints == 1
        # a step that changes the ops, not the weights: the kept section, no whole print
        before = whole(module)
        passmanager.PassManager.parse("builtin.module(func.func(linalg-generalize-named-ops))").run(module.operation)
        assert whole(module) != before
        second = cache.print(module)
        assert second.text().encode() == whole(module) and second.sha == hashlib.sha256(whole(module)).hexdigest()
        assert cache.full_prints == 1
        # the compact form (what the session keeps) splits the same as the whole text
        sender = BlobSender()
        parts, new = second.compact(sender)
        assert (parts, new) == split_blobs(whole(module).decode())
        assert len(new) >= 1 and second.compact(sender) == (parts, {})   # (each blob sent once)
        # the same text parsed again into this context: its blobs are renamed (w -> w_1), so other
        # references: printed whole once more, still exact
        again = ir.Module.parse(text, context)
        third = cache.print(again)
        assert third.text().encode() == whole(again) and cache.full_prints == 2
    with ir.Context():   # another context: its blobs are its own, whatever their names
        other = ir.Module.parse(text)
        assert cache.print(other).text().encode() == whole(other) and cache.full_prints == 3


def test_select_results_are_the_printers_text(spied):
    """Every IR select --apply stored (printed with the kept weights) hashes to its key and is the text MLIR
    prints for it after a parse in a fresh context."""
    from mlir import ir

    ctx, _ = spied
    ok(ctx, f"load {LAYER}")
    ok(ctx, "target cpu --threads 1")
    ok(ctx, "select --apply")
    s = ctx.session
    for index in range(s.cursor + 1):
        text = s.ir_at(index)
        assert hashlib.sha256(text.encode()).hexdigest() == s.sha_at(index)
    for index in (1, s.cursor // 2, s.cursor):
        with ir.Context():
            reparsed = ir.Module.parse(s.ir_at(index))
            assert str(reparsed) == s.ir_at(index)


def test_library_modules_are_loaded_once_until_their_file_changes(tmp_path, monkeypatch):
    import workbench.targets.cpu as cpu

    (tmp_path / "sel.py").write_text("VALUE = 1\n")
    monkeypatch.setattr(cpu, "LIBRARY_DIR", tmp_path)
    first = cpu._load_library_module("sel.py")
    assert cpu._load_library_module("sel.py") is first and first.VALUE == 1
    (tmp_path / "sel.py").write_text("VALUE = 22\n")   # (another size: seen even within the mtime's granularity)
    assert cpu._load_library_module("sel.py").VALUE == 22
