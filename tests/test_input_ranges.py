"""Integer inputs used as indices get in-range values; `run --ranges` sets any argument's range."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import yaml

from conftest import do, load_npys, ok
from workbench.execution.runner import RunInputError, make_inputs

PAYLOADS = Path(__file__).parent / "payloads"


def test_make_inputs_honours_ranges():
    specs = [{"shape": [1000], "dtype": "i64"}, {"shape": [1000], "dtype": "f32"}, {"shape": [10], "dtype": "i8"}]
    ids, x, small = make_inputs(specs, ranges={0: (3, 7), 1: (10.0, 12.0), 2: (-1000, 1000)})
    assert ids.min() == 3 and ids.max() == 6
    assert 10.0 <= x.min() and x.max() < 12.0
    assert -128 <= small.min() and small.max() <= 127
    with pytest.raises(RunInputError, match="empty range"):
        make_inputs([{"shape": [2], "dtype": "i8"}], ranges={0: (300, 400)})


def test_index_arguments_inferred_from_the_payload(ctx):
    ok(ctx, f"load {PAYLOADS / 'embedding.mlir'}")
    (func,) = [f for f in ctx.session.inspect(0)["funcs"] if f["name"] == "embedding"]
    assert func["index_ranges"] == {0: [0, 100]}


def test_embedding_runs_with_in_range_ids_and_equals_numpy(ctx, tmp_path):
    ok(ctx, f"load {PAYLOADS / 'embedding.mlir'}")
    ok(ctx, "bench iterations=2")
    ok(ctx, "apply cpu-lower")
    run = ok(ctx, f"run --check --save-outputs {tmp_path}").data["run"]
    assert run["check"]["passed"] and run["input_ranges"]["0"] == [0, 100]
    ids, table = load_npys(tmp_path, "input")
    assert ids.dtype == np.int64 and ids.min() >= 0 and ids.max() < 100 and len(np.unique(ids)) > 10
    np.testing.assert_array_equal(load_npys(tmp_path, "output")[0], table[ids])


def test_out_of_range_ids_trip_the_payloads_own_check(ctx):
    ok(ctx, f"load {PAYLOADS / 'embedding.mlir'}")
    ok(ctx, "bench iterations=1")
    ok(ctx, "apply cpu-lower")
    res = do(ctx, "run --ranges 0=100:200")
    assert not res.ok and "run failed" in res.error


def test_ranges_are_recorded_in_the_session_and_replayed(ctx, tmp_path):
    ok(ctx, f"load {PAYLOADS / 'embedding.mlir'}")
    ok(ctx, "bench iterations=1")
    ok(ctx, "apply cpu-lower")
    ok(ctx, f"run --ranges 0=7:9,1=2:3 --save-outputs {tmp_path / 'a'}")
    ids, table = load_npys(tmp_path / "a", "input")
    assert set(np.unique(ids)) <= {7, 8} and 2 <= table.min() and table.max() < 3
    ok(ctx, f"run --save-outputs {tmp_path / 'b'}")  # later runs keep the session's ranges
    assert set(np.unique(load_npys(tmp_path / "b", "input")[0])) <= {7, 8}
    ok(ctx, f"save {tmp_path / 's.yaml'}")
    assert yaml.safe_load((tmp_path / "s.yaml").read_text())["Workbench"]["input_ranges"] == {0: [7, 9], 1: [2, 3]}
    ok(ctx, f"replay {tmp_path / 's.yaml'}")
    assert ctx.session.input_ranges == {0: (7, 9), 1: (2, 3)}
    assert not do(ctx, "run --ranges 0=5").ok
