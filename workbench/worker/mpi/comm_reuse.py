"""One communicator per collective call site, made once per process (worker side, LLVM dialect).

convert-shard-to-mpi gives every collective its own sub-communicator of the grid axes it runs on:
`mpi.comm_split(mpi.comm_world, color, key)` right before the `mpi.allreduce` (MPI_Comm_split
after lowering), on every call of the function, and never frees it. MPI_Comm_split is itself a
collective (an all-gather of the colors and keys plus a new context id agreed by all ranks):
every timed call of a partitioned function paid for one per collective, and piled up
communicators.

Here each `llvm.call @MPI_Comm_split` calls a helper of its own instead, which splits on the
first call, keeps the communicator (and the arguments it was made from) in globals and hands it
out on later calls with the same arguments. Color and key are functions of the rank and of the
static grid, so every call of a site passes the same ones; if they ever differ, the helper splits
again (as all ranks would: the arguments are the same on every call of every rank). The global
`_mlir_lh_mpi_comm_splits` counts the splits made (the mpi run reports it per rank).
"""
from __future__ import annotations

from mlir import ir

from workbench.worker.ir_walk import append_parsed, llvm_calls, symbol_names

SPLIT = "MPI_Comm_split"
COUNTER = "_mlir_lh_mpi_comm_splits"   # ExecutionEngine.raw_lookup(name) looks up "_mlir_" + name
HELPER = "lh_mpi_comm_split_once"


def _helper(n: int, comm: str) -> str:
    """The helper of call site `n`; `comm` is the communicator's LLVM type (i32 for MPICH, !llvm.ptr for Open MPI)."""
    g = f"{HELPER}_{n}"
    globals_ = "\n".join(
        f"""llvm.mlir.global internal @{g}_{name}() {{addr_space = 0 : i32}} : {t} {{
  %0 = llvm.mlir.zero : {t}
  llvm.return %0 : {t}
}}""" for name, t in (("set", "i8"), ("parent", comm), ("color", "i32"), ("key", "i32"), ("comm", comm)))
    return f"""llvm.func @{SPLIT}({comm}, i32, i32, !llvm.ptr) -> i32
llvm.mlir.global external @{COUNTER}() {{addr_space = 0 : i32}} : i64 {{
  %0 = llvm.mlir.zero : i64
  llvm.return %0 : i64
}}
{globals_}
llvm.func internal @{g}(%parent: {comm}, %color: i32, %key: i32, %out: !llvm.ptr) -> i32 {{
  %setp = llvm.mlir.addressof @{g}_set : !llvm.ptr
  %parentp = llvm.mlir.addressof @{g}_parent : !llvm.ptr
  %colorp = llvm.mlir.addressof @{g}_color : !llvm.ptr
  %keyp = llvm.mlir.addressof @{g}_key : !llvm.ptr
  %commp = llvm.mlir.addressof @{g}_comm : !llvm.ptr
  %zero8 = llvm.mlir.constant(0 : i8) : i8
  %set = llvm.load %setp : !llvm.ptr -> i8
  %is_set = llvm.icmp "ne" %set, %zero8 : i8
  %p = llvm.load %parentp : !llvm.ptr -> {comm}
  %c = llvm.load %colorp : !llvm.ptr -> i32
  %k = llvm.load %keyp : !llvm.ptr -> i32
  %same_p = llvm.icmp "eq" %p, %parent : {comm}
  %same_c = llvm.icmp "eq" %c, %color : i32
  %same_k = llvm.icmp "eq" %k, %key : i32
  %h0 = llvm.and %is_set, %same_p : i1
  %h1 = llvm.and %h0, %same_c : i1
  %hit = llvm.and %h1, %same_k : i1
  llvm.cond_br %hit, ^hit, ^split
^hit:
  %kept = llvm.load %commp : !llvm.ptr -> {comm}
  llvm.store %kept, %out : {comm}, !llvm.ptr
  %success = llvm.mlir.constant(0 : i32) : i32
  llvm.return %success : i32
^split:
  %rc = llvm.call @{SPLIT}(%parent, %color, %key, %commp) : ({comm}, i32, i32, !llvm.ptr) -> i32
  %countp = llvm.mlir.addressof @{COUNTER} : !llvm.ptr
  %count = llvm.load %countp : !llvm.ptr -> i64
  %one = llvm.mlir.constant(1 : i64) : i64
  %count1 = llvm.add %count, %one : i64
  llvm.store %count1, %countp : i64, !llvm.ptr
  %made = llvm.load %commp : !llvm.ptr -> {comm}
  llvm.store %made, %out : {comm}, !llvm.ptr
  %zero32 = llvm.mlir.constant(0 : i32) : i32
  %ok = llvm.icmp "eq" %rc, %zero32 : i32
  llvm.cond_br %ok, ^keep, ^done
^keep:
  llvm.store %parent, %parentp : {comm}, !llvm.ptr
  llvm.store %color, %colorp : i32, !llvm.ptr
  llvm.store %key, %keyp : i32, !llvm.ptr
  %one8 = llvm.mlir.constant(1 : i8) : i8
  llvm.store %one8, %setp : i8, !llvm.ptr
  llvm.br ^done
^done:
  llvm.return %rc : i32
}}"""


def reuse_communicators(module) -> int:
    """Every `llvm.call @MPI_Comm_split` -> a call of its site's caching helper; the number of sites."""
    sites = llvm_calls(module, SPLIT)
    taken = symbol_names(module)
    n = 0
    for call in sites:
        while f"{HELPER}_{n}" in taken:
            n += 1
        comm = str(call.operands[0].type)
        with module.context:
            append_parsed(module, _helper(n, comm))
        call.attributes["callee"] = ir.FlatSymbolRefAttr.get(f"{HELPER}_{n}", context=module.context)
        taken.add(f"{HELPER}_{n}")
    return len(sites)
