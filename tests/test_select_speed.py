"""What `select --apply` costs in the compile worker (bench/select_time.py times it): each IR inspected once, the
steps' parameter checks without loop structures, and the printed step results exactly the printer's text."""
from __future__ import annotations

import hashlib
import importlib.util
import re
import sys
from pathlib import Path

import pytest

from conftest import FIXTURES, REPO as ROOT, ok

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


def _stacked(n: int) -> str:
    """bench/select_time.py's payload: the transformer layer fixture applied n times in one function."""
    spec = importlib.util.spec_from_file_location("select_time", ROOT / "bench" / "select_time.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.stacked_layers(n)


def _schedule_text(stage: dict) -> str:
    """What the compile worker generates for a `schedule` stage (its generator called with its params)."""
    path = Path(stage["path"])
    sys.path.insert(0, str(path.parent))
    try:
        spec = importlib.util.spec_from_file_location(f"s21_{path.stem}", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        sys.path.pop(0)
    return getattr(module, stage["gen"])(**stage["params"])


SCOPED = "    transform.bufferization.eliminate_empty_tensors %step_loops : !transform.any_op\n"


def _selected(ctx, layers: int, tmp_path: Path) -> list[tuple[str, str, str]]:
    """select --apply on `layers` stacked layers: (input IR, schedule text, output IR) of each per-op step
    whose schedule eliminates empty tensors in its own loops."""
    payload = tmp_path / f"layers{layers}.mlir"
    payload.write_text(_stacked(layers))
    ok(ctx, f"load {payload}")
    ok(ctx, "target cpu --threads 1")
    ok(ctx, "select --apply")
    s = ctx.session
    steps = []
    for index, applied in enumerate(s.steps):
        stages = applied.step.stages(s.build_ctx)
        if len(stages) == 1 and stages[0]["kind"] == "schedule":
            text = _schedule_text(stages[0])
            if SCOPED in text:
                steps.append((s.ir_at(index), text, s.ir_at(index + 1)))
    return steps


def _apply(ir_text: str, schedule: str) -> str:
    """The IR after `schedule` (parsed in a fresh context); what the interpreter remarks goes to stderr."""
    from mlir import ir
    from mlir.dialects.transform import interpreter

    from workbench.worker.compile_worker import _find_named_sequence
    from workbench.worker.mlir_context import new_context

    with new_context(), ir.Location.unknown():
        module = ir.Module.parse(ir_text)
        sched = ir.Module.parse(schedule)
        interpreter.apply_named_sequence(module.operation, _find_named_sequence(sched, "__transform_main"),
                                         sched.operation)
        return str(module)


LOOP_MATCHER = """  transform.named_sequence @test_loop(%op: !transform.any_op {transform.readonly}) -> !transform.any_op {
    transform.match.operation_name %op ["scf.for", "scf.forall"] : !transform.any_op
    transform.yield %op : !transform.any_op
  }
"""


def _counted(prefix: str, handle: str) -> str:
    """Transform ops emitting, as remarks, how many ops `handle` holds and how many loops are nested in them
    (consumes `handle`; needs LOOP_MATCHER and @lh_keep in the module)."""
    a = "!transform.any_op"
    return (f"    %{prefix}_n = transform.num_associations {handle} : ({a}) -> !transform.param<i64>\n"
            f'    transform.debug.emit_param_as_remark %{prefix}_n, "{prefix} ops" : !transform.param<i64>\n'
            f"    %{prefix}_walked, %{prefix}_in = transform.foreach_match flatten_results in {handle}"
            f" @test_loop -> @lh_keep : ({a}) -> ({a}, {a})\n"
            f"    %{prefix}_loops = transform.num_associations %{prefix}_in : ({a}) -> !transform.param<i64>\n"
            f'    transform.debug.emit_param_as_remark %{prefix}_loops, "{prefix} loops" : !transform.param<i64>\n')


def test_per_op_steps_eliminate_empty_tensors_in_their_own_region(compile_client, tmp_path, capfd, monkeypatch):
    """A per-op matmul step's empty tensor elimination (a One-Shot analysis: it cost each step as much as the
    whole function, 60% of select --apply on 16 stacked layers) looks at the region its schedule made: as
    many loops for the first layer's matmul on 1 stacked layer as on 3, and every step's IR is the one the
    whole-function elimination gives. (On its input with the whole function's empty tensors eliminated first:
    the steps clean up their own loops only, so empty tensors that earlier steps left elsewhere in the function,
    which pipelines/cpu/finish.py eliminates, are not this step's.)"""
    from workbench.commands import CommandContext, default_registry
    from workbench.common.transform_text import transform_module
    from workbench.session import Session
    from workbench.targets.cpu import CpuTarget

    # (the packed epilogue schedule, as for a K of several cache blocks: with the epilogue on the register tiles,
    # the default for these layers' K of one block, the steps leave the empty tensors to finish.py's elimination)
    monkeypatch.setattr(CpuTarget, "epilogue_in_registers", False)
    whole = ("    %all_funcs = transform.structured.match ops{[\"func.func\"]} in %root"
             " : (!transform.any_op) -> !transform.any_op\n"
             "    transform.bufferization.eliminate_empty_tensors %all_funcs : !transform.any_op\n")
    in_module = ("    %module_loops = transform.structured.match ops{[\"scf.for\", \"scf.forall\"]} in %root"
                 " : (!transform.any_op) -> !transform.any_op\n"
                 "    %module_n = transform.num_associations %module_loops : (!transform.any_op) -> !transform.param<i64>\n"
                 '    transform.debug.emit_param_as_remark %module_n, "function loops" : !transform.param<i64>\n')
    first: dict[int, dict[str, int]] = {}
    for layers in (1, 3):
        ctx = CommandContext(Session(client=compile_client), default_registry())
        steps = _selected(ctx, layers, tmp_path)
        # (each layer: attention's projections and two batch matmuls, the MLP's two linear layers)
        assert len(steps) >= 5 * layers
        for before, schedule, after in steps:
            # (counted after the elimination, which changes no loops)
            instrumented = schedule.replace(SCOPED, SCOPED + _counted("scope", "%step_loops") + in_module)
            instrumented = instrumented.replace("  transform.named_sequence @__transform_main",
                                                LOOP_MATCHER + "  transform.named_sequence @__transform_main")
            capfd.readouterr()
            assert _apply(before, instrumented) == after   # (what the session's compile worker made)
            numbers = {name: int(n) for name, n in re.findall(r": (\w+ \w+) (\d+) : i64", capfd.readouterr().err)}
            assert numbers["scope ops"] >= 1 and 1 <= numbers["scope loops"] < numbers["function loops"], numbers
            first.setdefault(layers, numbers)
            settled = _apply(before, transform_module(whole.rstrip("\n")))
            assert _apply(settled, schedule) == _apply(settled, schedule.replace(SCOPED, whole))
    # the first matmul's step: its region is the same on 1 and 3 layers, the function's loops are not
    assert first[1]["scope loops"] == first[3]["scope loops"]
    assert first[1]["function loops"] < first[3]["function loops"]


def test_diagnostic_ops_print_unverified_only_within():
    """While a schedule runs, an op MLIR prints with its default flags (what a transform writes into a
    diagnostic: fusion's "could not fuse <producer> into <loop>", made before each fusion and dropped when it
    succeeds) is not verified first, from its function down; before and after, it is (an invalid op then
    prints in generic form)."""
    from mlir import ir
    from mlir.dialects import func

    from workbench.worker import print_flags

    with ir.Context(), ir.Location.unknown():
        module = ir.Module.create()
        i32, i64 = ir.IntegerType.get_signless(32), ir.IntegerType.get_signless(64)
        with ir.InsertionPoint(module.body):
            f = func.FuncOp("f", ([i32, i64], []))
            entry = f.add_entry_block()
            with ir.InsertionPoint(entry):   # operands of two types: fails to verify
                bad = ir.Operation.create("arith.addi", results=[i32], operands=list(entry.arguments))
                func.ReturnOp([])
        verified = str(bad)
        assert verified.startswith('%0 = "arith.addi"(')          # verified: generic form
        with print_flags.unverified_diagnostic_ops() as on:
            assert on
            assert str(bad) == "%0 = arith.addi %arg0, %arg1 : i32"   # printed as it is, unverified
        assert str(bad) == verified


def test_row_chain_steps_give_the_ir_of_verified_printing(compile_client, tmp_path):
    """On 2 stacked layers every row chain's step (one fusion per producer) gives, in the session's compile
    worker (diagnostic ops printed unverified), the IR its schedule gives applied here with MLIR's defaults."""
    from workbench.commands import CommandContext, default_registry
    from workbench.session import Session

    ctx = CommandContext(Session(client=compile_client), default_registry())
    payload = tmp_path / "layers2.mlir"
    payload.write_text(_stacked(2))
    ok(ctx, f"load {payload}")
    ok(ctx, "target cpu --threads 1")
    ok(ctx, "select --apply")
    s = ctx.session
    chains = 0
    for index, applied in enumerate(s.steps):
        stages = applied.step.stages(s.build_ctx)
        if len(stages) == 1 and stages[0]["kind"] == "schedule" and stages[0]["gen"] == "fuse_rows":
            schedule = _schedule_text(stages[0])
            assert "fuse_into_containing_op" in schedule
            assert _apply(s.ir_at(index), schedule) == s.ir_at(index + 1)
            chains += 1
    assert chains >= 2 * 2   # (each layer: softmax and norms)


def test_large_results_are_backed_up_as_text_without_writing_bytecode(monkeypatch):
    """A lazy result's backup is its bytecode up to BYTECODE_BACKUP_MAX, else its compact text. Once a result
    of a context went over (a model's weights), later ones there are printed at once: one bytecode written
    for a whole select, not one per step dropped (GPT-2 small's weights: 500 MB each); the text is the
    printer's."""
    from workbench.common.compact_text import BlobStore, CompactText
    from workbench.worker import compile_worker
    from workbench.worker.protocol import FOLLOW_UP

    text = LAYER.read_text()

    store = BlobStore()

    def backups(limit: int) -> tuple[list[dict], int]:
        monkeypatch.setattr(compile_worker, "BYTECODE_BACKUP_MAX", limit)
        worker = compile_worker.CompileWorker()
        parsed = worker.handle({"op": "parse", "text": text, "filename": None, "compact_ir": True})
        assert parsed["ok"]
        store.add(parsed["ir_blobs"])
        key, out = parsed["sha"], []
        for pipeline in ("linalg-generalize-named-ops", "canonicalize", "cse", "canonicalize"):
            ans = worker.handle({"op": "apply", "key": key, "lazy": True, "compact_ir": True,
                                 "stages": [{"kind": "pass", "pipeline": f"func.func({pipeline})"}]})
            assert ans["ok"], ans
            out.append(ans[FOLLOW_UP]())
            key = ans["key"]
            # the text of the result, printed whole here: what a text backup must hold
            out[-1]["whole"] = worker.cache[key].operation.get_asm(binary=True, assume_verified=True).decode()
        return out, worker.bytecode_writes

    small, writes = backups(1 << 30)    # every result's bytecode under the limit: bytecode backups
    assert writes == len(small) and all("bytecode" in b for b in small)
    large, writes = backups(1000)        # over it: the first result's bytecode written, no other
    assert writes == 1
    for b in large:
        assert "bytecode" not in b and b["ok"]
        store.add(b["ir_blobs"])
        restored = CompactText(b["ir_parts"], store).expand()
        assert restored == b["whole"] and b["sha"] == hashlib.sha256(restored.encode()).hexdigest()


OUTSIDE_THE_STEP = """func.func @main(%a: tensor<64x64xf32>, %b: tensor<64x64xf32>, %v: tensor<4x16xf32>)
    -> (tensor<64x64xf32>, tensor<4x16xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<64x64xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e : tensor<64x64xf32>) -> tensor<64x64xf32>
  %mm = linalg.matmul {lh.op = "matmul_0"} ins(%a, %b : tensor<64x64xf32>, tensor<64x64xf32>)
      outs(%init : tensor<64x64xf32>) -> tensor<64x64xf32>
  %dead = tensor.collapse_shape %mm [[0, 1]] : tensor<64x64xf32> into tensor<4096xf32>
  %flat = tensor.collapse_shape %v [[0, 1]] : tensor<4x16xf32> into tensor<64xf32>
  %back = tensor.expand_shape %flat [[0, 1]] output_shape [4, 16] : tensor<64xf32> into tensor<4x16xf32>
  return %mm, %back : tensor<64x64xf32>, tensor<4x16xf32>
}
"""


def test_per_op_matmul_step_cleans_up_its_own_loops_only():
    """A per-op matmul step (bufferize=false) canonicalizes and CSEs the loop nest it made, not the whole
    function (which cost each step as much as the function: most of a matmul step on 16 stacked layers): ops
    outside its loops that a canonicalization would change stay as they were (a dead reshape of its result,
    a reshape and its inverse), while its own loops are cleaned up (its micro-kernel vectorized to outer products,
    its C tile hoisted out of the K loop)."""
    spec = importlib.util.spec_from_file_location("s23_matmul", ROOT / "pipelines" / "cpu" / "matmul.py")
    matmul = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(matmul)
    params = dict(block_m=32, block_n=64, block_k=64, reg_m=8, reg_n=32, reg_k=4, pack_tile_a=32, pack_tile_b=8,
                  op="matmul_0")
    per_op = _apply(OUTSIDE_THE_STEP, matmul.matmul_tiling(**params, bufferize=False))
    assert "linalg.matmul" not in per_op and "vector.outerproduct" in per_op and "vector.contract" not in per_op
    # the C tile stays in registers along the K loop (its reads and writes hoisted: the constants the scoped
    # canonicalization leaves in the loops are moved out first)
    assert re.search(r"scf\.for %\w+ = %\w+ to %\w+ step %c4\w* iter_args\(%\w+ = %\w+\) -> \(vector<8x32xf32>\)", per_op)
    outside = per_op[per_op.rindex("scf.yield"):]   # (after the step's outermost loop)
    assert re.search(r"tensor\.collapse_shape %\d+ \[\[0, 1\]\] : tensor<64x64xf32> into tensor<4096xf32>", outside)
    assert "tensor.collapse_shape %arg2 [[0, 1]]" in outside and "tensor.expand_shape %collapsed" in outside
    # (the whole-module schedule still cleans up the function: the dead reshape and the pair are gone)
    whole = _apply(OUTSIDE_THE_STEP, matmul.matmul_tiling(**{**params, "op": ""}, bufferize=True))
    assert "tensor<4096xf32>" not in whole and "expand_shape" not in whole
