"""`lh-report-failed-asserts`: every `cf.assert` reports a failure and the program goes on, as mlir-opt's
test pass `-test-cf-assert` lowers it (cf.assert to LLVM with `abortOnFailedAssert = false`: the message
through `puts`, then the next op). Upstream's runtime-verification tests (`-generate-runtime-verification
... -test-cf-assert`) print one "ERROR: Runtime op verification failed ..." per failed check and go on;
the default lowering aborts the program at the first.

Each `cf.assert %ok, "message"` becomes a call of an internal `llvm.func` (one per distinct message) that
branches on %ok and calls `puts(message)` when it is false: LLVM dialect only, nothing to lower later, so
the pass can sit anywhere in a RUN line's pipeline.
"""
from __future__ import annotations

from mlir import ir

from workbench.worker.ir_walk import ops_where

REPORT_PREFIX = "_lh_assert_report_"


def _string_literal(data: bytes) -> str:
    """An MLIR string literal of `data`, every byte hex-escaped (quotes, newlines, UTF-8 alike)."""
    return '"' + "".join(f"\\{b:02X}" for b in data) + '"'


def _reporter(name: str, message: str) -> str:
    data = message.encode() + b"\0"
    return f"""
llvm.mlir.global internal constant @{name}_msg({_string_literal(data)}) {{addr_space = 0 : i32}} : !llvm.array<{len(data)} x i8>
llvm.func internal @{name}(%ok: i1) {{
  llvm.cond_br %ok, ^done, ^failed
^failed:
  %msg = llvm.mlir.addressof @{name}_msg : !llvm.ptr
  %n = llvm.call @puts(%msg) : (!llvm.ptr) -> i32
  llvm.br ^done
^done:
  llvm.return
}}
"""


def report_failed_asserts(module) -> int:
    """Rewrite the module's cf.assert ops (see the module docstring); the number rewritten."""
    asserts = ops_where(module, lambda o: o.name == "cf.assert")
    if not asserts:
        return 0
    body = module.body
    existing = {ir.StringAttr(op.attributes["sym_name"]).value for op in body.operations
                if "sym_name" in op.operation.attributes}
    reporters: dict[str, str] = {}
    snippets = []
    for op in asserts:
        message = ir.StringAttr(op.attributes["msg"]).value
        if message not in reporters:
            index = len(reporters)
            while f"{REPORT_PREFIX}{index}" in existing:
                index += 1
            name = f"{REPORT_PREFIX}{index}"
            existing.add(name)
            reporters[message] = name
            snippets.append(_reporter(name, message))
    if "puts" not in existing:
        snippets.append("llvm.func @puts(!llvm.ptr) -> i32\n")
    snippet = ir.Module.parse("".join(snippets), module.context)
    for op in list(snippet.body.operations):
        op.operation.detach_from_parent()
        body.append(op.operation)
    for op in asserts:
        name = reporters[ir.StringAttr(op.attributes["msg"]).value]
        with ir.InsertionPoint(op), op.location:
            ir.Operation.create("llvm.call", operands=[op.operands[0]],
                                attributes={"callee": ir.FlatSymbolRefAttr.get(name),
                                            "operandSegmentSizes": ir.DenseI32ArrayAttr.get([1, 0]),
                                            "op_bundle_sizes": ir.DenseI32ArrayAttr.get([])})
        op.erase()
    return len(asserts)
