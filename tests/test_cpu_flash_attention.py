"""Attention over key blocks with an online softmax (lh-flash-attention, docs/attention-round15.md): for long
key sequences the CPU selector's preparation computes attention R query rows and K keys at a time with a
running max and sum, the division (and torch's fully-masked-row guard) after P V; no row of scores is
materialized past K columns.

Fixtures: tests/fixtures/sdpa/ (torch's sdpa, tests/fixtures/sdpa/sdpa_modules.py, with torch's inputs
and outputs): sdpa_masked_240 (causal mask, row 1 fully masked), sdpa_200 (no mask).
"""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from conftest import load_npys, lower_and_check_fixture, ok

SDPA = Path(__file__).parent / "fixtures" / "sdpa"
PREPARATION = ("lh-drop-dead-results", "lh-fold-all-neg-inf-checks", "lh-fuse-elementwise", "lh-softmax-reciprocals")


def _flash(ctx, name: str, rows: int, keys: int) -> tuple[str, str]:
    ok(ctx, f"load {SDPA / (name + '.mlir')}")
    for p in PREPARATION:
        ok(ctx, f"pass {p}")
    before = ctx.session.current_ir
    ok(ctx, f"pass lh-flash-attention{{rows={rows} keys={keys}}}")
    return before, ctx.session.current_ir


@pytest.mark.parametrize("name,tokens,rows,keys", [("sdpa_masked_240", 240, 40, 80), ("sdpa_200", 200, 50, 40)])
def test_attention_runs_over_key_blocks(ctx, tmp_path, name, tokens, rows, keys):
    """The pass alone: a loop over the key blocks inside the loops over heads and row blocks, R x K score
    blocks only, the division after P V; torch's outputs (the fully masked row: zeros)."""
    before, after = _flash(ctx, name, rows, keys)
    assert f"x{tokens}x{tokens}xf32>" in before
    assert f"x{tokens}x{tokens}xf32>" not in after                     # no whole scores tensor
    assert f"tensor<1x{rows}x{keys}xf32>" in after                      # a block of scores
    assert re.search(rf"scf.for %\w+ = %c0 to %c{tokens}\w* step %c{keys}\b", after)   # the key loop
    assert re.search(rf"scf.for %\w+ = %c0 to %c{tokens}\w* step %c{rows}\b", after)   # the row blocks
    # the running max / sum: the block's max reduction, max(m, block max) for the rescale exp(m - m') and
    # over m itself, a sum into the loop's carried rows
    assert after.count("arith.maximumf") == 3 and after.count("math.exp") == 2
    lower_and_check_fixture(ctx, SDPA / f"{name}.mlir", save=tmp_path)
    out = load_npys(tmp_path, "output")[0]
    assert np.all(np.isfinite(out))
    if name == "sdpa_masked_240":
        assert np.all(out[0, :, 1, :] == 0.0) and np.abs(out[0, :, 0, :]).max() > 0.1


def test_blocks_that_do_not_divide_leave_attention_as_it_is(ctx):
    for rows, keys in ((7, 80), (40, 7), (40, 240)):     # (a key block of the whole row is no flash loop)
        before, after = _flash(ctx, "sdpa_masked_240", rows, keys)
        assert after == before


def _select_flash(ctx, monkeypatch, name: str, threads: int) -> tuple:
    """The fixture NAME selected on THREADS threads past FLASH_MIN_KEYS (lowered here for small payloads): the
    fixture, the selection data, the one lh-flash-attention step (with parallel=1 on several threads), its rows and
    keys, and the sequence length. The caller resets the target."""
    from workbench.targets import cpu

    monkeypatch.setattr(cpu, "FLASH_MIN_KEYS", 128)
    monkeypatch.setattr(cpu, "FLASH_MAX_KEYS", 64)
    fixture = SDPA / f"{name}.mlir"
    ok(ctx, f"load {fixture}")
    ok(ctx, f"target cpu --threads {threads}")
    data = ok(ctx, "select --apply").data
    (flash,) = [p for p in data["prepared"] if "lh-flash-attention" in p]
    parallel = " parallel=1" if threads > 1 else ""
    rows, keys = (int(x) for x in re.fullmatch(rf"pass lh-flash-attention\{{rows=(\d+) keys=(\d+){parallel}\}}",
                                               flash).groups())
    return fixture, data, flash, rows, keys, int(name.rsplit("_", 1)[1])


@pytest.mark.parametrize("name", ["sdpa_masked_240", "sdpa_200"])
def test_the_selector_takes_flash_attention_for_long_key_sequences(ctx, monkeypatch, tmp_path, name):
    """Past FLASH_MIN_KEYS keys (lowered here for small payloads) on one core, the selector's preparation
    has lh-flash-attention with rows and keys that divide the sequence; its per-op steps then schedule the
    block contractions with the batch matmul schedule inside the loops; torch's outputs."""
    try:
        fixture, data, flash, rows, keys, tokens = _select_flash(ctx, monkeypatch, name, 1)
        assert tokens % rows == 0 and tokens % keys == 0 and keys <= 64 and keys % 4 == 0, flash
        specs = [str(s["schedule"]) for s in data["selections"]]
        assert not any("attention_blocks" in s for s in specs), specs
        family = [s for s in data["selections"] if "batch_matmul_tiling" in str(s["schedule"])]
        assert len(family) == 2 and {s["params"]["block_m"] for s in family} == {rows}, family
        lower_and_check_fixture(ctx, fixture, threads=1, save=tmp_path)
    finally:
        ok(ctx, "target cpu --cpu host --threads 0")
    if name == "sdpa_masked_240":
        out = load_npys(tmp_path, "output")[0]
        assert np.all(out[0, :, 1, :] == 0.0) and np.all(np.isfinite(out))


def test_short_sequences_keep_whole_rows(ctx, monkeypatch):
    """Below FLASH_MIN_KEYS (240 keys at the default), on one core or two, no lh-flash-attention: the
    blocks of whole rows."""
    from workbench.targets import cpu

    monkeypatch.setattr(cpu, "ATTENTION_SCORE_BYTES", 1 << 16)
    for threads in (1, 2):
        ok(ctx, f"load {SDPA / 'sdpa_masked_240.mlir'}")
        try:
            ok(ctx, f"target cpu --threads {threads}")
            data = ok(ctx, "select --apply").data
            assert not [p for p in data["prepared"] if "flash" in p], data["prepared"]
            assert "attention_blocks" in str(data["selections"][0]["schedule"])
        finally:
            ok(ctx, "target cpu --cpu host --threads 0")


@pytest.mark.parametrize("name", ["sdpa_masked_240", "sdpa_200"])
def test_flash_attention_splits_its_row_blocks_over_the_cores(ctx, monkeypatch, tmp_path, name):
    """On two cores past FLASH_MIN_KEYS (lowered here) the selector takes lh-flash-attention with
    parallel=1: one scf.forall over the heads and the row blocks (at least a block per core), the key loop
    inside it, each block writing its rows of the running max, sum and output with parallel_insert_slice;
    the block contractions scheduled for one core inside it; lowered, the forall runs on the thread team;
    torch's outputs (the fully masked row zeros)."""
    from conftest import runs_parallel_loops_on_threads

    try:
        fixture, data, flash, rows, keys, tokens = _select_flash(ctx, monkeypatch, name, 2)
        assert tokens % rows == 0 and tokens % keys == 0 and tokens // rows >= 2, flash
        assert not any("attention_blocks" in str(s["schedule"]) for s in data["selections"])
        family = [s for s in data["selections"] if "batch_matmul_tiling" in str(s["schedule"])]
        assert len(family) == 2 and all(s["params"].get("threads", 1) == 1 and s["params"].get("threads_m", 1) == 1
                                        for s in family), family
        ok(ctx, f"load {fixture}")
        for p in PREPARATION:
            ok(ctx, f"pass {p}")
        ok(ctx, flash)
        ir = ctx.session.current_ir
        # (the fusion merged the unit batch with the 2 heads)
        heads = 2 if name == "sdpa_masked_240" else 3
        assert re.search(rf"scf.forall \(%\w+, %\w+\) = \(0, 0\) to \({heads}, {tokens}\) step \(1, {rows}\)", ir)
        assert ir.count("tensor.parallel_insert_slice") == 3
        assert re.search(rf"scf.for %\w+ = %c0 to %c{tokens}\w* step %c{keys}\b", ir)
        ok(ctx, f"load {fixture}")
        ok(ctx, "select --apply")
        ok(ctx, "bench warmup=0 iterations=1")
        ok(ctx, "apply cpu-lower")
        assert runs_parallel_loops_on_threads(ctx.session.current_ir)
        ok(ctx, f"load {fixture}")
        ok(ctx, "select --apply")
        lower_and_check_fixture(ctx, fixture, threads=2, save=tmp_path)
    finally:
        ok(ctx, "target cpu --cpu host --threads 0")
    out = load_npys(tmp_path, "output")[0]
    assert np.all(np.isfinite(out))
    if name == "sdpa_masked_240":
        assert np.all(out[0, :, 1, :] == 0.0) and np.abs(out[0, :, 0, :]).max() > 0.1


def test_a_contraction_in_a_forall_chunk_runs_on_one_core():
    """A batch contraction large enough for both cores gets threads=2, the same in a chunk of a forall (the
    parallel flash attention's blocks: the forall is what runs on the cores) threads=1."""
    from workbench.targets import get_target

    target = get_target("cpu").for_cpu("host", threads=2)
    op = {"op": "linalg.generic", "layout": "batch", "id": "generic_2", "dtype": "f32", "in_dtype": "f32",
          "kind": "contraction", "dims": {"b": 1, "m": 64, "n": 512, "k": 64}, "batch_dims": [1]}
    _, params = target.matmul_family_entry(op)
    assert params.get("threads", 1) * params.get("threads_m", 1) == 2, params
    _, params = target.matmul_family_entry(dict(op, in_parallel_loop=True))
    assert params.get("threads", 1) == 1 and params.get("threads_m", 1) == 1, params


MAX_ROWS = """#id = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#row = affine_map<(d0, d1, d2) -> (d0, d1)>
func.func @main(%x: tensor<1x60x45xf32>, %m: tensor<1x60xf32>) -> tensor<1x60xf32> {
  %r = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x : tensor<1x60x45xf32>) outs(%m : tensor<1x60xf32>) {
  ^bb0(%a: f32, %o: f32):
    %v = arith.KIND %a, %o : f32
    linalg.yield %v : f32
  } -> tensor<1x60xf32>
  return %r : tensor<1x60xf32>
}
"""


@pytest.mark.parametrize("kind", ["maximumf", "minimumf"])
def test_a_masked_remainder_of_a_max_reduction_counts_no_zeros(ctx, tmp_path, kind):
    """A row max over 45 keys in vector tiles (of 32 on AVX-512, 16 on AVX2; 45 is no multiple of a half vector
    either, which the selector would take for a row it divides: the last tile masked on any host, as the running
    max of the flash blocks) of rows all -inf or all -5 is -inf / -5,
    not the -0.0 the masked lanes gave (lh-unmask-fp-reductions in cpu-lower); the min likewise with +inf / +5."""
    sign = 1.0 if kind == "maximumf" else -1.0
    x = np.full((1, 60, 45), -5.0 * sign, np.float32)
    x[0, 0] = -np.inf * sign
    m = np.full((1, 60), -np.inf * sign, np.float32)
    payload = tmp_path / "rows.mlir"
    payload.write_text(MAX_ROWS.replace("KIND", kind))
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "m.npy", m)
    ok(ctx, f"load {payload}")
    try:
        ok(ctx, "target cpu --threads 1")
        data = ok(ctx, "select --apply").data
        (generic,) = [s for s in data["selections"] if "tile_vectorize" in str(s["schedule"])]
        assert 45 % generic["params"]["tile"][-1], generic      # a masked remainder tile
        ok(ctx, "apply cpu-lower")
        ok(ctx, f"run --iterations 1 --warmup 0 --npy {tmp_path / 'x.npy'},{tmp_path / 'm.npy'} "
                f"--save-outputs {tmp_path / 'out'}")
    finally:
        ok(ctx, "target cpu --cpu host --threads 0")
    out = load_npys(tmp_path / "out", "output")[0]
    assert out[0, 0] == -np.inf * sign and np.all(out[0, 1:] == -5.0 * sign), out[0, :4]


@pytest.mark.parametrize("threads", [1, 2])
def test_grouped_query_attention_gets_the_row_blocks(ctx, monkeypatch, tmp_path, threads):
    """Grouped-query heads (tests/fixtures/sdpa/sdpa_modules.py:SdpaGqa, 4 query heads over 2 K/V heads,
    transformers' repeat_kv; a causal mask with a fully masked row): the fusion leaves the mask's addition
    over 2 x 2 heads between reshapes of the 4-head scores; lh-merge-contraction-batches merges its batch
    loops (and P V's), so the softmax reads Q K^T directly and the selector blocks the attention by query
    rows (docs/attention-round14.md) as for plain heads; torch's outputs."""
    from workbench.targets import cpu

    monkeypatch.setattr(cpu, "ATTENTION_SCORE_BYTES", 1 << 16)
    fixture = SDPA / "sdpa_gqa_256.mlir"
    ok(ctx, f"load {fixture}")
    try:
        ok(ctx, f"target cpu --threads {threads}")
        data = ok(ctx, "select --apply").data
        assert "pass lh-merge-contraction-batches" in data["prepared"], data["prepared"]
        assert "attention_blocks" in str(data["selections"][0]["schedule"]), data["selections"][0]
        assert "x256x256xf32>" not in ctx.session.current_ir          # no whole scores tensor
        lower_and_check_fixture(ctx, fixture, threads=threads, save=tmp_path)
    finally:
        ok(ctx, "target cpu --cpu host --threads 0")
    out = load_npys(tmp_path, "output")[0]
    assert np.all(out[0, :, 1, :] == 0.0) and np.all(np.isfinite(out))


def test_merged_batches_leave_no_split_heads_around_the_softmax(ctx):
    ok(ctx, f"load {SDPA / 'sdpa_gqa_256.mlir'}")
    for p in PREPARATION:
        ok(ctx, f"pass {p}")
    before = ctx.session.current_ir
    ok(ctx, "pass lh-merge-contraction-batches")
    after = ctx.session.current_ir
    assert "tensor<2x2x256x256xf32>" in before and "tensor<2x2x256x256xf32>" not in after
    # the mask (256 x 256, broadcast over the heads) is added over the 4 merged heads
    assert re.search(r"ins\(%\w+, %\w+ : tensor<4x256x256xf32>, tensor<256x256xf32>\)", after)


def test_flash_rows_leave_a_block_per_core():
    """The flash blocks' query rows: the most that fit on one core; on several, the most that leave at least a
    block (of batch x rows) per core, else the fewest that fit (the most blocks)."""
    from workbench.targets import get_target

    # (an AVX-512 machine model whatever the host: AVX2's 6-row register tiles take 64 rows only with a row
    # split, so 32 fit there on any number of cores)
    rows = {t: get_target("cpu").for_cpu("skylake-avx512", threads=t)._flash_rows(256, 128, 64, 64, batch=1)
            for t in (1, 4, 8, 16)}
    assert rows == {1: 64, 4: 64, 8: 32, 16: 32}, rows
    assert get_target("cpu").for_cpu("skylake-avx512", threads=16)._flash_rows(256, 128, 64, 64, batch=2) == 32
    assert get_target("cpu").for_cpu("skylake-avx512", threads=8)._flash_rows(256, 128, 64, 64, batch=2) == 64


@pytest.mark.parametrize("name", ["sdpa_masked_240", "sdpa_200"])
def test_parallel_flash_blocks_allocate_nothing_per_block(ctx, monkeypatch, tmp_path, name):
    """The parallel flash code's blocks cost what the serial nest's do: after cpu-lower the function that runs
    the forall's blocks (lh-parallel-to-gomp's body) calls no malloc / free (the running max, sum and output
    live in the block's rows of the results, updated in place; the block's scratch on the stack, made once per
    chunk); the 2-thread code gives torch's outputs on 2 threads and on 1 (the fully masked row zeros)."""
    from conftest import fixture_io_flags
    from workbench.common.parallel_runtime import parallel_runtime
    from workbench.targets import cpu

    monkeypatch.setattr(cpu, "FLASH_MIN_KEYS", 128)
    monkeypatch.setattr(cpu, "FLASH_MAX_KEYS", 64)
    fixture = SDPA / f"{name}.mlir"
    ok(ctx, f"load {fixture}")
    try:
        ok(ctx, "target cpu --threads 2")
        data = ok(ctx, "select --apply").data
        assert any("parallel=1" in p for p in data["prepared"]), data["prepared"]
        ok(ctx, "bench warmup=0 iterations=1")
        ok(ctx, "apply cpu-lower")
        llvm = ctx.session.current_ir
        texts = re.findall(r"(llvm\.func @\w+_lh_par\d+\(.*?\n  \}\n)", llvm, re.S)
        # (lh-parallel-to-gomp's outlined bodies: only where the loops run on libgomp; MLIR's async runtime
        # outlines them otherwise, and the runs below are still checked)
        assert texts or parallel_runtime() != "gomp", "no outlined parallel body"
        for text in texts:
            assert not re.search(r"llvm\.call @(malloc|free|aligned_alloc|posix_memalign|dealloc_helper)\(",
                                 text), text.split("(", 1)[0]
        for threads in (2, 1):
            save = tmp_path / str(threads)
            run = ok(ctx, f"run --check --iterations 1 --warmup 0 --threads {threads} --save-outputs {save} "
                          f"{fixture_io_flags(fixture)}").data["run"]
            assert run["check"]["passed"] and run["expected_check"]["passed"], run
            out = load_npys(save, "output")[0]
            assert np.all(np.isfinite(out))
            if name == "sdpa_masked_240":
                assert np.all(out[0, :, 1, :] == 0.0) and np.abs(out[0, :, 0, :]).max() > 0.1
    finally:
        ok(ctx, "target cpu --cpu host --threads 0")
