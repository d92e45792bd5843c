"""`lh-row-networks` (workbench/worker/cpu/row_networks.py): torch-mlir's sorting networks (sort, argsort,
topk: a compare-and-swap stage per expand_shape / half slices / generic / collapse_shape, or k rounds of
masked row reductions) become one scf.forall over chunks of rows around the whole network, instead of one
parallel region and one pass over memory per stage; the results stay exact."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from conftest import fixture_io_flags, ok

FIXTURES = Path(__file__).parent / "fixtures" / "torch"
TOPK = Path(__file__).parent / "payloads" / "row_networks" / "topk_1024.mlir"


def _rewrite(text: str, threads: int) -> tuple[int, str]:
    from mlir import ir

    from workbench.worker.cpu.row_networks import row_networks

    with ir.Context(), ir.Location.unknown():
        module = ir.Module.parse(text)
        n = row_networks(module, threads)
        assert module.operation.verify()
        return n, str(module)


def _fused(ctx, name: str) -> str:
    ok(ctx, f"load {FIXTURES / (name + '.mlir')}")
    ok(ctx, "apply pass lh-fuse-elementwise")
    return ctx.session.current_ir


def _outside_forall(text: str) -> list[str]:
    """The generics that are not in an scf.forall's body (the body is indented deeper)."""
    lines, depth_of_forall, out = text.splitlines(), None, []
    for line in lines:
        indent = len(line) - len(line.lstrip())
        if "scf.forall (" in line:
            depth_of_forall = indent
        elif depth_of_forall is not None and indent <= depth_of_forall:
            depth_of_forall = None
        if "linalg.generic" in line and depth_of_forall is None:
            out.append(line)
    return out


@pytest.mark.parametrize("name, stages", [("sort", 6), ("argsort", 6), ("sort_descending_values", 3)])
def test_every_stage_of_a_sort_goes_into_one_forall_over_rows(ctx, name, stages):
    """3 x 8 (6 x 3 along dim 0): one forall, every compare-and-swap stage in its body (the generics left
    outside are the index tables, which read `linalg.index` of the sorted dim), one chunk per row on 2
    threads (at least 2 chunks)."""
    before = _fused(ctx, name)
    assert before.count("scf.forall") == 0
    n, text = _rewrite(before, 2)
    assert n == 1 and text.count("scf.forall (") == 1
    assert len(re.findall(r"linalg\.generic", text)) == len(re.findall(r"linalg\.generic", before))
    outside = _outside_forall(text)
    inside = len(re.findall(r"linalg\.generic", text)) - len(outside)
    assert inside >= stages, (inside, outside)
    rows = re.search(r"scf\.forall \(%\w+\) in \((\d+)\)", text).group(1)
    assert int(rows) >= 2


def test_topk_rounds_go_into_one_forall(ctx):
    """topk(k=3) over 1024 x 1024 (the bench export): 3 rounds of a masked max and its first index, 6 row
    reductions, become one forall over chunks of rows with every reduction inside; the column index table
    (`linalg.index` of the reduced dim) stays outside, read whole by each chunk. Lowered, 2 threads: the
    unscheduled payload's values and indices."""
    ok(ctx, f"load {TOPK}")
    ok(ctx, "apply pass lh-fuse-elementwise")
    before = ctx.session.current_ir
    n, text = _rewrite(before, 2)
    assert n == 1 and text.count("scf.forall (") == 1
    outside = _outside_forall(text)
    assert len(outside) == 2 and all("reduction" not in line for line in outside), outside
    assert int(re.search(r"scf\.forall \(%\w+\) in \((\d+)\)", text).group(1)) >= 2
    ok(ctx, f"load {TOPK}")
    ok(ctx, "target cpu --threads 2")
    res = ok(ctx, "select --apply")
    assert any(p.startswith("pass lh-row-networks") for p in res.data["prepared"])
    ok(ctx, "bench warmup=1 iterations=2")
    ok(ctx, "apply cpu-lower")
    run = ok(ctx, "run --check --threads 2").data["run"]
    assert run["check"]["passed"] and run["check"]["max_abs_err"] == 0, run["check"]


@pytest.mark.parametrize("name", ["sort", "argsort", "topk", "sort_descending_values"])
@pytest.mark.parametrize("threads", [1, 2])
def test_selector_path_runs_the_networks_exactly(ctx, name, threads):
    """`select --apply` prepares with lh-row-networks (each fixture's network: sort stages, or topk's six
    row reductions), lowers and runs on 1 and 2 threads: the same values and indices as the unscheduled
    payload and torch (max abs err 0)."""
    fixture = FIXTURES / f"{name}.mlir"
    ok(ctx, f"load {fixture}")
    ok(ctx, f"target cpu --threads {threads}")
    res = ok(ctx, "select --apply")
    prepared = " ".join(res.data["prepared"])
    assert "pass lh-row-networks" in prepared, prepared
    ok(ctx, "bench warmup=1 iterations=2")
    ok(ctx, "apply cpu-lower")
    run = ok(ctx, f"run --check --threads {threads} {fixture_io_flags(fixture)}").data["run"]
    assert run["check"]["passed"] and run["expected_check"]["passed"], run
    assert run["check"]["max_abs_err"] == 0 and run["expected_check"]["max_abs_err"] == 0


SOFTMAX = """#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
func.func @main(%x: tensor<64x128xf32>) -> tensor<64x128xf32> {
  %ninf = arith.constant 0xFF800000 : f32
  %zero = arith.constant 0.0 : f32
  %e1 = tensor.empty() : tensor<64xf32>
  %m0 = linalg.fill ins(%ninf : f32) outs(%e1 : tensor<64xf32>) -> tensor<64xf32>
  %m = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]} ins(%x : tensor<64x128xf32>) outs(%m0 : tensor<64xf32>) {
  ^bb0(%a: f32, %b: f32):
    %r = arith.maximumf %a, %b : f32
    linalg.yield %r : f32
  } -> tensor<64xf32>
  %e2 = tensor.empty() : tensor<64x128xf32>
  %ex = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]} ins(%x, %m : tensor<64x128xf32>, tensor<64xf32>) outs(%e2 : tensor<64x128xf32>) {
  ^bb0(%a: f32, %b: f32, %c: f32):
    %d = arith.subf %a, %b : f32
    %r = math.exp %d : f32
    linalg.yield %r : f32
  } -> tensor<64x128xf32>
  %s0 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<64xf32>) -> tensor<64xf32>
  %s = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]} ins(%ex : tensor<64x128xf32>) outs(%s0 : tensor<64xf32>) {
  ^bb0(%a: f32, %b: f32):
    %r = arith.addf %a, %b : f32
    linalg.yield %r : f32
  } -> tensor<64xf32>
  %y = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]} ins(%ex, %s : tensor<64x128xf32>, tensor<64xf32>) outs(%e2 : tensor<64x128xf32>) {
  ^bb0(%a: f32, %b: f32, %c: f32):
    %r = arith.divf %a, %b : f32
    linalg.yield %r : f32
  } -> tensor<64x128xf32>
  return %y : tensor<64x128xf32>
}
"""


def test_row_chains_without_a_network_are_left_alone():
    """A softmax (two row reductions, no slices: the rows schedule's chain) is no network: not rewritten."""
    n, text = _rewrite(SOFTMAX, 2)
    assert n == 0 and "scf.forall" not in text


def test_a_network_result_read_before_its_end_is_left_alone(ctx):
    """The sort's network with an op between two of its stages that reads a stage's values across the rows
    (a sum over dim 0: no row op) and is returned: the forall, which goes after the network's last stage,
    could not feed it, so the network is left as it was (without the probe it is rewritten)."""
    text = _fused(ctx, "sort")
    assert _rewrite(text, 2)[0] == 1
    # the first compare-and-swap stage: a two-result generic of half slices
    first = re.search(r"^ *(%\w+):2 = linalg\.generic .*%extracted_slice", text, re.M).group(1)
    head = text.index(f"{first}:2 = linalg.generic")
    body_end = text.index("} -> (", head)
    after = text.index("\n", body_end)
    shape = re.search(r"-> \((tensor<[^,]*>),", text[body_end:after]).group(1)
    dims = shape[len("tensor<"):-len("xf32>")].split("x")
    loops = ", ".join(f"d{i}" for i in range(len(dims)))
    rest = ", ".join(f"d{i}" for i in range(1, len(dims)))
    small = "tensor<" + "x".join(dims[1:]) + "xf32>"
    parallel = ", ".join(['"parallel"'] * (len(dims) - 1))
    probe = (f"\n    %pe = tensor.empty() : {small}"
             f"\n    %probe = linalg.generic {{indexing_maps = [affine_map<({loops}) -> ({loops})>, "
             f"affine_map<({loops}) -> ({rest})>], iterator_types = [\"reduction\", {parallel}]}} "
             f"ins({first}#0 : {shape}) outs(%pe : {small}) {{\n    ^bb0(%a: f32, %b: f32):\n"
             f"      %s = arith.addf %a, %b : f32\n      linalg.yield %s : f32\n    }} -> {small}")
    text = text[:after] + probe + text[after:]
    text = re.sub(r"return (.*) : (.*)\n", lambda m: f"return {m.group(1)}, %probe : {m.group(2)}, {small}\n",
                  text, count=1)
    text = re.sub(r"(func\.func @main\([^)]*\) -> \()([^)]*)\)", lambda m: f"{m.group(1)}{m.group(2)}, {small})",
                  text, count=1)
    n, out = _rewrite(text, 2)
    assert n == 0 and "scf.forall" not in out and f", {small}\n" in out


def test_wide_rows_are_no_network(ctx, monkeypatch):
    """A component whose values hold more than MAX_ROW_ELEMENTS per row is a model's layers over its batch
    (GPT-2 at batch 2: 381 row ops along the batch, 32 K elements a row), not a network: left alone (it
    was wrapped, and its 2-thread run died of SIGSEGV). Here the sort's rows of 8 over a limit
    of 4."""
    from workbench.worker.cpu import row_networks as rn

    text = _fused(ctx, "sort")
    monkeypatch.setattr(rn, "MAX_ROW_ELEMENTS", 4)
    n, out = _rewrite(text, 2)
    assert n == 0 and "scf.forall" not in out
    monkeypatch.setattr(rn, "MAX_ROW_ELEMENTS", 64)
    assert _rewrite(text, 2)[0] == 1
