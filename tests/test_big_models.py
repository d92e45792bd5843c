"""Real-size models (weights in the IR): what travels between the front end and the compile worker per
step, what the session keeps per step, and what is shown, must not grow with the weights; the exact IR
(save, replay, `show --full`, a worker that died) must stay exact."""
from __future__ import annotations

import os
import random
from multiprocessing import connection

import pytest

from conftest import REPO, do, ok, step
from workbench.common.compact_text import BLOB_MIN_CHARS, BlobStore, CompactText, split_blobs

STEPS = ["pipelines/lib/tile.mlir[seq=tile_parallel]", "pass canonicalize", "pipelines/lib/tile.mlir",
         "pass cse", "rewrite tag-ops"]


def _hex(n_bytes: int, seed: int) -> str:
    return random.Random(seed).randbytes(n_bytes).hex().upper()


def weighted_payload(path, n: int) -> tuple:
    """A matmul by an n x n f32 weight (a `dense_resource` blob) plus a bias (an inline dense hex
    literal): about 8 n^2 characters of weights. Returns (path, weight characters)."""
    w, b = _hex(4 * n * n, 1), _hex(4 * n * n, 2)
    t = f"tensor<{n}x{n}xf32>"
    path.write_text(
        f"func.func @main(%A: {t}) -> {t} {{\n"
        f"  %w = arith.constant dense_resource<weight> : {t}\n"
        f"  %b = arith.constant dense<\"0x{b}\"> : {t}\n"
        f"  %0 = linalg.matmul ins(%A, %w : {t}, {t}) outs(%b : {t}) -> {t}\n"
        f"  return %0 : {t}\n}}\n"
        f"{{-# dialect_resources: {{ builtin: {{ weight: \"0x04000000{w}\" }} }} #-}}\n")
    return path, len(w) + len(b)


class _Received:
    """Bytes that came in through any multiprocessing connection of this process while active."""

    def __init__(self, monkeypatch):
        self.bytes = 0
        original = connection.Connection._recv_bytes

        def counted(conn, maxsize=None):
            buf = original(conn, maxsize)
            self.bytes += buf.getbuffer().nbytes
            return buf

        monkeypatch.setattr(connection.Connection, "_recv_bytes", counted)


# -- the compact text itself ------------------------------------------------------------------------

def test_compact_text_gives_back_the_exact_text_and_elides_only_long_literals():
    long_hex = "0x" + "AB" * BLOB_MIN_CHARS
    long_words = "word " * BLOB_MIN_CHARS
    text = (f'%a = arith.constant dense<"{long_hex}"> : tensor<8xf32>\n'
            f'%s = "test.op"() {{msg = "short \\"quoted\\" string", doc = "{long_words}"}} : () -> ()\n'
            f'{{-# dialect_resources: {{ builtin: {{ w: "{long_hex}", v: "0x0400" }} }} #-}}\n')
    parts, blobs = split_blobs(text)
    assert len(blobs) == 1 and len(parts) == 5          # the same literal twice: one blob, two references
    store = BlobStore()
    store.add(blobs)
    compact = CompactText(parts, store)
    assert compact.expand() == text and len(compact) == len(text)
    assert compact.count("\n") == text.count("\n")
    shown = compact.elided()
    assert long_hex not in shown and shown.count("__elided__") == 2 and len(shown) < len(long_words) + 1000
    assert 'msg = "short \\"quoted\\" string"' in shown and '"0x0400"' in shown
    assert long_words in shown              # only hex data is a blob: other long strings are text


def test_blobs_alike_at_both_ends_are_told_apart():
    """Weights that differ only in the middle (zeros around a few values): two blobs, each sent once."""
    from workbench.common.compact_text import BlobSender

    def literal(middle: str) -> str:
        return "0x" + "00" * BLOB_MIN_CHARS + middle + "00" * BLOB_MIN_CHARS

    text = "".join(f'%{i} = arith.constant dense<"{literal(m)}"> : tensor<8xf32>\n' for i, m in enumerate("1234"))
    sender, store = BlobSender(), BlobStore()
    for attempt in range(2):
        parts, new = sender.compact(text)
        store.add(new)
        assert len(new) == (4 if attempt == 0 else 0)
        assert CompactText(parts, store).expand() == text


# -- a session on a payload with weights ----------------------------------------------------------

@pytest.fixture
def fresh_session():
    from workbench.session import Session

    s = Session()
    s.journal_enabled = False
    yield s
    s.close()


def _apply_all(s, printed: bool) -> list:
    return [s.apply(step(text, REPO), printed=printed) for text in STEPS]


@pytest.mark.parametrize("printed", [True, False])
def test_bytes_per_step_do_not_grow_with_the_weights(fresh_session, tmp_path, monkeypatch, printed):
    """Every step's IR comes back to the front end (printed: at once; lazily: as its backup); weights the
    front end holds already are not sent again, whatever their size. (Weights of a few MB: below a
    megabyte a lazy step's backup is its bytecode, weights included.)"""
    s = fresh_session
    per_step = {}
    for n in (400, 800):
        payload, weight_chars = weighted_payload(tmp_path / f"w{n}.mlir", n)
        s.load(payload)
        received = _Received(monkeypatch)
        _apply_all(s, printed)
        s.client.settle()
        per_step[n] = received.bytes / len(STEPS)
        monkeypatch.undo()
        assert per_step[n] < weight_chars / 10, (n, per_step[n], weight_chars)
    assert per_step[800] < 2 * per_step[400]      # 4x the weights, about the same bytes


def test_memory_of_steps_holds_the_weights_once(fresh_session, tmp_path):
    s = fresh_session
    payload, weight_chars = weighted_payload(tmp_path / "w.mlir", 128)
    s.load(payload)
    after_load = s.irs.nbytes()
    applied = _apply_all(s, printed=True)
    distinct = {a.output_sha for a in applied}
    assert len(distinct) >= 4
    grown = s.irs.nbytes() - after_load
    assert after_load >= weight_chars
    assert grown < weight_chars / 4, (grown, weight_chars)     # not one copy of the weights per step
    assert all(weight_chars < len(s.ir_at(i)) for i in range(len(STEPS) + 1))


def test_elided_view_saves_and_replays_the_full_module(tmp_path, compile_client):
    from workbench.commands import CommandContext, default_registry
    from workbench.session import Session, read_session_file, replay_into

    payload, weight_chars = weighted_payload(tmp_path / "w.mlir", 96)
    exact_payload = compile_client.request({"op": "parse", "text": payload.read_text()})["ir"]
    s = Session()
    s.journal_enabled = False
    ctx = CommandContext(s, default_registry())
    try:
        ok(ctx, f"load {payload}")
        for text in STEPS[:3]:
            ok(ctx, f"apply {text}")
        shown = ok(ctx, "show")
        assert "__elided__" in shown.body and len(shown.body) < weight_chars / 10
        assert shown.data["elided"] and "show --full" in shown.summary
        full = ok(ctx, "show --full")
        assert full.body == s.ir_at(s.cursor) and len(full.body) > weight_chars
        assert ok(ctx, "show 0 --full").body == exact_payload
        assert "__elided__" in ok(ctx, "diff 0 1").body or not do(ctx, "diff 0 1").body
        ok(ctx, f"save {tmp_path / 'sess.yaml'}")
        expected_sha, expected_ir = s.current_sha, s.ir_at(s.cursor)
    finally:
        s.close()
    again = Session(client=compile_client)
    loaded = read_session_file(tmp_path / "sess.yaml")
    again.load(loaded.payload)
    reports = replay_into(again, loaded)
    assert all(r.ok for r in reports) and again.current_sha == expected_sha
    assert again.ir_at(again.cursor) == expected_ir


def test_a_worker_killed_mid_session_loses_nothing(fresh_session, tmp_path):
    """Printed steps, lazy steps (their backup on its way), a killed worker: every step's exact text
    is still there, and the next step runs on the IR sent again, as a fresh session makes it."""
    from workbench.session import Session

    s = fresh_session
    payload, _ = weighted_payload(tmp_path / "w.mlir", 128)
    s.load(payload)
    first = [s.apply(step(text, REPO), printed=True) for text in STEPS[:2]]
    lazy = s.apply(step(STEPS[2], REPO))
    texts = [s.ir_at(i) for i in range(len(first) + 1)]
    os.kill(s.client.proc.pid, 9)
    s.client.proc.wait()
    texts.append(s.ir_at(3))             # the lazy step: its backup, or made again from its recipe
    last = s.apply(step(STEPS[3], REPO), printed=True)
    assert [s.ir_at(i) for i in range(4)] == texts and lazy.output_sha == s.sha_at(3)
    eager = Session()
    eager.journal_enabled = False
    try:
        eager.load(payload)
        for text in STEPS[:4]:
            eager.apply(step(text, REPO), printed=True)
        assert [eager.ir_at(i) for i in range(5)] == texts + [s.ir_at(4)]
        assert eager.current_sha == last.output_sha
    finally:
        eager.close()


def test_the_payload_stays_in_the_worker_past_many_steps(fresh_session, tmp_path, monkeypatch):
    """`select` on a model adds more steps than the worker's cache holds; `run --check`'s reference
    still starts from the payload, which must not travel again (its weights)."""
    from workbench.worker.compile_worker import CACHE_SIZE

    s = fresh_session
    payload, weight_chars = weighted_payload(tmp_path / "w.mlir", 128)
    s.load(payload)
    for _ in range(CACHE_SIZE + 2):
        s.apply(step("pass canonicalize", REPO))          # lazy: a new module in the worker each time
    s.client.settle()
    sent = []
    real_request = type(s.client._client).request
    monkeypatch.setattr(type(s.client._client), "request",
                        lambda self, req, **kw: sent.append(req) or real_request(self, req, **kw))
    info = s.request_on_ir(s.key_at(0), {"op": "inspect"})
    assert info["ok"] and len(sent) == 1 and "text" not in sent[0]
