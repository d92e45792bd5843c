"""The CPU selector's thread-count rule (workbench/common/cpu_cost.py): each op is split into as many tasks as
its estimated work pays for against the async runtime's dispatch cost; the choice is the step's `threads`."""
from __future__ import annotations

from conftest import ok

ADD = """#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @two_adds(%a: tensor<RxCxf32>, %b: tensor<RxCxf32>, %s: tensor<8x64xf32>, %t: tensor<8x64xf32>)
    -> (tensor<RxCxf32>, tensor<8x64xf32>) {
  %e = tensor.empty() : tensor<RxCxf32>
  %big = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
       ins(%a, %b : tensor<RxCxf32>, tensor<RxCxf32>) outs(%e : tensor<RxCxf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %r = arith.addf %x, %y : f32
    linalg.yield %r : f32
  } -> tensor<RxCxf32>
  %f = tensor.empty() : tensor<8x64xf32>
  %small = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
       ins(%s, %t : tensor<8x64xf32>, tensor<8x64xf32>) outs(%f : tensor<8x64xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %r = arith.mulf %x, %y : f32
    linalg.yield %r : f32
  } -> tensor<8x64xf32>
  return %big, %small : tensor<RxCxf32>, tensor<8x64xf32>
}
"""


def _payload(tmp_path, rows: int, cols: int):
    path = tmp_path / f"adds_{rows}x{cols}.mlir"
    path.write_text(ADD.replace("RxC", f"{rows}x{cols}"))
    return path


def _threads_by_op(ctx) -> dict[str, int]:
    """op id -> the `threads` of its generic.py step, from `select --apply`."""
    chosen = {}
    for e in ok(ctx, "select --apply").data["selections"]:
        if "generic.py" in e["schedule"]:
            ops = e["params"]["op"]
            for op in ops if isinstance(ops, list) else [ops]:
                chosen[op] = e["params"]["threads"]
    return chosen


def test_the_task_count_minimizes_work_per_task_plus_dispatch():
    from workbench.common import cpu_cost

    d, t = cpu_cost.DISPATCH_SECONDS, cpu_cost.TASK_SECONDS
    assert cpu_cost.split_threads(d, 16) == 1               # an op no longer than a dispatch: one core
    assert cpu_cost.split_threads(1.0, 16) == 16            # a second of work: every core
    assert cpu_cost.split_threads(1.0, 1) == 1
    # in between: about sqrt(seconds / TASK_SECONDS) tasks, never a split that costs more than one core
    mid = cpu_cost.split_threads(200 * t, 16)
    assert 1 < mid < 16 and abs(mid - (200 ** 0.5)) <= 2, mid
    assert cpu_cost.split_seconds(200 * t, mid) < 200 * t
    choices = [cpu_cost.split_threads(s * 1e-6, 16) for s in (1, 10, 30, 100, 300, 1000, 3000)]
    assert choices == sorted(choices) and choices[0] == 1 and choices[-1] == 16, choices


def test_bytes_moved_and_gathers_make_the_estimate():
    from workbench.common import cpu_cost

    add = {"loops": {"domain": [1024, 1024], "operand_dims": [[0, 1], [0, 1], [0, 1]], "body": ["arith.addf"]},
           "operand_types": ["tensor<1024x1024xf32>"] * 3, "flops": 1 << 20}
    assert cpu_cost.op_bytes(add) == 3 * 4 << 20
    rows = {**add, "loops": {**add["loops"], "operand_dims": [[0, 1], [1], [0, 1]]},
            "operand_types": ["tensor<1024x1024xf32>", "tensor<1024xf32>", "tensor<1024x1024xf32>"]}
    assert cpu_cost.op_bytes(rows) == (2 << 22) + 4096      # a broadcast row counts once
    f64 = {**add, "operand_types": ["tensor<1024x1024xf64>"] * 3}
    assert cpu_cost.op_bytes(f64) == 2 * cpu_cost.op_bytes(add)
    gather = {"loops": {"domain": [512, 1024], "operand_dims": [[0, 1]], "body": ["linalg.index", "tensor.extract"]},
              "operand_types": ["tensor<512x1024xf32>"], "flops": 1 << 19}
    assert cpu_cost.op_bytes(gather, gather_factor=16) == (2 << 20) + 16 * (2 << 20)
    # past the cache the memory rate: a larger estimate per byte
    assert (cpu_cost.op_seconds(add, cache_bytes=1 << 20) > 3 * cpu_cost.op_seconds(add, cache_bytes=64 << 20))
    # operations count where they outweigh the bytes, scalar loops' at the scalar rate
    busy = {**add, "flops": 8 << 20}    # (eight body ops an element)
    assert cpu_cost.op_seconds(busy) == cpu_cost.op_seconds(add)
    assert cpu_cost.op_seconds(busy, vectorized=False) > 4 * cpu_cost.op_seconds(add)


def test_small_ops_run_on_one_thread_large_ones_on_all(ctx, tmp_path):
    """Two ops of one payload: an 8 x 64 multiply (~6 KB moved) stays on one core, a large add takes every core:
    1024 x 2048 (25 MB) of 2, 4096 x 4096 (200 MB) of 16 (`target cpu --threads N` plans for N); a 128 x 1024
    add (1.5 MB, ~15 us) spreads over fewer than 16 tasks, where 16 would cost more in dispatch than they save."""
    from workbench.common import cpu_cost

    try:
        for cores, (rows, cols) in ((2, (1024, 2048)), (16, (4096, 4096))):
            ok(ctx, f"load {_payload(tmp_path, rows, cols)}")
            ok(ctx, f"target cpu --threads {cores}")
            chosen = _threads_by_op(ctx)
            assert chosen == {"generic_0": cores, "generic_1": 1}, (cores, chosen)
        ok(ctx, f"load {_payload(tmp_path, 128, 1024)}")
        ok(ctx, "target cpu --threads 16")
        op = next(o for o in ok(ctx, "inspect").data["inspect"]["ops"] if o["op"] == "linalg.generic")
        chosen = _threads_by_op(ctx)["generic_0"]
        seconds = cpu_cost.op_seconds(op)
        assert 1 < chosen < 16 and chosen == cpu_cost.split_threads(seconds, 16), (chosen, seconds)
        assert cpu_cost.split_seconds(seconds, chosen) < cpu_cost.split_seconds(seconds, 16)
    finally:
        ok(ctx, "target cpu --threads 0")


def test_the_chosen_threads_run_and_match_and_can_be_edited(ctx, tmp_path):
    """select -> lower -> run --check on 2 threads with the rule's choices (the large add split, the small
    multiply not); then the small op's `threads` edited to 2 by `params`: its step re-applies as a forall and
    the run still matches."""
    try:
        ok(ctx, f"load {_payload(tmp_path, 1024, 2048)}")
        ok(ctx, "target cpu --threads 2")
        assert _threads_by_op(ctx) == {"generic_0": 2, "generic_1": 1}
        ok(ctx, "bench warmup=1 iterations=3")
        ok(ctx, "apply cpu-lower")
        assert ok(ctx, "run --check --threads 2").data["run"]["check"]["passed"]
        # the small op's step, edited: 2 tasks
        steps = ctx.session.active_steps
        small = next(i + 1 for i, a in enumerate(steps) if a.step.params.get("op") == "generic_1")
        assert ok(ctx, f"show {small}").body.count("scf.forall.in_parallel") == 1      # the large add's
        ok(ctx, f"params {small} threads=2")          # (re-applies it and every step after it)
        assert ctx.session.active_steps[small - 1].step.params["threads"] == 2
        assert ok(ctx, f"show {small}").body.count("scf.forall.in_parallel") == 2
        assert ok(ctx, "run --check --threads 2").data["run"]["check"]["passed"]
    finally:
        ok(ctx, "target cpu --threads 0")


def test_uneven_chunks_count_their_largest():
    """16 rows in 14 tasks are 2 rows a task (8 busy): the rule takes 8 tasks for them, not 14; on 16 cores 16."""
    from workbench.common import cpu_cost
    from workbench.targets.cpu_selector import generic_params

    assert cpu_cost.split_seconds(1.0, 14, 16) > cpu_cost.split_seconds(1.0, 8, 16) > cpu_cost.split_seconds(1.0, 16, 16)
    add = {"id": "generic_0", "operand_types": ["tensor<16x1048576xf32>"] * 3, "flops": 1 << 24,
           "loops": {"iterators": ["parallel", "parallel"], "operand_dims": [[0, 1], [0, 1], [0, 1]],
                     "body": ["arith.addf"], "projected": True, "num_inputs": 2, "domain": [16, 1 << 20]}}
    assert generic_params(add, 512, 16)["threads"] == 16
    p = generic_params(add, 512, 14)
    assert (p["threads"], p["split"]) == (8, 0), p
