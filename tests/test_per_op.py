"""Per-op targeting: stable op ids (inspect), the `tag-ops` rewrite, per-op schedule parameters (`op=`),
and `select --apply` on a payload of several ops of different shapes (examples/mlp.mlir)."""
from __future__ import annotations

import re


from conftest import EXAMPLES, ok


def test_inspect_ids_are_what_tag_ops_writes(ctx):
    ok(ctx, f"load {EXAMPLES / 'mlp.mlir'}")
    info = ctx.session.inspect()
    ids = [o["id"] for o in info["ops"]]
    assert ids[:4] == ["fill_0", "matmul_0", "generic_0", "generic_1"] and ids[9] == "matmul_2"
    assert len(set(ids)) == len(ids) and not info["tagged"]
    ok(ctx, "apply rewrite tag-ops")
    tagged = ctx.session.inspect()
    assert tagged["tagged"] and [o["id"] for o in tagged["ops"]] == ids
    ir = ctx.session.current_ir
    assert re.search(r'linalg\.matmul \{lh\.op = "matmul_1"\} ins\(%\w+, %arg3', ir)
    # tagging again changes nothing
    ok(ctx, "apply rewrite tag-ops")
    assert ctx.session.steps[-1].noop


def test_mlp_select_configures_each_matmul_for_its_own_shape_and_runs_checked(ctx):
    ok(ctx, f"load {EXAMPLES / 'mlp.mlir'}")
    ok(ctx, "target cpu --threads 1")   # the one-core plan (16 cores split N into narrower blocks)
    info = ctx.session.inspect()
    dims = {o["id"]: o["dims"] for o in info["ops"] if o["op"] == "linalg.matmul"}
    res = ok(ctx, "select --apply")
    steps = [a.step for a in ctx.session.active_steps]
    # first the preparation: bias add and relu fused into one elementwise op per layer
    assert steps[0].kind == "pass" and "lh-fuse-elementwise" in steps[0].spec
    assert steps[1].kind == "rewrite" and steps[1].spec == "tag-ops"
    # each matmul with its bias + relu epilogue (pipelines/cpu/matmul_family.py[gen=matmul_epilogue])
    matmul_steps = [s for s in steps if "matmul.py" in s.label() or "matmul_epilogue" in s.label()]
    assert [s.params["op"] for s in matmul_steps] == ["matmul_0", "matmul_1", "matmul_2"]
    assert all(s.params.get("epilogue") == 1 for s in matmul_steps)
    for s in matmul_steps:
        d = dims[s.params["op"]]
        p = s.params
        assert s.selected_by == "cpu-selector" and p["bufferize"] is False
        assert d["n"] % p["block_n"] == 0 and d["k"] % p["block_k"] == 0, p
        if p.get("main_m"):   # (AVX2: rows of 6 split M into main blocks and a tail of its own row tile)
            assert p["main_m"] % p["block_m"] == 0 and p["main_m"] + p["tail_m"] == d["m"], p
        else:
            assert d["m"] % p["block_m"] == 0, p
    # matmul_2 is 128x128: its block_n is not the 512 of the others (one dict for all would not divide N)
    assert matmul_steps[2].params["block_n"] <= 128 < matmul_steps[0].params["block_n"]
    assert steps[-1].label().startswith("pipelines/cpu/finish.py")
    assert len(res.data["steps"]) == len(steps) == 6
    ir = ctx.session.current_ir
    assert "linalg.matmul" not in ir and "linalg.generic" not in ir and "vector.fma" in ir
    ok(ctx, "bench warmup=1 iterations=2")
    ok(ctx, "apply cpu-lower")
    run = ok(ctx, "run --check").data["run"]
    assert run["check"]["passed"]


def test_a_per_op_step_checks_constraints_against_its_own_op(ctx):
    ok(ctx, f"load {EXAMPLES / 'mlp.mlir'}")
    ok(ctx, "apply rewrite tag-ops")
    # block_n=512 divides N=512 of matmul_0 (another matmul has N=128: not this step's business)
    ok(ctx, "apply pipelines/cpu/matmul.py[gen=matmul_tiling]{op=matmul_0 bufferize=false block_n=512 reg_n=16}")
    res = ctx.registry.dispatch(
        "apply pipelines/cpu/matmul.py[gen=matmul_tiling]{op=matmul_2 bufferize=false block_n=512 reg_n=16}", ctx)
    assert not res.ok and "block_n divides N" in res.error and "N=128" in res.error


def test_select_apply_is_all_or_nothing(ctx, monkeypatch):
    from workbench.targets.cpu import CpuTarget

    ok(ctx, f"load {EXAMPLES / 'mlp.mlir'}")
    ok(ctx, "target cpu --threads 1")   # the one-core plan: block_n=512 for matmul_0 on any host
    ok(ctx, CpuTarget.FUSE_ELEMENTWISE)   # the preparation select would apply (then a no-op: left out)
    good = [e for e in CpuTarget.select_params(ctx.session.target, ctx.session.inspect())
            if e[1].get("op", "").startswith("matmul_")]
    errors = []
    for bad in ([good[0], (good[1][0], dict(good[1][1], op="matmul_9"))],    # no such op
                [good[0], (good[2][0], dict(good[0][1], op="matmul_2"))]):   # block_n=512 > N=128
        monkeypatch.setattr(CpuTarget, "select_params", lambda self, info: bad)
        res = ctx.registry.dispatch("select --apply", ctx)
        assert not res.ok and ctx.session.cursor == 1 and len(ctx.session.steps) == 1
        errors.append(res.error + str(res.detail))
    assert "expected parameter to be equal to 1, got 0" in errors[0] and "block_n divides N" in errors[1]
