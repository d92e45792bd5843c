"""Parallel loops on libgomp's thread team: `lh-parallel-to-gomp` (buffers) and `lh-gomp-dispatch` (LLVM).

Why: workbench/common/parallel_runtime.py (MLIR's async runtime wakes sleeping workers for every
parallel loop; libgomp's team keeps spinning between a model's consecutive loops).

`lh-parallel-to-gomp` (after scf-forall-to-parallel, in place of async-parallel-for): each outermost
`scf.parallel` without results becomes a call of a function of its own,
`<func>_lh_par<i>(begin, end, captures...)`, which runs the iterations begin..end of the loop's
linearized iteration space (a loop over them, each delinearized into the loop's induction variables).
Values the body uses from above are its arguments, except constants, which it re-creates (so loop
bounds and sizes stay constant for LLVM); the body's own static `memref.alloca`s (a chunk's scratch
buffers, lh-task-buffers-on-stack) are made once at its entry, not once per iteration. The call runs
the whole space (0..trip count) on one thread until `lh-gomp-dispatch`.
Parallel loops nested in another run sequentially in their chunk (with either runtime: the outer loop
occupies the threads; tasks of the async runtime awaited inside its tasks ran past minutes).

`lh-gomp-dispatch` (on the LLVM dialect, after the lowering): each call of such a body goes to a
dispatcher with the same arguments that stores them in a frame and calls
`GOMP_parallel(thread_fn, frame, omp_get_max_threads(), 0)`; `thread_fn` runs the thread's contiguous
share of begin..end (`_dispatch_text`). Every region asks for the whole team, also a loop of fewer iterations
than threads (the threads past them find no share): a team whose size changes from region to region re-forms
it (a model's 4-chunk contraction between 16-chunk elementwise loops; on the 16-core Xeon of the GPU machine,
BERT's encoder at 16 threads took 4.2 ms this way against 5.0 ms with teams of the loops' sizes). The library is
loaded at run time by the CPU target (`extra_libraries`) for modules that call GOMP_parallel.
"""
from __future__ import annotations

from mlir import ir

from workbench.worker.ir_walk import append_parsed, callee_name, ops_where, symbol_names

MARK = "lh.parallel_body"
#: ops without operands that the outlined body re-creates instead of taking as arguments
_REMATERIALIZED = ("arith.constant", "ub.poison", "llvm.mlir.constant", "llvm.mlir.zero")


def _ancestors(op):
    parent = op.parent
    while parent is not None:
        yield parent
        parent = parent.parent


def _defined_inside(value, region_op) -> bool:
    owner = value.owner
    op = owner.owner if isinstance(owner, ir.Block) else owner
    if op is None:
        return False
    if op.operation == region_op.operation:
        return True
    return any(a.operation == region_op.operation for a in _ancestors(op.operation))


def _outermost_parallel_loops(module) -> list:
    found = []
    for op in ops_where(module, lambda o: o.name == "scf.parallel"):
        if len(op.results):
            continue   # reductions: left to the lowering that follows
        chain = list(_ancestors(op.operation))
        if any(a.name in ("scf.parallel", "scf.forall", "async.execute", "gpu.launch", "gpu.module") for a in chain):
            continue
        func = next((a for a in chain if a.name == "func.func"), None)
        if func is not None:
            found.append((op, func))
    return found


def _serialize(loop) -> None:
    """A result-free scf.parallel -> the scf.for nest over the same iterations (first dim outermost)."""
    from mlir.dialects import scf

    body = loop.regions[0].blocks[0]
    rank = len(body.arguments)
    lbs, ubs, steps = (list(loop.operands[i * rank:(i + 1) * rank]) for i in range(3))
    ivs, ip = [], ir.InsertionPoint(loop)
    for d in range(rank):
        with ip, loop.location:
            for_op = scf.ForOp(lbs[d], ubs[d], steps[d])
            ivs.append(for_op.induction_variable)
        with ir.InsertionPoint(for_op.body), loop.location:
            inner_yield = scf.YieldOp([])
        ip = ir.InsertionPoint(inner_yield)
    for op in list(body.operations):
        if op.name not in ("scf.reduce", "scf.yield"):
            op.move_before(inner_yield)
    for old, new in zip(body.arguments, ivs):
        old.replace_all_uses_with(new)
    loop.operation.erase()


def serialize_nested_parallel_loops(module) -> int:
    """Parallel loops nested in another parallel loop (or forall chunk) run sequentially in their chunk: the
    outer loop already occupies the threads (libgomp would run them on a team of one, and tasks of MLIR's
    async runtime awaited inside its own tasks ran past minutes). How many."""
    nested = [op for op in ops_where(module, lambda o: o.name == "scf.parallel" and not len(o.results))
              if any(a.name in ("scf.parallel", "scf.forall") for a in _ancestors(op.operation))]
    for op in reversed(nested):   # innermost first: an outer one's body moves with what it holds
        _serialize(op)
    return len(nested)


def _captures(loop) -> list:
    """Values used in the loop's body and defined above it, in first-use order (each once)."""
    seen: dict = {}

    def visit(op):
        for v in op.operands:
            if v not in seen and not _defined_inside(v, loop):
                seen[v] = None
        return ir.WalkResult.ADVANCE

    for op in loop.regions[0].blocks[0].operations:
        op.operation.walk(visit)
    return list(seen)


def _unique_name(module, base: str) -> str:
    taken = symbol_names(module)
    name, i = base, 0
    while name in taken:
        i += 1
        name = f"{base}_{i}"
    return name


def outline_parallel_loops(module) -> int:
    """Outline every outermost result-free scf.parallel (module docstring); how many."""
    from mlir.dialects import arith, func as func_d, scf

    count = 0
    index = ir.IndexType.get()
    for loop, func in _outermost_parallel_loops(module):
        body = loop.regions[0].blocks[0]
        ivs = list(body.arguments)
        rank = len(ivs)
        lbs, ubs, steps = (list(loop.operands[i * rank:(i + 1) * rank]) for i in range(3))
        captured = _captures(loop)
        # the bounds are computed in the body from the same values: arguments (or constants) too
        for v in lbs + ubs + steps:
            if v not in captured:
                captured.append(v)
        remat = [v for v in captured
                 if not isinstance(v.owner, ir.Block) and v.owner.name in _REMATERIALIZED
                 and not len(v.owner.operands) and len(v.owner.results) == 1]
        passed = [v for v in captured if v not in remat]
        fname = ir.StringAttr(func.attributes["sym_name"]).value
        name = _unique_name(module, f"{fname}_lh_par{count}")
        with ir.InsertionPoint(func), loop.location:
            ftype = ir.FunctionType.get([index, index] + [v.type for v in passed], [])
            outlined = func_d.FuncOp(name, ftype, visibility="private")
            outlined.attributes[MARK] = ir.UnitAttr.get()
            entry = outlined.add_entry_block()
        mapping: dict = {v: entry.arguments[2 + i] for i, v in enumerate(passed)}
        with ir.InsertionPoint(entry), loop.location:
            for v in remat:
                mapping[v] = v.owner.clone().results[0]
            # the chunk's static scratch buffers: once per thread, not once per iteration
            for op in list(body.operations):
                if op.name == "memref.alloca" and not len(op.operands):
                    ir.InsertionPoint.current.insert(op.detach_from_parent())
            one = arith.ConstantOp(index, 1).result
            for_op = scf.ForOp(entry.arguments[0], entry.arguments[1], one)
            func_d.ReturnOp([])
        with ir.InsertionPoint(for_op.body), loop.location:
            rest = for_op.induction_variable
            new_ivs = [None] * rank
            for d in reversed(range(rank)):
                lb, ub, step = (mapping[v] for v in (lbs[d], ubs[d], steps[d]))
                if d:
                    trip = arith.CeilDivSIOp(arith.SubIOp(ub, lb).result, step).result
                    pos, rest = arith.RemSIOp(rest, trip).result, arith.DivSIOp(rest, trip).result
                else:
                    pos = rest
                new_ivs[d] = arith.AddIOp(lb, arith.MulIOp(pos, step).result).result
            yield_op = scf.YieldOp([])
        for op in list(body.operations):
            if op.name in ("scf.reduce", "scf.yield"):
                continue
            op.move_before(yield_op)
        for old, new in zip(ivs, new_ivs):
            old.replace_all_uses_with(new)
        for v, arg in mapping.items():
            for use in list(v.uses):
                user = use.owner
                if any(a.operation == outlined.operation for a in _ancestors(user.operation)):
                    user.operands[use.operand_number] = arg
        # the call: the whole iteration space, from 0 to the product of the trip counts
        with ir.InsertionPoint(loop), loop.location:
            total = None
            for d in range(rank):
                trip = arith.CeilDivSIOp(arith.SubIOp(ubs[d], lbs[d]).result, steps[d]).result
                total = trip if total is None else arith.MulIOp(total, trip).result
            zero = arith.ConstantOp(index, 0).result
            func_d.CallOp([], ir.FlatSymbolRefAttr.get(name), [zero, total] + passed)
        loop.operation.erase()
        count += 1
    return count


def _dispatch_text(body: str, arg_types: list[str]) -> str:
    """The dispatcher (same signature as the body) and the team's thread function, as LLVM dialect.

    The frame holds the body's arguments; thread t of n runs the t-th of n contiguous shares of
    begin..end (sizes differing by at most one), the same share in every region: consecutive parallel
    loops over the same chunks find the data a thread wrote in its own caches. (A shared counter that
    threads take ranges from balances a late thread's share but gives that up.)"""
    frame = f"!llvm.struct<({', '.join(arg_types)})>"
    params = ", ".join(f"%a{i}: {t}" for i, t in enumerate(arg_types))
    stores, loads = [], []
    for i, t in enumerate(arg_types):
        stores += [f"    %p{i} = llvm.getelementptr %frame[0, {i}] : (!llvm.ptr) -> !llvm.ptr, {frame}",
                   f"    llvm.store %a{i}, %p{i} : {t}, !llvm.ptr"]
        loads += [f"    %q{i} = llvm.getelementptr %frame[0, {i}] : (!llvm.ptr) -> !llvm.ptr, {frame}",
                  f"    %v{i} = llvm.load %q{i} : !llvm.ptr -> {t}"]
    rest_args = "".join(f", %v{i}" for i in range(2, len(arg_types)))
    rest_types = "".join(f", {t}" for t in arg_types[2:])
    nl = "\n"
    return f"""
  llvm.func @{body}_dispatch({params}) {{
    %one = llvm.mlir.constant(1 : i64) : i64
    %frame = llvm.alloca %one x {frame} : (i64) -> !llvm.ptr
{nl.join(stores)}
    %fn = llvm.mlir.addressof @{body}_thread : !llvm.ptr
    %max = llvm.call @omp_get_max_threads() : () -> i32
    %zero32 = llvm.mlir.constant(0 : i32) : i32
    %one32 = llvm.mlir.constant(1 : i32) : i32
    %trip = llvm.sub %a1, %a0 : i64
    %zero64 = llvm.mlir.constant(0 : i64) : i64
    %empty = llvm.icmp "sle" %trip, %zero64 : i64
    %n = llvm.select %empty, %one32, %max : i1, i32
    llvm.call @GOMP_parallel(%fn, %frame, %n, %zero32) : (!llvm.ptr, !llvm.ptr, i32, i32) -> ()
    llvm.return
  }}
  llvm.func @{body}_thread(%frame: !llvm.ptr) {{
{nl.join(loads)}
    %t32 = llvm.call @omp_get_thread_num() : () -> i32
    %nt32 = llvm.call @omp_get_num_threads() : () -> i32
    %t = llvm.sext %t32 : i32 to i64
    %nt = llvm.sext %nt32 : i32 to i64
    %trip = llvm.sub %v1, %v0 : i64
    %q = llvm.sdiv %trip, %nt : i64
    %r = llvm.srem %trip, %nt : i64
    %tq = llvm.mul %t, %q : i64
    %before = llvm.icmp "slt" %t, %r : i64
    %extra = llvm.select %before, %t, %r : i1, i64
    %off = llvm.add %tq, %extra : i64
    %lo = llvm.add %v0, %off : i64
    %one = llvm.mlir.constant(1 : i64) : i64
    %zero = llvm.mlir.constant(0 : i64) : i64
    %mine = llvm.select %before, %one, %zero : i1, i64
    %len = llvm.add %q, %mine : i64
    %hi = llvm.add %lo, %len : i64
    %some = llvm.icmp "slt" %lo, %hi : i64
    llvm.cond_br %some, ^run, ^done
  ^run:
    llvm.call @{body}(%lo, %hi{rest_args}) : (i64, i64{rest_types}) -> ()
    llvm.br ^done
  ^done:
    llvm.return
  }}"""


_DECLARATIONS = {
    "GOMP_parallel": "  llvm.func @GOMP_parallel(!llvm.ptr, !llvm.ptr, i32, i32)",
    "omp_get_max_threads": "  llvm.func @omp_get_max_threads() -> i32",
    "omp_get_thread_num": "  llvm.func @omp_get_thread_num() -> i32",
    "omp_get_num_threads": "  llvm.func @omp_get_num_threads() -> i32",
}


def merge_identical_bodies(module, bodies: dict) -> int:
    """Outlined bodies that print the same (a model's repeated blocks of one shape: ResNet-50's 16
    bottlenecks gave 52 groups, 23% of its lowered lines) become one: calls of the others go to the
    first, which LLVM then compiles once. `bodies` (name -> llvm.func) loses the merged ones; how many."""
    first: dict = {}
    alias: dict[str, str] = {}
    for name, op in bodies.items():
        # the function as printed, its own name aside (locations are not printed; the SSA names restart
        # in each function, so two bodies of the same ops print alike)
        text = op.get_asm(assume_verified=True).replace(f"@{name}(", "@_(", 1)
        keep = first.setdefault(text, name)
        if keep != name:
            alias[name] = keep
    if not alias:
        return 0
    for call in ops_where(module, lambda o: o.name == "llvm.call" and callee_name(o) in alias):
        call.attributes["callee"] = ir.FlatSymbolRefAttr.get(alias[callee_name(call)])
    for name in alias:
        bodies.pop(name).operation.erase()
    return len(alias)


def dispatch_on_gomp(module) -> int:
    """Send each call of an outlined parallel body through GOMP_parallel (module docstring), identical
    bodies merged first (`merge_identical_bodies`); how many bodies."""
    bodies = {}
    for op in module.body.operations:
        if op.name == "llvm.func" and MARK in op.attributes and len(op.regions[0].blocks):
            bodies[ir.StringAttr(op.attributes["sym_name"]).value] = op
    if not bodies:
        return 0
    merge_identical_bodies(module, bodies)
    text = []
    for name, op in bodies.items():
        types = [str(a.type) for a in op.regions[0].blocks[0].arguments]
        if len(types) < 2 or types[:2] != ["i64", "i64"]:
            raise ValueError(f"lh-gomp-dispatch: @{name} does not take (i64 begin, i64 end, ...): {types}")
        text.append(f"  llvm.func @{name}({', '.join(types)})")   # (declared to parse; not moved)
        text.append(_dispatch_text(name, types))
    decls = "\n".join(_DECLARATIONS.values())
    append_parsed(module, "module {\n" + decls + "\n" + "\n".join(text) + "\n}")
    for call in ops_where(module, lambda o: o.name == "llvm.call" and callee_name(o) in bodies):
        callee = callee_name(call)
        caller = next(a for a in _ancestors(call.operation) if a.name == "llvm.func")
        if ir.StringAttr(caller.attributes["sym_name"]).value == f"{callee}_thread":
            continue
        call.attributes["callee"] = ir.FlatSymbolRefAttr.get(f"{callee}_dispatch")
    return len(bodies)
