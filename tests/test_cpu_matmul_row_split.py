"""AVX2's 6-row register tile (12 ymm accumulators): a row tile that divides no power-of-two M, so the
matmul schedule splits M into whole blocks of 6-row tiles (`main_m`) and a tail of 4-row ones (`tail_m`),
each part scheduled on its own (pipelines/cpu/matmul.py, matmul_tiling's row split)."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

from conftest import ok

ROOT = Path(__file__).resolve().parents[1]
AVX2 = dict(vector_bits=256, vector_registers=16, l1_bytes=32 << 10, l2_bytes=1 << 20)
AVX512 = dict(vector_bits=512, vector_registers=32, l1_bytes=48 << 10, l2_bytes=2 << 20)


def _library(name: str):
    sys.path.insert(0, str(ROOT / "pipelines" / "cpu"))
    return __import__(name)


def _payload(tmp_path: Path, m: int, n: int, k: int) -> Path:
    path = tmp_path / f"mm{m}x{n}x{k}.mlir"
    path.write_text(f"""func.func @mm(%A: tensor<{m}x{k}xf32>, %B: tensor<{k}x{n}xf32>, %C: tensor<{m}x{n}xf32>) -> tensor<{m}x{n}xf32> {{
  %0 = linalg.matmul ins(%A, %B : tensor<{m}x{k}xf32>, tensor<{k}x{n}xf32>) outs(%C : tensor<{m}x{n}xf32>) -> tensor<{m}x{n}xf32>
  return %0 : tensor<{m}x{n}xf32>
}}
""")
    return path


@pytest.mark.parametrize("m", [64, 100, 1024, 2048, 4096])
def test_avx2_takes_six_row_tiles_and_a_tail_of_four(m):
    matmul = _library("matmul")
    p = matmul.default_params(m, 1024, 512, row_split=True, **AVX2)
    assert p["reg_m"] == 6 and p["reg_n"] == 16, p
    assert p["block_m"] % 6 == 0
    main, tail = p.get("main_m", 0), p.get("tail_m", 0)
    if main:
        assert main + tail == m and main % p["block_m"] == 0 and 0 < tail < p["block_m"]
        assert tail % p["tail_reg_m"] == 0 and p["tail_reg_m"] == 4
    else:
        assert m % p["block_m"] == 0


def test_the_split_keeps_the_tail_small():
    matmul = _library("matmul")
    # 1024 rows: blocks of 102 rows (17 tiles) leave 4 rows, the fewest any block of 64..128 rows leaves
    p = matmul.default_params(1024, 1024, 1024, row_split=True, **AVX2)
    assert (p["block_m"], p["main_m"], p["tail_m"]) == (102, 1020, 4)
    # a block that divides M: no split
    p = matmul.default_params(960, 1024, 1024, row_split=True, **AVX2)
    assert p["reg_m"] == 6 and "main_m" not in p and 960 % p["block_m"] == 0


def test_no_split_where_the_wider_tile_does_not_fit_or_is_not_asked_for():
    matmul = _library("matmul")
    assert matmul.default_params(1024, 1024, 1024, row_split=True, **AVX512)["reg_m"] == 8   # 8 x 2 zmm
    assert "main_m" not in matmul.default_params(1024, 1024, 1024, row_split=True, **AVX512)
    assert matmul.default_params(1024, 1024, 1024, **AVX2)["reg_m"] == 4           # (the family's callers)
    assert matmul.default_params(40, 1024, 1024, row_split=True, **AVX2)["reg_m"] == 4   # few rows
    assert matmul.split_rows(40, 4, 2, 16, 64) is None
    assert matmul.split_rows(1024, 4, 4, 16, 128) is None     # 6 rows of 4 vectors: 31 registers


@pytest.mark.parametrize("params, message", [
    (dict(main_m=96), "a split needs both"),
    (dict(main_m=100, tail_m=4), "block_m=48 must divide main_m=100"),
    (dict(main_m=96, tail_m=6, tail_reg_m=4), "tail_reg_m=4 must divide tail_m=6"),
])
def test_split_parameters_are_checked(params, message):
    matmul = _library("matmul")
    base = dict(block_m=48, block_n=64, block_k=64, reg_m=6, reg_n=16, reg_k=8, pack_tile_a=32, pack_tile_b=8)
    with pytest.raises(ValueError, match=message):
        matmul.matmul_tiling(**base, **params)


def test_selected_avx2_matmul_runs_both_parts_vectorized(ctx, tmp_path):
    """`select` on an AVX2 machine model: one step with the split; after it no linalg.matmul is left (both
    parts became register tiles: 6 x 16 and 4 x 16), and the run matches the reference."""
    ok(ctx, f"load {_payload(tmp_path, 100, 64, 96)}")
    ok(ctx, "target cpu --cpu avx2 --threads 1")
    ok(ctx, "select --apply")
    (step,) = [a.step for a in ctx.session.active_steps if a.step.selected_by]
    assert step.params["reg_m"] == 6 and step.params["main_m"] + step.params["tail_m"] == 100, step.params
    ir_text = ctx.session.current_ir
    assert "linalg.matmul" not in ir_text
    assert "vector<6x16xf32>" in ir_text and "vector<4x16xf32>" in ir_text
    ok(ctx, "bench warmup=0 iterations=2")
    ok(ctx, "apply cpu-lower")
    run = ok(ctx, "run --check").data["run"]
    assert run["check"]["passed"], run["check"]


def test_both_parts_of_a_parallel_chunk_are_scheduled(ctx, tmp_path):
    """Inside an scf.forall chunk the main part's canonicalizations used to leave the tail's handle empty:
    the tail stayed a plain linalg.matmul (scalar loops, half the speed on 16 cores). Both parts are found
    again by their mark; the 2-thread run matches the reference."""
    ok(ctx, f"load {_payload(tmp_path, 200, 64, 128)}")
    ok(ctx, "target cpu --cpu avx2 --threads 2")
    ok(ctx, "apply pipelines/cpu/matmul_parallel.py[gen=matmul_parallel]{threads=2 block_m=48 block_n=32 block_k=128 "
            "reg_m=6 reg_n=16 reg_k=8 pack_tile_a=32 pack_tile_b=8 main_m=192 tail_m=8 tail_reg_m=4}")
    ir_text = ctx.session.current_ir
    assert "scf.forall" in ir_text and "linalg.matmul" not in ir_text
    assert "vector<6x16xf32>" in ir_text and "vector<4x16xf32>" in ir_text
    ok(ctx, "bench warmup=0 iterations=2")
    ok(ctx, "apply cpu-matmul-parallel-lower")
    run = ok(ctx, "run --check --threads 2").data["run"]
    assert run["check"]["passed"], run["check"]


def test_a_split_that_does_not_add_up_to_m_is_refused_with_its_constraint(ctx, tmp_path):
    ok(ctx, f"load {_payload(tmp_path, 100, 64, 96)}")
    res = ctx.registry.dispatch("apply pipelines/cpu/matmul.py[gen=matmul_tiling]{block_m=48 block_n=64 block_k=96 "
                                "reg_m=6 reg_n=16 reg_k=8 pack_tile_a=32 pack_tile_b=8 main_m=48 tail_m=4}", ctx)
    assert not res.ok and "main_m + tail_m == M" in res.error, res.error
    assert "linalg.matmul" in ctx.session.current_ir      # the module is as it was


def _family_payloads():
    from test_cpu_matmul_family import BMM, LINEAR_GENERIC, LINEAR_NAMED

    return [("bmm.mlir", BMM, "batch_matmul_tiling"), ("linear.mlir", LINEAR_NAMED, "matmul_transpose_b_tiling"),
            ("linear_generic.mlir", LINEAR_GENERIC, "matmul_transpose_b_tiling"),
            ("linear_bias_relu_k512.mlir", _bias_relu(128, 512, 512), "matmul_epilogue")]


def _bias_relu(m: int, k: int, n: int) -> str:
    """(K of two cache blocks: an epilogue over the result, the split; K of one block takes the epilogue on the
    register tiles instead, without a split: test_cpu_matmul_family.test_avx2_epilogue_in_registers_*)"""
    from test_cpu_matmul_family import _bias_relu as bias_relu

    return bias_relu(m, k, n)


@pytest.mark.parametrize("name, text, generator", _family_payloads())
def test_avx2_family_schedules_split_their_rows_too(ctx, tmp_path, name, text, generator):
    """batch_matmul, x @ w.T (B packed transposed, also in the tail) and a matmul with its epilogue take the
    6-row tile and the split on an AVX2 machine model: both parts vectorized, the run matches."""
    payload = Path(name) if text is None else tmp_path / name
    if text is not None:
        payload.write_text(text)
    ok(ctx, f"load {payload}")
    ok(ctx, "target cpu --cpu avx2 --threads 1")
    ok(ctx, "select --apply")
    (step,) = [a.step for a in ctx.session.active_steps if a.step.selected_by and "reg_m" in a.step.params]
    # (a linear whose weight is an argument is made a plain matmul of a transposed copy first)
    assert step.options["gen"] in (generator, "matmul_tiling"), step.options
    assert step.params["reg_m"] == 6 and step.params["main_m"] > 0 and step.params["tail_m"] > 0, step.params
    ir_text = ctx.session.current_ir
    assert "linalg.matmul" not in ir_text and "linalg.batch_matmul" not in ir_text
    assert "vector<6x16xf32>" in ir_text and "vector<4x16xf32>" in ir_text
    ok(ctx, "bench warmup=0 iterations=2")
    ok(ctx, "apply cpu-lower")
    run = ok(ctx, "run --check").data["run"]
    assert run["check"]["passed"], run["check"]


@pytest.mark.parametrize("threads", [1, 2])
def test_transposed_b_split_packs_b_transposed_in_both_parts(ctx, tmp_path, threads):
    """matmul_transpose_b_tiling with a split, one chunk or two: both parts pack their B panels transposed
    (hoist_pad ... transpose), no matmul is left, and the run matches."""
    from test_cpu_matmul_family import LINEAR_NAMED

    payload = tmp_path / "linear.mlir"
    payload.write_text(LINEAR_NAMED)
    ok(ctx, f"load {payload}")
    ok(ctx, f"target cpu --cpu avx2 --threads {threads}")
    ok(ctx, f"apply pipelines/cpu/matmul_family.py[gen=matmul_transpose_b_tiling]{{block_m=60 block_n=64 block_k=256 "
            f"reg_m=6 reg_n=16 reg_k=8 pack_tile_a=32 pack_tile_b=8 main_m=60 tail_m=4 tail_reg_m=4 threads={threads}}}")
    ir_text = ctx.session.current_ir
    assert "linalg.matmul" not in ir_text
    assert "vector<6x16xf32>" in ir_text and "vector<4x16xf32>" in ir_text
    assert ir_text.count("memref.alloc") >= 4            # A's and B's pack of each part
    ok(ctx, "bench warmup=0 iterations=2")
    ok(ctx, "apply cpu-matmul-parallel-lower" if threads > 1 else "apply cpu-matmul-lower")
    run = ok(ctx, f"run --check --threads {threads}").data["run"]
    assert run["check"]["passed"], run["check"]


@pytest.mark.parametrize("machine, wide", [(AVX512, 8), (AVX2, 6)])
@pytest.mark.parametrize("m, narrow", [(25, 1), (26, 2), (13, 1)])
def test_rows_with_only_a_narrow_tile_take_the_widest_that_fits_and_a_narrow_tail(machine, wide, m, narrow):
    """A thread's chunk of a padded M (ViT's 200 tokens in 8 chunks of 25 rows on 16 cores) divides by no
    tile of 4 rows or more: it took 1-row tiles, 2 accumulator chains of FMAs. Now whole blocks of the widest
    row tile that fits the registers and a tail of the narrow tile."""
    matmul = _library("matmul")
    p = matmul.default_params(m, 96, 768, row_split=True, **machine)
    assert p["reg_m"] == wide and p["tail_reg_m"] == narrow, p
    assert p["main_m"] + p["tail_m"] == m and p["main_m"] % p["block_m"] == 0 and p["block_m"] % wide == 0
    assert 0 < p["tail_m"] < wide
    # a full-speed tile that divides M keeps its rows (AVX-512's 4 x 2 zmm for 100 rows: no split)
    assert "main_m" not in matmul.default_params(28, 96, 768, row_split=True, **AVX512)
    assert matmul.default_params(28, 96, 768, row_split=True, **AVX512)["reg_m"] == 4


def test_a_parallel_chunk_of_a_padded_token_count_runs_wide_tiles(ctx, tmp_path):
    """200 rows (ViT's 197 tokens padded) in 8 chunks of 25 on 16 cores: each chunk runs 24 rows in 6-row
    tiles and one in a 1-row tile, and the 16-thread run matches the reference."""
    parallel = _library("matmul_parallel")
    p = parallel.default_params(200, 192, 256, threads=16, **AVX2)
    assert p["threads_m"] == 8 and (p["reg_m"], p["main_m"], p["tail_m"], p["tail_reg_m"]) == (6, 24, 1, 1), p
    ok(ctx, f"load {_payload(tmp_path, 197, 192, 256)}")
    ok(ctx, "target cpu --cpu avx2 --threads 16")
    ok(ctx, "select --apply")
    (step,) = [a.step for a in ctx.session.active_steps if "matmul_parallel" in a.step.label()]
    assert step.params["reg_m"] == 6 and step.params["main_m"] == 24, step.params
    assert "vector<6x16xf32>" in ctx.session.current_ir
    missing = ctx.session.target.machine.missing_here()
    if missing:
        pytest.skip(f"AVX2 code needs {', '.join(missing)}, which this host lacks: selected, not run")
    ok(ctx, "bench warmup=0 iterations=2")
    ok(ctx, "apply cpu-lower")
    run = ok(ctx, "run --check --threads 16").data["run"]
    assert run["check"]["passed"], run["check"]
