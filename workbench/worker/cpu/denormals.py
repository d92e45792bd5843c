"""`lh-flush-denormals`: subnormal floats flushed to zero (FTZ) and read as zero (DAZ) while the payload runs.

Why: on x86 an FMA with a subnormal operand takes a microcode assist (about 100 cycles instead of a
fraction of one). A softmax over scores that a mask pushed to -100 (Swin's shifted windows,
`masked_fill(mask != 0, -100.0)`) gives probabilities exp(-100) = 3.7e-44, subnormal: the batch
matmul of those probabilities with V then ran 5-7x slower in the model than on random inputs
(192 x 49x49 @ 49x32: 0.73 ms on inputs in [0, 1), 36.6 ms on inputs in [0, 1e-39)). A value below
FLT_MIN (1.2e-38) read as zero changes a sum of products of f32 values in the order of 1e-38: nothing
a check against a reference sees, and what compilers' fast-math modes do (crtfastmath.o sets the same
two bits at start-up).

Applied on the LLVM dialect at the end of the lowering, only to a module that asks for it (the unit
attribute `lh.flush_denormals` on the module: pipelines/cpu/finish.py, the selector's whole-module
tail, sets it) or with {force=1}, and only on x86 (MXCSR; elsewhere a no-op). Every function that
is entered from outside the module's own code (a public function, and a function whose address is
taken: the thread functions lh-gomp-dispatch hands libgomp, the async runtime's resume functions)
saves MXCSR on entry, sets FTZ (bit 15) and DAZ (bit 6), and restores the saved value before each
return: the caller's floating-point mode is unchanged when the call returns, and every thread that
runs the payload's code runs it in the same mode.
"""
from __future__ import annotations

import platform

from mlir import ir

ATTR = "lh.flush_denormals"
FTZ_DAZ = 0x8040
_X86 = ("x86_64", "amd64", "i386", "i686", "x86")


def host_is_x86() -> bool:
    return platform.machine().lower() in _X86


def _symbol(op) -> str:
    return ir.StringAttr(op.attributes["sym_name"]).value


def _entered_from_outside(module) -> list:
    """The defined llvm.func ops that code outside the module enters: public ones that no code of the
    module calls (lh-outline-loops' nests, called from their function, run in its mode already), and
    those whose address the module takes (llvm.mlir.addressof: libgomp's thread functions, the async
    runtime's resume functions)."""
    taken: set[str] = set()
    called: set[str] = set()

    def visit(op):
        if op.name == "llvm.mlir.addressof":
            taken.add(ir.FlatSymbolRefAttr(op.attributes["global_name"]).value)
        elif op.name == "llvm.call" and "callee" in op.attributes:
            called.add(ir.FlatSymbolRefAttr(op.attributes["callee"]).value)
        for region in op.regions:
            for block in region.blocks:
                for inner in block.operations:
                    visit(inner.operation)

    visit(module.operation)
    found = []
    for op in module.body.operations:
        op = op.operation
        if op.name != "llvm.func" or not len(op.regions[0].blocks):
            continue
        name = _symbol(op)
        linkage = str(op.attributes["linkage"]) if "linkage" in op.attributes else ""
        public = "private" not in linkage and "internal" not in linkage
        if name in taken or (public and name not in called):
            found.append(op)
    return found


def _instrument(func) -> None:
    from mlir.dialects import llvm

    entry = func.regions[0].blocks[0]
    i32 = ir.IntegerType.get_signless(32)
    i64 = ir.IntegerType.get_signless(64)
    ptr = ir.Type.parse("!llvm.ptr")
    with func.location, ir.InsertionPoint(entry.operations[0]):
        one = llvm.mlir_constant(ir.IntegerAttr.get(i64, 1))
        saved_slot = llvm.alloca(ptr, one, i32, alignment=4)
        mode_slot = llvm.alloca(ptr, one, i32, alignment=4)
        _intrinsic("llvm.x86.sse.stmxcsr", saved_slot)
        saved = llvm.load(i32, saved_slot)
        mode = llvm.or_(saved, llvm.mlir_constant(ir.IntegerAttr.get(i32, FTZ_DAZ)))
        llvm.store(mode, mode_slot)
        _intrinsic("llvm.x86.sse.ldmxcsr", mode_slot)
    for block in func.regions[0].blocks:
        for op in block.operations:
            if op.operation.name == "llvm.return":
                with func.location, ir.InsertionPoint(op):
                    llvm.store(saved, saved_slot)
                    _intrinsic("llvm.x86.sse.ldmxcsr", saved_slot)


def _intrinsic(name: str, pointer) -> None:
    from mlir.dialects import llvm

    llvm.call_intrinsic(None, ir.StringAttr.get(name), [pointer], [], [])


def flush_denormals(module, force: bool = False) -> int:
    """Instrument the module's entry points (see the module docstring); the number instrumented."""
    asked = ATTR in module.operation.attributes
    if not (asked or force) or not host_is_x86():
        return 0
    funcs = _entered_from_outside(module)
    for func in funcs:
        _instrument(func)
    return len(funcs)
