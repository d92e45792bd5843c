"""`lh-widen-i1-memrefs`: bool buffers stored one byte per element, as numpy and torch store them.

MemRefToLLVM refuses memrefs of sub-byte elements (an assertion in the wheels: `integralElementType
.getWidth() >= 8`), so bool tensors (`x > 0`, torch.where, masks, cross_entropy) abort the lowering.
Upstream's narrow-type emulation (`memref-emulate-narrow-type` is only a test pass in MLIR 22) packs
i1 into bits of wider words, which is not the layout numpy passes in. This pass, run on memrefs just
before the LLVM lowering, widens every `memref<...xi1>` to `memref<...xi8>` (function signatures,
globals and their initial values, every value of that type) and keeps the loaded/stored values i1:
loads are followed by `arith.trunci`, stored values go through `arith.extui`. At the ABI a bool
argument is then one byte per element (0 or 1): a numpy `bool` array.
"""
from __future__ import annotations

import numpy as np
from mlir import ir

from workbench.worker.ir_walk import ops_where

#: ops reading elements: (name, index of the memref operand); their result is the loaded value
_LOADS = {"memref.load": 0, "affine.load": 0, "vector.load": 0, "vector.transfer_read": 0,
          "vector.maskedload": 0, "vector.gather": 0, "vector.expandload": 0}
#: ops writing elements: (name, (index of the stored value, index of the memref operand))
_STORES = {"memref.store": (0, 1), "affine.store": (0, 1), "vector.store": (0, 1), "vector.transfer_write": (0, 1),
           # (the stored value is their last operand, after one index per memref dim: -1)
           "vector.maskedstore": (-1, 0), "vector.scatter": (-1, 0), "vector.compressstore": (-1, 0)}


def _is_i1(t: ir.Type) -> bool:
    return isinstance(t, ir.IntegerType) and ir.IntegerType(t).width == 1


def _i8() -> ir.Type:
    return ir.IntegerType.get_signless(8)


def _widened(t: ir.Type) -> ir.Type | None:
    """memref<...xi1> (ranked or not) -> memref<...xi8>; None for every other type."""
    if isinstance(t, ir.MemRefType):
        mt = ir.MemRefType(t)
        if _is_i1(mt.element_type):
            return ir.MemRefType.get(mt.shape, _i8(), mt.layout, mt.memory_space)
    elif isinstance(t, ir.UnrankedMemRefType):
        ut = ir.UnrankedMemRefType(t)
        if _is_i1(ut.element_type):
            return ir.UnrankedMemRefType.get(_i8(), ut.memory_space)
    return None


def _value_widened(t: ir.Type) -> ir.Type | None:
    """The loaded/stored value's type: i1 -> i8, vector<...xi1> -> vector<...xi8>."""
    if _is_i1(t):
        return _i8()
    if isinstance(t, ir.VectorType):
        vt = ir.VectorType(t)
        if _is_i1(vt.element_type):
            return ir.VectorType.get(vt.shape, _i8(), scalable=vt.scalable_dims)
    return None


def _function_type(ft: ir.FunctionType) -> ir.FunctionType | None:
    ins = [_widened(t) or t for t in ft.inputs]
    outs = [_widened(t) or t for t in ft.results]
    if ins == list(ft.inputs) and outs == list(ft.results):
        return None
    return ir.FunctionType.get(ins, outs)


def _widen_global(op) -> None:
    ty = ir.TypeAttr(op.attributes["type"]).value
    wide = _widened(ty)
    if wide is None:
        return
    op.attributes["type"] = ir.TypeAttr.get(wide)
    if "initial_value" in op.attributes:
        init = op.attributes["initial_value"]
        if isinstance(init, ir.DenseElementsAttr):
            dense = ir.DenseElementsAttr(init)
            shape = ir.MemRefType(wide).shape
            tensor = ir.RankedTensorType.get(shape, _i8())
            if dense.is_splat:
                value = ir.BoolAttr(dense.get_splat_value()).value if isinstance(
                    dense.get_splat_value(), ir.BoolAttr) else bool(ir.IntegerAttr(dense.get_splat_value()).value)
                op.attributes["initial_value"] = ir.DenseElementsAttr.get_splat(tensor, ir.IntegerAttr.get(_i8(), int(value)))
            else:
                bits = np.array(dense).astype(np.int8).reshape(shape)
                op.attributes["initial_value"] = ir.DenseElementsAttr.get(bits, type=_i8(), shape=shape)


def _after(op):
    """An insertion point right after `op`."""
    ops = op.operation.block.operations
    found = False
    for o in ops:
        if found:
            return ir.InsertionPoint(o)
        if o == op:
            found = True
    return ir.InsertionPoint(op.operation.block)


def widen_i1_memrefs(module) -> None:
    widened_values = 0
    # 1. every value (op result, block argument) of memref-of-i1 type, function types, globals
    for op in ops_where(module, lambda op: True):
        for r in op.results:
            wide = _widened(r.type)
            if wide is not None:
                r.set_type(wide)
                widened_values += 1
        for region in op.regions:
            for block in region.blocks:
                for arg in block.arguments:
                    wide = _widened(arg.type)
                    if wide is not None:
                        arg.set_type(wide)
                        widened_values += 1
        if "function_type" in op.attributes:
            attr = op.attributes["function_type"]
            if isinstance(attr, ir.TypeAttr) and isinstance(ir.TypeAttr(attr).value, ir.FunctionType):
                ft = _function_type(ir.FunctionType(ir.TypeAttr(attr).value))
                if ft is not None:
                    op.attributes["function_type"] = ir.TypeAttr.get(ft)
                    widened_values += 1
        if op.name == "memref.global":
            _widen_global(op)
    if not widened_values:
        return
    # 2. element accesses keep i1 values: trunci after loads, extui before stores
    for op in ops_where(module, lambda op: op.name in ("linalg.generic", "linalg.fill")):
        _widen_linalg_on_buffers(op)
    for op in ops_where(module, lambda op: op.name in _LOADS or op.name in _STORES):
        if op.name in _LOADS:
            memref = op.operands[_LOADS[op.name]]
            result = op.results[0]
            narrow = result.type
            wide = _value_widened(narrow)
            if wide is None or not _is_i8_memref(memref.type):
                continue
            if op.name == "vector.transfer_read":  # the padding value (after one index per source dim)
                _extend_operand(op, 1 + ir.MemRefType(memref.type).rank)
            if op.name in ("vector.maskedload", "vector.gather", "vector.expandload"):
                _extend_operand(op, len(op.operands) - 1)  # the pass-through vector
            result.set_type(wide)
            with _after(op), op.location:
                trunc = ir.Operation.create("arith.trunci", results=[narrow], operands=[result])
            result.replace_all_uses_with(trunc.result)
            trunc.operands[0] = result
        else:
            value_index, memref_index = _STORES[op.name]
            if _is_i8_memref(op.operands[memref_index].type):
                _extend_operand(op, value_index % len(op.operands))


def _is_i8_memref(t: ir.Type) -> bool:
    if isinstance(t, ir.MemRefType):
        elem = ir.MemRefType(t).element_type
        return isinstance(elem, ir.IntegerType) and ir.IntegerType(elem).width == 8
    return False


def _extend_operand(op, index: int) -> None:
    value = op.operands[index]
    wide = _value_widened(value.type)
    if wide is None:
        return
    with ir.InsertionPoint(op), op.location:
        ext = ir.Operation.create("arith.extui", results=[wide], operands=[value])
    op.operands[index] = ext.result


def _widen_linalg_on_buffers(op) -> None:
    """linalg on memrefs still (the pass applied before convert-linalg-to-loops): a generic's block
    arguments of widened operands become i8 (truncated at the block start) and its yielded i1 values
    are extended; a fill's i1 value is extended."""
    if op.name == "linalg.fill":
        if _is_i8_memref(op.operands[1].type):
            _extend_operand(op, 0)
        return
    block = op.regions[0].blocks[0]
    first = block.operations[0]
    for operand, arg in zip(op.operands, block.arguments):
        if _is_i8_memref(operand.type) and _is_i1(arg.type):
            arg.set_type(_i8())
            with ir.InsertionPoint(first), op.location:
                trunc = ir.Operation.create("arith.trunci", results=[ir.IntegerType.get_signless(1)], operands=[arg])
            arg.replace_all_uses_with(trunc.result)
            trunc.operands[0] = arg
    yield_op = block.operations[len(block.operations) - 1]
    outputs = list(op.operands)[len(op.operands) - len(yield_op.operands):]
    for i, out in enumerate(outputs):
        if _is_i8_memref(out.type) and _is_i1(yield_op.operands[i].type):
            _extend_operand(yield_op, i)


# ---------------------------------------------------------------------------------------------------
# `lh-widen-i1-vector-args`: no vector of i1 crosses a call.
#
# LLVM 22's x86 backend aborts ("LLVM ERROR: Cannot emit physreg copy instruction", in the post-RA
# pseudo expansion) on a call that passes a `<1 x i1>` (alone, or in an array: what an n-D
# `vector<8x2x1xi1>` becomes) with AVX-512, where the mask lives in a k-register and the calling
# convention wants it in a byte register; other vXi1 arguments fail the same way under other calling
# conventions (llvm/llvm-project#179100, "regression:22"). Reduced reproducer (`llc -mattr=+avx512f`):
#
#     define void @callee(<1 x i1> %m) noinline { ret void }
#     define void @caller(ptr %p) {
#       %m = load <1 x i1>, ptr %p
#       call void @callee(<1 x i1> %m)
#       ret void
#     }
#
# Such calls come from lh-outline-loops (a loop nest outlined into a function of its own gets the masks
# and constant `dense<true>` vectors of its vectorized compare-selects, defined above it, as arguments:
# a quantile + median payload, 64+ loop nests after the selector's schedules, aborted the run worker),
# from async-parallel-for / async-to-async-runtime (a parallel body's captured values) and from payloads
# that pass masks themselves; and ExecutionEngine adds a `_mlir_<name>` wrapper for every function, which
# loads each argument from memory and calls it (what the reproducer does). So every function defined in
# the module takes and returns vectors of i1 as vectors of i8 (0 / 1), narrowed (arith.trunci) where it
# starts and widened (arith.extui) at its returns and at every call site: a few instructions per call.
# Declarations (functions defined elsewhere) keep their ABI.


def _vector_i1_widened(t: ir.Type) -> ir.Type | None:
    if isinstance(t, ir.VectorType) and _is_i1(ir.VectorType(t).element_type):
        return _value_widened(t)
    return None


def _convert(value, to: ir.Type, op_name: str, point: ir.InsertionPoint, loc):
    with point, loc:
        return ir.Operation.create(op_name, results=[to], operands=[value]).result


def widen_i1_vector_args(module) -> int:
    """Every function defined in `module` (top level) whose signature has vectors of i1 takes and returns them
    as vectors of i8, its callers extend / truncate around each call; how many functions changed."""
    changed: dict[str, ir.FunctionType] = {}
    functions = [op for op in module.body.operations if op.operation.name == "func.func"]
    for func in functions:
        op = func.operation
        if not op.regions[0].blocks:
            continue   # a declaration: its ABI is someone else's
        ft = ir.FunctionType(ir.TypeAttr(op.attributes["function_type"]).value)
        ins = [_vector_i1_widened(t) or t for t in ft.inputs]
        outs = [_vector_i1_widened(t) or t for t in ft.results]
        if ins == list(ft.inputs) and outs == list(ft.results):
            continue
        entry = op.regions[0].blocks[0]
        first = entry.operations[0]
        for arg, narrow, wide in zip(entry.arguments, ft.inputs, ins):
            if wide == narrow:
                continue
            arg.set_type(wide)
            trunc = _convert(arg, narrow, "arith.trunci", ir.InsertionPoint(first), op.location)
            arg.replace_all_uses_with(trunc)
            trunc.owner.operands[0] = arg
        for ret in ops_where(op, lambda o: o.name == "func.return"):
            if ret.parent.name != "func.func":
                continue   # (a nested function's return: not ours)
            for i, (narrow, wide) in enumerate(zip(ft.results, outs)):
                if wide != narrow:
                    ret.operands[i] = _convert(ret.operands[i], wide, "arith.extui", ir.InsertionPoint(ret),
                                               ret.location)
        op.attributes["function_type"] = ir.TypeAttr.get(ir.FunctionType.get(ins, outs))
        changed[ir.StringAttr(op.attributes["sym_name"]).value] = ft
    if not changed:
        return 0
    for func in functions:
        for call in ops_where(func.operation, lambda o: o.name == "func.call"):
            callee = ir.FlatSymbolRefAttr(call.attributes["callee"]).value
            ft = changed.get(callee)
            if ft is None:
                continue
            for i, narrow in enumerate(ft.inputs):
                wide = _vector_i1_widened(narrow)
                if wide is not None:
                    call.operands[i] = _convert(call.operands[i], wide, "arith.extui", ir.InsertionPoint(call),
                                                call.location)
            for result, narrow in zip(call.results, ft.results):
                wide = _vector_i1_widened(narrow)
                if wide is None:
                    continue
                result.set_type(wide)
                trunc = _convert(result, narrow, "arith.trunci", _after(call), call.location)
                result.replace_all_uses_with(trunc)
                trunc.owner.operands[0] = result
    return len(changed)
