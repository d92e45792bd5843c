"""Device temporaries allocated once per process instead of in every call (`lh-cache-gpu-temporaries`).

After cuda-lower's NVVM lowering, each device buffer that a host function allocates and frees in
the same block is a `mgpuMemAlloc` ... `mgpuMemFree` pair, i.e. a cuMemAlloc and a cuMemFree inside
every timed call. cuMemFree waits for the device: the host stops launching kernels until the GPU is
idle, so a model of many small kernels runs at the launch latency of each, one after the other.

Here such a pair calls two helpers instead. The alloc site gets a slot (a global pointer and its
size): the first call allocates and keeps the buffer, later calls that need no more bytes get the
same buffer back, and the free of the kept buffer does nothing. Reuse is safe because the pair is in
one block: every execution of the block frees what it allocated before the block is left, so the
kept buffer is never live twice. Buffers freed elsewhere (a result, one freed under a condition or
after a loop) keep the plain calls. Kept bytes are bounded (`max-mib`, default 4096): past the
bound, sites allocate and free as before. The benchmark wrapper's own functions are left alone.
"""
from __future__ import annotations

from mlir import ir

from workbench.common.bench_defaults import WRAPPER_BENCH, WRAPPER_CALL
from workbench.worker.ir_walk import append_parsed, callee_name, llvm_calls, symbol_names

ALLOC, FREE = "mgpuMemAlloc", "mgpuMemFree"
CACHED_ALLOC, CACHED_FREE = "lh_cached_gpu_alloc", "lh_cached_gpu_free"
SLOT, SIZE = "lh_gpu_cache_slot_", "lh_gpu_cache_size_"
DEFAULT_MAX_MIB = 4096


def _helpers(max_bytes: int) -> str:
    return f"""llvm.func @{ALLOC}(i64, !llvm.ptr, i8) -> !llvm.ptr
llvm.func @{FREE}(!llvm.ptr, !llvm.ptr)
llvm.mlir.global internal @lh_gpu_cache_bytes(0 : i64) {{addr_space = 0 : i32}} : i64
llvm.func @{CACHED_ALLOC}(%slot: !llvm.ptr, %kept_size: !llvm.ptr, %size: i64, %stream: !llvm.ptr, %shared: i8) -> !llvm.ptr {{
  %kept = llvm.load %slot : !llvm.ptr -> !llvm.ptr
  %null = llvm.mlir.zero : !llvm.ptr
  %empty = llvm.icmp "eq" %kept, %null : !llvm.ptr
  llvm.cond_br %empty, ^fresh, ^kept
^kept:
  %have = llvm.load %kept_size : !llvm.ptr -> i64
  %fits = llvm.icmp "ule" %size, %have : i64
  llvm.cond_br %fits, ^done(%kept : !llvm.ptr), ^plain
^fresh:
  %total_at = llvm.mlir.addressof @lh_gpu_cache_bytes : !llvm.ptr
  %total = llvm.load %total_at : !llvm.ptr -> i64
  %after = llvm.add %total, %size : i64
  %limit = llvm.mlir.constant({max_bytes} : i64) : i64
  %under = llvm.icmp "ule" %after, %limit : i64
  %zero = llvm.mlir.constant(0 : i8) : i8
  %device = llvm.icmp "eq" %shared, %zero : i8
  %keep = llvm.and %under, %device : i1
  llvm.cond_br %keep, ^keep, ^plain
^keep:
  %made = llvm.call @{ALLOC}(%size, %stream, %shared) : (i64, !llvm.ptr, i8) -> !llvm.ptr
  llvm.store %made, %slot : !llvm.ptr, !llvm.ptr
  llvm.store %size, %kept_size : i64, !llvm.ptr
  llvm.store %after, %total_at : i64, !llvm.ptr
  llvm.br ^done(%made : !llvm.ptr)
^plain:
  %own = llvm.call @{ALLOC}(%size, %stream, %shared) : (i64, !llvm.ptr, i8) -> !llvm.ptr
  llvm.br ^done(%own : !llvm.ptr)
^done(%result: !llvm.ptr):
  llvm.return %result : !llvm.ptr
}}
llvm.func @{CACHED_FREE}(%slot: !llvm.ptr, %buffer: !llvm.ptr, %stream: !llvm.ptr) {{
  %kept = llvm.load %slot : !llvm.ptr -> !llvm.ptr
  %same = llvm.icmp "eq" %kept, %buffer : !llvm.ptr
  llvm.cond_br %same, ^done, ^free
^free:
  llvm.call @{FREE}(%buffer, %stream) : (!llvm.ptr, !llvm.ptr) -> ()
  llvm.br ^done
^done:
  llvm.return
}}
"""


def _function_name(op) -> str:
    parent = op.parent
    while parent is not None and parent.name != "llvm.func":
        parent = parent.parent
    return ir.StringAttr(parent.attributes["sym_name"]).value if parent is not None else ""


def _same_block_pairs(module) -> list[tuple[object, object]]:
    """(alloc call, free call) pairs: the free takes the alloc's result and sits in the alloc's block."""
    pairs = []
    for alloc in llvm_calls(module, ALLOC):
        if _function_name(alloc) in (WRAPPER_BENCH, WRAPPER_CALL):
            continue
        frees = [u.owner for u in alloc.results[0].uses if u.owner.name == "llvm.call" and callee_name(u.owner) == FREE]
        if len(frees) == 1 and frees[0].operation.block == alloc.operation.block:
            pairs.append((alloc, frees[0]))
    return pairs


def cache_temporaries(module, max_mib: int = DEFAULT_MAX_MIB) -> int:
    """Rewrite every same-block alloc/free pair to the caching helpers; returns how many."""
    pairs = _same_block_pairs(module)
    if not pairs:
        return 0
    append_parsed(module, _helpers(max_mib << 20))
    ptr = ir.Type.parse("!llvm.ptr")
    taken = symbol_names(module)
    index = -1
    for alloc, free in pairs:
        index += 1
        while f"{SLOT}{index}" in taken:   # (slots of an earlier run of the pass keep their sites)
            index += 1
        append_parsed(module, f"""llvm.mlir.global internal @{SLOT}{index}() {{addr_space = 0 : i32}} : !llvm.ptr {{
  %0 = llvm.mlir.zero : !llvm.ptr
  llvm.return %0 : !llvm.ptr
}}
llvm.mlir.global internal @{SIZE}{index}(0 : i64) {{addr_space = 0 : i32}} : i64""")
        with ir.InsertionPoint(alloc), alloc.location:
            slot = ir.Operation.create("llvm.mlir.addressof", results=[ptr],
                                       attributes={"global_name": ir.FlatSymbolRefAttr.get(f"{SLOT}{index}")}).result
            size = ir.Operation.create("llvm.mlir.addressof", results=[ptr],
                                       attributes={"global_name": ir.FlatSymbolRefAttr.get(f"{SIZE}{index}")}).result
        # (size, stream, shared) -> (slot, kept size, size, stream, shared); (buffer, stream) -> (slot, ...)
        _call_instead(alloc, CACHED_ALLOC, [slot, size])
        _call_instead(free, CACHED_FREE, [slot])
    return len(pairs)


def _call_instead(call, callee: str, extra: list) -> None:
    """Replace `call` by a call of `callee` with the arguments `extra + its own`."""
    operands = extra + list(call.operands)
    attributes = {call.attributes[i].name: call.attributes[i].attr for i in range(len(call.attributes))}
    attributes["callee"] = ir.FlatSymbolRefAttr.get(callee)
    attributes["operandSegmentSizes"] = ir.DenseI32ArrayAttr.get([len(operands), 0])
    with ir.InsertionPoint(call), call.location:
        new = ir.Operation.create("llvm.call", results=[r.type for r in call.results], operands=operands,
                                  attributes=attributes)
    for old, made in zip(call.results, new.results):
        old.replace_all_uses_with(made)
    call.erase()
