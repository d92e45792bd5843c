"""Worker-side rewrites (compile worker only: imports MLIR).

`ukernel-calls`: every f32 `linalg.matmul` on memrefs that the configuration step marked with
`lh.ukernel = "sgemm"` becomes a call to a per-type helper function that computes the aligned
base pointers (`memref.extract_aligned_pointer_as_index` + offset -> `llvm.inttoptr`), the
leading dimensions (outer strides) and M/N/K, and calls the library's `cblas_sgemm`
(row major, no transposes, alpha = beta = 1: linalg.matmul accumulates into C). The library is
declared as an external function; the run adds the shared library that defines it.
"""
from __future__ import annotations

import hashlib

from mlir import ir
from mlir.dialects import func

from workbench.common import ukernels
from workbench.worker.ir_walk import append_parsed, has_custom_indexing_maps, ops_where, symbol_names
from workbench.common.rewrites import RewriteError

MARK = "lh.ukernel"


def _marked_matmuls(module: ir.Module) -> list:
    return ops_where(module, lambda op: op.name == "linalg.matmul" and MARK in op.attributes)


def _check_operand(value, what: str) -> str:
    t = value.type
    if not isinstance(t, ir.MemRefType):
        raise RewriteError(f"the marked matmul's {what} is {t}, not a memref: the rewrite runs after "
                           "bufferization")
    mt = t
    if mt.rank != 2 or str(mt.element_type) != "f32":
        raise RewriteError(f"the marked matmul's {what} is {t}: sgemm needs a rank-2 f32 memref")
    try:
        strides, _ = mt.get_strides_and_offset()
        inner = strides[-1]
    except Exception:  # older bindings: identity layouts only
        inner = 1 if "strided" not in str(t) else None
    if inner != 1:
        raise RewriteError(f"the marked matmul's {what} {t} is not contiguous in its last dimension")
    return str(t)


def _helper_text(name: str, symbol: str, int_t: str, ta: str, tb: str, tc: str) -> str:
    lines = [f"func.func private @{name}(%A: {ta}, %B: {tb}, %C: {tc}) {{",
             "  %c0 = arith.constant 0 : index", "  %c1 = arith.constant 1 : index",
             "  %c4 = arith.constant 4 : index",
             f"  %m = memref.dim %A, %c0 : {ta}", f"  %k = memref.dim %A, %c1 : {ta}",
             f"  %n = memref.dim %B, %c1 : {tb}"]
    for x, t in (("A", ta), ("B", tb), ("C", tc)):
        lines += [
            f"  %base{x}, %off{x}, %size{x}:2, %stride{x}:2 = memref.extract_strided_metadata %{x} : {t} "
            "-> memref<f32>, index, index, index, index, index",
            f"  %p{x} = memref.extract_aligned_pointer_as_index %{x} : {t} -> index",
            f"  %ob{x} = arith.muli %off{x}, %c4 : index",
            f"  %a{x} = arith.addi %p{x}, %ob{x} : index",
            f"  %i{x} = arith.index_cast %a{x} : index to i64",
            f"  %ptr{x} = llvm.inttoptr %i{x} : i64 to !llvm.ptr",
            f"  %ld{x} = arith.index_cast %stride{x}#0 : index to {int_t}",
        ]
    lines += [f"  %mi = arith.index_cast %m : index to {int_t}", f"  %ni = arith.index_cast %n : index to {int_t}",
              f"  %ki = arith.index_cast %k : index to {int_t}",
              "  %order = arith.constant 101 : i32", "  %notrans = arith.constant 111 : i32",
              "  %one = arith.constant 1.0 : f32",
              f"  func.call @{symbol}(%order, %notrans, %notrans, %mi, %ni, %ki, %one, %ptrA, %ldA, %ptrB, %ldB, "
              f"%one, %ptrC, %ldC) : {_signature(int_t)} -> ()",
              "  return", "}"]
    return "\n".join(lines)


def _signature(int_t: str) -> str:
    return (f"(i32, i32, i32, {int_t}, {int_t}, {int_t}, f32, !llvm.ptr, {int_t}, !llvm.ptr, {int_t}, f32, "
            f"!llvm.ptr, {int_t})")


def ukernel_calls(module: ir.Module, library: str = "auto") -> int:
    """Rewrite the marked matmuls; returns how many were replaced (0: no-op, nothing declared)."""
    ops = _marked_matmuls(module)
    if not ops:
        return 0
    try:
        abi = ukernels.choose_abi(library)
    except ukernels.MissingLibrary as e:
        raise RewriteError(str(e))
    symbol, int_t = ukernels.ABIS[abi]["symbol"], ukernels.ABIS[abi]["int"]
    for op in ops:
        mark = op.attributes[MARK]
        kind = mark.value if isinstance(mark, ir.StringAttr) else str(mark)
        if kind != "sgemm":
            raise RewriteError(f"unknown microkernel {kind!r} (known: sgemm)")
        if has_custom_indexing_maps(op):
            raise RewriteError("the marked matmul has custom indexing maps (transposed operands): not an sgemm")
        operands = list(op.operands)
        if len(operands) != 3:
            raise RewriteError("the marked matmul must have 2 inputs and 1 output")
        ta, tb, tc = (_check_operand(v, w) for v, w in zip(operands, ("A", "B", "C")))
        if len(op.results):
            raise RewriteError("the marked matmul has tensor results: the rewrite runs after bufferization")
        key = hashlib.sha256(f"{abi}|{ta}|{tb}|{tc}".encode()).hexdigest()[:10]
        helper = f"lh_ukernel_sgemm_{abi}_{key}"
        if helper not in symbol_names(module):
            # the helper is parsed with the declaration it calls (a module must verify on its own);
            # append_parsed adds only what the module lacks
            text = _helper_text(helper, symbol, int_t, ta, tb, tc) + f"\nfunc.func private @{symbol}{_signature(int_t)}"
            try:
                append_parsed(module, text)
            except ir.MLIRError as e:
                raise RewriteError(f"helper does not parse: {e}")
        with ir.InsertionPoint(op), op.location:
            func.CallOp([], ir.FlatSymbolRefAttr.get(helper), operands)
        op.erase()
    return len(ops)


def blas_for_every_matmul(module: ir.Module) -> int:
    """The check's reference (`lh-blas-matmuls` in pipelines/cpu/reference.yaml): every f32 linalg.matmul
    on memrefs that sgemm can compute (rank 2, no transposed maps, contiguous rows) becomes a BLAS call,
    whatever the schedule marked; other ops are left to the loop lowering. No BLAS found: no change."""
    try:
        ukernels.choose_abi("auto")
    except ukernels.MissingLibrary:
        return 0
    candidates = ops_where(module, lambda op: op.name == "linalg.matmul" and not has_custom_indexing_maps(op)
                           and len(op.operands) == 3 and not len(op.results))
    marked = 0
    for op in candidates:
        try:
            for value, what in zip(op.operands, ("A", "B", "C")):
                _check_operand(value, what)
        except RewriteError:
            continue
        op.attributes[MARK] = ir.StringAttr.get("sgemm")
        marked += 1
    return ukernel_calls(module) if marked else 0
